// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s

// View placement (fusion/view_placement.py): after the greedy merges, v's slice of a
// merged QKV moves from the attention, which took it first, into the QKV matmul, which
// by then has taken the ropes of q and k: the matmul then writes q, k and v and no
// longer its whole product.
// v's heads reshape, left between the two kernels, is the projection's edge view
// (fusion/edge_views.py).
// CHECK-LABEL: func.func @v_joins_the_projection
// CHECK:       %v4, %qr, %kr = graph.fusion_group {{.*}} template = "matmul"
// CHECK:         %v = graph.slice %y {axes = [-1], ends = [128], starts = [96], steps = [1]}
// CHECK:         %v4_1 = graph.reshape %v {afc.edge_view = unit
// CHECK:         graph.yield %v4_1, %qr_1, %kr_1
// CHECK-NOT:   graph.reshape
// CHECK:       graph.fusion_group (%qr_1 = %qr : {{.*}}, %kr_1 = %kr : {{.*}}, %v4_1 = %v4 : {{.*}}) {{.*}} template = "attention"
// CHECK-NEXT:    graph.flash_attention %qr_1, %kr_1, %v4_1
func.func @v_joins_the_projection(%x: tensor<1x64x32xf16>, %w: tensor<32x128xf16>, %cos: tensor<1x64x1x16xf16>, %sin: tensor<1x64x1x16xf16>) -> tensor<1x64x4x16xf16> {
  %y = graph.matmul %x, %w : (tensor<1x64x32xf16>, tensor<32x128xf16>) -> tensor<1x64x128xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<1x64x128xf16> -> tensor<1x64x64xf16>
  %k = graph.slice %y {starts = [64], ends = [96], axes = [-1], steps = [1]} : tensor<1x64x128xf16> -> tensor<1x64x32xf16>
  %v = graph.slice %y {starts = [96], ends = [128], axes = [-1], steps = [1]} : tensor<1x64x128xf16> -> tensor<1x64x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<1x64x64xf16> -> tensor<1x64x4x16xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 16]} : tensor<1x64x32xf16> -> tensor<1x64x2x16xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 16]} : tensor<1x64x32xf16> -> tensor<1x64x2x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<1x64x4x16xf16>, tensor<1x64x1x16xf16>, tensor<1x64x1x16xf16>) -> tensor<1x64x4x16xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<1x64x2x16xf16>, tensor<1x64x1x16xf16>, tensor<1x64x1x16xf16>) -> tensor<1x64x2x16xf16>
  %o = graph.flash_attention %qr, %kr, %v4 {scale = 0.25 : f32, causal = true, layout = "BSND"} : (tensor<1x64x4x16xf16>, tensor<1x64x2x16xf16>, tensor<1x64x2x16xf16>) -> tensor<1x64x4x16xf16>
  func.return %o : tensor<1x64x4x16xf16>
}

// -----

// Negative: the whole product is an output too, so the matmul writes it anyway; moved,
// the slice would only add v's write. It stays a view the attention reads in place.
// CHECK-LABEL: func.func @product_read_elsewhere
// CHECK:       %y, %qr, %kr = graph.fusion_group {{.*}} template = "matmul"
// CHECK:       graph.fusion_group (%y_1 = %y : {{.*}} template = "attention"
// CHECK-NEXT:    %v = graph.slice %y_1
func.func @product_read_elsewhere(%x: tensor<1x64x32xf16>, %w: tensor<32x128xf16>, %cos: tensor<1x64x1x16xf16>, %sin: tensor<1x64x1x16xf16>) -> (tensor<1x64x4x16xf16>, tensor<1x64x128xf16>) {
  %y = graph.matmul %x, %w : (tensor<1x64x32xf16>, tensor<32x128xf16>) -> tensor<1x64x128xf16>
  %q = graph.slice %y {starts = [0], ends = [64], axes = [-1], steps = [1]} : tensor<1x64x128xf16> -> tensor<1x64x64xf16>
  %k = graph.slice %y {starts = [64], ends = [96], axes = [-1], steps = [1]} : tensor<1x64x128xf16> -> tensor<1x64x32xf16>
  %v = graph.slice %y {starts = [96], ends = [128], axes = [-1], steps = [1]} : tensor<1x64x128xf16> -> tensor<1x64x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<1x64x64xf16> -> tensor<1x64x4x16xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 16]} : tensor<1x64x32xf16> -> tensor<1x64x2x16xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 16]} : tensor<1x64x32xf16> -> tensor<1x64x2x16xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<1x64x4x16xf16>, tensor<1x64x1x16xf16>, tensor<1x64x1x16xf16>) -> tensor<1x64x4x16xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<1x64x2x16xf16>, tensor<1x64x1x16xf16>, tensor<1x64x1x16xf16>) -> tensor<1x64x2x16xf16>
  %o = graph.flash_attention %qr, %kr, %v4 {scale = 0.25 : f32, causal = true, layout = "BSND"} : (tensor<1x64x4x16xf16>, tensor<1x64x2x16xf16>, tensor<1x64x2x16xf16>) -> tensor<1x64x4x16xf16>
  func.return %o, %y : tensor<1x64x4x16xf16>, tensor<1x64x128xf16>
}
