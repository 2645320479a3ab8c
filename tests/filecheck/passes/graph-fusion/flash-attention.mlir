// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=FlashAttentionFusionPass}' | filecheck %s

// BERT/GPT-2/ViT: [B,S,H*D] -> reshape -> transpose (Kᵀ folded into one transpose) ->
// attention with a scale and an additive mask -> transpose -> reshape. BSND absorbs all
// four transposes. No guard follows the softmax and the mask may hold -inf: a fully
// masked row gives NaN, as the decomposed softmax does (masked_row = "nan").
// CHECK-LABEL: func.func @bsnd_additive_mask
// CHECK-NEXT:    %[[Q:.*]] = graph.reshape %q {shape = [2, 6, 4, 8]}
// CHECK-NEXT:    %[[K:.*]] = graph.reshape %k {shape = [2, 6, 4, 8]}
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %v {shape = [2, 6, 4, 8]}
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %[[Q]], %[[K]], %[[V]], %mask {causal = false, layout = "BSND", masked_row = "nan", scale = 0.35355338454246521} : (tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x1x6x6xf32>) -> tensor<2x6x4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[A]] {shape = [2, 6, 32]}
// CHECK-NEXT:    func.return %[[R]]
func.func @bsnd_additive_mask(%q: tensor<2x6x32xf32>, %k: tensor<2x6x32xf32>, %v: tensor<2x6x32xf32>, %mask: tensor<2x1x6x6xf32>) -> tensor<2x6x32xf32> {
  %q4 = graph.reshape %q {shape = [2, 6, 4, 8]} : tensor<2x6x32xf32> -> tensor<2x6x4x8xf32>
  %qt = graph.transpose %q4 {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %k4 = graph.reshape %k {shape = [2, 6, 4, 8]} : tensor<2x6x32xf32> -> tensor<2x6x4x8xf32>
  %kt = graph.transpose %k4 {perm = [0, 2, 3, 1]} : tensor<2x6x4x8xf32> -> tensor<2x4x8x6xf32>
  %v4 = graph.reshape %v {shape = [2, 6, 4, 8]} : tensor<2x6x32xf32> -> tensor<2x6x4x8xf32>
  %vt = graph.transpose %v4 {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %s = graph.matmul %qt, %kt : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x6x6xf32>
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %ss = graph.mul %s, %c : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %sm = graph.add %ss, %mask : (tensor<2x4x6x6xf32>, tensor<2x1x6x6xf32>) -> tensor<2x4x6x6xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<2x4x6x6xf32>
  %o = graph.matmul %p, %vt : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  %ot = graph.transpose %o {perm = [0, 2, 1, 3]} : tensor<2x4x6x8xf32> -> tensor<2x6x4x8xf32>
  %r = graph.reshape %ot {shape = [2, 6, 32]} : tensor<2x6x4x8xf32> -> tensor<2x6x32xf32>
  func.return %r : tensor<2x6x32xf32>
}

// -----

// BNSD operands; the scale is split over q (a mul) and k (a mul after Kᵀ) and the
// scores are divided too: 0.5 * 0.5 / 0.5 = 0.5. No mask.
// CHECK-LABEL: func.func @bnsd_split_scale
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v {causal = false, layout = "BNSD", scale = 5.000000e-01} : tensor<2x4x6x8xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @bnsd_split_scale(%q: tensor<2x4x6x8xf32>, %k: tensor<2x4x6x8xf32>, %v: tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32> {
  %h = graph.constant dense<0.5> : tensor<f32>
  %qs = graph.mul %h, %q : (tensor<f32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x4x6x8xf32> -> tensor<2x4x8x6xf32>
  %kts = graph.mul %kt, %h : (tensor<2x4x8x6xf32>, tensor<f32>) -> tensor<2x4x8x6xf32>
  %s = graph.matmul %qs, %kts : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x6x6xf32>
  %ss = graph.div %s, %h : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %p = graph.softmax %ss {axis = 3} : tensor<2x4x6x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  func.return %o : tensor<2x4x6x8xf32>
}

// -----

// The torch frontend's SDPA with is_causal: where(tril, s, -inf) becomes causal = true.
// CHECK-LABEL: func.func @torch_causal
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v {causal = true, layout = "BNSD", scale = 0.35355338454246521} : tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @torch_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %ss = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %tril = graph.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %sm = graph.where %tril, %ss, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sm {axis = 3} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// A constant additive mask of 0 and torch.finfo(float32).min on the causal pattern is
// causal too; an all-zero additive mask (ViT) is dropped.
// CHECK-LABEL: func.func @additive_causal_and_zero
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v {causal = true, layout = "BNSD", scale = 1.000000e+00} : tensor<1x2x3x8xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.flash_attention %q, %k, %v {causal = false, layout = "BNSD", scale = 1.000000e+00} : tensor<1x2x3x8xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @additive_causal_and_zero(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) {
  %m = graph.constant dense<[[[[0.0, -3.40282347e+38, -3.40282347e+38], [0.0, 0.0, -3.40282347e+38], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x3x8xf32> -> tensor<1x2x8x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
  %sm = graph.add %m, %s : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x2x3x3xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  %z = graph.constant dense<0.0> : tensor<1x1x3x3xf32>
  %kt2 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x3x8xf32> -> tensor<1x2x8x3xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<1x2x3x8xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
  %sm2 = graph.add %s2, %z : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = graph.softmax %sm2 {axis = -1} : tensor<1x2x3x3xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %o, %o2 : tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
}

// -----

// Boolean masks: where(m, s, -inf) passes m; where(m, -inf, s) passes m too, with
// mask_polarity = "hide" (no graph.not copy of the mask); where(m, s, lowest) becomes
// the additive mask where(m, 0, lowest), which never hides a whole row. The first two
// can (no guard after the softmax): masked_row = "nan".
// CHECK-LABEL: func.func @boolean_masks
// CHECK:         %[[A:.*]] = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", masked_row = "nan", scale = 1.000000e+00}
// CHECK-NEXT:    %[[B:.*]] = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan", scale = 1.000000e+00}
// CHECK-NEXT:    %[[Z:.*]] = graph.constant {name = "attention.mask_zero"} dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[W:.*]] = graph.where %m, %[[Z]], %low : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x1x4xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.flash_attention %q, %k, %v, %[[W]] {causal = false, layout = "BNSD", scale = 1.000000e+00}
// CHECK-NOT:     graph.softmax
// CHECK-NOT:     graph.not
// CHECK:         func.return %[[A]], %[[B]], %[[C]]
func.func @boolean_masks(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %m: tensor<2x1x1x4xi1>) -> (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %low = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x4x8xf32> -> tensor<2x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %sm = graph.where %m, %s, %ninf : (tensor<2x1x1x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<2x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %kt2 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x4x8xf32> -> tensor<2x2x8x4xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %sm2 = graph.where %m, %ninf, %s2 : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p2 = graph.softmax %sm2 {axis = -1} : tensor<2x2x4x4xf32>
  %o2 = graph.matmul %p2, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %kt3 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x4x8xf32> -> tensor<2x2x8x4xf32>
  %s3 = graph.matmul %q, %kt3 : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %sm3 = graph.where %m, %s3, %low : (tensor<2x1x1x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %p3 = graph.softmax %sm3 {axis = -1} : tensor<2x2x4x4xf32>
  %o3 = graph.matmul %p3, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  func.return %o, %o2, %o3 : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
}

// -----

// Llama: grouped-query attention with transformers' repeat_kv on k and v (2 kv heads, 4
// query heads); repeat_kv is removed, and v keeps its head transpose (BNSD on a tie).
// CHECK-LABEL: func.func @gqa_repeat_kv
// CHECK-NEXT:    %[[V:.*]] = graph.transpose %v {perm = [0, 2, 1, 3]} : tensor<2x6x2x8xf32> -> tensor<2x2x6x8xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %[[V]] {causal = false, layout = "BNSD", scale = 0.35355338454246521} : (tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>) -> tensor<2x4x6x8xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[A]] {perm = [0, 2, 1, 3]}
// CHECK-NEXT:    func.return %[[T]]
func.func @gqa_repeat_kv(%q: tensor<2x4x6x8xf32>, %k: tensor<2x2x6x8xf32>, %v: tensor<2x6x2x8xf32>) -> tensor<2x6x4x8xf32> {
  %k5 = graph.reshape %k {shape = [2, 2, 1, 6, 8]} : tensor<2x2x6x8xf32> -> tensor<2x2x1x6x8xf32>
  %ke = graph.expand %k5 {shape = [2, 2, 2, 6, 8]} : tensor<2x2x1x6x8xf32> -> tensor<2x2x2x6x8xf32>
  %kr = graph.reshape %ke {shape = [2, 4, 6, 8]} : tensor<2x2x2x6x8xf32> -> tensor<2x4x6x8xf32>
  %vt = graph.transpose %v {perm = [0, 2, 1, 3]} : tensor<2x6x2x8xf32> -> tensor<2x2x6x8xf32>
  %v5 = graph.reshape %vt {shape = [2, 2, 1, 6, 8]} : tensor<2x2x6x8xf32> -> tensor<2x2x1x6x8xf32>
  %ve = graph.expand %v5 {shape = [2, 2, 2, 6, 8]} : tensor<2x2x1x6x8xf32> -> tensor<2x2x2x6x8xf32>
  %vr = graph.reshape %ve {shape = [2, 4, 6, 8]} : tensor<2x2x2x6x8xf32> -> tensor<2x4x6x8xf32>
  %kt = graph.transpose %kr {perm = [0, 1, 3, 2]} : tensor<2x4x6x8xf32> -> tensor<2x4x8x6xf32>
  %s = graph.matmul %q, %kt : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x6x6xf32>
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %ss = graph.mul %s, %c : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %p = graph.softmax %ss {axis = -1} : tensor<2x4x6x6xf32>
  %o = graph.matmul %p, %vr : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  %ot = graph.transpose %o {perm = [0, 2, 1, 3]} : tensor<2x4x6x8xf32> -> tensor<2x6x4x8xf32>
  func.return %ot : tensor<2x6x4x8xf32>
}

// -----

// A padding mask over the keys that MatMulBiasAddFusionPass folded into Q·Kᵀ as a bias
// is the additive mask (the scale is on q).
// CHECK-LABEL: func.func @qk_bias_mask
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %b {causal = false, layout = "BNSD", masked_row = "nan", scale = 2.500000e-01}
// CHECK-NEXT:    func.return %[[A]]
func.func @qk_bias_mask(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %b: tensor<4xf32>) -> tensor<2x2x4x8xf32> {
  %c = graph.constant dense<0.25> : tensor<f32>
  %qs = graph.mul %q, %c : (tensor<2x2x4x8xf32>, tensor<f32>) -> tensor<2x2x4x8xf32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x4x8xf32> -> tensor<2x2x8x4xf32>
  %s = graph.matmul %qs, %kt, %b : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>, tensor<4xf32>) -> tensor<2x2x4x4xf32>
  %p = graph.softmax %s {axis = -1} : tensor<2x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  func.return %o : tensor<2x2x4x8xf32>
}

// -----

// BSND inputs but a BNSD result: BSND, and one transpose back.
// CHECK-LABEL: func.func @bsnd_inputs_bnsd_result
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v {causal = false, layout = "BSND", scale = 1.000000e+00} : tensor<1x5x2x8xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[A]] {perm = [0, 2, 1, 3]} : tensor<1x5x2x8xf32> -> tensor<1x2x5x8xf32>
// CHECK-NEXT:    func.return %[[T]]
func.func @bsnd_inputs_bnsd_result(%q: tensor<1x5x2x8xf32>, %k: tensor<1x5x2x8xf32>, %v: tensor<1x5x2x8xf32>) -> tensor<1x2x5x8xf32> {
  %qt = graph.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x5x2x8xf32> -> tensor<1x2x5x8xf32>
  %kt = graph.transpose %k {perm = [0, 2, 3, 1]} : tensor<1x5x2x8xf32> -> tensor<1x2x8x5xf32>
  %vt = graph.transpose %v {perm = [0, 2, 1, 3]} : tensor<1x5x2x8xf32> -> tensor<1x2x5x8xf32>
  %s = graph.matmul %qt, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %s {axis = -1} : tensor<1x2x5x5xf32>
  %o = graph.matmul %p, %vt : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  func.return %o : tensor<1x2x5x8xf32>
}

// -----

// The torch frontend's guard for fully masked rows is absorbed: graph.flash_attention
// gives 0 for such a row too.
// CHECK-LABEL: func.func @guard_constant_mask
// CHECK-NEXT:    %m = graph.constant
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", scale = 1.000000e+00}
// CHECK-NEXT:    func.return %[[A]]
func.func @guard_constant_mask(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x3x4xf32>, %v: tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32> {
  %m = graph.constant dense<[[true, true, false], [false, true, false], [true, false, true]]> : tensor<3x3xi1>
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x1x3x4xf32> -> tensor<1x1x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32>) -> tensor<1x1x3x3xf32>
  %sm = graph.where %m, %s, %ninf : (tensor<3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %p = graph.softmax %sm {axis = 3} : tensor<1x1x3x3xf32>
  %mx = graph.reduce_max %sm {axes = [3], keepdims = true} : tensor<1x1x3x3xf32> -> tensor<1x1x3x1xf32>
  %dead = graph.equal %mx, %ninf : (tensor<1x1x3x1xf32>, tensor<f32>) -> tensor<1x1x3x1xi1>
  %pg = graph.where %dead, %zero, %p : (tensor<1x1x3x1xi1>, tensor<f32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %o = graph.matmul %pg, %v : (tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32>
  func.return %o : tensor<1x1x3x4xf32>
}

// -----

// The guard with a runtime mask, which may mask a row fully: absorbed as well.
// CHECK-LABEL: func.func @guard_runtime_mask
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", scale = 1.000000e+00}
// CHECK-NEXT:    func.return %[[A]]
// CHECK-NOT:     graph.softmax
func.func @guard_runtime_mask(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x3x4xf32>, %v: tensor<1x1x3x4xf32>, %m: tensor<3x3xi1>) -> tensor<1x1x3x4xf32> {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x1x3x4xf32> -> tensor<1x1x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32>) -> tensor<1x1x3x3xf32>
  %sm = graph.where %m, %s, %ninf : (tensor<3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %p = graph.softmax %sm {axis = 3} : tensor<1x1x3x3xf32>
  %mx = graph.reduce_max %sm {axes = [3], keepdims = true} : tensor<1x1x3x3xf32> -> tensor<1x1x3x1xf32>
  %dead = graph.equal %mx, %ninf : (tensor<1x1x3x1xf32>, tensor<f32>) -> tensor<1x1x3x1xi1>
  %pg = graph.where %dead, %zero, %p : (tensor<1x1x3x1xi1>, tensor<f32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %o = graph.matmul %pg, %v : (tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32>
  func.return %o : tensor<1x1x3x4xf32>
}

// -----

// Negatives: softmax over a non-last axis; scores used twice; scaled after the mask.
// CHECK-LABEL: func.func @refusals
// CHECK-NOT:     graph.flash_attention
// CHECK-COUNT-3: graph.softmax
func.func @refusals(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) {
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %s {axis = 2} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt2 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss2 = graph.mul %s2, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p2 = graph.softmax %ss2 {axis = -1} : tensor<1x2x4x4xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt3 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s3 = graph.matmul %q, %kt3 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm3 = graph.add %s3, %m : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ss3 = graph.mul %sm3, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p3 = graph.softmax %ss3 {axis = -1} : tensor<1x2x4x4xf32>
  %o3 = graph.matmul %p3, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o, %o2, %ss2, %o3 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
}

// -----

// Negatives: Kᵀ that is not a swap of the sequence and head-dim axes; two masks that
// are not causal; a key that is not transposed by a transpose op.
// CHECK-LABEL: func.func @more_refusals
// CHECK-NOT:     graph.flash_attention
// CHECK-COUNT-3: graph.softmax
func.func @more_refusals(%q: tensor<1x2x4x8xf32>, %k: tensor<1x8x2x4xf32>, %k2: tensor<1x2x4x8xf32>, %kd: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xf32>, %b: tensor<1x1x4x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 2, 1, 3]} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %s {axis = -1} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt2 = graph.transpose %k2 {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm2 = graph.add %s2, %m : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %sw2 = graph.where %b, %sm2, %ninf : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p2 = graph.softmax %sw2 {axis = -1} : tensor<1x2x4x4xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s3 = graph.matmul %q, %kd : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p3 = graph.softmax %s3 {axis = -1} : tensor<1x2x4x4xf32>
  %o3 = graph.matmul %p3, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o, %o2, %o3 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Not attention: softmax(x) @ w without a Q·Kᵀ matmul is left alone, without a refusal.
// CHECK-LABEL: func.func @not_attention
// CHECK-NEXT:    graph.softmax
// CHECK-NEXT:    graph.matmul
func.func @not_attention(%x: tensor<4x6xf32>, %w: tensor<6x3xf32>) -> tensor<4x3xf32> {
  %p = graph.softmax %x {axis = -1} : tensor<4x6xf32>
  %o = graph.matmul %p, %w : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  func.return %o : tensor<4x3xf32>
}

// -----

// Qwen2/Llama in f16, as HF's eager attention writes it: the causal mask is a runtime
// i1 input (key position > query position), applied as where(future, -inf, s); the
// softmax runs in float32 between casts; repeat_kv on k and v. The cast pair is
// absorbed (graph.flash_attention computes the softmax in float32 and rounds only its
// result), the mask by position becomes the position ids and repeat_kv goes.
// CHECK-LABEL: func.func @float32_softmax_runtime_mask
// CHECK-NOT:     graph.greater
// CHECK:         %{{.*}} = graph.flash_attention %q, %k, %v, %pos {causal = false, layout = "BNSD", scale = 0.353515625} : (tensor<1x4x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<6xi64>) -> tensor<1x4x6x8xf16>
// CHECK-NOT:     graph.softmax
// CHECK-NOT:     graph.cast
func.func @float32_softmax_runtime_mask(%q: tensor<1x4x6x8xf16>, %k: tensor<1x2x6x8xf16>, %v: tensor<1x2x6x8xf16>, %pos: tensor<6xi64>) -> tensor<1x4x6x8xf16> {
  %kpos = graph.reshape %pos {shape = [1, -1]} : tensor<6xi64> -> tensor<1x6xi64>
  %qpos = graph.reshape %pos {shape = [-1, 1]} : tensor<6xi64> -> tensor<6x1xi64>
  %future = graph.greater %kpos, %qpos : (tensor<1x6xi64>, tensor<6x1xi64>) -> tensor<6x6xi1>
  %k5 = graph.reshape %k {shape = [0, 2, 1, -1, 8]} : tensor<1x2x6x8xf16> -> tensor<1x2x1x6x8xf16>
  %ke = graph.expand %k5 {shape = [1, 2, 2, 1, 8]} : tensor<1x2x1x6x8xf16> -> tensor<1x2x2x6x8xf16>
  %kr = graph.reshape %ke {shape = [0, 4, -1, 8]} : tensor<1x2x2x6x8xf16> -> tensor<1x4x6x8xf16>
  %v5 = graph.reshape %v {shape = [0, 2, 1, -1, 8]} : tensor<1x2x6x8xf16> -> tensor<1x2x1x6x8xf16>
  %ve = graph.expand %v5 {shape = [1, 2, 2, 1, 8]} : tensor<1x2x1x6x8xf16> -> tensor<1x2x2x6x8xf16>
  %vr = graph.reshape %ve {shape = [0, 4, -1, 8]} : tensor<1x2x2x6x8xf16> -> tensor<1x4x6x8xf16>
  %kt = graph.transpose %kr {perm = [0, 1, 3, 2]} : tensor<1x4x6x8xf16> -> tensor<1x4x8x6xf16>
  %s = graph.matmul %q, %kt : (tensor<1x4x6x8xf16>, tensor<1x4x8x6xf16>) -> tensor<1x4x6x6xf16>
  %c = graph.constant dense<0.353553385> : tensor<f16>
  %ss = graph.mul %s, %c : (tensor<1x4x6x6xf16>, tensor<f16>) -> tensor<1x4x6x6xf16>
  %ninf = graph.constant dense<"0x00FC"> : tensor<f16>
  %sm = graph.where %future, %ninf, %ss : (tensor<6x6xi1>, tensor<f16>, tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xf16>
  %s32 = graph.cast %sm : tensor<1x4x6x6xf16> -> tensor<1x4x6x6xf32>
  %p32 = graph.softmax %s32 {axis = -1} : tensor<1x4x6x6xf32>
  %p = graph.cast %p32 : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf16>
  %o = graph.matmul %p, %vr : (tensor<1x4x6x6xf16>, tensor<1x4x6x8xf16>) -> tensor<1x4x6x8xf16>
  func.return %o : tensor<1x4x6x8xf16>
}

// -----

// Negative: the float32 softmax's probabilities are cast to another type than the
// scores' (f16 scores, bf16 probabilities): P·V would multiply other values.
// CHECK-LABEL: func.func @softmax_cast_to_another_type
// CHECK:         graph.softmax
func.func @softmax_cast_to_another_type(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf16> -> tensor<1x2x8x4xf16>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = graph.cast %s : tensor<1x2x4x4xf16> -> tensor<1x2x4x4xf32>
  %p32 = graph.softmax %s32 {axis = -1} : tensor<1x2x4x4xf32>
  %p = graph.cast %p32 : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xbf16>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16>
  func.return %o : tensor<1x2x4x8xbf16>
}

// -----

// The same with a dynamic batch (a model whose batch is symbolic): repeat_kv's
// reshape [0, 2, 1, -1, 8] still knows the -1 (the copied batch cancels), so the keys
// keep their 6 positions and the position ids match them.
// CHECK-LABEL: func.func @dynamic_batch_gqa
// CHECK:         %{{.*}} = graph.flash_attention %q, %k, %v, %pos {causal = false, layout = "BNSD", scale = 0.353515625} : (tensor<?x4x6x8xf16>, tensor<?x2x6x8xf16>, tensor<?x2x6x8xf16>, tensor<6xi64>) -> tensor<?x4x6x8xf16>
// CHECK-NOT:     graph.softmax
func.func @dynamic_batch_gqa(%q: tensor<?x4x6x8xf16>, %k: tensor<?x2x6x8xf16>, %v: tensor<?x2x6x8xf16>, %pos: tensor<6xi64>) -> tensor<?x4x6x8xf16> {
  %kpos = graph.reshape %pos {shape = [1, -1]} : tensor<6xi64> -> tensor<1x6xi64>
  %qpos = graph.reshape %pos {shape = [-1, 1]} : tensor<6xi64> -> tensor<6x1xi64>
  %future = graph.greater %kpos, %qpos : (tensor<1x6xi64>, tensor<6x1xi64>) -> tensor<6x6xi1>
  %k5 = graph.reshape %k {shape = [0, 2, 1, -1, 8]} : tensor<?x2x6x8xf16> -> tensor<?x2x1x6x8xf16>
  %ke = graph.expand %k5 {shape = [1, 2, 2, 1, 8]} : tensor<?x2x1x6x8xf16> -> tensor<?x2x2x6x8xf16>
  %kr = graph.reshape %ke {shape = [0, 4, -1, 8]} : tensor<?x2x2x6x8xf16> -> tensor<?x4x6x8xf16>
  %v5 = graph.reshape %v {shape = [0, 2, 1, -1, 8]} : tensor<?x2x6x8xf16> -> tensor<?x2x1x6x8xf16>
  %ve = graph.expand %v5 {shape = [1, 2, 2, 1, 8]} : tensor<?x2x1x6x8xf16> -> tensor<?x2x2x6x8xf16>
  %vr = graph.reshape %ve {shape = [0, 4, -1, 8]} : tensor<?x2x2x6x8xf16> -> tensor<?x4x6x8xf16>
  %kt = graph.transpose %kr {perm = [0, 1, 3, 2]} : tensor<?x4x6x8xf16> -> tensor<?x4x8x6xf16>
  %s = graph.matmul %q, %kt : (tensor<?x4x6x8xf16>, tensor<?x4x8x6xf16>) -> tensor<?x4x6x6xf16>
  %c = graph.constant dense<0.353553385> : tensor<f16>
  %ss = graph.mul %s, %c : (tensor<?x4x6x6xf16>, tensor<f16>) -> tensor<?x4x6x6xf16>
  %ninf = graph.constant dense<"0x00FC"> : tensor<f16>
  %sm = graph.where %future, %ninf, %ss : (tensor<6x6xi1>, tensor<f16>, tensor<?x4x6x6xf16>) -> tensor<?x4x6x6xf16>
  %s32 = graph.cast %sm : tensor<?x4x6x6xf16> -> tensor<?x4x6x6xf32>
  %p32 = graph.softmax %s32 {axis = -1} : tensor<?x4x6x6xf32>
  %p = graph.cast %p32 : tensor<?x4x6x6xf32> -> tensor<?x4x6x6xf16>
  %o = graph.matmul %p, %vr : (tensor<?x4x6x6xf16>, tensor<?x4x6x8xf16>) -> tensor<?x4x6x8xf16>
  func.return %o : tensor<?x4x6x8xf16>
}

// -----

// examples/llama_layer.afc after the rope sink: q, k and v come straight from the
// projections as [B, S, H, D] with a dynamic batch and sequence, and repeat_kv on the
// BNSD k and v. The reshapes carry S provably (a 0 copies B; the -1 is S, since the
// static dims on both sides have the same product), so repeat_kv goes and all five
// transposes fold into layout BSND.
// CHECK-LABEL: func.func @dynamic_sequence_gqa
// CHECK-NOT:     graph.transpose
// CHECK-NOT:     graph.expand
// CHECK:         %[[A:.*]] = graph.flash_attention %q, %k, %v, %mask {causal = false, layout = "BSND", masked_row = "nan", scale = 0.35355338454246521} : (tensor<?x?x4x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?xi1>) -> tensor<?x?x4x8xf32>
// CHECK-NEXT:    %{{.*}} = graph.reshape %[[A]] {shape = [0, 0, 32]}
// CHECK-NOT:     graph.transpose
func.func @dynamic_sequence_gqa(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x8xf32>, %mask: tensor<?x?xi1>) -> tensor<?x?x32xf32> {
  %qt = graph.transpose %q {perm = [0, 2, 1, 3]} : tensor<?x?x4x8xf32> -> tensor<?x4x?x8xf32>
  %kt = graph.transpose %k {perm = [0, 2, 1, 3]} : tensor<?x?x2x8xf32> -> tensor<?x2x?x8xf32>
  %vt = graph.transpose %v {perm = [0, 2, 1, 3]} : tensor<?x?x2x8xf32> -> tensor<?x2x?x8xf32>
  %k5 = graph.reshape %kt {shape = [0, 2, 1, -1, 8]} : tensor<?x2x?x8xf32> -> tensor<?x2x1x?x8xf32>
  %ke = graph.expand %k5 {shape = [1, 2, 2, 1, 8]} : tensor<?x2x1x?x8xf32> -> tensor<?x2x2x?x8xf32>
  %kr = graph.reshape %ke {shape = [0, 4, -1, 8]} : tensor<?x2x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %v5 = graph.reshape %vt {shape = [0, 2, 1, -1, 8]} : tensor<?x2x?x8xf32> -> tensor<?x2x1x?x8xf32>
  %ve = graph.expand %v5 {shape = [1, 2, 2, 1, 8]} : tensor<?x2x1x?x8xf32> -> tensor<?x2x2x?x8xf32>
  %vr = graph.reshape %ve {shape = [0, 4, -1, 8]} : tensor<?x2x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %ktt = graph.transpose %kr {perm = [0, 1, 3, 2]} : tensor<?x4x?x8xf32> -> tensor<?x4x8x?xf32>
  %s = graph.matmul %qt, %ktt : (tensor<?x4x?x8xf32>, tensor<?x4x8x?xf32>) -> tensor<?x4x?x?xf32>
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %ss = graph.mul %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %sm = graph.where %mask, %ss, %ninf : (tensor<?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<?x4x?x?xf32>
  %o = graph.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %ot = graph.transpose %o {perm = [0, 2, 1, 3]} : tensor<?x4x?x8xf32> -> tensor<?x?x4x8xf32>
  %r = graph.reshape %ot {shape = [0, 0, 32]} : tensor<?x?x4x8xf32> -> tensor<?x?x32xf32>
  func.return %r : tensor<?x?x32xf32>
}

// -----

// Negatives of the operand tracing. k and v are repeated in tile order (query head h
// would read key/value head h % 2, not h // 2, as graph.flash_attention's GQA does):
// that broadcast is not repeat_kv and stays. q's transpose moves the head dim
// ([B, D, S, H] -> [B, H, S, D]): it is no layout of the attention and stays too.
// CHECK-LABEL: func.func @not_repeat_kv
// CHECK:         graph.expand
// CHECK:         graph.expand
// CHECK:         %[[QT:.*]] = graph.transpose %q {perm = [0, 3, 2, 1]}
// CHECK:         graph.flash_attention %[[QT]], %{{.*}}, %{{.*}} {causal = false, layout = "BNSD"
func.func @not_repeat_kv(%q: tensor<1x8x6x4xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x4x6x8xf32> {
  %qt = graph.transpose %q {perm = [0, 3, 2, 1]} : tensor<1x8x6x4xf32> -> tensor<1x4x6x8xf32>
  %k5 = graph.reshape %k {shape = [1, 1, 2, 6, 8]} : tensor<1x2x6x8xf32> -> tensor<1x1x2x6x8xf32>
  %ke = graph.expand %k5 {shape = [1, 2, 1, 1, 1]} : tensor<1x1x2x6x8xf32> -> tensor<1x2x2x6x8xf32>
  %kr = graph.reshape %ke {shape = [1, 4, 6, 8]} : tensor<1x2x2x6x8xf32> -> tensor<1x4x6x8xf32>
  %v5 = graph.reshape %v {shape = [1, 1, 2, 6, 8]} : tensor<1x2x6x8xf32> -> tensor<1x1x2x6x8xf32>
  %ve = graph.expand %v5 {shape = [1, 2, 1, 1, 1]} : tensor<1x1x2x6x8xf32> -> tensor<1x2x2x6x8xf32>
  %vr = graph.reshape %ve {shape = [1, 4, 6, 8]} : tensor<1x2x2x6x8xf32> -> tensor<1x4x6x8xf32>
  %ktt = graph.transpose %kr {perm = [0, 1, 3, 2]} : tensor<1x4x6x8xf32> -> tensor<1x4x8x6xf32>
  %s = graph.matmul %qt, %ktt : (tensor<1x4x6x8xf32>, tensor<1x4x8x6xf32>) -> tensor<1x4x6x6xf32>
  %p = graph.softmax %s {axis = -1} : tensor<1x4x6x6xf32>
  %o = graph.matmul %p, %vr : (tensor<1x4x6x6xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x6x8xf32>
  func.return %o : tensor<1x4x6x8xf32>
}

// -----

// transformers' causal mask built from the position ids, where(p[j] > p[i], -inf, s)
// (examples/llama_layer.afc): the operand becomes the ids themselves, compared in the
// kernel, so no [S, S] mask is built. less(p_q, p_k) is the same.
// The negatives keep a boolean mask, read as it is (mask_polarity = "hide"): the
// compare the other way round (p[j] < p[i] hides the past: it can hide every key of
// the first query, and no guard follows, so masked_row = "nan"), and ids of the keys
// that are not the queries' ids (which can hide every key of a query: that one has
// torch's NaN guard, so the decomposed form also gives the attention's 0 for such a
// row, the default masked_row).
// CHECK-LABEL: func.func @position_mask
// CHECK:         graph.flash_attention %q, %k, %v, %pos {{.*}} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?xi64>)
// CHECK:         graph.flash_attention %q, %k, %v, %pos {{.*}} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?xi64>)
// CHECK-NOT:     graph.not
// CHECK:         graph.flash_attention %q, %k, %v, %past {causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan", scale = 1.000000e+00} {{.*}} tensor<?x?xi1>
// CHECK-NOT:     graph.not
// CHECK:         graph.flash_attention %q, %k, %v, %other {causal = false, layout = "BNSD", mask_polarity = "hide", scale = 1.000000e+00} {{.*}} tensor<?x?xi1>
func.func @position_mask(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>, %pos: tensor<?xi64>, %kpos2: tensor<?xi64>) -> (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) {
  %kp = graph.reshape %pos {shape = [1, -1]} : tensor<?xi64> -> tensor<1x?xi64>
  %qp = graph.reshape %pos {shape = [-1, 1]} : tensor<?xi64> -> tensor<?x1xi64>
  %kp2 = graph.reshape %kpos2 {shape = [1, -1]} : tensor<?xi64> -> tensor<1x?xi64>
  %future = graph.greater %kp, %qp : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %future2 = graph.less %qp, %kp : (tensor<?x1xi64>, tensor<1x?xi64>) -> tensor<?x?xi1>
  %past = graph.less %kp, %qp : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %other = graph.greater %kp2, %qp : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x?x8xf32> -> tensor<1x2x8x?xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>) -> tensor<1x2x?x?xf32>
  %sm = graph.where %future, %ninf, %s : (tensor<?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x2x?x?xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %kt2 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x?x8xf32> -> tensor<1x2x8x?xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>) -> tensor<1x2x?x?xf32>
  %sm2 = graph.where %future2, %ninf, %s2 : (tensor<?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p2 = graph.softmax %sm2 {axis = -1} : tensor<1x2x?x?xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %kt3 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x?x8xf32> -> tensor<1x2x8x?xf32>
  %s3 = graph.matmul %q, %kt3 : (tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>) -> tensor<1x2x?x?xf32>
  %sm3 = graph.where %past, %ninf, %s3 : (tensor<?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p3 = graph.softmax %sm3 {axis = -1} : tensor<1x2x?x?xf32>
  %o3 = graph.matmul %p3, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %kt4 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x?x8xf32> -> tensor<1x2x8x?xf32>
  %s4 = graph.matmul %q, %kt4 : (tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>) -> tensor<1x2x?x?xf32>
  %sm4 = graph.where %other, %ninf, %s4 : (tensor<?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p4 = graph.softmax %sm4 {axis = -1} : tensor<1x2x?x?xf32>
  %nan4 = graph.is_nan %p4 : tensor<1x2x?x?xf32> -> tensor<1x2x?x?xi1>
  %zero4 = graph.constant dense<0.0> : tensor<f32>
  %pg4 = graph.where %nan4, %zero4, %p4 : (tensor<1x2x?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o4 = graph.matmul %pg4, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  func.return %o, %o2, %o3, %o4 : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}
