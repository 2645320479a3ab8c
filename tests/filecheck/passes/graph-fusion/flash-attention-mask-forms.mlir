// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=FlashAttentionFusionPass}' | filecheck %s

// HF eager's mask, where(future, -inf, s): the attention reads `future` as it is
// (mask_polarity = "hide"), and with no guard after the softmax a fully masked row is
// NaN, as in the decomposed form (masked_row = "nan"). No graph.not is left.
// CHECK-LABEL: func.func @hf_eager_inverted
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %future {causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan", scale = 1.000000e+00} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @hf_eager_inverted(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %future: tensor<4x4xi1>) -> tensor<1x2x4x8xf32> {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm = graph.where %future, %ninf, %s : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// A single-use graph.not of the mask flips the polarity and goes: where(not(m), s,
// -inf) reads m with "hide"; where(not(m), -inf, s) reads m as it is (two flips).
// CHECK-LABEL: func.func @single_use_not
// CHECK-NOT:     graph.not
// CHECK:         graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan", scale = 1.000000e+00}
// CHECK-NOT:     graph.not
// CHECK:         graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", masked_row = "nan", scale = 1.000000e+00}
// CHECK-NOT:     graph.not
func.func @single_use_not(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %n = graph.not %m : tensor<4x4xi1>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm = graph.where %n, %s, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %n2 = graph.not %m : tensor<4x4xi1>
  %kt2 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm2 = graph.where %n2, %ninf, %s2 : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = graph.softmax %sm2 {axis = -1} : tensor<1x2x4x4xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Must not fold: a graph.not with another user stays, and the attention reads it
// (true = attend, the default polarity).
// CHECK-LABEL: func.func @shared_not
// CHECK:         %[[N:.*]] = graph.not %m : tensor<4x4xi1>
// CHECK:         %[[A:.*]] = graph.flash_attention %q, %k, %v, %[[N]] {causal = false, layout = "BNSD", masked_row = "nan", scale = 1.000000e+00}
// CHECK-NEXT:    func.return %[[A]], %[[N]]
func.func @shared_not(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<4x4xi1>) {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %n = graph.not %m : tensor<4x4xi1>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm = graph.where %n, %s, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o, %n : tensor<1x2x4x8xf32>, tensor<4x4xi1>
}

// -----

// masked_row from what was matched: torch's guard where(max(s) == -inf, 0, p) is
// absorbed and a fully masked row is 0 (the default, no property); an additive mask
// that is provably finite (transformers' where(m, 0, finfo.min)) never hides a whole
// row, nor does no mask at all: no property either.
// CHECK-LABEL: func.func @masked_rows
// CHECK:         graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", scale = 1.000000e+00}
// CHECK:         graph.flash_attention %q, %k, %v, %[[F:.*]] {causal = false, layout = "BNSD", scale = 1.000000e+00}
// CHECK:         graph.flash_attention %q, %k, %v {causal = false, layout = "BNSD", scale = 1.000000e+00}
// CHECK-NOT:     masked_row
func.func @masked_rows(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %low = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm = graph.where %m, %s, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x2x4x4xf32>
  %mx = graph.reduce_max %sm {axes = [-1], keepdims = true} : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %all = graph.equal %mx, %ninf : (tensor<1x2x4x1xf32>, tensor<f32>) -> tensor<1x2x4x1xi1>
  %pg = graph.where %all, %zero, %p : (tensor<1x2x4x1xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.matmul %pg, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %f = graph.where %m, %zero, %low : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  %kt2 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s2 = graph.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sm2 = graph.add %s2, %f : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = graph.softmax %sm2 {axis = -1} : tensor<1x2x4x4xf32>
  %o2 = graph.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt3 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s3 = graph.matmul %q, %kt3 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p3 = graph.softmax %s3 {axis = -1} : tensor<1x2x4x4xf32>
  %o3 = graph.matmul %p3, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o, %o2, %o3 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
