// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' | filecheck %s --check-prefix=LOWERED

// Edge views (fusion/edge_views.py): a view no merge took joins the kernel at one end of
// it, marked afc.edge_view, and lower-to-buffer takes it back out, so every template
// lowers the group it planned.

// Between two kernels (two matmuls cannot share one): the reshape shapes the first
// kernel's output.
// CHECK-LABEL: func.func @between_kernels
// CHECK:       %r = graph.fusion_group (%x_1 = %x : {{.*}}) -> tensor<2x8x64xf16> plan {{.*}}template = "matmul"
// CHECK:         %a = graph.matmul
// CHECK-NEXT:    %r_1 = graph.reshape %a {afc.edge_view = unit, shape = [2, 8, 64]}
// CHECK-NEXT:    graph.yield %r_1
// CHECK:       graph.fusion_group (%r_1 = %r : tensor<2x8x64xf16>{{.*}}template = "matmul"
// CHECK-NOT:   graph.reshape
// LOWERED-LABEL: func.func @between_kernels
// LOWERED:       %a = buffer.launch @between_kernels_kernel0
// LOWERED-NEXT:  %r = graph.reshape %a {shape = [2, 8, 64]} : tensor<16x64xf16> -> tensor<2x8x64xf16>
// LOWERED:       buffer.launch @between_kernels_kernel1 {{.*}}(%r,
func.func @between_kernels(%x: tensor<16x32xf16>) -> tensor<2x8x32xf16> {
  %w1 = graph.constant dense<0.5> : tensor<32x64xf16>
  %w2 = graph.constant dense<0.25> : tensor<64x32xf16>
  %a = graph.matmul %x, %w1 : (tensor<16x32xf16>, tensor<32x64xf16>) -> tensor<16x64xf16>
  %r = graph.reshape %a {shape = [2, 8, 64]} : tensor<16x64xf16> -> tensor<2x8x64xf16>
  %b = graph.matmul %r, %w2 : (tensor<2x8x64xf16>, tensor<64x32xf16>) -> tensor<2x8x32xf16>
  func.return %b : tensor<2x8x32xf16>
}

// -----

// A function argument's view, read by one kernel only: it shapes that kernel's input.
// CHECK-LABEL: func.func @argument_view
// CHECK:       graph.fusion_group (%x_1 = %x : tensor<4x64xf16>) -> tensor<256xf16>
// CHECK-NEXT:    %r = graph.reshape %x_1 {afc.edge_view = unit, shape = [256]}
// CHECK-NEXT:    graph.exp %r
// LOWERED-LABEL: func.func @argument_view
// LOWERED:       %r = graph.reshape %x {shape = [256]} : tensor<4x64xf16> -> tensor<256xf16>
// LOWERED:       buffer.launch @argument_view_kernel0 {{.*}}(%r)
func.func @argument_view(%x: tensor<4x64xf16>) -> tensor<256xf16> {
  %r = graph.reshape %x {shape = [256]} : tensor<4x64xf16> -> tensor<256xf16>
  %e = graph.exp %r : tensor<256xf16>
  func.return %e : tensor<256xf16>
}

// -----

// Must not join: a view two kernels read (neither kernel can take it alone).
// CHECK-LABEL: func.func @shared_view
// CHECK:       %r = graph.reshape %x {shape = [8, 32]}
// CHECK:       %a = graph.fusion_group (%r_1 = %r
// CHECK-NOT:     afc.edge_view
// CHECK:       graph.fusion_group (%r_1 = %r
// CHECK-NOT:     afc.edge_view
// CHECK:       func.return
func.func @shared_view(%x: tensor<16x16xf16>) -> (tensor<8x16xf16>, tensor<8x32xf16>) {
  %w = graph.constant dense<0.5> : tensor<32x16xf16>
  %r = graph.reshape %x {shape = [8, 32]} : tensor<16x16xf16> -> tensor<8x32xf16>
  %a = graph.matmul %r, %w : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
  %t = graph.tanh %r : tensor<8x32xf16>
  func.return %a, %t : tensor<8x16xf16>, tensor<8x32xf16>
}

// -----

// The source is also a function result: the producer writes it anyway and does not take
// the view; its one reader does, as the shape of its input.
// CHECK-LABEL: func.func @source_returned
// CHECK:       %a = graph.fusion_group (%x_1 = %x
// CHECK-NOT:     afc.edge_view
// CHECK:         graph.yield
// CHECK:       %b = graph.fusion_group (%a_1 = %a : tensor<16x64xf16>)
// CHECK:         %r = graph.reshape %a_1 {afc.edge_view = unit, shape = [2, 8, 64]}
// CHECK-NEXT:    graph.matmul %r
// LOWERED-LABEL: func.func @source_returned
// LOWERED:       %a = buffer.launch @source_returned_kernel0
// LOWERED:       %r = graph.reshape %a {shape = [2, 8, 64]}
// LOWERED:       buffer.launch @source_returned_kernel1 {{.*}}(%r,
func.func @source_returned(%x: tensor<16x32xf16>) -> (tensor<16x64xf16>, tensor<2x8x32xf16>) {
  %w1 = graph.constant dense<0.5> : tensor<32x64xf16>
  %w2 = graph.constant dense<0.25> : tensor<64x32xf16>
  %a = graph.matmul %x, %w1 : (tensor<16x32xf16>, tensor<32x64xf16>) -> tensor<16x64xf16>
  %r = graph.reshape %a {shape = [2, 8, 64]} : tensor<16x64xf16> -> tensor<2x8x64xf16>
  %b = graph.matmul %r, %w2 : (tensor<2x8x64xf16>, tensor<64x32xf16>) -> tensor<2x8x32xf16>
  func.return %a, %b : tensor<16x64xf16>, tensor<2x8x32xf16>
}
