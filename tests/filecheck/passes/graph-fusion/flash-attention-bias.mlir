// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=FlashAttentionFusionPass}' | filecheck %s

// T5: no scale, a relative-position bias [1, H, S, S] and the padding mask [B, 1, S, S]
// added one after the other: one flash_attention with scale 1 and their sum as the mask.
// The padding mask may hold -inf and no guard follows the softmax: masked_row = "nan".
// CHECK-LABEL: func.func @t5_bias_and_mask
// CHECK-NEXT:    %bias = graph.constant
// CHECK-NEXT:    %[[M:.*]] = graph.add %bias, %m : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x2x3x3xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %[[M]] {causal = false, layout = "BNSD", masked_row = "nan", scale = 1.000000e+00}
// CHECK-NEXT:    func.return %[[A]]
func.func @t5_bias_and_mask(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x3x4xf32>, %v: tensor<2x2x3x4xf32>, %m: tensor<2x1x3x3xf32>) -> tensor<2x2x3x4xf32> {
  %bias = graph.constant dense<[[[[0.5, -1.0, 0.25], [0.0, 1.5, -0.5], [2.0, 0.0, -2.0]], [[-0.5, 1.0, 0.0], [0.75, -0.25, 1.0], [0.0, 0.5, 0.0]]]]> : tensor<1x2x3x3xf32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<2x2x3x4xf32> -> tensor<2x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %sb = graph.add %s, %bias : (tensor<2x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %sm = graph.add %sb, %m : (tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x2x3x3xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<2x2x3x3xf32>
  %o = graph.matmul %p, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  func.return %o : tensor<2x2x3x4xf32>
}

// -----

// Near-misses: three additive masks (graph.flash_attention takes one, and only a pair is
// summed); an additive bias and a boolean mask.
// CHECK-LABEL: func.func @three_additive_masks
// CHECK:         graph.softmax
// CHECK-NOT:     graph.flash_attention
func.func @three_additive_masks(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %a: tensor<1x2x3x3xf32>, %b: tensor<1x1x3x3xf32>, %c: tensor<1x2x1x3xf32>) -> tensor<1x2x3x4xf32> {
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %s1 = graph.add %s, %a : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %s2 = graph.add %s1, %b : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %s3 = graph.add %s2, %c : (tensor<1x2x3x3xf32>, tensor<1x2x1x3xf32>) -> tensor<1x2x3x3xf32>
  %p = graph.softmax %s3 {axis = -1} : tensor<1x2x3x3xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %o : tensor<1x2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @bias_and_boolean_mask
// CHECK:         graph.softmax
// CHECK-NOT:     graph.flash_attention
func.func @bias_and_boolean_mask(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %a: tensor<1x2x3x3xf32>, %b: tensor<3x3xi1>) -> tensor<1x2x3x4xf32> {
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %s1 = graph.add %s, %a : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %s2 = graph.where %b, %s1, %ninf : (tensor<3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = graph.softmax %s2 {axis = -1} : tensor<1x2x3x3xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %o : tensor<1x2x3x4xf32>
}
