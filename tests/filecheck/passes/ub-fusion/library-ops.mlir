// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 | filecheck %s

// Ops without a kernel stay library ops, each with its reason, and their consumers still
// fuse: the indexing ops (opaque) and a flash attention with a softcap, which the
// attention kernel does not compute.
// CHECK: ub-fusion: library op graph.gather_elements %g: graph.gather_elements has no vector kernel
// CHECK: ub-fusion: library op graph.flash_attention %a: a softcap (the attention kernel has no tanh cap on its scores)
// CHECK: ub-fusion: library op graph.non_zero %n: graph.non_zero has no vector kernel
// CHECK-LABEL: func.func @library
// CHECK:         %g = graph.gather_elements %x, %i
// CHECK-NEXT:    %e = graph.fusion_group (%g_1 = %g : tensor<3x2xf32>)
// CHECK:         %a = graph.flash_attention %q, %q, %q {{.*}}softcap = 3.000000e+01
// CHECK-NEXT:    %r = graph.fusion_group (%a_1 = %a : tensor<1x2x16x64xf16>)
// CHECK:         %n = graph.non_zero %x
// CHECK-NEXT:    func.return
func.func @library(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %q: tensor<1x2x16x64xf16>) -> (tensor<3x2xf32>, tensor<1x2x16x64xf16>, tensor<2x?xi64>) {
  %g = graph.gather_elements %x, %i {axis = 1} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %e = graph.exp %g : tensor<3x2xf32>
  %a = graph.flash_attention %q, %q, %q {scale = 0.125, causal = false, layout = "BNSD", softcap = 30.0} : tensor<1x2x16x64xf16>
  %r = graph.relu %a : tensor<1x2x16x64xf16>
  %n = graph.non_zero %x : tensor<3x4xf32> -> tensor<2x?xi64>
  func.return %e, %r, %n : tensor<3x2xf32>, tensor<1x2x16x64xf16>, tensor<2x?xi64>
}
