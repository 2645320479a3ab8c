// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},graph-fusion' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},graph-fusion' | filecheck %s --check-prefix=COUPLED
// RUN: not afc-opt %s -p 'set-target{chip=Ascend999},graph-fusion' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// FFNFusionPass runs only for chips that run graph.ffn (split: Atlas A2/A3); on a
// coupled chip the projections stay matmuls (SwiGLU recognised, the rest unchanged).
// CHECK:         graph.ffn %x, %wg, %wu, %wd, %h {activation = "swiglu"
// CHECK-NOT:     graph.matmul
// COUPLED-NOT:   graph.ffn
// COUPLED:       graph.swiglu
// COUPLED:       graph.matmul %{{.*}}, %wd
// UNKNOWN:       unknown chip 'Ascend999'
func.func @mlp(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %g = graph.matmul %x, %wg : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = graph.sigmoid %g : tensor<4x16xf32>
  %a = graph.mul %g, %s : tensor<4x16xf32>
  %u = graph.matmul %x, %wu : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p = graph.mul %a, %u : tensor<4x16xf32>
  %d = graph.matmul %p, %wd : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y = graph.add %h, %d : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
