// bishengir 1.2.0: on the CPU-runner path a kernel that returns a reduction reads an
// uninitialized buffer.
//
// A column sum, its init a zero fill, returned by the kernel. hfusion-auto-schedule first
// caches the kernel's results (AutoScheduleBase cacheIO -> cacheWriteFuncReturn ->
// hfusion::createCacheWrite with cacheWriteToOutputInit, HFusion/Utils/Utils.cpp): the
// returned op's init operand is replaced by a fresh `tensor.empty` and the old init (the
// fill) becomes the destination of an `hfusion.store`, where it is dead. For an elementwise
// op that is harmless; a linalg.reduce reads its init. The tiled combining reduction
// (`__final_reduction_op__`) then folds a slice of that `tensor.empty` into the sum.
// On the device path the result is still right: convert-hfusion-to-hivm makes it
// `hivm.hir.vreduce`, which becomes `reduce_sum_ra_float(src, tmp, dst, 0.0)` in
// module.hivm.opt.mlir, starting from the scalar identity, never reading `dst`. The
// CPU-runner path keeps the upstream `linalg.reduce`, so it reads the uninitialized
// allocation: NaN or heap garbage, different from run to run.
//
//   bishengir-compile final_reduction_init.mlir --enable-hfusion-compile \
//     --enable-multi-kernel --enable-manage-host-resources --target=Ascend910B1 \
//     --enable-cpu-runner-before=convert-hfusion-to-hivm,wrapper-name=main_wrapper \
//     -o lowered.mlir --mlir-print-ir-after=hfusion-auto-schedule
//   (prints: linalg.reduce ins(%..) outs(%extracted_slice ..) dimensions = [0]
//    {__final_reduction_op__}, where %extracted_slice is a slice of `tensor.empty()`)
//
// Any returned reduction shows it, over the last axis too (LAST_AXIS_PBR). A reduction whose
// result the kernel uses further (softmax, x - max) keeps its fill and is right, tiled or
// not; so is this one with --enable-cpu-runner-before=hfusion-auto-schedule (untiled).
// tests/test_hfusion_bishengir.py runs this file (test_final_reduction_init_reproducer).
module {
  func.func @column_sum(%x: tensor<16x64xf32>) -> tensor<64xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<HOST>, hacc.host_func_type = #hacc.host_func_type<host_entry>} {
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<64xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<64xf32>) -> tensor<64xf32>
    %sum = linalg.reduce {arith.addf} ins(%x : tensor<16x64xf32>) outs(%init : tensor<64xf32>) dimensions = [0]
    return %sum : tensor<64xf32>
  }
}
