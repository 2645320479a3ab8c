// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=LayerNormSplitFusionPass,RmsNormSplitFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=LayerNormSplitFusionPass,RmsNormSplitFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=LayerNormSplitFusionPass max-duplicates=2}' | filecheck %s --check-prefix=MAXDUP

// The residual x is written to GM anyway (it is returned), and y feeds three kernels that
// ub-fusion does not merge into the norm's. Split, the statistics join the add's kernel
// and each consumer recomputes y from x and the per-row statistics: the kernel that
// wrote y is gone.
// CHECK-LABEL: func.func @residual_norm_three_consumers
// CHECK:         %[[X:.*]] = graph.add %a, %b
// CHECK-NEXT:    %[[M:.*]], %[[R:.*]] = graph.layer_norm_stats %[[X]] {axis = -1, epsilon = 1.000000e-05}
// CHECK-NEXT:    %[[Y0:.*]] = graph.layer_norm_apply %[[X]], %[[M]], %[[R]], %g, %be {axis = -1}
// CHECK-NEXT:    %[[Y1:.*]] = graph.layer_norm_apply %[[X]], %[[M]], %[[R]], %g, %be {axis = -1}
// CHECK-NEXT:    %[[Y2:.*]] = graph.layer_norm_apply %[[X]], %[[M]], %[[R]], %g, %be {axis = -1}
// CHECK-NEXT:    graph.mul %[[Y0]], %w0
// CHECK-NEXT:    graph.mul %[[Y1]], %w1
// CHECK-NEXT:    graph.mul %[[Y2]], %w2
// CHECK-NOT:     graph.layer_norm %
// MAXDUP-LABEL: func.func @residual_norm_three_consumers
// MAXDUP:         graph.layer_norm %
func.func @residual_norm_three_consumers(%a: tensor<512x1024xf32>, %b: tensor<512x1024xf32>, %g: tensor<1024xf32>, %be: tensor<1024xf32>, %w0: tensor<512x1024xf32>, %w1: tensor<512x1024xf32>, %w2: tensor<512x1024xf32>) -> (tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>) {
  %x = graph.add %a, %b : tensor<512x1024xf32>
  %y = graph.layer_norm %x, %g, %be {axis = -1, epsilon = 1.0e-05} : (tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %z0 = graph.mul %y, %w0 : tensor<512x1024xf32>
  %z1 = graph.mul %y, %w1 : tensor<512x1024xf32>
  %z2 = graph.mul %y, %w2 : tensor<512x1024xf32>
  func.return %z0, %z1, %z2, %x : tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>
}

// -----

// The RMS form, with longer consumer chains: the whole norm's kernel does not take them
// all (ub-fusion estimates no benefit in merging more), so y is written and read back;
// split, with one apply shared by the three chains, they become one kernel with the
// statistics. The estimate picks the shared apply over one per user here.
// CHECK-LABEL: func.func @residual_rms_norm_three_consumers
// CHECK:         %[[X:.*]] = graph.relu %a
// CHECK-NEXT:    %[[R:.*]] = graph.rms_norm_stats %[[X]] {axis = -1, epsilon = 1.000000e-06}
// CHECK-NEXT:    %[[Y:.*]] = graph.rms_norm_apply %[[X]], %[[R]], %g {axis = -1}
// CHECK-COUNT-3: graph.mul %[[Y]], %u
// CHECK-NOT:     graph.rms_norm
func.func @residual_rms_norm_three_consumers(%a: tensor<512x1024xf32>, %g: tensor<1024xf32>, %u0: tensor<512x1024xf32>, %v0: tensor<512x1024xf32>, %u1: tensor<512x1024xf32>, %v1: tensor<512x1024xf32>, %u2: tensor<512x1024xf32>, %v2: tensor<512x1024xf32>) -> (tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>) {
  %x = graph.relu %a : tensor<512x1024xf32>
  %y = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<512x1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %p0 = graph.mul %y, %u0 : tensor<512x1024xf32>
  %z0 = graph.mul %p0, %v0 : tensor<512x1024xf32>
  %p1 = graph.mul %y, %u1 : tensor<512x1024xf32>
  %z1 = graph.mul %p1, %v1 : tensor<512x1024xf32>
  %p2 = graph.mul %y, %u2 : tensor<512x1024xf32>
  %z2 = graph.mul %p2, %v2 : tensor<512x1024xf32>
  func.return %z0, %z1, %z2, %x : tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>
}

// -----

// Negative (cost): the norm's input comes from a matmul and its output feeds a matmul.
// Neither cube op takes a half: the statistics are a reduction (no cube epilogue) and
// cube ops read their operands from GM (no prologue), so the split gains nothing.
// CHECK-LABEL: func.func @between_matmuls
// CHECK:         graph.rms_norm %x, %g
// CHECK-NOT:     graph.rms_norm_stats
// LOG: not applied to graph.rms_norm %y: no estimated gain: the {{[0-9]+}} ops around it take {{.*}} us in 3 kernels, {{.*}} us in {{[0-9]+}} kernels when split
func.func @between_matmuls(%a: tensor<512x256xf32>, %w: tensor<256x1024xf32>, %g: tensor<1024xf32>, %w2: tensor<1024x256xf32>) -> (tensor<512x1024xf32>, tensor<512x256xf32>) {
  %x = graph.matmul %a, %w : (tensor<512x256xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
  %y = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-05} : (tensor<512x1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %z = graph.matmul %y, %w2 : (tensor<512x1024xf32>, tensor<1024x256xf32>) -> tensor<512x256xf32>
  %r = graph.relu %y : tensor<512x1024xf32>
  func.return %r, %z : tensor<512x1024xf32>, tensor<512x256xf32>
}

// -----

// Negative (cost): one elementwise chain around the norm is already one kernel.
// CHECK-LABEL: func.func @one_kernel_already
// CHECK:         graph.layer_norm %x, %g
// LOG: not applied to graph.layer_norm %y: no estimated gain
func.func @one_kernel_already(%a: tensor<64x256xf32>, %b: tensor<64x256xf32>, %g: tensor<256xf32>) -> tensor<64x256xf32> {
  %x = graph.add %a, %b : tensor<64x256xf32>
  %y = graph.layer_norm %x, %g {axis = -1, epsilon = 1.0e-05} : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
  %z = graph.relu %y : tensor<64x256xf32>
  func.return %z : tensor<64x256xf32>
}

// -----

// Negative (precondition): f16 statistics would be rounded to f16.
// CHECK-LABEL: func.func @f16_norm
// CHECK:         graph.layer_norm %x, %g
// LOG: not applied to graph.layer_norm %y: the statistics of a f16 norm would be stored in f16 (the whole norm keeps them in float32)
func.func @f16_norm(%x: tensor<512x1024xf16>, %g: tensor<1024xf16>, %w0: tensor<512x1024xf16>, %w1: tensor<512x1024xf16>) -> (tensor<512x1024xf16>, tensor<512x1024xf16>, tensor<512x1024xf16>) {
  %y = graph.layer_norm %x, %g {axis = -1, epsilon = 1.0e-05} : (tensor<512x1024xf16>, tensor<1024xf16>) -> tensor<512x1024xf16>
  %z0 = graph.mul %y, %w0 : tensor<512x1024xf16>
  %z1 = graph.mul %y, %w1 : tensor<512x1024xf16>
  func.return %z0, %z1, %x : tensor<512x1024xf16>, tensor<512x1024xf16>, tensor<512x1024xf16>
}
