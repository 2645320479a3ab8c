// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=ElementwiseTransposeSinkPass,CascadeTransposeRemovePass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=ElementwiseTransposeSinkPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// ConvNeXt's residual add: both operands are NHWC -> NCHW permutes and the only user
// permutes back to NHWC. The add runs in NHWC and all three transposes go; the permute
// of %e stays for its other user (the next conv).
// CHECK-LABEL: func.func @residual_pair
// CHECK-NEXT:    %[[E:.*]] = graph.transpose %e {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %g, %e : tensor<2x4x5x3xf32>
// CHECK-NEXT:    func.return %[[S]], %[[E]]
func.func @residual_pair(%g: tensor<2x4x5x3xf32>, %e: tensor<2x4x5x3xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x3x4x5xf32>) {
  %gt = graph.transpose %g {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
  %et = graph.transpose %e {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
  %s = graph.add %gt, %et : tensor<2x3x4x5xf32>
  %n = graph.transpose %s {perm = [0, 2, 3, 1]} : tensor<2x3x4x5xf32> -> tensor<2x4x5x3xf32>
  func.return %n, %et : tensor<2x4x5x3xf32>, tensor<2x3x4x5xf32>
}

// -----

// A per-channel scale and a scalar ride along: the [3] scale of the NHWC layout is a
// [1, 3, 1, 1] reshape in NCHW, the scalar broadcasts as it is.
// CHECK-LABEL: func.func @channel_scale
// CHECK-NEXT:    %[[G:.*]] = graph.reshape %gamma {shape = [1, 3, 1, 1]} : tensor<3xf32> -> tensor<1x3x1x1xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %x, %[[G]] : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[M]], %c : (tensor<2x3x4x5xf32>, tensor<f32>) -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @channel_scale(%x: tensor<2x3x4x5xf32>, %gamma: tensor<3xf32>, %c: tensor<f32>) -> tensor<2x3x4x5xf32> {
  %t = graph.transpose %x {perm = [0, 2, 3, 1]} : tensor<2x3x4x5xf32> -> tensor<2x4x5x3xf32>
  %m = graph.mul %t, %gamma : (tensor<2x4x5x3xf32>, tensor<3xf32>) -> tensor<2x4x5x3xf32>
  %a = graph.add %m, %c : (tensor<2x4x5x3xf32>, tensor<f32>) -> tensor<2x4x5x3xf32>
  %b = graph.transpose %a {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
  func.return %b : tensor<2x3x4x5xf32>
}

// -----

// Two operands' transposes go, one comes back for the result's user that needs the
// permuted layout: one transpose fewer.
// CHECK-LABEL: func.func @two_for_one
// CHECK-NEXT:    %[[S:.*]] = graph.sub %a, %b : tensor<2x4x5x3xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[S]] {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    func.return %[[T]]
func.func @two_for_one(%a: tensor<2x4x5x3xf32>, %b: tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32> {
  %at = graph.transpose %a {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
  %bt = graph.transpose %b {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
  %s = graph.sub %at, %bt : tensor<2x3x4x5xf32>
  func.return %s : tensor<2x3x4x5xf32>
}

// -----

// A stage boundary of a deeper ConvNeXt: the residual %s comes from the previous block
// in NCHW (its conv needs it so). Sinking the add's transpose gives %s one of its own but
// removes two: the add's operand permute and the next norm's permute back.
// CHECK-LABEL: func.func @boundary
// CHECK-NEXT:    %[[S:.*]] = graph.transpose %s {perm = [0, 2, 3, 1]} : tensor<2x3x4x5xf32> -> tensor<2x4x5x3xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add %g, %[[S]] : tensor<2x4x5x3xf32>
// CHECK-NEXT:    func.return %[[A]], %s
func.func @boundary(%g: tensor<2x4x5x3xf32>, %s: tensor<2x3x4x5xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x3x4x5xf32>) {
  %gt = graph.transpose %g {perm = [0, 3, 1, 2]} : tensor<2x4x5x3xf32> -> tensor<2x3x4x5xf32>
  %a = graph.add %gt, %s : tensor<2x3x4x5xf32>
  %n = graph.transpose %a {perm = [0, 2, 3, 1]} : tensor<2x3x4x5xf32> -> tensor<2x4x5x3xf32>
  func.return %n, %s : tensor<2x4x5x3xf32>, tensor<2x3x4x5xf32>
}

// -----

// Must not sink: a transpose that would only move (one operand, a user that needs the
// permuted layout); a transposed operand with a second user that needs the permuted
// layout while the result's user does too; an operand that would need a transpose that
// moves data while nothing cancels; two small broadcast operands' transposes traded for
// one of the whole result (120 elements instead of 46); operands transposed by different
// perms.
// CHECK-LABEL: func.func @no_sink
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x {perm = [0, 2, 3, 1]}
// CHECK-NEXT:    %[[G:.*]] = graph.gelu %[[T]] {approximate = "none"}
// CHECK-NEXT:    %[[U:.*]] = graph.transpose %y {perm = [0, 2, 3, 1]}
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[T]], %[[U]]
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[T]], %z
// CHECK-NEXT:    %[[B1:.*]] = graph.transpose %p {perm = [0, 2, 3, 1]}
// CHECK-NEXT:    %[[B2:.*]] = graph.transpose %q {perm = [0, 2, 3, 1]}
// CHECK-NEXT:    %[[W:.*]] = graph.add %[[B1]], %[[B2]]
// CHECK-NEXT:    %[[V:.*]] = graph.transpose %y {perm = [0, 3, 2, 1]}
// CHECK-NEXT:    %[[D:.*]] = graph.div %[[T]], %[[V]]
// CHECK-NEXT:    func.return %[[G]], %[[A]], %[[M]], %[[W]], %[[D]]
// LOG:      GraphFusionPass[ElementwiseTransposeSinkPass]: {{.*}} matched_times=2, effected_times=0.
// LOG-NEXT: GraphFusionPass[ElementwiseTransposeSinkPass]: not applied to graph.add %w: its transposes would move 120 elements instead of 46
// LOG-NEXT: GraphFusionPass[ElementwiseTransposeSinkPass]: not applied to graph.div %d: the operands are transposed by different perms
func.func @no_sink(%x: tensor<2x3x4x4xf32>, %y: tensor<2x3x4x4xf32>, %z: tensor<2x4x4x3xf32>, %p: tensor<2x3x1x1xf32>, %q: tensor<2x1x4x5xf32>) -> (tensor<2x4x4x3xf32>, tensor<2x4x4x3xf32>, tensor<2x4x4x3xf32>, tensor<2x4x5x3xf32>, tensor<2x4x4x3xf32>) {
  %t = graph.transpose %x {perm = [0, 2, 3, 1]} : tensor<2x3x4x4xf32> -> tensor<2x4x4x3xf32>
  %g = graph.gelu %t {approximate = "none"} : tensor<2x4x4x3xf32>
  %u = graph.transpose %y {perm = [0, 2, 3, 1]} : tensor<2x3x4x4xf32> -> tensor<2x4x4x3xf32>
  %a = graph.add %t, %u : tensor<2x4x4x3xf32>
  %m = graph.mul %t, %z : tensor<2x4x4x3xf32>
  %pt = graph.transpose %p {perm = [0, 2, 3, 1]} : tensor<2x3x1x1xf32> -> tensor<2x1x1x3xf32>
  %qt = graph.transpose %q {perm = [0, 2, 3, 1]} : tensor<2x1x4x5xf32> -> tensor<2x4x5x1xf32>
  %w = graph.add %pt, %qt : (tensor<2x1x1x3xf32>, tensor<2x4x5x1xf32>) -> tensor<2x4x5x3xf32>
  %v = graph.transpose %y {perm = [0, 3, 2, 1]} : tensor<2x3x4x4xf32> -> tensor<2x4x4x3xf32>
  %d = graph.div %t, %v : tensor<2x4x4x3xf32>
  func.return %g, %a, %m, %w, %d : tensor<2x4x4x3xf32>, tensor<2x4x4x3xf32>, tensor<2x4x4x3xf32>, tensor<2x4x5x3xf32>, tensor<2x4x4x3xf32>
}
