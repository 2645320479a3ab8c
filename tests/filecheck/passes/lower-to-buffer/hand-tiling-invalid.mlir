// RUN: afc-opt %s --split-input-file -p lower-to-buffer --verify-diagnostics

// A hand-edited tiling lower-to-buffer cannot carry out is a one-line error at the group,
// naming what does not fit or what is missing; lower-to-buffer never searches for another.

// A tiling lacking a decision.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @missing(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    // expected-error @+1 {{cannot lower fusion group missing_kernel0 (graph.fusion_group %r): a matmul tiling has c_depth, step_k, tk, tm, tn (missing tm, unknown nothing)}}
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {template = "matmul", tiling = {c_depth = 1 : i64, step_k = 4 : i64, tk = 64 : i64, tn = 128 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

// -----

// Cube tiles are whole fractals.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @unaligned(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    // expected-error @+1 {{cannot lower fusion group unaligned_kernel0 (graph.fusion_group %r): matmul tiles tm, tn, tk must be multiples of 16}}
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {template = "matmul", tiling = {c_depth = 1 : i64, step_k = 4 : i64, tk = 64 : i64, tm = 100 : i64, tn = 128 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

// -----

// A tile size given as a flag.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @flag(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    // expected-error @+1 {{cannot lower fusion group flag_kernel0 (graph.fusion_group %r): the matmul tiling's tn must be a positive integer}}
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {template = "matmul", tiling = {c_depth = 1 : i64, step_k = 4 : i64, tk = 64 : i64, tm = 128 : i64, tn = true}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

// -----

// Tiles that overflow L0C.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @l0c(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    // expected-error @+1 {{cannot lower fusion group l0c_kernel0 (graph.fusion_group %r): the tiling needs 524288 bytes of L0C, Ascend910B1 has 131072}}
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {template = "matmul", tiling = {c_depth = 2 : i64, step_k = 4 : i64, tk = 64 : i64, tm = 256 : i64, tn = 256 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

// -----

// A row tile larger than the UB budget of the group's buffers.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @rows_budget(%x: tensor<?x64xf16>, %b: tensor<64xf16>) -> tensor<?x64xf16> {
    // expected-error @+1 {{cannot lower fusion group rows_budget_kernel0 (graph.fusion_group %r): the tiling's tile_elems = 65536 exceeds the 6528 elements whose buffers fit UB}}
    %r = graph.fusion_group (%x_1 = %x : tensor<?x64xf16>, %b_1 = %b : tensor<64xf16>) -> tensor<?x64xf16> plan {template = "rows", tiling = {split = 1 : i64, tile_elems = 65536 : i64}} {
      %a = graph.add %x_1, %b_1 : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
      %y = graph.gelu %a {approximate = "tanh"} : tensor<?x64xf16>
      graph.yield %y : tensor<?x64xf16>
    }
    func.return %r : tensor<?x64xf16>
  }
}

// -----

// A row tile within the budget whose buffers, as emitted, exceed UB (ub-fusion records 4864).
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @rows_emitted(%x: tensor<?x64xf16>, %b: tensor<64xf16>) -> tensor<?x64xf16> {
    // expected-error @+1 {{cannot lower fusion group rows_emitted_kernel0 (graph.fusion_group %r): its buffers as emitted exceed the Ascend910B1 UB at its tiling; they fit at tile_elems = 4864}}
    %r = graph.fusion_group (%x_1 = %x : tensor<?x64xf16>, %b_1 = %b : tensor<64xf16>) -> tensor<?x64xf16> plan {template = "rows", tiling = {split = 1 : i64, tile_elems = 6528 : i64}} {
      %a = graph.add %x_1, %b_1 : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
      %y = graph.gelu %a {approximate = "tanh"} : tensor<?x64xf16>
      graph.yield %y : tensor<?x64xf16>
    }
    func.return %r : tensor<?x64xf16>
  }
}

// -----

// A view split the group has not.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @rows_split(%x: tensor<?x64xf16>, %b: tensor<64xf16>) -> tensor<?x64xf16> {
    // expected-error @+1 {{cannot lower fusion group rows_split_kernel0 (graph.fusion_group %r): the group has no rows x columns view split at dim 2}}
    %r = graph.fusion_group (%x_1 = %x : tensor<?x64xf16>, %b_1 = %b : tensor<64xf16>) -> tensor<?x64xf16> plan {template = "rows", tiling = {split = 2 : i64, tile_elems = 2048 : i64}} {
      %a = graph.add %x_1, %b_1 : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
      %y = graph.gelu %a {approximate = "tanh"} : tensor<?x64xf16>
      graph.yield %y : tensor<?x64xf16>
    }
    func.return %r : tensor<?x64xf16>
  }
}

// -----

// A tile that cannot hold a reduced row.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @rows_reduced(%x: tensor<8x4096xf32>) -> tensor<8x4096xf32> {
    // expected-error @+1 {{cannot lower fusion group rows_reduced_kernel0 (graph.fusion_group %r): the tiling's tile_elems = 2048 cannot hold a reduced row of 4096}}
    %r = graph.fusion_group (%x_1 = %x : tensor<8x4096xf32>) -> tensor<8x4096xf32> plan {template = "rows", tiling = {split = 1 : i64, tile_elems = 2048 : i64}} {
      %s = graph.softmax %x_1 {axis = -1} : tensor<8x4096xf32>
      graph.yield %s : tensor<8x4096xf32>
    }
    func.return %r : tensor<8x4096xf32>
  }
}

// -----

// Query and key blocks that overflow L1/L0.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @attention(%q: tensor<1x8x128x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x8x128x64xf16> {
    // expected-error @+1 {{cannot lower fusion group attention_kernel0 (graph.fusion_group %r): the tiling needs 589824 bytes of L0A, Ascend910B1 has 65536}}
    %r = graph.fusion_group (%q_1 = %q : tensor<1x8x128x64xf16>, %k_1 = %k : tensor<1x2x256x64xf16>, %v_1 = %v : tensor<1x2x256x64xf16>) -> tensor<1x8x128x64xf16> plan {template = "attention", tiling = {epilogue_tile_elems = 2048 : i64, tkv = 256 : i64, tq = 512 : i64}} {
      %a = graph.flash_attention %q_1, %k_1, %v_1 {scale = 0.125, causal = true, layout = "BNSD"} : (tensor<1x8x128x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>) -> tensor<1x8x128x64xf16>
      graph.yield %a : tensor<1x8x128x64xf16>
    }
    func.return %r : tensor<1x8x128x64xf16>
  }
}

// -----

// An im2col mode the chip and geometry do not give.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @conv(%x: tensor<2x16x32x32xf16>, %w: tensor<32x16x3x3xf16>) -> tensor<2x32x16x16xf16> {
    // expected-error @+1 {{cannot lower fusion group conv_kernel0 (graph.fusion_group %r): the conv tiling's explicit/local must be true/false (the chip and the conv's geometry decide where X_col is built)}}
    %r = graph.fusion_group (%x_1 = %x : tensor<2x16x32x32xf16>, %w_1 = %w : tensor<32x16x3x3xf16>) -> tensor<2x32x16x16xf16> plan {template = "conv", tiling = {c_depth = 1 : i64, cstep = 8 : i64, h_stage = 11 : i64, tk = 32 : i64, tm = 32 : i64, tn = 64 : i64, explicit = false, local = false}} {
      %c = graph.conv2d %x_1, %w_1 {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<2x16x32x32xf16>, tensor<32x16x3x3xf16>) -> tensor<2x32x16x16xf16>
      graph.yield %c : tensor<2x32x16x16xf16>
    }
    func.return %r : tensor<2x32x16x16xf16>
  }
}

// -----

// A band narrower than the column tile.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @ffn(%x: tensor<64x256xf16>, %wg: tensor<256x512xf16>, %wd: tensor<512x256xf16>) -> tensor<64x256xf16> {
    // expected-error @+1 {{cannot lower fusion group ffn_kernel0 (graph.fusion_group %r): the ffn tiling's band bf = 32 is narrower than tn = 64}}
    %r = graph.fusion_group (%x_1 = %x : tensor<64x256xf16>, %wg_1 = %wg : tensor<256x512xf16>, %wd_1 = %wd : tensor<512x256xf16>) -> tensor<64x256xf16> plan {template = "ffn", tiling = {act_tile_elems = 2048 : i64, bf = 32 : i64, out_tile_elems = 1024 : i64, step_k = 2 : i64, tk = 32 : i64, tm = 64 : i64, tn = 64 : i64}} {
      %f = graph.ffn %x_1, %wg_1, %wd_1 {activation = "gelu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<64x256xf16>, tensor<256x512xf16>, tensor<512x256xf16>) -> tensor<64x256xf16>
      graph.yield %f : tensor<64x256xf16>
    }
    func.return %r : tensor<64x256xf16>
  }
}

// -----

// A template no one knows.
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @unknown(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    // expected-error @+1 {{cannot lower fusion group unknown_kernel0 (graph.fusion_group %r): no kernel template 'gemv' (known: matmul, conv, decode_attention, attention, ffn, rows)}}
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {template = "gemv", tiling = {tm = 16 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

