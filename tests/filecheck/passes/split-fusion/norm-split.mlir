// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=LayerNormSplitFusionPass,RmsNormSplitFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=LayerNormSplitFusionPass,RmsNormSplitFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=LayerNormSplitFusionPass max-duplicates=2}' | filecheck %s --check-prefix=MAXDUP

// The residual x is written to GM anyway (it is returned), and y gates two matmuls
// (y * (c_i @ v_i)). The whole norm cannot be a cube epilogue (it reduces rows), so it
// writes y for the two matmul kernels to read. Split, the statistics join the add's
// kernel and each matmul's epilogue recomputes its y from x and the per-row
// statistics (a norm apply is a cube epilogue op): the kernel that wrote y is gone.
// CHECK-LABEL: func.func @norm_into_gated_matmuls
// CHECK:         %[[X:.*]] = graph.add %a, %b
// CHECK-NEXT:    %[[M:.*]], %[[R:.*]] = graph.layer_norm_stats %[[X]] {axis = -1, epsilon = 1.000000e-05}
// CHECK-NEXT:    %[[Y0:.*]] = graph.layer_norm_apply %[[X]], %[[M]], %[[R]], %g, %be {axis = -1}
// CHECK-NEXT:    %[[Y1:.*]] = graph.layer_norm_apply %[[X]], %[[M]], %[[R]], %g, %be {axis = -1}
// CHECK:         graph.mul %[[Y0]], %m0
// CHECK:         graph.mul %[[Y1]], %m1
// CHECK-NOT:     graph.layer_norm %
// MAXDUP-LABEL: func.func @norm_into_gated_matmuls
// MAXDUP:         graph.layer_norm_stats
func.func @norm_into_gated_matmuls(%a: tensor<512x1024xf32>, %b: tensor<512x1024xf32>, %g: tensor<1024xf32>, %be: tensor<1024xf32>, %c0: tensor<512x256xf32>, %v0: tensor<256x1024xf32>, %c1: tensor<512x256xf32>, %v1: tensor<256x1024xf32>) -> (tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>) {
  %x = graph.add %a, %b : tensor<512x1024xf32>
  %y = graph.layer_norm %x, %g, %be {axis = -1, epsilon = 1.0e-05} : (tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %m0 = graph.matmul %c0, %v0 : (tensor<512x256xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
  %z0 = graph.mul %y, %m0 : tensor<512x1024xf32>
  %m1 = graph.matmul %c1, %v1 : (tensor<512x256xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
  %z1 = graph.mul %y, %m1 : tensor<512x1024xf32>
  func.return %z0, %z1, %x : tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>
}

// -----

// The RMS form in f16: the statistics are float32 (as the whole norm keeps them), and
// the applies in the matmul epilogues read them as such.
// CHECK-LABEL: func.func @f16_rms_norm_into_gated_matmuls
// CHECK:         %[[X:.*]] = graph.add %a, %b
// CHECK-NEXT:    %[[R:.*]] = graph.rms_norm_stats %[[X]] {axis = -1, epsilon = 1.000000e-06} : tensor<512x1024xf16> -> tensor<512x1xf32>
// CHECK-NEXT:    graph.rms_norm_apply %[[X]], %[[R]], %g {axis = -1} : (tensor<512x1024xf16>, tensor<512x1xf32>, tensor<1024xf16>) -> tensor<512x1024xf16>
// CHECK-NOT:     graph.rms_norm %
func.func @f16_rms_norm_into_gated_matmuls(%a: tensor<512x1024xf16>, %b: tensor<512x1024xf16>, %g: tensor<1024xf16>, %c0: tensor<512x256xf16>, %w0: tensor<256x1024xf16>, %c1: tensor<512x256xf16>, %w1: tensor<256x1024xf16>) -> (tensor<512x1024xf16>, tensor<512x1024xf16>, tensor<512x1024xf16>) {
  %x = graph.add %a, %b : tensor<512x1024xf16>
  %y = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<512x1024xf16>, tensor<1024xf16>) -> tensor<512x1024xf16>
  %m0 = graph.matmul %c0, %w0 : (tensor<512x256xf16>, tensor<256x1024xf16>) -> tensor<512x1024xf16>
  %z0 = graph.mul %y, %m0 : tensor<512x1024xf16>
  %m1 = graph.matmul %c1, %w1 : (tensor<512x256xf16>, tensor<256x1024xf16>) -> tensor<512x1024xf16>
  %z1 = graph.mul %y, %m1 : tensor<512x1024xf16>
  func.return %z0, %z1, %x : tensor<512x1024xf16>, tensor<512x1024xf16>, tensor<512x1024xf16>
}

// -----

// Negative (cost): the norm and its three consumers are one kernel already (ub-fusion
// merges them: the row vectors they re-read per tile come from L2), so the split has
// nothing to remove.
// CHECK-LABEL: func.func @consumers_in_the_norms_kernel
// CHECK:         graph.layer_norm %x, %g, %be
// LOG: not applied to graph.layer_norm %y: no estimated gain: the 5 ops around it take {{.*}} us in 1 kernels, {{.*}} us in 1 kernels when split
func.func @consumers_in_the_norms_kernel(%a: tensor<512x1024xf32>, %b: tensor<512x1024xf32>, %g: tensor<1024xf32>, %be: tensor<1024xf32>, %w0: tensor<512x1024xf32>, %w1: tensor<512x1024xf32>, %w2: tensor<512x1024xf32>) -> (tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>) {
  %x = graph.add %a, %b : tensor<512x1024xf32>
  %y = graph.layer_norm %x, %g, %be {axis = -1, epsilon = 1.0e-05} : (tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %z0 = graph.mul %y, %w0 : tensor<512x1024xf32>
  %z1 = graph.mul %y, %w1 : tensor<512x1024xf32>
  %z2 = graph.mul %y, %w2 : tensor<512x1024xf32>
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
