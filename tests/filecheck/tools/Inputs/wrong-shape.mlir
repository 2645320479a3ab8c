func.func @f(%a: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = graph.relu %a : tensor<4x8xf32>
  %m = graph.matmul %r, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %m : tensor<4x8xf32>
}
