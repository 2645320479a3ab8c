// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RotaryPositionEmbeddingFusionPass}' | filecheck %s

// transformers' apply_rotary_pos_emb as both exporters write it for Llama: q * cos +
// concat(-q[..., 4:], q[..., :4]) * sin with [1, 1, S, D] tables.
// CHECK-LABEL: func.func @rope
// CHECK-NEXT:    %y = graph.rope %q, %cos, %sin {interleaved = false} : (tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT:    func.return %y
func.func @rope(%q: tensor<2x4x8x8xf32>, %cos: tensor<1x1x8x8xf32>, %sin: tensor<1x1x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %qc = graph.mul %q, %cos : (tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %lo = graph.slice %q {axes = [3], ends = [4], starts = [0], steps = [1]} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %hi = graph.slice %q {axes = [3], ends = [8], starts = [4], steps = [1]} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %nh = graph.neg %hi : tensor<2x4x8x4xf32>
  %rot = graph.concat %nh, %lo {axis = -1} : (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x8x8xf32>
  %rs = graph.mul %rot, %sin : (tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = graph.add %qc, %rs : tensor<2x4x8x8xf32>
  func.return %y : tensor<2x4x8x8xf32>
}

// -----

// Everything commuted, the halves as a split, an open-ended slice end (INT64_MAX, as
// the legacy exporter writes x[..., h:]), the tables broadcast from [S, D].
// CHECK-LABEL: func.func @rope_commuted
// CHECK-NEXT:    %y = graph.rope %k, %cos, %sin {interleaved = false} : (tensor<2x8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT:    %z = graph.rope %k, %cos, %sin {interleaved = false}
// CHECK-NEXT:    func.return %y, %z
func.func @rope_commuted(%k: tensor<2x8x6xf32>, %cos: tensor<8x6xf32>, %sin: tensor<8x6xf32>) -> (tensor<2x8x6xf32>, tensor<2x8x6xf32>) {
  %h:2 = graph.split %k {axis = 2, sizes = [3, 3]} : tensor<2x8x6xf32> -> (tensor<2x8x3xf32>, tensor<2x8x3xf32>)
  %nh = graph.neg %h#1 : tensor<2x8x3xf32>
  %rot = graph.concat %nh, %h#0 {axis = 2} : (tensor<2x8x3xf32>, tensor<2x8x3xf32>) -> tensor<2x8x6xf32>
  %rs = graph.mul %sin, %rot : (tensor<8x6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %kc = graph.mul %cos, %k : (tensor<8x6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %y = graph.add %rs, %kc : tensor<2x8x6xf32>
  %lo = graph.slice %k {axes = [-1], ends = [3], starts = [0], steps = [1]} : tensor<2x8x6xf32> -> tensor<2x8x3xf32>
  %hi = graph.slice %k {axes = [-1], ends = [9223372036854775807], starts = [3], steps = [1]} : tensor<2x8x6xf32> -> tensor<2x8x3xf32>
  %nh2 = graph.neg %hi : tensor<2x8x3xf32>
  %rot2 = graph.concat %nh2, %lo {axis = -1} : (tensor<2x8x3xf32>, tensor<2x8x3xf32>) -> tensor<2x8x6xf32>
  %rs2 = graph.mul %rot2, %sin : (tensor<2x8x6xf32>, tensor<8x6xf32>) -> tensor<2x8x6xf32>
  %kc2 = graph.mul %k, %cos : (tensor<2x8x6xf32>, tensor<8x6xf32>) -> tensor<2x8x6xf32>
  %z = graph.add %kc2, %rs2 : tensor<2x8x6xf32>
  func.return %y, %z : tensor<2x8x6xf32>, tensor<2x8x6xf32>
}

// -----

// Negatives: the halves split the last axis at 2 of 8 (refused); cos broadcasts x to a
// larger shape (refused); the rotated value also returned (refused); the halves swapped
// (not a rotate_half at all).
// CHECK-LABEL: func.func @rope_refusals
// CHECK-NOT:     graph.rope
// CHECK:         func.return
func.func @rope_refusals(%q: tensor<4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>, %big: tensor<2x4x8xf32>) -> (tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %lo1 = graph.slice %q {axes = [1], ends = [2], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x2xf32>
  %hi1 = graph.slice %q {axes = [1], ends = [8], starts = [2], steps = [1]} : tensor<4x8xf32> -> tensor<4x6xf32>
  %n1 = graph.neg %hi1 : tensor<4x6xf32>
  %r1 = graph.concat %n1, %lo1 {axis = 1} : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
  %s1 = graph.mul %r1, %sin : tensor<4x8xf32>
  %c1 = graph.mul %q, %cos : tensor<4x8xf32>
  %y1 = graph.add %c1, %s1 : tensor<4x8xf32>
  %lo2 = graph.slice %q {axes = [1], ends = [4], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %hi2 = graph.slice %q {axes = [1], ends = [8], starts = [4], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %n2 = graph.neg %hi2 : tensor<4x4xf32>
  %r2 = graph.concat %n2, %lo2 {axis = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %s2 = graph.mul %r2, %sin : tensor<4x8xf32>
  %c2 = graph.mul %q, %big : (tensor<4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y2 = graph.add %c2, %s2 : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %lo3 = graph.slice %q {axes = [1], ends = [4], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %hi3 = graph.slice %q {axes = [1], ends = [8], starts = [4], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %n3 = graph.neg %hi3 : tensor<4x4xf32>
  %r3 = graph.concat %n3, %lo3 {axis = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %s3 = graph.mul %r3, %sin : tensor<4x8xf32>
  %c3 = graph.mul %q, %cos : tensor<4x8xf32>
  %y3 = graph.add %c3, %s3 : tensor<4x8xf32>
  %lo4 = graph.slice %q {axes = [1], ends = [4], starts = [0], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %hi4 = graph.slice %q {axes = [1], ends = [8], starts = [4], steps = [1]} : tensor<4x8xf32> -> tensor<4x4xf32>
  %n4 = graph.neg %lo4 : tensor<4x4xf32>
  %r4 = graph.concat %n4, %hi4 {axis = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %s4 = graph.mul %r4, %sin : tensor<4x8xf32>
  %c4 = graph.mul %q, %cos : tensor<4x8xf32>
  %y4 = graph.add %c4, %s4 : tensor<4x8xf32>
  func.return %y1, %y2, %y3, %r3, %y4 : tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
