// RUN: not afc-opt %s 2>&1 | filecheck %s

// A fusion group's plan must be for the module's target and fit its on-chip memories.

builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @overflow(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {target = #afc.target<"Ascend910B1">, template = "matmul", footprint = {l0c = 262144 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}
// CHECK: 'graph.fusion_group' plan needs 262144 bytes of L0C but Ascend910B1 has 131072

