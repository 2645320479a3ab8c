// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=LayerNormFusionPass,RmsNormFusionPass}' | filecheck %s

// The legacy torch exporter's layer norm: Pow(2), Sqrt, Div, then scale and bias.
// CHECK-LABEL: func.func @layer_norm_legacy
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %y = graph.layer_norm %x, %w, %b {axis = -1, epsilon = 9.9999997473787516e-06} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %y
func.func @layer_norm_legacy(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %mean = graph.reduce_mean %x {axes = [-1], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d = graph.sub %x, %mean : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %d, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %var = graph.reduce_mean %sq {axes = [-1], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %ve = graph.add %var, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %s = graph.sqrt %ve : tensor<2x4x1xf32>
  %n = graph.div %d, %s : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %w = graph.constant dense<[0.5, 1.0, 1.5, 2.0, -1.0, 0.25, 3.0, 1.0]> : tensor<8xf32>
  %ns = graph.mul %n, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %b = graph.constant dense<[0.0, 1.0, -1.0, 0.5, 0.0, 2.0, 0.0, -0.5]> : tensor<8xf32>
  %y = graph.add %ns, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// -----

// Commuted operands everywhere, d * d, 1 / sqrt, scale and bias as arguments with
// leading size-1 dims (reshaped away).
// CHECK-LABEL: func.func @layer_norm_commuted
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %w {shape = [8]} : tensor<1x1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %b {shape = [8]} : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.layer_norm %x, %[[W]], %[[B]] {axis = -1, epsilon = 9.999999960041972e-13}
// CHECK-NEXT:    func.return %[[Y]]
func.func @layer_norm_commuted(%x: tensor<2x4x8xf32>, %w: tensor<1x1x8xf32>, %b: tensor<1x8xf32>) -> tensor<2x4x8xf32> {
  %mean = graph.reduce_mean %x {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d = graph.sub %x, %mean : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %sq = graph.mul %d, %d : tensor<2x4x8xf32>
  %var = graph.reduce_mean %sq {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %eps = graph.constant dense<1.0e-12> : tensor<1xf32>
  %ve = graph.add %eps, %var : (tensor<1xf32>, tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %s = graph.sqrt %ve : tensor<2x4x1xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %r = graph.div %one, %s : (tensor<f32>, tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %n = graph.mul %r, %d : (tensor<2x4x1xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ns = graph.mul %w, %n : (tensor<1x1x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.add %b, %ns : (tensor<1x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// -----

// Over the last two axes, rsqrt, no scale and no bias: the scale becomes ones.
// CHECK-LABEL: func.func @layer_norm_two_axes_no_affine
// CHECK-NEXT:    %ones = graph.constant {name = "ones"} dense<1.000000e+00> : tensor<3x4xf32>
// CHECK-NEXT:    %n = graph.layer_norm %x, %ones {axis = -2, epsilon = 0.0010000000474974513}
// CHECK-NEXT:    func.return %n
func.func @layer_norm_two_axes_no_affine(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %mean = graph.reduce_mean %x {axes = [1, 2], keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %d = graph.sub %x, %mean : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %d, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %var = graph.reduce_mean %sq {axes = [-2, -1], keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %eps = graph.constant dense<1.0e-03> : tensor<f32>
  %ve = graph.add %var, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %r = graph.rsqrt %ve : tensor<2x1x1xf32>
  %n = graph.mul %d, %r : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  func.return %n : tensor<2x3x4xf32>
}

// -----

// A bias without a scale; a scale that varies along the batch axis is not absorbed (the
// norm stops before it).
// CHECK-LABEL: func.func @layer_norm_partial_affine
// CHECK:         %[[N:.*]] = graph.layer_norm %x, %ones {axis = -1, epsilon = 9.9999997473787516e-06}
// CHECK-NEXT:    %y = graph.mul %[[N]], %w
// CHECK:         %[[N2:.*]] = graph.layer_norm %x, %{{.*}}, %b {axis = -1, epsilon = 9.9999997473787516e-06}
// CHECK-NEXT:    func.return %y, %[[N2]]
func.func @layer_norm_partial_affine(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mean = graph.reduce_mean %x {axes = [1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %d = graph.sub %x, %mean : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %sq = graph.mul %d, %d : tensor<2x8xf32>
  %var = graph.reduce_mean %sq {axes = [1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %ve = graph.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %d, %s : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = graph.mul %n, %w : tensor<2x8xf32>
  %mean2 = graph.reduce_mean %x {axes = [1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %d2 = graph.sub %x, %mean2 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %sq2 = graph.mul %d2, %d2 : tensor<2x8xf32>
  %var2 = graph.reduce_mean %sq2 {axes = [1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %ve2 = graph.add %var2, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s2 = graph.sqrt %ve2 : tensor<2x1xf32>
  %n2 = graph.div %d2, %s2 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y2 = graph.add %n2, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %y, %y2 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Negatives: statistics over a middle axis; the centred value also returned; epsilon an
// argument; epsilon zero.
// CHECK-LABEL: func.func @layer_norm_refusals
// CHECK-NOT:     graph.layer_norm
// CHECK-NOT:     graph.rms_norm
// CHECK:         func.return
func.func @layer_norm_refusals(%x: tensor<2x4x8xf32>, %e: tensor<f32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %m1 = graph.reduce_mean %x {axes = [1], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %d1 = graph.sub %x, %m1 : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  %q1 = graph.pow %d1, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v1 = graph.reduce_mean %q1 {axes = [1], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %e1 = graph.add %v1, %eps : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %s1 = graph.sqrt %e1 : tensor<2x1x8xf32>
  %y1 = graph.div %d1, %s1 : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  %m2 = graph.reduce_mean %x {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d2 = graph.sub %x, %m2 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %q2 = graph.pow %d2, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v2 = graph.reduce_mean %q2 {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %e2 = graph.add %v2, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %s2 = graph.sqrt %e2 : tensor<2x4x1xf32>
  %y2 = graph.div %d2, %s2 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %m3 = graph.reduce_mean %x {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d3 = graph.sub %x, %m3 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %q3 = graph.pow %d3, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v3 = graph.reduce_mean %q3 {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %e3 = graph.add %v3, %e : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %s3 = graph.sqrt %e3 : tensor<2x4x1xf32>
  %y3 = graph.div %d3, %s3 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %m4 = graph.reduce_mean %x {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d4 = graph.sub %x, %m4 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %q4 = graph.pow %d4, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v4 = graph.reduce_mean %q4 {axes = [2], keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %e4 = graph.add %v4, %zero : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %s4 = graph.sqrt %e4 : tensor<2x4x1xf32>
  %y4 = graph.div %d4, %s4 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %z = graph.add %y3, %y4 : tensor<2x4x8xf32>
  func.return %y1, %y2, %d2, %z : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Llama under the dynamo exporter: Sqrt then Reciprocal, x * r, then weight * (x * r).
// CHECK-LABEL: func.func @rms_norm_dynamo
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.rms_norm %x, %w {axis = -1, epsilon = 9.9999999747524271e-07} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    func.return %y
func.func @rms_norm_dynamo(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %ms = graph.reduce_mean %sq {axes = [-1], keepdims = true} : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %me = graph.add %ms, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %s = graph.sqrt %me : tensor<2x3x1xf32>
  %r = graph.reciprocal %s : tensor<2x3x1xf32>
  %n = graph.mul %x, %r : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %w = graph.constant dense<[1.0, 0.5, 2.0, -1.0, 1.5, 0.25, 1.0, 3.0]> : tensor<8xf32>
  %y = graph.mul %w, %n : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  func.return %y : tensor<2x3x8xf32>
}

// -----

// The legacy exporter's Div(1, Sqrt), our torch frontend's Rsqrt, x / sqrt with x * x,
// and no weight at all.
// CHECK-LABEL: func.func @rms_norm_forms
// CHECK:         %[[A:.*]] = graph.rms_norm %x, %w {axis = -1, epsilon = 9.9999999747524271e-07}
// CHECK:         %[[B:.*]] = graph.rms_norm %x, %w {axis = -1, epsilon = 9.9999999747524271e-07}
// CHECK:         %[[C:.*]] = graph.rms_norm %x, %{{.*}} {axis = -1, epsilon = 9.9999999747524271e-07}
// CHECK-NOT:     graph.reduce_mean
// CHECK:         func.return %[[A]], %[[B]], %[[C]]
func.func @rms_norm_forms(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %q1 = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m1 = graph.reduce_mean %q1 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %e1 = graph.add %m1, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s1 = graph.sqrt %e1 : tensor<4x1xf32>
  %r1 = graph.div %one, %s1 : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n1 = graph.mul %x, %r1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y1 = graph.mul %w, %n1 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %q2 = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m2 = graph.reduce_mean %q2 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %e2 = graph.add %eps, %m2 : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %r2 = graph.rsqrt %e2 : tensor<4x1xf32>
  %n2 = graph.mul %r2, %x : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2 = graph.mul %n2, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %q3 = graph.mul %x, %x : tensor<4x8xf32>
  %m3 = graph.reduce_mean %q3 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %e3 = graph.add %m3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s3 = graph.sqrt %e3 : tensor<4x1xf32>
  %y3 = graph.div %x, %s3 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %y1, %y2, %y3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// transformers' mixed precision: x.to(f32), the norm in f32, .to(f16), then the f16
// weight. The fused op normalizes the f16 input directly (in f32 inside the kernel).
// The two casts of x (one per use) are the same value.
// CHECK-LABEL: func.func @rms_norm_cast_wrapped
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.rms_norm %x, %w {axis = -1, epsilon = 9.9999999747524271e-07} : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT:    func.return %y
func.func @rms_norm_cast_wrapped(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %xf = graph.cast %x : tensor<2x8xf16> -> tensor<2x8xf32>
  %xg = graph.cast %x : tensor<2x8xf16> -> tensor<2x8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %sq = graph.pow %xf, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %ms = graph.reduce_mean %sq {axes = [1], keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %me = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = graph.rsqrt %me : tensor<2x1xf32>
  %n = graph.mul %xg, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %nh = graph.cast %n : tensor<2x8xf32> -> tensor<2x8xf16>
  %w = graph.constant dense<[1.0, 0.5, 2.0, -1.0, 4.0, 0.25, 1.0, -2.0]> : tensor<8xf16>
  %y = graph.mul %w, %nh : (tensor<8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// -----

// Negatives: x^3 is no square; a mean over a middle axis; the normalized value also
// returned before the weight (the norm then stops there and the weight stays a mul).
// CHECK-LABEL: func.func @rms_norm_refusals
// CHECK:         graph.pow %x, %three
// CHECK:         graph.reduce_mean %{{.*}} {axes = [0]
// CHECK:         %[[N:.*]] = graph.rms_norm %x, %ones
// CHECK-NEXT:    %[[Y:.*]] = graph.mul %w, %[[N]]
// CHECK-NEXT:    func.return %{{.*}}, %{{.*}}, %[[N]], %[[Y]]
func.func @rms_norm_refusals(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %q1 = graph.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m1 = graph.reduce_mean %q1 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %e1 = graph.add %m1, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r1 = graph.rsqrt %e1 : tensor<4x1xf32>
  %y1 = graph.mul %x, %r1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %q2 = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m2 = graph.reduce_mean %q2 {axes = [0], keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %e2 = graph.add %m2, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %r2 = graph.rsqrt %e2 : tensor<1x8xf32>
  %y2 = graph.mul %x, %r2 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %q3 = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m3 = graph.reduce_mean %q3 {axes = [1], keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %e3 = graph.add %m3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r3 = graph.rsqrt %e3 : tensor<4x1xf32>
  %n3 = graph.mul %x, %r3 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y3 = graph.mul %w, %n3 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y1, %y2, %n3, %y3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
