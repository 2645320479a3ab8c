// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// A rope after a matmul (lowering/rope_epilogue.py): ub-fusion names why it stays a kernel
// of its own. Whole heads of a [B, S, N] output with row-indexed [S, D] tables are what a
// per-head cube epilogue would take; the cube templates emit none yet.

// CHECK-LABEL: func.func @whole_heads
// CHECK:       graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul
// CHECK-NOT:     graph.rope
// CHECK:       graph.fusion_group {{.*}} template = "rows"
// CHECK-NEXT:    graph.rope
// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: graph.rope after a cube op: its columns [0, 64) are whole heads of dim 16, but the cube templates emit no per-head rope epilogue
func.func @whole_heads(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o : tensor<2x16x4x16xf16>
}

// -----

// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: graph.rope after a cube op: an interleaved rope (adjacent pairs) has no cube epilogue
func.func @interleaved(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = true} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o : tensor<2x16x4x16xf16>
}

// -----

// per-batch tables: the row's position alone does not index them
// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: graph.rope after a cube op: the rope's cos table of shape 2x16x1x16 is not indexed by the output row (an [S, D] table broadcast over batch and heads of the 2x16x4x16 input)
func.func @per_batch_tables(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<2x16x1x16xf16>, %sin: tensor<2x16x1x16xf16>) -> tensor<2x16x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<2x16x1x16xf16>, tensor<2x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o : tensor<2x16x4x16xf16>
}

// -----

// a BNSD rope straight on a batched matmul's output: its rows are not split into heads
// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: graph.rope after a cube op: the rope's input is not a [..., heads, head_dim] reshape of the matmul
func.func @no_head_reshape(%x: tensor<2x4x16x32xf16>, %w: tensor<32x16xf16>, %cos: tensor<16x16xf16>, %sin: tensor<16x16xf16>) -> tensor<2x4x16x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x4x16x32xf16>, tensor<32x16xf16>) -> tensor<2x4x16x16xf16>
  %o = graph.rope %y, %cos, %sin {interleaved = false} : (tensor<2x4x16x16xf16>, tensor<16x16xf16>, tensor<16x16xf16>) -> tensor<2x4x16x16xf16>
  func.return %o : tensor<2x4x16x16xf16>
}
