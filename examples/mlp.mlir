// A two-layer MLP in the graph dialect: x -> Linear(16, 32) -> GELU -> Linear(32, 8) -> softmax.
// Run it:  afc run examples/mlp.mlir --random-inputs 0
func.func @main(%x: tensor<4x16xf32> {graph.name = "x"}) -> (tensor<4x8xf32> {graph.name = "probs"}) {
  %w1 = graph.constant dense<0.05> : tensor<16x32xf32>
  %b1 = graph.constant dense<0.1> : tensor<32xf32>
  %w2 = graph.constant dense<-0.02> : tensor<32x8xf32>
  %b2 = graph.constant dense<[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]> : tensor<8xf32>
  %h = graph.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %hb = graph.add %h, %b1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %a = graph.gelu %hb {approximate = "none"} : tensor<4x32xf32>
  %o = graph.matmul %a, %w2 : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  %ob = graph.add %o, %b2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p = graph.softmax %ob {axis = -1} : tensor<4x8xf32>
  func.return %p : tensor<4x8xf32>
}
