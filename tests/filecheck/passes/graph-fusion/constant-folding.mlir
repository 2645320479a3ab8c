// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=ConstantFoldingPass}' | filecheck %s

// Chains of ops on constants fold to one constant each, evaluated by the interpreter
// (a where() building an additive mask, an add then a mul, a split into two).
// CHECK-LABEL: func.func @fold_chains
// CHECK-DAG:     %[[M:.*]] = graph.constant {name = "keep.where"} dense<[0.000000e+00, -3.40282347e+38, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG:     %[[A:.*]] = graph.constant {name = "a.add.mul"} dense<[3.000000e+00, 9.000000e+00]> : tensor<2xf32>
// CHECK-DAG:     %[[S0:.*]] = graph.constant {name = "w.split_0"} dense<[1, 2]> : tensor<2xi64>
// CHECK-DAG:     %[[S1:.*]] = graph.constant {name = "w.split_1"} dense<3> : tensor<1xi64>
// CHECK-NOT:     graph.where
// CHECK-NOT:     graph.add
// CHECK-NOT:     graph.mul
// CHECK-NOT:     graph.split
// CHECK:         func.return %[[M]], %[[A]], %[[S0]], %[[S1]]
func.func @fold_chains() -> (tensor<3xf32>, tensor<2xf32>, tensor<2xi64>, tensor<1xi64>) {
  %keep = graph.constant {name = "keep"} dense<[true, false, true]> : tensor<3xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %low = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %m = graph.where %keep, %zero, %low : (tensor<3xi1>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
  %a = graph.constant {name = "a"} dense<[1.0, 2.0]> : tensor<2xf32>
  %b = graph.constant dense<[0.5, 2.5]> : tensor<2xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %s = graph.add %a, %b : tensor<2xf32>
  %p = graph.mul %s, %c : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %w = graph.constant {name = "w"} dense<[1, 2, 3]> : tensor<3xi64>
  %w0, %w1 = graph.split %w {axis = 0, sizes = [2, 1]} : tensor<3xi64> -> (tensor<2xi64>, tensor<1xi64>)
  func.return %m, %p, %w0, %w1 : tensor<3xf32>, tensor<2xf32>, tensor<2xi64>, tensor<1xi64>
}

// -----

// A weight used only by a transpose is replaced by its transposed copy (a blob, as the
// input weight); the interpreter's rounding to f16 is kept.
// CHECK-LABEL: func.func @blob_weight
// CHECK-NEXT:    %[[W:.*]] = graph.constant {name = "fc.weight.transpose"} dense_resource<fc.weight.transpose> : tensor<6x4xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.constant {name = "h.cast"} dense<[3.332520e-01, 1.000000e+04]> : tensor<2xf16>
// CHECK-NEXT:    func.return %[[W]], %[[H]]
func.func @blob_weight() -> (tensor<6x4xf32>, tensor<2xf16>) {
  %w = graph.constant {name = "fc.weight"} dense_resource<fc_weight> : tensor<4x6xf32>
  %t = graph.transpose %w {perm = [1, 0]} : tensor<4x6xf32> -> tensor<6x4xf32>
  %h = graph.constant {name = "h"} dense<[0.333333333, 10000.1]> : tensor<2xf32>
  %c = graph.cast %h : tensor<2xf32> -> tensor<2xf16>
  func.return %t, %c : tensor<6x4xf32>, tensor<2xf16>
}

{-#
  dialect_resources: {
    builtin: {
      fc_weight: "0x10000000000000000000003F0000803F0000C03F0000004000002040000040400000604000008040000090400000A0400000B0400000C0400000D0400000E0400000F0400000004100000841000010410000184100002041000028410000304100003841"
    }
  }
#-}

// -----

// Negatives: an expand of a scalar to 8192 elements (the folded constant would be far
// larger than the constant it replaces); a shape-only operand; a runtime operand.
// CHECK-LABEL: func.func @refusals
// CHECK:         graph.expand
// CHECK:         graph.mul
// CHECK:         graph.add
func.func @refusals(%x: tensor<2xf32>) -> (tensor<64x128xf32>, tensor<4xf16>, tensor<2xf32>) {
  %one = graph.constant dense<1.0> : tensor<f32>
  %e = graph.expand %one {shape = [64, 128]} : (tensor<f32>) -> tensor<64x128xf32>
  %w = graph.constant shape_only : tensor<4xf16>
  %h = graph.constant dense<2.0> : tensor<f16>
  %m = graph.mul %w, %h : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = graph.add %x, %c : tensor<2xf32>
  func.return %e, %m, %a : tensor<64x128xf32>, tensor<4xf16>, tensor<2xf32>
}

// -----

// A folded result whose elements are all equal stays a splat (no 32-element blob), and
// afc-opt prints a module whose first resource a pass created.
// CHECK-LABEL: func.func @splat_result
// CHECK:         %[[C:.*]] = graph.constant {name = "{{.*}}"} dense<20.085537> : tensor<4x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %x, %[[C]]
func.func @splat_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = graph.constant dense<1.5> : tensor<4x8xf32>
  %b = graph.constant dense<2.0> : tensor<4x8xf32>
  %c = graph.mul %a, %b : tensor<4x8xf32>
  %d = graph.exp %c : tensor<4x8xf32>
  %y = graph.add %x, %d : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// A non-splat result of more than 16 elements becomes a resource blob; afc-opt prints it.
// CHECK-LABEL: func.func @blob_result
// CHECK:         graph.constant {name = "{{.*}}"} dense_resource<{{.*}}> : tensor<4x8xf32>
// CHECK:       dialect_resources
func.func @blob_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = graph.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<1x8xf32>
  %b = graph.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  %c = graph.mul %a, %b : (tensor<1x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = graph.add %x, %c : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// A random draw on a constant is not folded: each run draws anew (graph_random.py).
// CHECK-LABEL: func.func @random_draw_stays
// CHECK:         %[[P:.*]] = graph.constant
// CHECK:         graph.bernoulli %[[P]]
// CHECK:         graph.random_uniform {
func.func @random_draw_stays() -> (tensor<2xf32>, tensor<2xf32>) {
  %p = graph.constant {name = "p"} dense<[0.5, 0.5]> : tensor<2xf32>
  %b = graph.bernoulli %p : tensor<2xf32>
  %u = graph.random_uniform {dtype = "f32", high = 1.0, low = 0.0, shape = [2]} : tensor<2xf32>
  func.return %b, %u : tensor<2xf32>, tensor<2xf32>
}
