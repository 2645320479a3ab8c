// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | afc-opt | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},ub-fusion' | filecheck %s --check-prefix=P3

// ub-fusion writes each group's plan as its properties: the chip it is for, the
// template, the template's tiling (every decision it makes: here the cube tiles and the
// epilogue's row tile, a vector kernel's view split and tile), the buffers' bytes per
// on-chip space at that tiling, the estimated time and why the group is one kernel. The
// plan round-trips (second RUN).
// CHECK:      graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>, %b_1 = %b : tensor<256xf16>) -> tensor<16x256xf16> plan {target = #afc.target<"Ascend910B1">, template = "matmul", tiling = {c_depth = 1 : i64, epilogue_tile_elems = 6528 : i64, step_k = 4 : i64, tk = 64 : i64, tm = 128 : i64, tn = 256 : i64}, footprint = {l0a = 32768 : i64, l0b = 65536 : i64, l0c = 131072 : i64, l1 = 393216 : i64, ub = 182784 : i64}, cost_us = {{.*}} : f64, reason = "2 ops in one matmul kernel save {{.*}} us (ATbeMatMulElemwiseFusionPass, TbeEltwiseFusionPass)"}
// CHECK:      graph.fusion_group (%x_1 = %x : tensor<8x8xf32>) -> tensor<8x8xf32> plan {target = #afc.target<"Ascend910B1">, template = "rows", tiling = {split = 0 : i64, tile_elems = 7616 : i64}, footprint = {ub = 182784 : i64}, cost_us = {{.*}} : f64, reason = "a single op: no merge with a neighbour was taken (remarks=true says why)"}

// On another chip the tiling follows its L0 and L1 sizes.
// P3:         plan {target = #afc.target<"Ascend310P3">, template = "matmul", tiling = {
func.func @f(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>, %b: tensor<256xf16>) -> tensor<16x256xf16> {
  %m = graph.matmul %x, %w : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
  %r = graph.add %m, %b : (tensor<16x256xf16>, tensor<256xf16>) -> tensor<16x256xf16>
  func.return %r : tensor<16x256xf16>
}

func.func @g(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = graph.exp %x : tensor<8x8xf32>
  func.return %e : tensor<8x8xf32>
}
