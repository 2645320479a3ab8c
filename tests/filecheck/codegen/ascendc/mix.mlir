// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' -t ascendc | filecheck %s

// A matmul with a bias + relu epilogue on a split chip is a mix kernel: the AIC runs the
// cube stage and Fixpipes each output tile into a workspace slot, then sets flag 0; each
// of its two AIVs waits for flag 0, takes every other chunk of rows (GetSubBlockIdx)
// through CopyIn/Compute/CopyOut and frees the slot with flag 1, which the AIC waits for
// before it writes the slot again. Each core gives memory only to its own buffers.

// CHECK:       op_kernel/mlp_kernel0.cpp: Ascend C kernel @mlp_kernel0 (template "matmul", Ascend910B1, mix)
// CHECK:       __aicore__ inline void Init(
// CHECK:         if ASCEND_IS_AIC {
// CHECK-NEXT:        pipe.InitBuffer(q_a1,
// CHECK:         if ASCEND_IS_AIV {
// CHECK-NEXT:        pipe.InitBuffer(q_in0,
// CHECK:       __aicore__ inline void Process()
// CHECK-NEXT:  {
// CHECK-NEXT:      int64_t bid = GetBlockIdx() / GetTaskRation();
// CHECK:           for (int64_t tile =
// CHECK:               if ASCEND_IS_AIC {
// CHECK-NEXT:              Cube(
// CHECK-NEXT:          }
// CHECK-NEXT:          if ASCEND_IS_AIV {
// CHECK-NEXT:              CrossCoreWaitFlag(0);
// CHECK-NEXT:          }
// CHECK-NEXT:          int64_t sub = GetSubBlockIdx();
// CHECK-NEXT:          for (int64_t chunk = 0; chunk < afc::CeilDiv(afc::Max(afc::CeilDiv(m, er), sub) - sub, 2); ++chunk) {
// CHECK:                   if ASCEND_IS_AIV {
// CHECK-NEXT:                  CopyIn(
// CHECK:                   if ASCEND_IS_AIV {
// CHECK-NEXT:                  Compute(
// CHECK:                   if ASCEND_IS_AIV {
// CHECK-NEXT:                  CopyOut(
// CHECK:               if (tile + 2 < [[LAST:v[0-9]+]]) {
// CHECK-NEXT:              if ASCEND_IS_AIV {
// CHECK-NEXT:                  CrossCoreSetFlag<0x2, PIPE_MTE2>(1);
// CHECK:       __aicore__ inline void Cube(
// CHECK:           if (1 < tile - {{v[0-9]+}}) {
// CHECK-NEXT:          CrossCoreWaitFlag(1);
// CHECK-NEXT:      }
// CHECK:           Fixpipe(wsGm[
// CHECK:           CrossCoreSetFlag<0x2, PIPE_FIX>(0);
// CHECK:       KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
// CHECK:       op_host/mlp_kernel0.cpp

func.func @mlp(%x: tensor<40x48xf16>, %w: tensor<48x64xf16>, %b: tensor<64xf16>) -> tensor<40x64xf16> {
  %m = graph.matmul %x, %w : (tensor<40x48xf16>, tensor<48x64xf16>) -> tensor<40x64xf16>
  %a = graph.add %m, %b : (tensor<40x64xf16>, tensor<64xf16>) -> tensor<40x64xf16>
  %y = graph.relu %a : tensor<40x64xf16>
  func.return %y : tensor<40x64xf16>
}
