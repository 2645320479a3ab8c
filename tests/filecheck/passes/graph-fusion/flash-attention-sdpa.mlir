// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=FlashAttentionFusionPass}' | filecheck %s

// torch's SDPA decomposition (GPT-2, BERT, Llama with transformers 5.x, both exporters):
// the sqrt-split scale on q and Kᵀ, Kᵀ transposed with the heads flattened into the
// batch, an additive mask, and the NaN guard where(isnan(p), 0, p) after the softmax.
// CHECK-LABEL: func.func @sdpa_nan_guard
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", scale = 0.49999{{[0-9]*}}}
// CHECK-NEXT:    func.return %[[A]]
// CHECK-NOT:     graph.is_nan
func.func @sdpa_nan_guard(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x3x4xf32>, %v: tensor<2x2x3x4xf32>, %m: tensor<2x1x3x3xf32>) -> tensor<2x2x3x4xf32> {
  %c = graph.constant dense<0.707106769> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %kf = graph.reshape %k {shape = [-1, 3, 4]} : tensor<2x2x3x4xf32> -> tensor<4x3x4xf32>
  %kft = graph.transpose %kf {perm = [0, 2, 1]} : tensor<4x3x4xf32> -> tensor<4x4x3xf32>
  %kt = graph.reshape %kft {shape = [2, 2, 4, 3]} : tensor<4x4x3xf32> -> tensor<2x2x4x3xf32>
  %qs = graph.mul %q, %c : (tensor<2x2x3x4xf32>, tensor<f32>) -> tensor<2x2x3x4xf32>
  %ks = graph.mul %kt, %c : (tensor<2x2x4x3xf32>, tensor<f32>) -> tensor<2x2x4x3xf32>
  %s = graph.matmul %qs, %ks : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %sm = graph.add %s, %m : (tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x2x3x3xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<2x2x3x3xf32>
  %nan = graph.is_nan %p : tensor<2x2x3x3xf32> -> tensor<2x2x3x3xi1>
  %pg = graph.where %nan, %zero, %p : (tensor<2x2x3x3xi1>, tensor<f32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %o = graph.matmul %pg, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  func.return %o : tensor<2x2x3x4xf32>
}

// -----

// Llama's grouped-query attention in the same decomposition: repeat_kv's expand is
// flattened into [B*H, S, D] at once for Kᵀ; both repeats are removed.
// CHECK-LABEL: func.func @sdpa_repeat_kv_flat
// CHECK-NEXT:    %[[A:.*]] = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", scale = 0.49999{{[0-9]*}}}
// CHECK-NEXT:    func.return %[[A]]
func.func @sdpa_repeat_kv_flat(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %m: tensor<1x1x3x3xf32>) -> tensor<1x4x3x4xf32> {
  %c = graph.constant dense<0.707106769> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %k1 = graph.reshape %k {shape = [1, 2, 1, 3, 4]} : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %ke = graph.expand %k1 {shape = [1, 2, 2, 3, 4]} : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %v1 = graph.reshape %v {shape = [1, 2, 1, 3, 4]} : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %ve = graph.expand %v1 {shape = [1, 2, 2, 3, 4]} : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %vr = graph.reshape %ve {shape = [1, 4, 3, 4]} : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %kf = graph.reshape %ke {shape = [4, 3, 4]} : tensor<1x2x2x3x4xf32> -> tensor<4x3x4xf32>
  %kft = graph.transpose %kf {perm = [0, 2, 1]} : tensor<4x3x4xf32> -> tensor<4x4x3xf32>
  %kt = graph.reshape %kft {shape = [1, 4, 4, 3]} : tensor<4x4x3xf32> -> tensor<1x4x4x3xf32>
  %qs = graph.mul %q, %c : (tensor<1x4x3x4xf32>, tensor<f32>) -> tensor<1x4x3x4xf32>
  %ks = graph.mul %kt, %c : (tensor<1x4x4x3xf32>, tensor<f32>) -> tensor<1x4x4x3xf32>
  %s = graph.matmul %qs, %ks : (tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x3x3xf32>
  %sm = graph.add %s, %m : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = graph.softmax %sm {axis = -1} : tensor<1x4x3x3xf32>
  %nan = graph.is_nan %p : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xi1>
  %pg = graph.where %nan, %zero, %p : (tensor<1x4x3x3xi1>, tensor<f32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = graph.matmul %pg, %vr : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  func.return %o : tensor<1x4x3x4xf32>
}

// -----

// Near-misses: the guard fills NaN with 1, not 0 (not what a fully masked row gives);
// the guard tests another tensor than the probabilities.
// CHECK-LABEL: func.func @nan_guard_fills_one
// CHECK:         graph.is_nan
// CHECK-NOT:     graph.flash_attention
func.func @nan_guard_fills_one(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x3x4xf32>, %v: tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32> {
  %one = graph.constant dense<1.0> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x1x3x4xf32> -> tensor<1x1x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32>) -> tensor<1x1x3x3xf32>
  %p = graph.softmax %s {axis = -1} : tensor<1x1x3x3xf32>
  %nan = graph.is_nan %p : tensor<1x1x3x3xf32> -> tensor<1x1x3x3xi1>
  %pg = graph.where %nan, %one, %p : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %o = graph.matmul %pg, %v : (tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32>
  func.return %o : tensor<1x1x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @nan_guard_other_tensor
// CHECK:         graph.softmax
// CHECK-NOT:     graph.flash_attention
func.func @nan_guard_other_tensor(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x3x4xf32>, %v: tensor<1x1x3x4xf32>, %x: tensor<1x1x3x3xf32>) -> tensor<1x1x3x4xf32> {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %kt = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x1x3x4xf32> -> tensor<1x1x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32>) -> tensor<1x1x3x3xf32>
  %p = graph.softmax %s {axis = -1} : tensor<1x1x3x3xf32>
  %nan = graph.is_nan %x : tensor<1x1x3x3xf32> -> tensor<1x1x3x3xi1>
  %pg = graph.where %nan, %zero, %p : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %o = graph.matmul %pg, %v : (tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32>
  func.return %o : tensor<1x1x3x4xf32>
}

// -----

// Near-miss: the flattened transpose moves the batch*heads axis ([1, 0, 2]), so it is
// not Kᵀ of the 4-D key.
// CHECK-LABEL: func.func @flat_transpose_moves_heads
// CHECK:         graph.softmax
// CHECK-NOT:     graph.flash_attention
func.func @flat_transpose_moves_heads(%q: tensor<1x2x2x2xf32>, %k: tensor<1x2x2x2xf32>, %v: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %kf = graph.reshape %k {shape = [2, 2, 2]} : tensor<1x2x2x2xf32> -> tensor<2x2x2xf32>
  %kft = graph.transpose %kf {perm = [1, 0, 2]} : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  %kt = graph.reshape %kft {shape = [1, 2, 2, 2]} : tensor<2x2x2xf32> -> tensor<1x2x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = graph.softmax %s {axis = -1} : tensor<1x2x2x2xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %o : tensor<1x2x2x2xf32>
}
