// RUN: not afc-opt %s 2>&1 | filecheck %s

// A fusion group's plan must be for the module's target and fit its on-chip memories.

builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @unknown_space(%x: tensor<8xf32>) -> tensor<8xf32> {
    %r = graph.fusion_group (%x_1 = %x : tensor<8xf32>) -> tensor<8xf32> plan {target = #afc.target<"Ascend910B1">, footprint = {l9 = 1 : i64}} {
      %e = graph.exp %x_1 : tensor<8xf32>
      graph.yield %e : tensor<8xf32>
    }
    func.return %r : tensor<8xf32>
  }
}
// CHECK: 'graph.fusion_group' plan footprint names no space 'l9'
