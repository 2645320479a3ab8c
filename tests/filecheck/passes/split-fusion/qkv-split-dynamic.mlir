// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},split-fusion{only=SplitSliceFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},split-fusion{only=SplitSliceFusionPass},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},split-fusion{only=SplitSliceFusionPass},ub-fusion{remarks}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARKS

// The q/k/v split of a merged QKV projection with a dynamic batch and sequence (B and S
// of [B, S, 64]) folds into its readers as with static shapes: a part's token rows are
// the static 64 elements apart, only their count is dynamic. The rope kernels read
// q's and k's columns in place (row_views.py: B and S stay one contiguous block of
// token rows, the heads 8 apart in a row), the BSND attention reads v's
// (attention_views.py).
// LOG-NOT: not applied to graph.split %q
// CHECK-LABEL: func.func @dynamic_qkv
// CHECK:       %qr = graph.fusion_group (%qkv_1 = %qkv : tensor<?x?x64xf16>
// CHECK:         graph.slice %qkv_1 {axes = [2], ends = [32], starts = [0], steps = [1]}
// CHECK:         graph.rope
// CHECK:       %kr = graph.fusion_group (%qkv_1 = %qkv : tensor<?x?x64xf16>
// CHECK:         graph.slice %qkv_1 {axes = [2], ends = [48], starts = [32], steps = [1]}
// CHECK:         graph.rope
// CHECK:       graph.fusion_group (%qkv_1 = %qkv : tensor<?x?x64xf16>, %qr_1 = %qr : tensor<?x?x4x8xf16>, %kr_1 = %kr : tensor<?x?x2x8xf16>) -> tensor<?x?x4x8xf16> plan {{.*}}template = "attention"
// CHECK-NEXT:    %v = graph.slice %qkv_1 {axes = [2], ends = [64], starts = [48], steps = [1]}
// CHECK-NEXT:    %v4 = graph.reshape %v
// CHECK-NEXT:    graph.flash_attention %qr_1, %kr_1, %v4
// CHECK-NOT:   graph.split
func.func @dynamic_qkv(%qkv: tensor<?x?x64xf16>, %cos: tensor<?x1x8xf16>, %sin: tensor<?x1x8xf16>) -> tensor<?x?x4x8xf16> {
  %q, %k, %v = graph.split %qkv {axis = 2, sizes = [32, 16, 16]} : tensor<?x?x64xf16> -> (tensor<?x?x32xf16>, tensor<?x?x16xf16>, tensor<?x?x16xf16>)
  %q4 = graph.reshape %q {shape = [0, 0, 4, 8]} : tensor<?x?x32xf16> -> tensor<?x?x4x8xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<?x?x4x8xf16>, tensor<?x1x8xf16>, tensor<?x1x8xf16>) -> tensor<?x?x4x8xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 8]} : tensor<?x?x16xf16> -> tensor<?x?x2x8xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<?x?x2x8xf16>, tensor<?x1x8xf16>, tensor<?x1x8xf16>) -> tensor<?x?x2x8xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 8]} : tensor<?x?x16xf16> -> tensor<?x?x2x8xf16>
  %o = graph.flash_attention %qr, %kr, %v4 {scale = 0.35355339 : f32, causal = true, layout = "BSND"} : (tensor<?x?x4x8xf16>, tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>) -> tensor<?x?x4x8xf16>
  func.return %o : tensor<?x?x4x8xf16>
}

// -----

// Negative: each part is read through a reshape that merges B and S into one dynamic
// dim. A view keeps its source's leading dynamic dims one by one (the kernel reads
// their sizes from the source), so no reader takes its part in place: the slices would
// be copy kernels, and the split stays.
// LOG: not applied to graph.split %a: no estimated gain
// CHECK-LABEL: func.func @merged_dynamic_dims
// CHECK:       graph.split
func.func @merged_dynamic_dims(%x: tensor<?x?x64xf16>) -> (tensor<?x4x8xf16>, tensor<?x4x8xf16>) {
  %a, %b = graph.split %x {axis = 2, sizes = [32, 32]} : tensor<?x?x64xf16> -> (tensor<?x?x32xf16>, tensor<?x?x32xf16>)
  %a3 = graph.reshape %a {shape = [-1, 4, 8]} : tensor<?x?x32xf16> -> tensor<?x4x8xf16>
  %b3 = graph.reshape %b {shape = [-1, 4, 8]} : tensor<?x?x32xf16> -> tensor<?x4x8xf16>
  %ea = graph.exp %a3 : tensor<?x4x8xf16>
  %eb = graph.sigmoid %b3 : tensor<?x4x8xf16>
  func.return %ea, %eb : tensor<?x4x8xf16>, tensor<?x4x8xf16>
}

// -----

// Negative (the rows kernel's refusal by name): the slice itself, read through such a
// reshape, stays a copy kernel of its own.
// REMARKS: not fused graph.slice %a -> graph.exp %ea: graph.reshape is not a strided view of the kernel's input
// CHECK-LABEL: func.func @merged_view
// CHECK:       %a3 = graph.fusion_group (%x_1 = %x
// CHECK-NEXT:    graph.slice
// CHECK-NEXT:    graph.reshape %a {afc.edge_view = unit
// CHECK-NEXT:    graph.yield
// CHECK:       %ea = graph.fusion_group (%a3_1 = %a3
func.func @merged_view(%x: tensor<?x?x64xf16>) -> tensor<?x4x8xf16> {
  %a = graph.slice %x {axes = [2], ends = [32], starts = [0], steps = [1]} : (tensor<?x?x64xf16>) -> tensor<?x?x32xf16>
  %a3 = graph.reshape %a {shape = [-1, 4, 8]} : tensor<?x?x32xf16> -> tensor<?x4x8xf16>
  %ea = graph.exp %a3 : tensor<?x4x8xf16>
  func.return %ea : tensor<?x4x8xf16>
}
