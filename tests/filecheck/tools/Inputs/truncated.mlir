func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = graph.relu %a : tensor<4x
