func.func @main(%x: tensor<2x3xf32>, %i: tensor<3xi32>) -> tensor<2x3xf32> {
  %e = graph.exp %x : tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}
