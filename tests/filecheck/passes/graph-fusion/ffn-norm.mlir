// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RmsNormFfnFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RmsNormFfnFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// g folds into both gate/up weights (row k times g[k]); the ffn reads h, which stays its
// residual, and carries the norm's epsilon.
// CHECK-LABEL: func.func @fold
// CHECK:         %[[G:.*]] = graph.constant {name = "wg.normed"} dense<{{\[}}[2.000000e+00, 4.000000e+00], [-3.000000e+00, -1.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[U:.*]] = graph.constant {name = "wu.normed"} dense<{{\[}}[2.000000e+00, 0.000000e+00], [-0.000000e+00, -1.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %y = graph.ffn %h, %[[G]], %[[U]], %wd, %h {activation = "swiglu", norm_epsilon = 1.000000e-06, operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>}
// CHECK-NOT:     graph.rms_norm
// CHECK:         func.return %y
func.func @fold(%h: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %g = graph.constant dense<[2.0, -1.0]> : tensor<2xf32>
  %wg = graph.constant {name = "wg"} dense<[[1.0, 2.0], [3.0, 1.0]]> : tensor<2x2xf32>
  %wu = graph.constant {name = "wu"} dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %wd = graph.constant {name = "wd"} dense<[[1.0, 0.5], [0.5, 1.0]]> : tensor<2x2xf32>
  %n = graph.rms_norm %h, %g {axis = -1, epsilon = 1.0e-06} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %y = graph.ffn %n, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// Negative: the gate weight is an argument, not a constant: g cannot fold into it.
// CHECK-LABEL: func.func @weight_not_constant
// CHECK:         graph.rms_norm %h
// CHECK-NOT:     norm_epsilon
// LOG: RmsNormFfnFusionPass{{.*}}gate/up weight of the ffn is not a constant
func.func @weight_not_constant(%h: tensor<3x2xf32>, %wg: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %g = graph.constant dense<[2.0, -1.0]> : tensor<2xf32>
  %wu = graph.constant {name = "wu"} dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %wd = graph.constant {name = "wd"} dense<[[1.0, 0.5], [0.5, 1.0]]> : tensor<2x2xf32>
  %n = graph.rms_norm %h, %g {axis = -1, epsilon = 1.0e-06} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %y = graph.ffn %n, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// Negative: the normalised h is also a result of the function: the norm is computed anyway.
// CHECK-LABEL: func.func @norm_has_other_user
// CHECK:         graph.rms_norm %h
// CHECK-NOT:     norm_epsilon
// LOG: RmsNormFfnFusionPass{{.*}}also feeds func.return
func.func @norm_has_other_user(%h: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %g = graph.constant dense<[2.0, -1.0]> : tensor<2xf32>
  %wg = graph.constant {name = "wg"} dense<[[1.0, 2.0], [3.0, 1.0]]> : tensor<2x2xf32>
  %wu = graph.constant {name = "wu"} dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %wd = graph.constant {name = "wd"} dense<[[1.0, 0.5], [0.5, 1.0]]> : tensor<2x2xf32>
  %n = graph.rms_norm %h, %g {axis = -1, epsilon = 1.0e-06} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %y = graph.ffn %n, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %y, %n : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Negative: a coupled chip (Ascend910) has no ffn kernel: the rule does not run.
// CHECK-LABEL: func.func @coupled_chip
// CHECK:         graph.rms_norm %h
// CHECK-NOT:     norm_epsilon
module attributes {afc.target = #afc.target<"Ascend910">} {
func.func @coupled_chip(%h: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %g = graph.constant dense<[2.0, -1.0]> : tensor<2xf32>
  %wg = graph.constant {name = "wg"} dense<[[1.0, 2.0], [3.0, 1.0]]> : tensor<2x2xf32>
  %wu = graph.constant {name = "wu"} dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %wd = graph.constant {name = "wd"} dense<[[1.0, 0.5], [0.5, 1.0]]> : tensor<2x2xf32>
  %n = graph.rms_norm %h, %g {axis = -1, epsilon = 1.0e-06} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %y = graph.ffn %n, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
}
