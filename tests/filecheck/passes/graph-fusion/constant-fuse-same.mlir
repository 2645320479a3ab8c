// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=TransposeReshapeConstFoldingPass,ConstantFuseSamePass}' | filecheck %s

// A rotary table read through one reshape per rope folds into one reshaped constant per
// reshape, each the same: ConstantFuseSamePass keeps the first, so both ropes read one
// tensor (and the QKV matmul's rope epilogue can take both).
// CHECK-LABEL: func.func @twin_tables
// CHECK:         %[[T:.*]] = graph.constant {name = "cos.reshaped"} dense<{{.*}}> : tensor<1x2x1x4xf32>
// CHECK-NOT:     graph.constant {name = "cos.reshaped"}
// CHECK:         graph.mul %q, %[[T]]
// CHECK-NEXT:    graph.mul %k, %[[T]]
func.func @twin_tables(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x1x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) {
  %cos = graph.constant {name = "cos"} dense<[[1.0, 0.5, 0.25, 0.125], [2.0, 1.5, 1.25, 1.125]]> : tensor<2x4xf32>
  %c1 = graph.reshape %cos {shape = [1, 2, 1, 4]} : tensor<2x4xf32> -> tensor<1x2x1x4xf32>
  %c2 = graph.reshape %cos {shape = [1, 2, 1, 4]} : tensor<2x4xf32> -> tensor<1x2x1x4xf32>
  %a = graph.mul %q, %c1 : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x3x4xf32>
  %b = graph.mul %k, %c2 : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  func.return %a, %b : tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>
}

// -----

// Must not fuse: constants that differ in their name (two shape-only weights, each its
// own tensor), in their values, or in their type.
// CHECK-LABEL: func.func @different
// CHECK:         graph.constant {name = "w1"} shape_only : tensor<4x4xf16>
// CHECK:         graph.constant {name = "w2"} shape_only : tensor<4x4xf16>
// CHECK:         graph.constant {name = "c"} dense<1.000000e+00> : tensor<4xf16>
// CHECK:         graph.constant {name = "c"} dense<2.000000e+00> : tensor<4xf16>
// CHECK:         graph.constant {name = "c"} dense<1.000000e+00> : tensor<4xf32>
func.func @different() -> (tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) {
  %w1 = graph.constant {name = "w1"} shape_only : tensor<4x4xf16>
  %w2 = graph.constant {name = "w2"} shape_only : tensor<4x4xf16>
  %a = graph.constant {name = "c"} dense<1.0> : tensor<4xf16>
  %b = graph.constant {name = "c"} dense<2.0> : tensor<4xf16>
  %c = graph.constant {name = "c"} dense<1.0> : tensor<4xf32>
  func.return %w1, %w2, %a, %b, %c : tensor<4x4xf16>, tensor<4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>
}

// -----

// Identical shape-only weights (one name: one weight) are one constant.
// CHECK-LABEL: func.func @same_weight
// CHECK:         %[[W:.*]] = graph.constant {name = "w"} shape_only : tensor<4x4xf16>
// CHECK-NOT:     graph.constant
// CHECK:         func.return %[[W]], %[[W]]
func.func @same_weight() -> (tensor<4x4xf16>, tensor<4x4xf16>) {
  %w1 = graph.constant {name = "w"} shape_only : tensor<4x4xf16>
  %w2 = graph.constant {name = "w"} shape_only : tensor<4x4xf16>
  func.return %w1, %w2 : tensor<4x4xf16>, tensor<4x4xf16>
}
