// bishengir 1.2.0: no SHALLOW_CV kernel auto-schedules on the host-managed path.
//
// A lone matmul (its zero fill makes it SHALLOW_CV, not SINGLE_CUBE). ShallowCVScheduler
// outlines the vector ops of the kernel (here the fill) as `hacc.always_inline` sub-kernels
// and schedules each with the AnyPBR scheduler. Its fixCallSitesAndCaller adds the
// sub-kernel's tiling data as arguments of the SHALLOW_CV kernel and walks up to that
// kernel's caller, the HOST entry; there, with --enable-manage-host-resources,
// getTilingDataForCallSite builds `func.call @<sub-kernel>_tiling_function(<operands of the
// call to the SHALLOW_CV kernel>)`: the matmul's two inputs, for a tiling function that
// takes the fill's one output. The verifier rejects it:
//
//   bishengir-compile shallow_cv_host_tiling.mlir --enable-hfusion-compile \
//     --enable-multi-kernel --enable-manage-host-resources --target=Ascend910B1 \
//     --enable-cpu-runner-before=convert-hfusion-to-hivm,wrapper-name=main_wrapper \
//     -o lowered.mlir
//   error: 'func.func' op Failed to create and apply schedule.
//   error: 'func.call' op incorrect number of operands for callee
//
// Without --enable-manage-host-resources the schedule succeeds, the tiling data become i64
// parameters of the host entry, and the CPU runner's wrapper stops at them ("parameter
// type "i64" is not currently supported!"). The CPU runner needs a HOST entry: as a DEVICE
// function the same input stops with "[CPU Runner] Failed to run the CPU runner pipeline!"
// (with or without --enable-manage-host-resources) or, with --enable-multi-kernel,
// "enableMultiKernel not supported in Device mode". So no flag set runs a scheduled
// SHALLOW_CV kernel; --enable-cpu-runner-before=hfusion-auto-schedule (untiled) runs it.
// For the device (single-kernel mode, no host caller) the same matmul compiles to
// module.hivm.opt.mlir. With no fill (the matmul accumulating into a tensor.empty or a
// parameter) bishengir infers SINGLE_CUBE, and on this path bishengir-compile then crashes
// (segmentation fault, exit 139).
// tests/test_hfusion_bishengir.py runs this file (test_shallow_cv_host_tiling_reproducer).
module {
  func.func @matmul(%a: tensor<16x64xf32>, %b: tensor<64x32xf32>) -> tensor<16x32xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<HOST>, hacc.host_func_type = #hacc.host_func_type<host_entry>} {
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<16x32xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x32xf32>) -> tensor<16x32xf32>
    %c = linalg.matmul ins(%a, %b : tensor<16x64xf32>, tensor<64x32xf32>) outs(%init : tensor<16x32xf32>) -> tensor<16x32xf32>
    return %c : tensor<16x32xf32>
  }
}
