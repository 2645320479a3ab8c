// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=ConvBiasAddFusionPass,MatMulBiasAddFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=MatMulBiasAddFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// CHECK-LABEL: func.func @conv_bias
// CHECK:         %[[B:.*]] = graph.constant {name = "c"} dense<[2.500000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %w, %[[B]]
// CHECK-NOT:     graph.add
// CHECK:         func.return %[[Y]]
func.func @conv_bias(%x: tensor<1x3x4x4xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x2x2xf32> {
  %b = graph.constant dense<[2.0, -1.5]> : tensor<2xf32>
  %c = graph.constant {name = "c"} dense<[[[0.5]], [[0.5]]]> : tensor<2x1x1xf32>
  %y = graph.conv2d %x, %w, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x3x4x4xf32>, tensor<2x3x3x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %z = graph.add %c, %y : (tensor<2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %z : tensor<1x2x2x2xf32>
}

// -----

// Negative: an addend of shape [2] broadcasts along W, not per channel.
// CHECK-LABEL: func.func @conv_not_per_channel
// CHECK:         graph.add
func.func @conv_not_per_channel(%x: tensor<1x3x4x4xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x2x2xf32> {
  %c = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %y = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x3x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x2x2xf32>
  %z = graph.add %y, %c : (tensor<1x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %z : tensor<1x2x2x2xf32>
}

// -----

// A batched matmul + bias over N becomes a matmul with bias; the bias may be an argument.
// CHECK-LABEL: func.func @matmul_bias
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %b {shape = [16]} : tensor<1x1x16xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.matmul %a, %w, %[[R]] : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @matmul_bias(%a: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<1x1x16xf32>) -> tensor<2x4x16xf32> {
  %m = graph.matmul %a, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = graph.add %m, %b : (tensor<2x4x16xf32>, tensor<1x1x16xf32>) -> tensor<2x4x16xf32>
  func.return %y : tensor<2x4x16xf32>
}

// -----

// A gemm without C takes the add as its C (beta 1).
// CHECK-LABEL: func.func @gemm_bias
// CHECK-NEXT:    graph.gemm %a, %w, %b {alpha = 2.000000e+00, beta = 1.000000e+00, trans_a = false, trans_b = true}
func.func @gemm_bias(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %m = graph.gemm %a, %w {trans_a = false, trans_b = true, alpha = 2.0, beta = 0.0} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y = graph.add %b, %m : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// Negatives: a per-row addend, and a matmul whose output is used twice.
// CHECK-LABEL: func.func @matmul_refusals
// CHECK:         graph.add
// CHECK:         graph.add
func.func @matmul_refusals(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x1xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %m = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = graph.add %m, %r : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %z = graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %y, %z : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A residual of the matmul's dynamic shape is no bias; the reason prints its dims as ?.
// LOG: GraphFusionPass[MatMulBiasAddFusionPass]: not applied to graph.add %y: the addend of shape ?x?x16 is not a bias over the last axis
// CHECK-LABEL: func.func @dynamic_residual
// CHECK:         graph.add
func.func @dynamic_residual(%a: tensor<?x?x8xf32>, %w: tensor<8x16xf32>, %r: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %mm = graph.matmul %a, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %y = graph.add %mm, %r : tensor<?x?x16xf32>
  func.return %y : tensor<?x?x16xf32>
}
