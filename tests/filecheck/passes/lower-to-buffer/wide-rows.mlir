// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 | filecheck %s --check-prefix=PLAN
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | afc-opt --split-input-file -p lower-to-buffer | filecheck %s

// A residual add + RMSNorm over rows wider than the per-value budget's tile after the
// kernel's working buffers (Qwen2.5-7B's hidden size, 3584 in f16): the plan is the
// tile the kernel is built with, whole rows of it, and lower-to-buffer takes it back.
// PLAN-LABEL: func.func @qwen_hidden
// PLAN:         graph.fusion_group {{.*}} template = "rows", tiling = {split = 1 : i64, tile_elems = 3584 : i64}
// CHECK-LABEL: func.func @qwen_hidden
// CHECK:         buffer.launch @qwen_hidden_kernel0 {{.*}} tiling = {split = 1 : i64, tile_elems = 3584 : i64}
// CHECK:       buffer.kernel @qwen_hidden_kernel0
func.func @qwen_hidden(%h: tensor<64x3584xf16>, %r: tensor<64x3584xf16>, %w: tensor<3584xf16>) -> (tensor<64x3584xf16>, tensor<64x3584xf16>) {
  %y, %s = graph.add_rms_norm %h, %r, %w {axis = -1, epsilon = 1.0e-06} : (tensor<64x3584xf16>, tensor<64x3584xf16>, tensor<3584xf16>) -> (tensor<64x3584xf16>, tensor<64x3584xf16>)
  func.return %y, %s : tensor<64x3584xf16>, tensor<64x3584xf16>
}

// -----

// Llama-7B's 4096 fits too: the add's inputs die inside the fused op, and their
// buffers hold its intermediates.
// PLAN-LABEL: func.func @llama_hidden
// PLAN:         graph.fusion_group {{.*}} tiling = {split = 1 : i64, tile_elems = 4096 : i64}
// CHECK-LABEL: func.func @llama_hidden
// CHECK:         buffer.launch @llama_hidden_kernel0 {{.*}} tiling = {split = 1 : i64, tile_elems = 4096 : i64}
func.func @llama_hidden(%h: tensor<4x4096xf16>, %r: tensor<4x4096xf16>, %w: tensor<4096xf16>) -> (tensor<4x4096xf16>, tensor<4x4096xf16>) {
  %y, %s = graph.add_rms_norm %h, %r, %w {axis = -1, epsilon = 1.0e-06} : (tensor<4x4096xf16>, tensor<4x4096xf16>, tensor<4096xf16>) -> (tensor<4x4096xf16>, tensor<4x4096xf16>)
  func.return %y, %s : tensor<4x4096xf16>, tensor<4x4096xf16>
}

// -----

// Must not plan: a reduced row that does not fit UB is no kernel (whole rows per tile);
// the op stays a library op with the reason, instead of a tiling lowering refuses.
// PLAN: ub-fusion: library op graph.add_rms_norm %y: a reduced row of 8192 elements does not fit UB
// PLAN-LABEL: func.func @too_wide
// PLAN-NOT:     graph.fusion_group
// CHECK-LABEL: func.func @too_wide
// CHECK-NOT:     buffer.launch
func.func @too_wide(%h: tensor<4x8192xf16>, %r: tensor<4x8192xf16>, %w: tensor<8192xf16>) -> (tensor<4x8192xf16>, tensor<4x8192xf16>) {
  %y, %s = graph.add_rms_norm %h, %r, %w {axis = -1, epsilon = 1.0e-06} : (tensor<4x8192xf16>, tensor<4x8192xf16>, tensor<8192xf16>) -> (tensor<4x8192xf16>, tensor<4x8192xf16>)
  func.return %y, %s : tensor<4x8192xf16>, tensor<4x8192xf16>
}

// -----

// Must not plan either: the per-value budget holds a row of 3712 (it counts one buffer
// per value), the built kernel (a layer norm's centred copy and squares beside them)
// does not; the plan builds it to know.
// PLAN: ub-fusion: library op graph.add_layer_norm %y: a reduced row of 3712 elements does not fit the Ascend910B1 UB with the kernel's working buffers
// PLAN-LABEL: func.func @built_too_wide
// PLAN-NOT:     graph.fusion_group
// CHECK-LABEL: func.func @built_too_wide
// CHECK-NOT:     buffer.launch
func.func @built_too_wide(%h: tensor<4x3712xf16>, %r: tensor<4x3712xf16>, %w: tensor<3712xf16>, %b: tensor<3712xf16>) -> (tensor<4x3712xf16>, tensor<4x3712xf16>) {
  %y, %s = graph.add_layer_norm %h, %r, %w, %b {axis = -1, epsilon = 1.0e-06} : (tensor<4x3712xf16>, tensor<4x3712xf16>, tensor<3712xf16>, tensor<3712xf16>) -> (tensor<4x3712xf16>, tensor<4x3712xf16>)
  func.return %y, %s : tensor<4x3712xf16>, tensor<4x3712xf16>
}
