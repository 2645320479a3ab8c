// split-fusion's cost gate estimates with ub-fusion's Partitioner under the policy that
// split-fusion's options make, the same options as ub-fusion's (`afc compile -O N` gives
// both the caps of its level). Here each matmul's epilogue can recompute y from the norm's
// statistics only if a kernel may read 7 inputs (c, v, x, mean, rstd, gamma, beta): under
// max-inputs=6 the split gains nothing, and the norm stays whole.
// RUN: afc-opt %s -p 'split-fusion{only=LayerNormSplitFusionPass}' | filecheck %s
// RUN: afc-opt %s -p 'split-fusion{only=LayerNormSplitFusionPass max-inputs=6 log=true}' 2>%t.log | filecheck %s --check-prefix=CAPPED
// RUN: filecheck %s --check-prefix=WHY < %t.log
// ub-fusion under the same caps indeed leaves the applies out of the matmul kernels:
// RUN: afc-opt %s -p 'split-fusion{only=LayerNormSplitFusionPass},ub-fusion{max-inputs=6}' | filecheck %s --check-prefix=UB6

// CHECK-LABEL: func.func @norm_into_gated_matmuls
// CHECK:         graph.layer_norm_stats
// CHECK-COUNT-2: graph.layer_norm_apply
// CHECK-NOT:     graph.layer_norm %

// CAPPED-LABEL: func.func @norm_into_gated_matmuls
// CAPPED:         graph.layer_norm %x, %g, %be
// CAPPED-NOT:     graph.layer_norm_stats

// WHY: not applied to graph.layer_norm %y: no estimated gain

// UB6:      graph.fusion_group (%c0_1 = %c0 : tensor<512x256xf32>, %v0_1 = %v0 : tensor<256x1024xf32>) -> tensor<512x1024xf32> plan {{.*}}template = "matmul"
// UB6-NEXT:   graph.matmul
// UB6-NEXT:   graph.yield
func.func @norm_into_gated_matmuls(%a: tensor<512x1024xf32>, %b: tensor<512x1024xf32>, %g: tensor<1024xf32>, %be: tensor<1024xf32>, %c0: tensor<512x256xf32>, %v0: tensor<256x1024xf32>, %c1: tensor<512x256xf32>, %v1: tensor<256x1024xf32>) -> (tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>) {
  %x = graph.add %a, %b : tensor<512x1024xf32>
  %y = graph.layer_norm %x, %g, %be {axis = -1, epsilon = 1.0e-05} : (tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %m0 = graph.matmul %c0, %v0 : (tensor<512x256xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
  %z0 = graph.mul %y, %m0 : tensor<512x1024xf32>
  %m1 = graph.matmul %c1, %v1 : (tensor<512x256xf32>, tensor<256x1024xf32>) -> tensor<512x1024xf32>
  %z1 = graph.mul %y, %m1 : tensor<512x1024xf32>
  func.return %z0, %z1, %x : tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>
}

