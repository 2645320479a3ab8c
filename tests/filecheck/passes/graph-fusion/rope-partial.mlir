// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=PartialRotaryFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=PartialRotaryFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=PartialRotaryFusionPass,RopeTransposeSinkPass}' | filecheck %s --check-prefix=SINK

// Phi's partial rotary: rope on q[..., :4], q[..., 4:] passed through, concatenated.
// CHECK-LABEL: func.func @partial(
// CHECK-NEXT:    %q = graph.transpose %p
// CHECK-NEXT:    %y = graph.rope %q, %cos, %sin {interleaved = false, rotary_dim = 4} : (tensor<2x4x8x8xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT:    func.return %y
// The head transpose then sinks through the one rope (cos/sin reshaped to BSND).
// SINK-LABEL: func.func @partial(
// SINK-NEXT:    %{{.*}} = graph.reshape %cos {shape = [1, 8, 1, 4]}
// SINK-NEXT:    %{{.*}} = graph.reshape %sin {shape = [1, 8, 1, 4]}
// SINK-NEXT:    %[[R:.*]] = graph.rope %p, {{.*}} {interleaved = false, rotary_dim = 4} : (tensor<2x8x4x8xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>) -> tensor<2x8x4x8xf32>
// SINK-NEXT:    %[[T:.*]] = graph.transpose %[[R]] {perm = [0, 2, 1, 3]}
// SINK-NEXT:    func.return %[[T]]
func.func @partial(%p: tensor<2x8x4x8xf32>, %cos: tensor<1x1x8x4xf32>, %sin: tensor<1x1x8x4xf32>) -> tensor<2x4x8x8xf32> {
  %q = graph.transpose %p {perm = [0, 2, 1, 3]} : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %rot = graph.slice %q {axes = [3], ends = [4], starts = [0], steps = [1]} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %pass = graph.slice %q {axes = [3], ends = [8], starts = [4], steps = [1]} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %r = graph.rope %rot, %cos, %sin {interleaved = false} : (tensor<2x4x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<2x4x8x4xf32>
  %y = graph.concat %r, %pass {axis = -1} : (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x8x8xf32>
  func.return %y : tensor<2x4x8x8xf32>
}

// -----

// The parts as a split (sizes 2 and 4 of 6), with an open-ended interleaved rope.
// CHECK-LABEL: func.func @partial_split
// CHECK-NEXT:    %y = graph.rope %k, %cos, %sin {interleaved = true, rotary_dim = 2} : (tensor<2x8x6xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT:    func.return %y
func.func @partial_split(%k: tensor<2x8x6xf32>, %cos: tensor<8x2xf32>, %sin: tensor<8x2xf32>) -> tensor<2x8x6xf32> {
  %h:2 = graph.split %k {axis = 2, sizes = [2, 4]} : tensor<2x8x6xf32> -> (tensor<2x8x2xf32>, tensor<2x8x4xf32>)
  %r = graph.rope %h#0, %cos, %sin {interleaved = true} : (tensor<2x8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<2x8x2xf32>
  %y = graph.concat %r, %h#1 {axis = 2} : (tensor<2x8x2xf32>, tensor<2x8x4xf32>) -> tensor<2x8x6xf32>
  func.return %y : tensor<2x8x6xf32>
}

// -----

// Must not fuse: the concat in the other order; the rotated slice not at the start; the
// parts leave a gap; the rotated slice also returned.
// CHECK-LABEL: func.func @partial_refusals
// CHECK-NOT:     rotary_dim
// CHECK:         func.return
// LOG: PartialRotaryFusionPass{{.*}}the pass-through part comes before the rotated part
// LOG: PartialRotaryFusionPass{{.*}}the parts [2:6] and [6:8] do not split the last axis of size 8 as [:R] and [R:]
// LOG: PartialRotaryFusionPass{{.*}}the parts [0:4] and [6:8] do not split the last axis of size 8 as [:R] and [R:]
// LOG: PartialRotaryFusionPass{{.*}}also used outside the pattern
func.func @partial_refusals(%q: tensor<4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) -> (tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x8xf32>, tensor<4x4xf32>) {
  %a = graph.slice %q {axes = [1], ends = [4], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %b = graph.slice %q {axes = [1], ends = [8], starts = [4], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %ra = graph.rope %a, %cos, %sin {interleaved = false} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = graph.concat %b, %ra {axis = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %c = graph.slice %q {axes = [1], ends = [6], starts = [2], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %d = graph.slice %q {axes = [1], ends = [8], starts = [6], steps = [1]} : tensor<4x8xf32> -> tensor<4x2xf32>
  %rc = graph.rope %c, %cos, %sin {interleaved = false} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y2 = graph.concat %rc, %d {axis = 1} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %e = graph.slice %q {axes = [1], ends = [4], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %f = graph.slice %q {axes = [1], ends = [8], starts = [6], steps = [1]} : tensor<4x8xf32> -> tensor<4x2xf32>
  %re = graph.rope %e, %cos, %sin {interleaved = false} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y3 = graph.concat %re, %f {axis = 1} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %g = graph.slice %q {axes = [1], ends = [4], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %h = graph.slice %q {axes = [1], ends = [8], starts = [4], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %rg = graph.rope %g, %cos, %sin {interleaved = false} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y4 = graph.concat %rg, %h {axis = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  func.return %y1, %y3, %y2, %y4, %rg : tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x8xf32>, tensor<4x4xf32>
}
