// RUN: afc-opt %s --split-input-file --verify-diagnostics

func.func @gqa_heads(%q: tensor<1x6x4x8xf32>, %k: tensor<1x4x4x8xf32>) -> tensor<1x6x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': query heads 6 are not a multiple of key/value heads 4}}
  %0 = graph.flash_attention %q, %k, %k {scale = 0.5, causal = false, layout = "BNSD"} : (tensor<1x6x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x6x4x8xf32>
  func.return %0 : tensor<1x6x4x8xf32>
}

// -----

func.func @layout(%q: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': layout must be one of ('BNSD', 'BSND')}}
  %0 = graph.flash_attention %q, %q, %q {scale = 0.5, causal = false, layout = "SBH"} : tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// -----

func.func @mask(%q: tensor<1x4x4x8xf32>, %m: tensor<1x1x3x4xi1>) -> tensor<1x4x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': mask 1x1x3x4 does not broadcast to 1x4x4x4}}
  %0 = graph.flash_attention %q, %q, %q, %m {scale = 0.5, causal = false, layout = "BNSD"} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x1x3x4xi1>) -> tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// -----

func.func @rope_odd(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{'graph.rope': the last dim of the input must be even, got 2x7}}
  %0 = graph.rope %x, %x, %x {interleaved = false} : tensor<2x7xf32>
  func.return %0 : tensor<2x7xf32>
}

// -----

func.func @activation(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'graph.matmul': activation must be one of ('relu', 'clip', 'gelu', 'gelu_tanh', 'silu', 'sigmoid'), got 'swish'}}
  %0 = graph.matmul %a, %w {activation = "swish"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return %0 : tensor<4x16xf32>
}

// -----

func.func @clip_bounds(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'graph.matmul': clip_min/clip_max only apply to activation "clip", not 'relu'}}
  %0 = graph.matmul %a, %w {activation = "relu", clip_max = 6.0} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return %0 : tensor<4x16xf32>
}

// -----

func.func @stats_shape(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'graph.rms_norm_apply': rstd has shape 2x8, expected 2x1}}
  %0 = graph.rms_norm_apply %x, %r, %g {axis = -1} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

func.func @residual(%x: tensor<2x8xf32>, %r: tensor<1x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'graph.add_rms_norm': residual 1x8 differs from input 2x8}}
  %0, %1 = graph.add_rms_norm %x, %r, %g {axis = -1, epsilon = 1.0e-06} : (tensor<2x8xf32>, tensor<1x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  func.return %0 : tensor<2x8xf32>
}

// -----

func.func @ffn_activation(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) {
  // expected-error @+1 {{'graph.ffn': activation must be one of}}
  %0 = graph.ffn %x, %w1, %w2 {activation = "tanh", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_segments(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) {
  // expected-error @+1 {{operand count (3) does not match with the total size (4) specified in attribute 'operandSegmentSizes'}}
  %0 = graph.ffn %x, %w1, %w2 {activation = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_plain_two_weights(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) {
  // expected-error @+1 {{'graph.ffn': relu takes one weight1 matrix, got 2}}
  %0 = graph.ffn %x, %w1, %w1, %w2 {activation = "relu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_odd_merged(%x: tensor<4x8xf32>, %w1: tensor<8x15xf32>, %w2: tensor<7x8xf32>) {
  // expected-error @+1 {{'graph.ffn': a merged gate/up weight1 has an even width, got 15}}
  %0 = graph.ffn %x, %w1, %w2 {activation = "swiglu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8x15xf32>, tensor<7x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_k_mismatch(%x: tensor<4x8xf32>, %w1: tensor<6x16xf32>, %w2: tensor<16x8xf32>) {
  // expected-error @+1 {{'graph.ffn': weight1 6x16 does not take the input's 8 columns}}
  %0 = graph.ffn %x, %w1, %w2 {activation = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<4x8xf32>, tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_w2_mismatch(%x: tensor<4x8xf32>, %wg: tensor<8x16xf32>, %w2: tensor<32x8xf32>) {
  // expected-error @+1 {{'graph.ffn': weight2 32x8 does not take the 16 intermediate columns}}
  %0 = graph.ffn %x, %wg, %wg, %w2 {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_residual(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %r: tensor<4x16xf32>) {
  // expected-error @+1 {{'graph.ffn': residual 4x16 differs from the result 4x8}}
  %0 = graph.ffn %x, %w1, %w2, %r {activation = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_dtype(%x: tensor<4x8xf32>, %w1: tensor<8x16xf16>, %w2: tensor<16x8xf32>) {
  // expected-error @+1 {{'graph.ffn': weight1 has element type f16, not f32}}
  %0 = graph.ffn %x, %w1, %w2 {activation = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8x16xf16>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @ffn_norm_epsilon(%x: tensor<4x8xf16>, %wg: tensor<8x16xf16>, %wu: tensor<8x16xf16>, %wd: tensor<16x8xf16>) {
  // expected-error @+1 {{'graph.ffn': norm_epsilon must be > 0, got 0.0}}
  %0 = graph.ffn %x, %wg, %wu, %wd {activation = "swiglu", norm_epsilon = 0.0 : f64, operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 0>} : (tensor<4x8xf16>, tensor<8x16xf16>, tensor<8x16xf16>, tensor<16x8xf16>) -> tensor<4x8xf16>
  func.return
}
