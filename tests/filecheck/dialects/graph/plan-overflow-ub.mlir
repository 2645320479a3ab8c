// RUN: not afc-opt %s 2>&1 | filecheck %s

// Every template's plan records its UB footprint, so the verifier checks a vector
// kernel's plan too: a hand-edited footprint past the target's UB is rejected.

builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @overflow(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %r = graph.fusion_group (%x_1 = %x : tensor<8x8xf32>) -> tensor<8x8xf32> plan {target = #afc.target<"Ascend910B1">, template = "rows", tiling = {split = 0 : i64, tile_elems = 7616 : i64}, footprint = {ub = 262144 : i64}} {
      %e = graph.exp %x_1 : tensor<8x8xf32>
      graph.yield %e : tensor<8x8xf32>
    }
    func.return %r : tensor<8x8xf32>
  }
}
// CHECK: 'graph.fusion_group' plan needs 262144 bytes of UB but Ascend910B1 has {{[0-9]+}}
