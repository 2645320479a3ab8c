func.func @fine(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{never comes}}
  %c = graph.relu %a : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// -----
func.func @wrong_line(%a: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+2 {{result #0 has type}}
  %c = graph.relu %a : (tensor<4xf32>) -> tensor<5xf32>
  func.return %c : tensor<5xf32>
}
