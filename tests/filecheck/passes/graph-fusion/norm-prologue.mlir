// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RmsNormMatMulFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RmsNormMatMulFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// g folds into W (row k of W times g[k]); the product's rows are scaled by the
// statistics before the bias.
// CHECK-LABEL: func.func @fold
// CHECK:         %[[S:.*]] = graph.rms_norm_stats %x {axis = -1, epsilon = 1.000000e-06}
// CHECK-NEXT:    %[[W:.*]] = graph.constant {name = "w.normed"} dense<{{\[}}[2.000000e+00, 4.000000e+00], [-3.000000e+00, -1.000000e+00], [1.000000e+00, 1.000000e+00]]> : tensor<3x2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.matmul %x, %[[W]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[ONE:.*]] = graph.constant {name = "row_scale"} dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.rms_norm_apply %[[Y]], %[[S]], %[[ONE]] {axis = 1}
// CHECK-NEXT:    %[[Z:.*]] = graph.add %[[A]], %b
// CHECK-NOT:     graph.rms_norm %
// CHECK:         func.return %[[Z]]
func.func @fold(%x: tensor<4x3xf32>, %b: tensor<2xf32>) -> tensor<4x2xf32> {
  %g = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %w = graph.constant {name = "w"} dense<[[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]]> : tensor<3x2xf32>
  %n = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %n, %w, %b : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  func.return %z : tensor<4x2xf32>
}

// -----

// Shape-only weights (a 7B model planned without its values) give a shape-only folded
// weight; two matmuls on one norm each take their own statistics, and the norm goes.
// CHECK-LABEL: func.func @two_users_shape_only
// CHECK:         graph.rms_norm_stats %h
// CHECK:         graph.constant {name = "wq.normed"} shape_only : tensor<16x32xf16>
// CHECK:         graph.rms_norm_stats %h
// CHECK:         graph.constant {name = "wk.normed"} shape_only : tensor<16x8xf16>
// CHECK-NOT:     graph.rms_norm %
func.func @two_users_shape_only(%h: tensor<1x5x16xf16>) -> (tensor<1x5x32xf16>, tensor<1x5x8xf16>) {
  %g = graph.constant {name = "g"} shape_only : tensor<16xf16>
  %wq = graph.constant {name = "wq"} shape_only : tensor<16x32xf16>
  %wk = graph.constant {name = "wk"} shape_only : tensor<16x8xf16>
  %n = graph.rms_norm %h, %g {axis = -1, epsilon = 1.0e-06} : (tensor<1x5x16xf16>, tensor<16xf16>) -> tensor<1x5x16xf16>
  %q = graph.matmul %n, %wq : (tensor<1x5x16xf16>, tensor<16x32xf16>) -> tensor<1x5x32xf16>
  %k = graph.matmul %n, %wk : (tensor<1x5x16xf16>, tensor<16x8xf16>) -> tensor<1x5x8xf16>
  func.return %q, %k : tensor<1x5x32xf16>, tensor<1x5x8xf16>
}

// -----

// Negative: the weight is an argument, not a constant: g cannot fold into it.
// CHECK-LABEL: func.func @weight_not_constant
// CHECK:         graph.rms_norm %x
// CHECK-NOT:     graph.rms_norm_stats
// LOG: RmsNormMatMulFusionPass{{.*}}weight that is not a constant
func.func @weight_not_constant(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %g = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %n = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %n, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %z : tensor<4x2xf32>
}

// -----

// Negative: the norm's output is also a result of the function: it is computed anyway.
// CHECK-LABEL: func.func @norm_has_other_user
// CHECK:         graph.rms_norm %x
// CHECK-NOT:     graph.rms_norm_stats
// LOG: RmsNormMatMulFusionPass{{.*}}also feeds func.return
func.func @norm_has_other_user(%x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>) {
  %g = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]]> : tensor<3x2xf32>
  %n = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %n, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %z, %n : tensor<4x2xf32>, tensor<4x3xf32>
}

// -----

// Negative: a layer norm subtracts the mean: it is not a per-row scale of x.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         graph.layer_norm %x
// CHECK-NOT:     graph.rms_norm_stats
func.func @layer_norm(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %g = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]]> : tensor<3x2xf32>
  %n = graph.layer_norm %x, %g {axis = -1, epsilon = 1.0e-05} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %n, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %z : tensor<4x2xf32>
}

// -----

// Negative: an activation after the product would see unscaled rows.
// CHECK-LABEL: func.func @activation
// CHECK:         graph.rms_norm %x
// LOG: RmsNormMatMulFusionPass{{.*}}applies an activation
func.func @activation(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %g = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]]> : tensor<3x2xf32>
  %n = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %n, %w {activation = "relu"} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %z : tensor<4x2xf32>
}

// -----

// Negative: on a chip without AIVs of its own (Ascend910) the rule does not run.
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910},graph-fusion{only=RmsNormMatMulFusionPass}' | filecheck %s --check-prefix=COUPLED
// COUPLED-LABEL: func.func @coupled_chip
// COUPLED:         graph.rms_norm %x
// COUPLED-NOT:     graph.rms_norm_stats
func.func @coupled_chip(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %g = graph.constant dense<[2.0, -1.0, 0.5]> : tensor<3xf32>
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]]> : tensor<3x2xf32>
  %n = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.matmul %n, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %z : tensor<4x2xf32>
}
