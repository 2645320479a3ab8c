// mycc's pass runs between afc's: graph-fusion, fold-unary-pairs, ub-fusion.
// RUN: %mycc-opt %s -p 'set-target{chip=Ascend910B1},graph-fusion,fold-unary-pairs,ub-fusion' | filecheck %s
// The same pipeline in MLIR's syntax, and from the library call (mycc.compile).
// RUN: %mycc-opt %s --pass-pipeline='builtin.module(set-target{chip=Ascend910B1},graph-fusion,fold-unary-pairs,ub-fusion)' | filecheck %s
// RUN: %mycc-compile %s | filecheck %s
// Without mycc's pass the repeated relu stays in the kernel.
// RUN: %afc-opt %s -p 'set-target{chip=Ascend910B1},graph-fusion,ub-fusion' | filecheck %s --check-prefix=AFC
// afc-opt does not know mycc's pass.
// RUN: not %afc-opt %s -p fold-unary-pairs 2>&1 | filecheck %s --check-prefix=UNKNOWN

// CHECK:       graph.fusion_group
// CHECK-NEXT:    %a = graph.add
// CHECK-NEXT:    %r1 = graph.relu %a
// CHECK-NEXT:    %e_1 = graph.exp %r1
// CHECK-NEXT:    graph.yield %e_1
// AFC:         graph.fusion_group
// AFC:           %r2 = graph.relu %r1
// UNKNOWN:     error: {{.*}}fold-unary-pairs
func.func @main(%x: tensor<4x64xf16>, %b: tensor<64xf16>) -> tensor<4x64xf16> {
  %a = graph.add %x, %b : (tensor<4x64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  %r1 = graph.relu %a : tensor<4x64xf16>
  %r2 = graph.relu %r1 : tensor<4x64xf16>
  %e = graph.exp %r2 : tensor<4x64xf16>
  func.return %e : tensor<4x64xf16>
}
