// An option error is about no op: it has no location.
// expected-error @unknown {{max-ops and max-inputs must be at least 1}}
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.relu %a : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
