func.func @bad(%a: tensor<4xf32>) -> tensor<5xf32> {
  %c = graph.relu %a : (tensor<4xf32>) -> tensor<5xf32>
  func.return %c : tensor<5xf32>
}
