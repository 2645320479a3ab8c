// RUN: afc-opt %s -p 'set-target{chip=Ascend910},lower-to-buffer' -t ascendc | filecheck %s

// Ascend910 (A1) has no DataCopyPad and no GET_TILING_DATA (ascend.md 2.6, 2.7): rows of
// 64 halves (128 bytes) move with DataCopy, and the entry reads the tiling from GM.

// CHECK-NOT:   DataCopyPad
// CHECK:       DataCopyParams [[P:copyParams[0-9]*]]{static_cast<uint16_t>(nrows), static_cast<uint16_t>(ncols * 2 / 32), {{.*}}};
// CHECK-NEXT:  DataCopy(slot, in0Gm[{{.*}}], [[P]]);
// CHECK-NOT:   DataCopyPad
// CHECK:       extern "C" __global__ __aicore__ void main_kernel0(
// CHECK-NEXT:  {
// CHECK-NEXT:      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AICORE);
// CHECK-NEXT:      GlobalTensor<int64_t> tilingGm;
// CHECK-NEXT:      tilingGm.SetGlobalBuffer((__gm__ int64_t*)tiling);
// CHECK-NEXT:      KernelMainKernel0 op;
// CHECK-NEXT:      op.Init(in0, out0, tilingGm.GetValue(0), tilingGm.GetValue(1), {{.*}});
// CHECK-NOT:   GET_TILING_DATA

func.func @main(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<?x64xf16>) -> tensor<?x64xf16> {
    %a = graph.abs %xx : tensor<?x64xf16>
    %y = graph.sqrt %a : tensor<?x64xf16>
    graph.yield %y : tensor<?x64xf16>
  }
  func.return %r : tensor<?x64xf16>
}
