// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910},lower-to-buffer' --verify-diagnostics
// The groups are planned for the module's one target, and lower-to-buffer lowers them
// for that target: no option gives it another chip (ub-fusion{chip=Ascend910B1},
// lower-to-buffer{chip=Ascend310P3} used to fail with "cannot lower fusion group").
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | afc-opt -p lower-to-buffer | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | not afc-opt -p 'set-target{chip=Ascend310P3},lower-to-buffer' 2>&1 | filecheck %s --check-prefix=ONE-TARGET
// RUN: not afc-opt %s -p 'ub-fusion{chip=Ascend910B1},lower-to-buffer{chip=Ascend310P3}' 2>&1 | filecheck %s --check-prefix=OLD-OPTIONS
// ONE-TARGET: afc-opt: error: chip Ascend310P3 contradicts the module's afc.target = #afc.target<"Ascend910B1">
// OLD-OPTIONS: afc-opt: error: ub-fusion{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before ub-fusion


// Qwen's MLP with its residual over a dynamic number of rows: one mix kernel. The host
// reads M and calls the tiling function with (M, K1, F, N2).
// CHECK-LABEL: func.func @swiglu_residual
// CHECK:         %[[M:.*]] = buffer.dim %x[0] : tensor<?x256xf16>
// CHECK:         func.call @swiglu_residual_kernel0_tiling(%[[M]], %c256, %c512, %c256)
// CHECK:         buffer.launch @swiglu_residual_kernel0 blocks(%{{.*}}) (%x, %wg, %wu, %wd, %h)

// Workspaces: the gate/up and g slots (f16: a plain SwiGLU rounds there) and the f32
// accumulator every band adds to.
// CHECK:       buffer.kernel @swiglu_residual_kernel0({{.*}}) attributes {chip = "Ascend910B1", template = "ffn", core_type = "mix"
// CHECK:         %ws_gu = buffer.workspace %gu_bytes : memref<?xf16, #buffer.space<gm>>
// CHECK:         %ws_g = buffer.workspace %g_bytes : memref<?xf16, #buffer.space<gm>>
// CHECK:         %acc = buffer.workspace %acc_bytes : memref<?xf32, #buffer.space<gm>>

// First pass (AIVs): acc = float32(residual), then every core meets.
// CHECK:         buffer.vcast
// CHECK:         buffer.copy %{{.*}} to %{{.*}} : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
// CHECK:         buffer.sync_all

// Main loop over the block's items: the AIC's gate/up into the slot, flag 0; the AIVs'
// SwiGLU into g, flag 1; the AIC's g @ W2 added into the accumulator by an atomic
// Fixpipe.
// CHECK:         scf.for %step =
// CHECK:           buffer.stage "cube" {
// CHECK:             buffer.mmad
// CHECK:           buffer.cross_core_set 0 from "aic" after "fix"
// CHECK:           buffer.cross_core_wait 0 on "aiv"
// CHECK:           buffer.cross_core_set 1 from "aiv" after "mte3"
// CHECK:           buffer.stage "cube" {
// CHECK-NEXT:        buffer.cross_core_wait 1 on "aic"
// CHECK:             buffer.copy %{{.*}} to %{{.*}} atomic true : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>

// Final pass (AIVs), after every band has added: y = round(acc).
// CHECK:         buffer.sync_all
// CHECK:         buffer.copy %{{.*}} : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
// CHECK:         buffer.vcast
// CHECK:         buffer.copy %{{.*}} : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK:         buffer.return

// A coupled chip has neither SyncAll nor the L0C -> GM atomic add.
// expected-error @+2 {{cannot lower fusion group swiglu_residual_kernel0 (graph.fusion_group %y): the ffn kernel needs a split chip (SyncAll<false> and the L0C -> GM atomic add of Atlas A2/A3); on Ascend910 graph.ffn stays a library op}}
func.func @swiglu_residual(%x: tensor<?x256xf16>, %wg: tensor<256x512xf16>, %wu: tensor<256x512xf16>, %wd: tensor<512x256xf16>, %h: tensor<?x256xf16>) -> tensor<?x256xf16> {
  %y = graph.fusion_group (%x_ = %x : tensor<?x256xf16>, %wg_ = %wg : tensor<256x512xf16>, %wu_ = %wu : tensor<256x512xf16>, %wd_ = %wd : tensor<512x256xf16>, %h_ = %h : tensor<?x256xf16>) -> (tensor<?x256xf16>) {
    %r = graph.ffn %x_, %wg_, %wu_, %wd_, %h_ {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<?x256xf16>, tensor<256x512xf16>, tensor<256x512xf16>, tensor<512x256xf16>, tensor<?x256xf16>) -> tensor<?x256xf16>
    graph.yield %r : tensor<?x256xf16>
  }
  func.return %y : tensor<?x256xf16>
}
