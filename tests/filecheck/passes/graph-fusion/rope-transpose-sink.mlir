// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RopeTransposeSinkPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RopeTransposeSinkPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=RopeTransposeSinkPass,FlashAttentionFusionPass}' | filecheck %s --check-prefix=ATTN

// Llama/Qwen: q = transpose(reshape(x @ wq), [0, 2, 1, 3]) then rope with [S, D] tables.
// The transpose moves after the rope, which runs on the projection's [B, S, H, D] with
// the tables as [1, S, 1, D] views; with the attention rule the transposes of q, k (and
// v, and the output) all fold into a BSND flash attention.
// CHECK-LABEL: func.func @rope_then_attention
// CHECK:         %[[Q4:.*]] = graph.reshape %q {shape = [2, 6, 4, 8]}
// CHECK:         %[[C:.*]] = graph.reshape %cos {shape = [1, 6, 1, 8]} : tensor<6x8xf32> -> tensor<1x6x1x8xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.reshape %sin {shape = [1, 6, 1, 8]} : tensor<6x8xf32> -> tensor<1x6x1x8xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.rope %[[Q4]], %[[C]], %[[S]] {interleaved = false} : (tensor<2x6x4x8xf32>, tensor<1x6x1x8xf32>, tensor<1x6x1x8xf32>) -> tensor<2x6x4x8xf32>
// CHECK-NEXT:    %{{.*}} = graph.transpose %[[R]] {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
// k's rope reads q's table views (one pair, as a QKV matmul's rope epilogue streams it)
// CHECK-NEXT:    %[[K4:.*]] = graph.reshape %k
// CHECK-NEXT:    graph.rope %[[K4]], %[[C]], %[[S]]
// CHECK-NOT:     graph.reshape %cos
// ATTN-LABEL: func.func @rope_then_attention
// ATTN-NOT:     graph.transpose
// ATTN:         graph.flash_attention {{.*}} {causal = false, layout = "BSND", scale = 0.35355338454246521} : tensor<2x6x4x8xf32>
// ATTN-NOT:     graph.transpose
func.func @rope_then_attention(%q: tensor<2x6x32xf32>, %k: tensor<2x6x32xf32>, %v: tensor<2x6x32xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>) -> tensor<2x6x32xf32> {
  %q4 = graph.reshape %q {shape = [2, 6, 4, 8]} : tensor<2x6x32xf32> -> tensor<2x6x4x8xf32>
  %qt = graph.transpose %q4 {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %qr = graph.rope %qt, %cos, %sin {interleaved = false} : (tensor<2x4x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6x8xf32>
  %k4 = graph.reshape %k {shape = [2, 6, 4, 8]} : tensor<2x6x32xf32> -> tensor<2x6x4x8xf32>
  %kt = graph.transpose %k4 {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %kr = graph.rope %kt, %cos, %sin {interleaved = false} : (tensor<2x4x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6x8xf32>
  %v4 = graph.reshape %v {shape = [2, 6, 4, 8]} : tensor<2x6x32xf32> -> tensor<2x6x4x8xf32>
  %vt = graph.transpose %v4 {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %ktt = graph.transpose %kr {perm = [0, 1, 3, 2]} : tensor<2x4x6x8xf32> -> tensor<2x4x8x6xf32>
  %s = graph.matmul %qr, %ktt : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x6x6xf32>
  %c = graph.constant dense<0.353553385> : tensor<f32>
  %ss = graph.mul %s, %c : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %p = graph.softmax %ss {axis = -1} : tensor<2x4x6x6xf32>
  %o = graph.matmul %p, %vt : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  %ot = graph.transpose %o {perm = [0, 2, 1, 3]} : tensor<2x4x6x8xf32> -> tensor<2x6x4x8xf32>
  %r = graph.reshape %ot {shape = [2, 6, 32]} : tensor<2x6x4x8xf32> -> tensor<2x6x32xf32>
  func.return %r : tensor<2x6x32xf32>
}

// -----

// Negative (preconditions): a transpose that moves the last axis (rope rotates it); a
// transpose with another user (it would stay, and the rope's input with it); tables
// that vary along the head axis too ([H, S, D]: in x's layout they would need a real
// transpose, not a reshape).
// CHECK-LABEL: func.func @refusals
// ATTN-LABEL: func.func @refusals
// CHECK-COUNT-3: graph.rope %t
// LOG: not applied to graph.rope %r0: the transpose moves the last axis, which rope rotates
// LOG: not applied to graph.rope %r1: the transpose has other users
// LOG: not applied to graph.rope %r2: cos or sin would need a transpose that moves data, or a reshape of two dynamic dims
func.func @refusals(%x: tensor<2x6x4x8xf32>, %y: tensor<2x6x8x4xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>, %hcos: tensor<4x6x8xf32>) -> (tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>) {
  %t0 = graph.transpose %y {perm = [0, 3, 1, 2]} : tensor<2x6x8x4xf32> -> tensor<2x4x6x8xf32>
  %r0 = graph.rope %t0, %cos, %sin {interleaved = false} : (tensor<2x4x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6x8xf32>
  %t1 = graph.transpose %x {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %r1 = graph.rope %t1, %cos, %sin {interleaved = false} : (tensor<2x4x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6x8xf32>
  %t2 = graph.transpose %x {perm = [0, 2, 1, 3]} : tensor<2x6x4x8xf32> -> tensor<2x4x6x8xf32>
  %r2 = graph.rope %t2, %hcos, %hcos {interleaved = false} : (tensor<2x4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>) -> tensor<2x4x6x8xf32>
  func.return %r0, %r1, %r2, %t1 : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>
}

// -----

// examples/llama_layer.afc: the sequence is dynamic, so the tables are [?, D]; their
// view in x's layout is the reshape [1, -1, 1, D] (one dynamic dim: the -1 infers it).
// CHECK-LABEL: func.func @dynamic_sequence
// CHECK:         %[[C:.*]] = graph.reshape %cos {shape = [1, -1, 1, 8]} : tensor<?x8xf16> -> tensor<1x?x1x8xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.reshape %sin {shape = [1, -1, 1, 8]} : tensor<?x8xf16> -> tensor<1x?x1x8xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.rope %x, %[[C]], %[[S]] {interleaved = false} : (tensor<?x?x4x8xf16>, tensor<1x?x1x8xf16>, tensor<1x?x1x8xf16>) -> tensor<?x?x4x8xf16>
// CHECK-NEXT:    %{{.*}} = graph.transpose %[[R]] {perm = [0, 2, 1, 3]} : tensor<?x?x4x8xf16> -> tensor<?x4x?x8xf16>
func.func @dynamic_sequence(%x: tensor<?x?x4x8xf16>, %cos: tensor<?x8xf16>, %sin: tensor<?x8xf16>) -> tensor<?x4x?x8xf16> {
  %t = graph.transpose %x {perm = [0, 2, 1, 3]} : tensor<?x?x4x8xf16> -> tensor<?x4x?x8xf16>
  %r = graph.rope %t, %cos, %sin {interleaved = false} : (tensor<?x4x?x8xf16>, tensor<?x8xf16>, tensor<?x8xf16>) -> tensor<?x4x?x8xf16>
  func.return %r : tensor<?x4x?x8xf16>
}

// -----

// Negative: per-batch tables [?, 1, ?, D] (batch and sequence dynamic): in x's layout
// they are [?, ?, 1, D], a reshape with two unknown dims, which no reshape spells.
// CHECK-LABEL: func.func @two_dynamic_table_dims
// CHECK:         graph.transpose %x
// CHECK-NEXT:    graph.rope %t
// LOG: not applied to graph.rope %r: cos or sin would need a transpose that moves data, or a reshape of two dynamic dims
func.func @two_dynamic_table_dims(%x: tensor<?x?x4x8xf16>, %cos: tensor<?x1x?x8xf16>) -> tensor<?x4x?x8xf16> {
  %t = graph.transpose %x {perm = [0, 2, 1, 3]} : tensor<?x?x4x8xf16> -> tensor<?x4x?x8xf16>
  %r = graph.rope %t, %cos, %cos {interleaved = false} : (tensor<?x4x?x8xf16>, tensor<?x1x?x8xf16>, tensor<?x1x?x8xf16>) -> tensor<?x4x?x8xf16>
  func.return %r : tensor<?x4x?x8xf16>
}
