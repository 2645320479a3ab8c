// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | afc-opt -p lower-to-buffer | filecheck %s --check-prefix=LOWERED

// ub-fusion writes every template's plan: its tiling holds every decision the template
// makes (the cube tiles, the row tiles of the vector side, a vector kernel's view), the
// footprint every on-chip space it takes. lower-to-buffer carries the tiling out as is
// and keeps the plan on the launch (afc.plan), where the report reads it.

// CHECK-LABEL: func.func @conv
// CHECK:       plan {target = #afc.target<"Ascend910B1">, template = "conv", tiling = {c_depth = {{[0-9]+}} : i64, cstep = {{[0-9]+}} : i64, epilogue_tile_elems = {{[0-9]+}} : i64, explicit = true, h_stage = {{[0-9]+}} : i64, local = false, tk = {{[0-9]+}} : i64, tm = {{[0-9]+}} : i64, tn = {{[0-9]+}} : i64}, footprint = {l0a = {{[0-9]+}} : i64, l0b = {{[0-9]+}} : i64, l0c = {{[0-9]+}} : i64, l1 = {{[0-9]+}} : i64, ub = {{[0-9]+}} : i64}, cost_us = {{.*}} : f64, reason = "{{.*}}"}
// LOWERED-LABEL: func.func @conv
// LOWERED:     buffer.launch @conv_kernel0 {{.*}}afc.plan = {target = #afc.target<"Ascend910B1">, template = "conv", tiling = {c_depth
func.func @conv(%x: tensor<2x16x32x32xf16>, %w: tensor<32x16x3x3xf16>, %b: tensor<32xf16>) -> tensor<2x32x16x16xf16> {
  %c = graph.conv2d %x, %w, %b {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, activation = "relu"} : (tensor<2x16x32x32xf16>, tensor<32x16x3x3xf16>, tensor<32xf16>) -> tensor<2x32x16x16xf16>
  func.return %c : tensor<2x32x16x16xf16>
}

// CHECK-LABEL: func.func @attention
// CHECK:       plan {target = #afc.target<"Ascend910B1">, template = "attention", tiling = {epilogue_tile_elems = {{[0-9]+}} : i64, tkv = {{[0-9]+}} : i64, tq = {{[0-9]+}} : i64}, footprint = {l0a = {{[0-9]+}} : i64, l0b = {{[0-9]+}} : i64, l0c = {{[0-9]+}} : i64, l1 = {{[0-9]+}} : i64, ub = {{[0-9]+}} : i64}, cost_us = {{.*}} : f64, reason = "{{.*}}"}
// LOWERED-LABEL: func.func @attention
// LOWERED:     buffer.launch @attention_kernel1 {{.*}}afc.plan = {target = #afc.target<"Ascend910B1">, template = "attention", tiling = {epilogue_tile_elems
func.func @attention(%q: tensor<1x8x128x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>, %m: tensor<1x1x1x256xi1>) -> tensor<1x8x128x64xf16> {
  %a = graph.flash_attention %q, %k, %v, %m {scale = 0.125, causal = true, layout = "BNSD"} : (tensor<1x8x128x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>, tensor<1x1x1x256xi1>) -> tensor<1x8x128x64xf16>
  func.return %a : tensor<1x8x128x64xf16>
}

// CHECK-LABEL: func.func @ffn
// CHECK:       plan {target = #afc.target<"Ascend910B1">, template = "ffn", tiling = {act_tile_elems = {{[0-9]+}} : i64, bf = {{[0-9]+}} : i64, init_tile_elems = {{[0-9]+}} : i64, out_tile_elems = {{[0-9]+}} : i64, step_k = {{[0-9]+}} : i64, tk = {{[0-9]+}} : i64, tm = {{[0-9]+}} : i64, tn = {{[0-9]+}} : i64}, footprint = {l0a = {{[0-9]+}} : i64, l0b = {{[0-9]+}} : i64, l0c = {{[0-9]+}} : i64, l1 = {{[0-9]+}} : i64, ub = {{[0-9]+}} : i64}, cost_us = {{.*}} : f64, reason = "{{.*}}"}
// LOWERED-LABEL: func.func @ffn
// LOWERED:     buffer.launch @ffn_kernel2 {{.*}}afc.plan = {target = #afc.target<"Ascend910B1">, template = "ffn", tiling = {act_tile_elems
func.func @ffn(%x: tensor<64x256xf16>, %wg: tensor<256x512xf16>, %wu: tensor<256x512xf16>, %wd: tensor<512x256xf16>, %h: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = graph.ffn %x, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<64x256xf16>, tensor<256x512xf16>, tensor<256x512xf16>, tensor<512x256xf16>, tensor<64x256xf16>) -> tensor<64x256xf16>
  func.return %r : tensor<64x256xf16>
}

// CHECK-LABEL: func.func @rows
// CHECK:       plan {target = #afc.target<"Ascend910B1">, template = "rows", tiling = {split = 1 : i64, tile_elems = {{[0-9]+}} : i64}, footprint = {ub = {{[0-9]+}} : i64}, cost_us = {{.*}} : f64, reason = "2 ops in one rows kernel{{.*}}"}
// LOWERED-LABEL: func.func @rows
// LOWERED:     buffer.launch @rows_kernel3 {{.*}}afc.plan = {target = #afc.target<"Ascend910B1">, template = "rows", tiling = {split = 1 : i64, tile_elems
func.func @rows(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %s = graph.softmax %x {axis = -1} : tensor<64x256xf32>
  %e = graph.exp %s : tensor<64x256xf32>
  func.return %e : tensor<64x256xf32>
}
