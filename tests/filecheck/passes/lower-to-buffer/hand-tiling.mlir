// RUN: afc-opt %s -p lower-to-buffer | filecheck %s

// lower-to-buffer carries out a hand-edited tiling for every template: the template
// analyses the group's body and takes the tiling instead of searching for one, so the
// buffers follow it (each CHECK'd size is the tiling's) and the launch keeps the plan,
// completed with what the hand-written one lacks.

// The rows kernel's tile of 2048 elements: f32 queues of 2048 x 4 bytes.
// CHECK-LABEL: func.func @rows
// CHECK:       buffer.launch @rows_kernel0 {{.*}}afc.plan = {target = #afc.target<"Ascend910B1">, template = "rows", tiling = {split = 1 : i64, tile_elems = 2048 : i64}, footprint = {ub = {{[0-9]+}} : i64}, cost_us = {{.*}} : f64, reason = "planned by lower-to-buffer: the group had no tiling"}
// The attention's 32-row query block and 64-key block: Q [32 x 64], K [64 x 64] in f16.
// CHECK-LABEL: func.func @attention
// CHECK:       buffer.launch @attention_kernel1 {{.*}}afc.plan = {template = "attention", tiling = {epilogue_tile_elems = 2048 : i64, tkv = 64 : i64, tq = 32 : i64}, target = #afc.target<"Ascend910B1">, footprint = {{.*}}, cost_us = {{.*}}}
// The conv's 32 x 64 tile with 32-deep K steps: L0A [32 x 32], L0B [32 x 64] in f16.
// CHECK-LABEL: func.func @conv
// CHECK:       buffer.launch @conv_kernel2 {{.*}}afc.plan = {template = "conv", tiling = {c_depth = 1 : i64, cstep = 8 : i64, epilogue_tile_elems = 4096
// The ffn's 64 x 64 tiles with 32-deep K steps.
// CHECK-LABEL: func.func @ffn
// CHECK:       buffer.launch @ffn_kernel3 {{.*}}afc.plan = {template = "ffn", tiling = {act_tile_elems = 2048 : i64, bf = 256 : i64
// CHECK:       buffer.kernel @rows_kernel0(
// CHECK:         buffer.alloc_queue %{{.*}} buffers 2 max_bytes 8192 of f32 : !buffer.queue<vecin>
// CHECK:       buffer.kernel @attention_kernel1(
// CHECK:         %q_q1 = buffer.alloc_queue %{{.*}} buffers 1 max_bytes 4096 of f16 : !buffer.queue<a1>
// CHECK:         %q_k1 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 8192 of f16 : !buffer.queue<b1>
// CHECK:       buffer.kernel @conv_kernel2(
// CHECK:         %q_a2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 2048 of f16 : !buffer.queue<a2>
// CHECK:         %q_b2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 4096 of f16 : !buffer.queue<b2>
// CHECK:       buffer.kernel @ffn_kernel3(
// CHECK:         %q_a2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 4096 of f16 : !buffer.queue<a2>
// CHECK:         %q_b2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 4096 of f16 : !buffer.queue<b2>

builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @rows(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
    %r = graph.fusion_group (%x_1 = %x : tensor<64x256xf32>) -> tensor<64x256xf32> plan {target = #afc.target<"Ascend910B1">, template = "rows", tiling = {split = 1 : i64, tile_elems = 2048 : i64}} {
      %s = graph.softmax %x_1 {axis = -1} : tensor<64x256xf32>
      %e = graph.exp %s : tensor<64x256xf32>
      graph.yield %e : tensor<64x256xf32>
    }
    func.return %r : tensor<64x256xf32>
  }
  func.func @attention(%q: tensor<1x8x128x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x8x128x64xf16> {
    %r = graph.fusion_group (%q_1 = %q : tensor<1x8x128x64xf16>, %k_1 = %k : tensor<1x2x256x64xf16>, %v_1 = %v : tensor<1x2x256x64xf16>) -> tensor<1x8x128x64xf16> plan {template = "attention", tiling = {epilogue_tile_elems = 2048 : i64, tkv = 64 : i64, tq = 32 : i64}} {
      %a = graph.flash_attention %q_1, %k_1, %v_1 {scale = 0.125, causal = true, layout = "BNSD"} : (tensor<1x8x128x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>) -> tensor<1x8x128x64xf16>
      graph.yield %a : tensor<1x8x128x64xf16>
    }
    func.return %r : tensor<1x8x128x64xf16>
  }
  func.func @conv(%x: tensor<2x16x32x32xf16>, %w: tensor<32x16x3x3xf16>, %b: tensor<32xf16>) -> tensor<2x32x16x16xf16> {
    %r = graph.fusion_group (%x_1 = %x : tensor<2x16x32x32xf16>, %w_1 = %w : tensor<32x16x3x3xf16>, %b_1 = %b : tensor<32xf16>) -> tensor<2x32x16x16xf16> plan {template = "conv", tiling = {c_depth = 1 : i64, cstep = 8 : i64, epilogue_tile_elems = 4096 : i64, explicit = true, h_stage = 11 : i64, local = false, tk = 32 : i64, tm = 32 : i64, tn = 64 : i64}} {
      %c = graph.conv2d %x_1, %w_1, %b_1 {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, activation = "relu"} : (tensor<2x16x32x32xf16>, tensor<32x16x3x3xf16>, tensor<32xf16>) -> tensor<2x32x16x16xf16>
      graph.yield %c : tensor<2x32x16x16xf16>
    }
    func.return %r : tensor<2x32x16x16xf16>
  }
  func.func @ffn(%x: tensor<64x256xf16>, %wg: tensor<256x512xf16>, %wu: tensor<256x512xf16>, %wd: tensor<512x256xf16>, %h: tensor<64x256xf16>) -> tensor<64x256xf16> {
    %y = graph.fusion_group (%x_ = %x : tensor<64x256xf16>, %wg_ = %wg : tensor<256x512xf16>, %wu_ = %wu : tensor<256x512xf16>, %wd_ = %wd : tensor<512x256xf16>, %h_ = %h : tensor<64x256xf16>) -> (tensor<64x256xf16>) plan {template = "ffn", tiling = {act_tile_elems = 2048 : i64, bf = 256 : i64, init_tile_elems = 1024 : i64, out_tile_elems = 1024 : i64, step_k = 2 : i64, tk = 32 : i64, tm = 64 : i64, tn = 64 : i64}} {
      %r = graph.ffn %x_, %wg_, %wu_, %wd_, %h_ {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<64x256xf16>, tensor<256x512xf16>, tensor<256x512xf16>, tensor<512x256xf16>, tensor<64x256xf16>) -> tensor<64x256xf16>
      graph.yield %r : tensor<64x256xf16>
    }
    func.return %y : tensor<64x256xf16>
  }
}
