// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 | filecheck %s

// Casts to and from the storage-only types (float8, int4) and data movement on them stay
// library ops, each with its reason (the vector unit computes no such type); the float
// ops around them still get their kernels.
// CHECK-DAG: ub-fusion: library op graph.cast %a: graph.cast works on f8E4M3FN; vector kernels compute floats
// CHECK-DAG: ub-fusion: library op graph.cast %b: graph.cast works on f8E4M3FN; vector kernels compute floats
// CHECK-DAG: ub-fusion: library op graph.transpose %t: graph.transpose works on f8E4M3FN; vector kernels compute floats
// CHECK-DAG: ub-fusion: library op graph.cast %q: graph.cast works on i4; vector kernels compute floats
// CHECK-LABEL: func.func @narrow
// CHECK:         %y = graph.fusion_group
// CHECK:         %a = graph.cast %y : tensor<4x64xf32> -> tensor<4x64xf8E4M3FN>
// CHECK-NEXT:    %t = graph.transpose %a {perm = [1, 0]} : tensor<4x64xf8E4M3FN> -> tensor<64x4xf8E4M3FN>
// CHECK-NEXT:    %b = graph.cast %t : tensor<64x4xf8E4M3FN> -> tensor<64x4xf32>
// CHECK-NEXT:    %c = graph.fusion_group
// CHECK:         %q = graph.cast %x : tensor<4x64xf32> -> tensor<4x64xi4>
func.func @narrow(%x: tensor<4x64xf32>) -> (tensor<64x4xf32>, tensor<4x64xi4>) {
  %y = graph.exp %x : tensor<4x64xf32>
  %a = graph.cast %y : tensor<4x64xf32> -> tensor<4x64xf8E4M3FN>
  %t = graph.transpose %a {perm = [1, 0]} : tensor<4x64xf8E4M3FN> -> tensor<64x4xf8E4M3FN>
  %b = graph.cast %t : tensor<64x4xf8E4M3FN> -> tensor<64x4xf32>
  %c = graph.mul %b, %b : tensor<64x4xf32>
  %q = graph.cast %x : tensor<4x64xf32> -> tensor<4x64xi4>
  func.return %c, %q : tensor<64x4xf32>, tensor<4x64xi4>
}
