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

// the unrotated product is an output too: the kernel writes it and the rope's result
// CHECK-LABEL: func.func @product_also_read
// CHECK:       %y, %o = graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.rope
// CHECK-NEXT:    graph.yield
// LOWERED:     buffer.launch @product_also_read_kernel0
// LOWERED-NOT: buffer.launch
// LOWERED:     buffer.kernel @product_also_read_kernel0
func.func @product_also_read(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x64xf16>) {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  func.return %o, %y : tensor<2x16x4x16xf16>, tensor<2x16x64xf16>
}

// -----

// A merged QKV (issue 15, group 1): the ropes of q's and k's columns are the matmul's
// epilogue, v's columns pass through; one kernel writes q, k and v, each to its own
// tensor, a tile's columns to the outputs whose ranges hold them (scf.if per output).
// v's heads reshape (a view the function returns) is the kernel's edge view
// (fusion/edge_views.py): its node writes v4, and lower-to-buffer takes it back out.
// CHECK-LABEL: func.func @merged_qkv
// CHECK:       %v4, %qr, %kr = graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul %x_1, %w_1 :
// CHECK:         %v4_1 = graph.reshape %v {afc.edge_view = unit, shape = [0, 0, 2, 16]}
// CHECK-COUNT-2: graph.rope
// CHECK:         graph.yield %v4_1, %qr_1, %kr_1
// CHECK-NOT:   graph.fusion_group
// LOWERED:     %v, %qr, %kr = buffer.launch @merged_qkv_kernel0 {{.*}}(%x, %w, %cos, %sin)
// LOWERED-NEXT: %v4 = graph.reshape %v {shape = [0, 0, 2, 16]}
// LOWERED-NOT: buffer.launch
// LOWERED:     buffer.kernel @merged_qkv_kernel0
// LOWERED:     buffer.vgather
// LOWERED-COUNT-6: scf.if
func.func @merged_qkv(%x: tensor<2x16x32xf16>, %w: tensor<32x128xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>, tensor<2x16x2x16xf16>) {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x128xf16>) -> tensor<2x16x128xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<2x16x128xf16> -> tensor<2x16x64xf16>
  %k = graph.slice %y {starts = [64], ends = [96], axes = [-1], steps = [1]} : tensor<2x16x128xf16> -> tensor<2x16x32xf16>
  %v = graph.slice %y {starts = [96], ends = [128], axes = [-1], steps = [1]} : tensor<2x16x128xf16> -> tensor<2x16x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 16]} : tensor<2x16x32xf16> -> tensor<2x16x2x16xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 16]} : tensor<2x16x32xf16> -> tensor<2x16x2x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<2x16x2x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x2x16xf16>
  func.return %qr, %kr, %v4 : tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>, tensor<2x16x2x16xf16>
}

// -----

// a row scale and a bias after the product (what the norm prologue's rewrite leaves,
// rope_epilogue.product_chain): the ropes read their columns of the scaled, biased
// product, all in the matmul kernel
// CHECK-LABEL: func.func @merged_qkv_chain
// CHECK:       %qr, %kr = graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul %x_1, %w_1 :
// CHECK-NEXT:    graph.rms_norm_apply
// CHECK-NEXT:    graph.add
// CHECK-COUNT-2: graph.rope
// CHECK-NOT:   graph.fusion_group
// LOWERED:     buffer.launch @merged_qkv_chain_kernel0
// LOWERED-NOT: buffer.launch
// LOWERED:     buffer.kernel @merged_qkv_chain_kernel0
func.func @merged_qkv_chain(%x: tensor<2x16x32xf16>, %w: tensor<32x96xf16>, %r: tensor<2x16x1xf32>, %g: tensor<96xf16>, %b: tensor<96xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>) {
  %p = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x96xf16>) -> tensor<2x16x96xf16>
  %s = graph.rms_norm_apply %p, %r, %g {axis = 2} : (tensor<2x16x96xf16>, tensor<2x16x1xf32>, tensor<96xf16>) -> tensor<2x16x96xf16>
  %y = graph.add %s, %b : (tensor<2x16x96xf16>, tensor<96xf16>) -> tensor<2x16x96xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<2x16x96xf16> -> tensor<2x16x64xf16>
  %k = graph.slice %y {starts = [64], ends = [96], axes = [-1], steps = [1]} : tensor<2x16x96xf16> -> tensor<2x16x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 16]} : tensor<2x16x32xf16> -> tensor<2x16x2x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<2x16x2x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x2x16xf16>
  func.return %qr, %kr : tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>
}

// -----

// the same with Qwen's bias, added before the rope (the root's own epilogue); v is read
// as its columns, not split into heads
// CHECK-LABEL: func.func @merged_qkv_bias
// CHECK:       %v, %qr, %kr = graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul %x_1, %w_1, %b_1 :
// CHECK-NOT:   graph.fusion_group
// LOWERED:     buffer.launch @merged_qkv_bias_kernel0 {{.*}}(%x, %w, %b, %cos, %sin)
// LOWERED-NOT: buffer.launch
// LOWERED:     buffer.kernel @merged_qkv_bias_kernel0
func.func @merged_qkv_bias(%x: tensor<2x16x32xf16>, %w: tensor<32x128xf16>, %b: tensor<128xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>, tensor<2x16x32xf16>) {
  %y = graph.matmul %x, %w, %b : (tensor<2x16x32xf16>, tensor<32x128xf16>, tensor<128xf16>) -> tensor<2x16x128xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<2x16x128xf16> -> tensor<2x16x64xf16>
  %k = graph.slice %y {starts = [64], ends = [96], axes = [-1], steps = [1]} : tensor<2x16x128xf16> -> tensor<2x16x32xf16>
  %v = graph.slice %y {starts = [96], ends = [128], axes = [-1], steps = [1]} : tensor<2x16x128xf16> -> tensor<2x16x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 16]} : tensor<2x16x32xf16> -> tensor<2x16x2x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<2x16x2x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x2x16xf16>
  func.return %qr, %kr, %v : tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>, tensor<2x16x32xf16>
}

// -----

// must not fuse: k's rope reads other tables than q's (the epilogue streams one pair): one
// of them joins the matmul, which writes q's heads for the other
// CHECK-LABEL: func.func @tables_per_range
// CHECK:       %q4, %kr = graph.fusion_group {{.*}} template = "matmul"
// CHECK:       %qr = graph.fusion_group {{.*}} template = "rows"
// CHECK-NEXT:    graph.rope
// REMARK:      not fused {{.*}}: graph.rope after a cube op: the ropes read different cos/sin tables; the rope epilogue streams one pair
func.func @tables_per_range(%x: tensor<2x16x32xf16>, %w: tensor<32x96xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>, %cos2: tensor<1x16x1x16xf16>, %sin2: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>) {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x96xf16>) -> tensor<2x16x96xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<2x16x96xf16> -> tensor<2x16x64xf16>
  %k = graph.slice %y {starts = [64], ends = [96], axes = [-1], steps = [1]} : tensor<2x16x96xf16> -> tensor<2x16x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 16]} : tensor<2x16x32xf16> -> tensor<2x16x2x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  %kr = graph.rope %k4, %cos2, %sin2 {interleaved = false} : (tensor<2x16x2x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x2x16xf16>
  func.return %qr, %kr : tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>
}

// -----

// must not fuse: a partial rope (rotary_dim < head dim; the epilogue rotates whole heads:
// test_rope_epilogue.py names the refusal)
// CHECK-LABEL: func.func @partial_rotary
// CHECK:       %r = graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.reshape %y {afc.edge_view = unit
// CHECK-NEXT:    graph.yield
func.func @partial_rotary(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: tensor<1x16x1x8xf16>, %sin: tensor<1x16x1x8xf16>) -> tensor<2x16x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  %r = graph.reshape %y {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %o = graph.rope %r, %cos, %sin {interleaved = false, rotary_dim = 8} : (tensor<2x16x4x16xf16>, tensor<1x16x1x8xf16>, tensor<1x16x1x8xf16>) -> tensor<2x16x4x16xf16>
  func.return %o : tensor<2x16x4x16xf16>
}

// -----

// must not fuse: q's slice has another user that computes (an exp): the slice goes with
// it, and the rope reads the slice's kernel's output, not the matmul's columns
// CHECK-LABEL: func.func @slice_other_user
// CHECK:       %y = graph.fusion_group {{.*}} template = "matmul"
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.yield
// CHECK:       %q, %e = graph.fusion_group {{.*}} template = "rows"
// CHECK:       %qr = graph.fusion_group {{.*}} template = "rows"
// REMARK:      not fused graph.matmul %y -> graph.slice %q: graph.slice after a cube op: cube templates take elementwise/broadcast epilogues only
func.func @slice_other_user(%x: tensor<2x16x32xf16>, %w: tensor<32x96xf16>, %cos: tensor<1x16x1x16xf16>, %sin: tensor<1x16x1x16xf16>) -> (tensor<2x16x4x16xf16>, tensor<2x16x64xf16>) {
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x96xf16>) -> tensor<2x16x96xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<2x16x96xf16> -> tensor<2x16x64xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<2x16x64xf16> -> tensor<2x16x4x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<2x16x4x16xf16>, tensor<1x16x1x16xf16>, tensor<1x16x1x16xf16>) -> tensor<2x16x4x16xf16>
  %e = graph.exp %q : tensor<2x16x64xf16>
  func.return %qr, %e : tensor<2x16x4x16xf16>, tensor<2x16x64xf16>
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
