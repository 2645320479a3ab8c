// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},split-fusion{only=SplitSliceFusionPass log=true}' 2>&1 | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},split-fusion{only=SplitSliceFusionPass},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},split-fusion{only=SplitSliceFusionPass},ub-fusion{remarks}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARKS

// The q/k/v split of a merged QKV projection folds into its readers: the projection
// takes the ropes of q's and k's columns as its epilogue and writes q, k and v each to
// its own tensor (rope_epilogue.py; the v slice moves to it from the attention,
// fusion/view_placement.py), which the BSND attention reads. No split and no copy
// kernel is left between the matmul and its readers.
// CHECK-LABEL: func.func @qkv_rope_attention
// CHECK:       %qr, %kr, %v4 = graph.fusion_group ({{.*}}template = "matmul"
// CHECK:         graph.slice %qkv {axes = [2], ends = [512], starts = [0], steps = [1]}
// CHECK:         graph.slice %qkv {axes = [2], ends = [640], starts = [512], steps = [1]}
// CHECK:         graph.slice %qkv {axes = [2], ends = [768], starts = [640], steps = [1]}
// CHECK:         graph.rope
// CHECK:         graph.rope
// CHECK:         graph.yield %qr_1, %kr_1, %v4_1
// CHECK:       %o3 = graph.fusion_group (%qr_1 = %qr : tensor<1x256x8x64xf16>, %kr_1 = %kr : tensor<1x256x2x64xf16>, %v4_1 = %v4 : tensor<1x256x2x64xf16>) -> tensor<1x256x512xf16> plan {{.*}}template = "attention"
// CHECK-NEXT:    %o = graph.flash_attention %qr_1, %kr_1, %v4_1
// CHECK-NEXT:    graph.reshape %o {afc.edge_view = unit, shape = [0, 0, 512]}
// CHECK-NOT:   graph.split
func.func @qkv_rope_attention(%x: tensor<1x256x512xf16>, %w: tensor<512x768xf16>, %cos: tensor<256x1x64xf16>, %sin: tensor<256x1x64xf16>) -> tensor<1x256x512xf16> {
  %qkv = graph.matmul %x, %w : (tensor<1x256x512xf16>, tensor<512x768xf16>) -> tensor<1x256x768xf16>
  %q, %k, %v = graph.split %qkv {axis = 2, sizes = [512, 128, 128]} : tensor<1x256x768xf16> -> (tensor<1x256x512xf16>, tensor<1x256x128xf16>, tensor<1x256x128xf16>)
  %q4 = graph.reshape %q {shape = [0, 0, 8, 64]} : tensor<1x256x512xf16> -> tensor<1x256x8x64xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<1x256x8x64xf16>, tensor<256x1x64xf16>, tensor<256x1x64xf16>) -> tensor<1x256x8x64xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 64]} : tensor<1x256x128xf16> -> tensor<1x256x2x64xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<1x256x2x64xf16>, tensor<256x1x64xf16>, tensor<256x1x64xf16>) -> tensor<1x256x2x64xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 64]} : tensor<1x256x128xf16> -> tensor<1x256x2x64xf16>
  %o = graph.flash_attention %qr, %kr, %v4 {scale = 0.125 : f32, causal = true, layout = "BSND"} : (tensor<1x256x8x64xf16>, tensor<1x256x2x64xf16>, tensor<1x256x2x64xf16>) -> tensor<1x256x8x64xf16>
  %o3 = graph.reshape %o {shape = [0, 0, 512]} : tensor<1x256x8x64xf16> -> tensor<1x256x512xf16>
  func.return %o3 : tensor<1x256x512xf16>
}

// -----

// Without rope, one attention kernel reads all three parts in place: the projection's
// output is its only q/k/v input.
// CHECK-LABEL: func.func @qkv_attention
// CHECK:       graph.fusion_group (%qkv_1 = %qkv : tensor<2x128x768xf16>) -> tensor<2x128x8x64xf16> plan {{.*}}template = "attention"
// CHECK-COUNT-3: graph.slice %qkv_1
// CHECK-NOT:   graph.split
func.func @qkv_attention(%x: tensor<2x128x512xf16>, %w: tensor<512x768xf16>) -> tensor<2x128x8x64xf16> {
  %qkv = graph.matmul %x, %w : (tensor<2x128x512xf16>, tensor<512x768xf16>) -> tensor<2x128x768xf16>
  %q, %k, %v = graph.split %qkv {axis = 2, sizes = [512, 128, 128]} : tensor<2x128x768xf16> -> (tensor<2x128x512xf16>, tensor<2x128x128xf16>, tensor<2x128x128xf16>)
  %q4 = graph.reshape %q {shape = [0, 0, 8, 64]} : tensor<2x128x512xf16> -> tensor<2x128x8x64xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 64]} : tensor<2x128x128xf16> -> tensor<2x128x2x64xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 64]} : tensor<2x128x128xf16> -> tensor<2x128x2x64xf16>
  %o = graph.flash_attention %q4, %k4, %v4 {scale = 0.125 : f32, causal = false, layout = "BSND"} : (tensor<2x128x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>) -> tensor<2x128x8x64xf16>
  func.return %o : tensor<2x128x8x64xf16>
}

// -----

// Negative: a BNSD attention reads the parts through head transposes (a library op
// each), so no reader takes a part's columns in place: slices would be copy kernels, and
// the split stays.
// LOG: not applied to graph.split %q: no estimated gain
// CHECK-LABEL: func.func @qkv_bnsd
// CHECK:       graph.split
func.func @qkv_bnsd(%qkv: tensor<1x256x768xf16>) -> tensor<1x8x256x64xf16> {
  %q, %k, %v = graph.split %qkv {axis = 2, sizes = [512, 128, 128]} : tensor<1x256x768xf16> -> (tensor<1x256x512xf16>, tensor<1x256x128xf16>, tensor<1x256x128xf16>)
  %q4 = graph.reshape %q {shape = [0, 0, 8, 64]} : tensor<1x256x512xf16> -> tensor<1x256x8x64xf16>
  %qt = graph.transpose %q4 {perm = [0, 2, 1, 3]} : tensor<1x256x8x64xf16> -> tensor<1x8x256x64xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 64]} : tensor<1x256x128xf16> -> tensor<1x256x2x64xf16>
  %kt = graph.transpose %k4 {perm = [0, 2, 1, 3]} : tensor<1x256x2x64xf16> -> tensor<1x2x256x64xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 64]} : tensor<1x256x128xf16> -> tensor<1x256x2x64xf16>
  %vt = graph.transpose %v4 {perm = [0, 2, 1, 3]} : tensor<1x256x2x64xf16> -> tensor<1x2x256x64xf16>
  %o = graph.flash_attention %qt, %kt, %vt {scale = 0.125 : f32, causal = true, layout = "BNSD"} : (tensor<1x8x256x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>) -> tensor<1x8x256x64xf16>
  func.return %o : tensor<1x8x256x64xf16>
}

// -----

// Negative (the attention's refusal by name): the view of v is also a result, so it
// must be written to GM anyway: the slice stays a copy kernel of its own.
// REMARKS: not fused graph.slice %v -> graph.flash_attention %o: the view graph.slice of an attention operand is read elsewhere
// CHECK-LABEL: func.func @view_read_elsewhere
// CHECK:       %v = graph.fusion_group (%qkv_1 = %qkv
// CHECK-NEXT:    graph.slice
// CHECK-NEXT:    graph.yield
func.func @view_read_elsewhere(%qkv: tensor<1x256x768xf16>, %q: tensor<1x256x8x64xf16>, %k: tensor<1x256x2x64xf16>) -> (tensor<1x256x8x64xf16>, tensor<1x256x128xf16>) {
  %v = graph.slice %qkv {axes = [2], ends = [768], starts = [640], steps = [1]} : (tensor<1x256x768xf16>) -> tensor<1x256x128xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 64]} : tensor<1x256x128xf16> -> tensor<1x256x2x64xf16>
  %o = graph.flash_attention %q, %k, %v4 {scale = 0.125 : f32, causal = true, layout = "BSND"} : (tensor<1x256x8x64xf16>, tensor<1x256x2x64xf16>, tensor<1x256x2x64xf16>) -> tensor<1x256x8x64xf16>
  func.return %o, %v : tensor<1x256x8x64xf16>, tensor<1x256x128xf16>
}

// -----

// Negative (the attention's refusal by name): v's slice takes keys 0..127 of the
// sequence. A view may only choose columns of a token row, so the slice stays a copy
// kernel of its own.
// REMARKS: not fused graph.slice %v -> graph.flash_attention %o: graph.slice slices the batch or sequence dim of an attention operand
// CHECK-LABEL: func.func @view_of_the_sequence
// CHECK:       %v = graph.fusion_group (%kv_1 = %kv
// CHECK-NEXT:    graph.slice
// CHECK-NEXT:    graph.yield
func.func @view_of_the_sequence(%kv: tensor<1x256x2x64xf16>, %q: tensor<1x128x8x64xf16>, %k: tensor<1x128x2x64xf16>) -> tensor<1x128x8x64xf16> {
  %v = graph.slice %kv {axes = [1], ends = [128], starts = [0], steps = [1]} : (tensor<1x256x2x64xf16>) -> tensor<1x128x2x64xf16>
  %o = graph.flash_attention %q, %k, %v {scale = 0.125 : f32, causal = true, layout = "BSND"} : (tensor<1x128x8x64xf16>, tensor<1x128x2x64xf16>, tensor<1x128x2x64xf16>) -> tensor<1x128x8x64xf16>
  func.return %o : tensor<1x128x8x64xf16>
}
