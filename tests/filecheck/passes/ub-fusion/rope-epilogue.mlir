// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' | filecheck %s --check-prefix=LOWERED

// A rope after a matmul (lowering/rope_epilogue.py): over whole heads of the matmul's
// output with row-indexed [S, D] tables it joins the matmul kernel as its epilogue,
// chosen by cost; otherwise ub-fusion names why it stays a kernel of its own.

// CHECK-LABEL: func.func @whole_heads
// CHECK:       %o = graph.fusion_group {{.*}} template = "matmul"{{.*}} reason = "3 ops in one matmul kernel save
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.rope
// CHECK-NEXT:    graph.yield
// CHECK-NOT:   graph.fusion_group
// LOWERED:     buffer.launch @whole_heads_kernel0 {{.*}}(%x, %w, %cos, %sin)
// LOWERED-NOT: buffer.launch
// LOWERED:     buffer.kernel @whole_heads_kernel0
// LOWERED:     buffer.vgather
// LOWERED:     buffer.vscalar "muls"
func.func @whole_heads(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o : tensor<2x16x4x16xf16>
}

// -----

// CHECK-LABEL: func.func @interleaved
// CHECK:       template = "matmul"
// CHECK:       template = "rows"
// CHECK-NEXT:    graph.rope
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

// -----

// one position's table for every row: not indexed by the row
// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: graph.rope after a cube op: the rope's cos table of shape 1x1x1x16 is not indexed by the output row
func.func @one_position(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x1x1x16xf16>, %sin: tensor<1x1x1x16xf16>) -> tensor<2x16x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x1x1x16xf16>, tensor<1x1x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o : tensor<2x16x4x16xf16>
}

// -----

// the unrotated product is an output too: the epilogue writes the rope's result only
// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: the matmul's output is also read outside the rope; a rope epilogue writes the rope's result only
func.func @product_also_read(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x64xf16>) {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o, %y : tensor<2x16x4x16xf16>, tensor<2x16x64xf16>
}

// -----

// heads of 4 columns: a head's halves would not start 32-byte aligned in UB
// REMARK:      ub-fusion: not fused graph.matmul %y -> graph.rope %o: a rope epilogue needs a head dim that is a multiple of 8, not 4
func.func @narrow_heads(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x4xf16>, %sin: tensor<1x16x1x4xf16>) -> tensor<2x16x16x4xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 16, 4]} : tensor<2x16x64xf16> -> tensor<2x16x16x4xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x16x4xf16>, tensor<1x16x1x4xf16>, tensor<1x16x1x4xf16>) -> tensor<2x16x16x4xf16>
  func.return %o : tensor<2x16x16x4xf16>
}
