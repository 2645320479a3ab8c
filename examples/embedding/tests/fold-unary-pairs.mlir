// RUN: %mycc-opt %s -p fold-unary-pairs | filecheck %s
// RUN: %mycc-opt %s -p fold-unary-pairs --print-op-generic | %mycc-opt -p fold-unary-pairs | filecheck %s --check-prefix=AGAIN

// relu and abs are idempotent: the second one goes; neg(neg(x)) is x: both go.
// CHECK-LABEL: func.func @pairs
// CHECK-NEXT:    %r1 = graph.relu %x : tensor<4x64xf16>
// CHECK-NEXT:    %a1 = graph.abs %r1 : tensor<4x64xf16>
// CHECK-NEXT:    %e = graph.exp %a1 : tensor<4x64xf16>
// CHECK-NEXT:    func.return %e : tensor<4x64xf16>
// AGAIN-LABEL: func.func @pairs
// AGAIN-NEXT:    graph.relu
// AGAIN-NEXT:    graph.abs
// AGAIN-NEXT:    graph.exp
func.func @pairs(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r1 = graph.relu %x : tensor<4x64xf16>
  %r2 = graph.relu %r1 : tensor<4x64xf16>
  %a1 = graph.abs %r2 : tensor<4x64xf16>
  %a2 = graph.abs %a1 : tensor<4x64xf16>
  %n1 = graph.neg %a2 : tensor<4x64xf16>
  %n2 = graph.neg %n1 : tensor<4x64xf16>
  %e = graph.exp %n2 : tensor<4x64xf16>
  func.return %e : tensor<4x64xf16>
}

// Different ops in a row are not a pair.
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    %n = graph.neg %r
// CHECK-NEXT:    %a = graph.abs %n
func.func @mixed(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = graph.relu %x : tensor<8xf32>
  %n = graph.neg %r : tensor<8xf32>
  %a = graph.abs %n : tensor<8xf32>
  func.return %a : tensor<8xf32>
}
