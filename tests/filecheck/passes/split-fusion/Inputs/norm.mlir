func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = graph.layer_norm %x, %g {axis = -1, epsilon = 1.0e-05} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
