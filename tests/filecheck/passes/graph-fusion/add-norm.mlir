// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=AddLayerNormFusionPass,AddRmsNormFusionGraphPass,LayerNormFusionPass,RmsNormFusionPass}' | filecheck %s

// A post-norm residual (BERT): the sum has no other user.
// CHECK-LABEL: func.func @add_layer_norm
// CHECK-NEXT:    %y, %s = graph.add_layer_norm %h, %r, %w, %b {axis = -1, epsilon = 1.000000e-05} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT:    func.return %y
func.func @add_layer_norm(%h: tensor<2x4x8xf32>, %r: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %s = graph.add %h, %r : tensor<2x4x8xf32>
  %y = graph.layer_norm %s, %w, %b {axis = -1, epsilon = 1.0e-05} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// -----

// A pre-norm residual stream (Llama): the decomposed RMS norm is recognised first, then
// fused with the add; the sum is the next residual, read from the second result.
// CHECK-LABEL: func.func @add_rms_norm_residual
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %n, %s = graph.add_rms_norm %h, %r, %w {axis = -1, epsilon = 9.9999999747524271e-07}
// CHECK-NEXT:    %next = graph.add %s, %n
// CHECK-NEXT:    func.return %next
func.func @add_rms_norm_residual(%h: tensor<2x8xf32>, %r: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = graph.add %h, %r : tensor<2x8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %s, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %ms = graph.reduce_mean %sq {axes = [-1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %me = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %rs = graph.rsqrt %me : tensor<2x1xf32>
  %x = graph.mul %s, %rs : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %w = graph.constant dense<[1.0, 0.5, 2.0, -1.0, 1.5, 0.25, 1.0, 3.0]> : tensor<8xf32>
  %n = graph.mul %w, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %next = graph.add %s, %n : tensor<2x8xf32>
  func.return %next : tensor<2x8xf32>
}

// -----

// Another user of the sum comes before the norm: the fused op goes to the add, and the
// scale constant defined between them moves up with it.
// CHECK-LABEL: func.func @add_norm_early_user
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y, %s = graph.add_rms_norm %h, %r, %w {axis = -1, epsilon = 1.000000e-05}
// CHECK-NEXT:    %t = graph.tanh %s
// CHECK-NEXT:    func.return %y, %t
func.func @add_norm_early_user(%h: tensor<2x8xf32>, %r: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %s = graph.add %h, %r : tensor<2x8xf32>
  %t = graph.tanh %s : tensor<2x8xf32>
  %w = graph.constant dense<[1.0, 0.5, 2.0, -1.0, 1.5, 0.25, 1.0, 3.0]> : tensor<8xf32>
  %y = graph.rms_norm %s, %w {axis = -1, epsilon = 1.0e-05} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %y, %t : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Negatives: the add broadcasts (BERT's embeddings: positions [1, S, H]); the sum is
// also the norm's scale; the scale is computed between the add and the norm while
// another user of the sum comes before the norm.
// CHECK-LABEL: func.func @add_norm_refusals
// CHECK-NOT:     graph.add_layer_norm
// CHECK-NOT:     graph.add_rms_norm
// CHECK:         func.return
func.func @add_norm_refusals(%h: tensor<2x4x8xf32>, %p: tensor<1x4x8xf32>, %a: tensor<8xf32>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %s = graph.add %h, %p : (tensor<2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.layer_norm %s, %w {axis = -1, epsilon = 1.0e-05} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %s2 = graph.add %a, %w : tensor<8xf32>
  %y2 = graph.rms_norm %s2, %s2 {axis = -1, epsilon = 1.0e-05} : tensor<8xf32>
  %s3 = graph.add %a, %w : tensor<8xf32>
  %t3 = graph.tanh %s3 : tensor<8xf32>
  %w3 = graph.exp %a : tensor<8xf32>
  %y3 = graph.rms_norm %s3, %w3 {axis = -1, epsilon = 1.0e-05} : tensor<8xf32>
  func.return %y, %y2, %y3, %t3 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Must not fuse: the residual add after o_proj (a single-use matmul result) is the
// matmul kernel's epilogue; AddRmsNorm would read the product back and the residual
// besides. The norm stays on its own and reads the sum once.
// CHECK-LABEL: func.func @add_after_projection
// CHECK:         %o = graph.matmul %a, %wo
// CHECK-NEXT:    %s = graph.add %h, %o
// CHECK-NEXT:    %y = graph.rms_norm %s, %w
// CHECK-NOT:     graph.add_rms_norm
func.func @add_after_projection(%a: tensor<2x8xf16>, %wo: tensor<8x8xf16>, %h: tensor<2x8xf16>, %w: tensor<8xf16>) -> (tensor<2x8xf16>, tensor<2x8xf16>) {
  %o = graph.matmul %a, %wo : (tensor<2x8xf16>, tensor<8x8xf16>) -> tensor<2x8xf16>
  %s = graph.add %h, %o : tensor<2x8xf16>
  %y = graph.rms_norm %s, %w {axis = -1, epsilon = 1.0e-06} : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
  func.return %y, %s : tensor<2x8xf16>, tensor<2x8xf16>
}

// -----

// The product has another user, so no kernel takes the add as its epilogue: it fuses
// with the norm.
// CHECK-LABEL: func.func @projection_used_twice
// CHECK:         %y, %s = graph.add_rms_norm %h, %o, %w
func.func @projection_used_twice(%a: tensor<2x8xf16>, %wo: tensor<8x8xf16>, %h: tensor<2x8xf16>, %w: tensor<8xf16>) -> (tensor<2x8xf16>, tensor<2x8xf16>, tensor<2x8xf16>) {
  %o = graph.matmul %a, %wo : (tensor<2x8xf16>, tensor<8x8xf16>) -> tensor<2x8xf16>
  %s = graph.add %h, %o : tensor<2x8xf16>
  %y = graph.rms_norm %s, %w {axis = -1, epsilon = 1.0e-06} : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
  func.return %y, %s, %o : tensor<2x8xf16>, tensor<2x8xf16>, tensor<2x8xf16>
}
