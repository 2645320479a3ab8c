// RUN: echo '{"Switch": {"UBFusion": {"ALL": "off"}}}' > %t.all-off.json
// RUN: afc-opt %s -p 'ub-fusion{switch-file="%t.all-off.json"}' | filecheck %s --check-prefix=NONE
// RUN: echo '{"Switch": {"UBFusion": {"AutomaticUbFusion": "off"}}}' > %t.auto-off.json
// RUN: afc-opt %s -p 'ub-fusion{switch-file="%t.auto-off.json"}' | filecheck %s --check-prefix=NONE
// RUN: echo 'TbeReduceElemwiseFusionPass:off' > %t.reduce-off.cfg
// RUN: afc-opt %s -p 'ub-fusion{switch-file="%t.reduce-off.cfg"}' | filecheck %s --check-prefix=NOREDUCE
// RUN: afc-opt %s -p 'ub-fusion' | filecheck %s --check-prefix=ALL

// The UBFusion section of the switch file turns the grouping, or one of its rules, off.
// NONE-COUNT-4:  graph.fusion_group
// NOREDUCE:      graph.fusion_group
// NOREDUCE:        graph.exp
// NOREDUCE:        graph.mul
// NOREDUCE:      graph.fusion_group
// NOREDUCE:        graph.reduce_sum
// NOREDUCE:      graph.fusion_group
// NOREDUCE:        graph.div
// ALL-COUNT-1:   graph.fusion_group
// ALL-NOT:       graph.fusion_group
func.func @softmax_by_hand(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %e = graph.exp %x : tensor<4x128xf32>
  %k = graph.constant dense<0.5> : tensor<f32>
  %h = graph.mul %e, %k : (tensor<4x128xf32>, tensor<f32>) -> tensor<4x128xf32>
  %s = graph.reduce_sum %h {axes = [1], keepdims = true} : tensor<4x128xf32> -> tensor<4x1xf32>
  %y = graph.div %h, %s : (tensor<4x128xf32>, tensor<4x1xf32>) -> tensor<4x128xf32>
  func.return %y : tensor<4x128xf32>
}
