// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=ConvActivationFusionPass,MatMulActivationFusionPass}' | filecheck %s

// CHECK-LABEL: func.func @conv_relu6
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %w {activation = "clip", clip_max = 6.000000e+00, clip_min = 0.000000e+00, dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1]}
// CHECK-NEXT:    func.return %[[Y]]
func.func @conv_relu6(%x: tensor<1x3x4x4xf32>, %w: tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %y = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.clip %y {min = 0.0, max = 6.0} : tensor<1x2x4x4xf32>
  func.return %r : tensor<1x2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_activations
// CHECK-NEXT:    %{{.*}} = graph.matmul %a, %w {activation = "gelu_tanh"}
// CHECK-NEXT:    %{{.*}} = graph.gemm %a, %w {activation = "silu", alpha = 1.000000e+00
// CHECK-NEXT:    %{{.*}} = graph.matmul %a, %w {activation = "sigmoid"}
// CHECK-NEXT:    %{{.*}} = graph.matmul %a, %w {activation = "relu"}
// CHECK-NEXT:    %{{.*}} = graph.matmul %a, %w {activation = "gelu"}
func.func @matmul_activations(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %m0 = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y0 = graph.gelu %m0 {approximate = "tanh"} : tensor<4x16xf32>
  %m1 = graph.gemm %a, %w {trans_a = false, trans_b = false, alpha = 1.0, beta = 1.0} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y1 = graph.silu %m1 : tensor<4x16xf32>
  %m2 = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y2 = graph.sigmoid %m2 : tensor<4x16xf32>
  %m3 = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y3 = graph.relu %m3 : tensor<4x16xf32>
  %m4 = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y4 = graph.gelu %m4 {approximate = "none"} : tensor<4x16xf32>
  func.return %y0, %y1, %y2, %y3, %y4 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Negatives: two activations in a row (the second stays), and a matmul used twice.
// CHECK-LABEL: func.func @refusals
// CHECK:         graph.matmul %a, %w {activation = "relu"}
// CHECK-NEXT:    graph.sigmoid
// CHECK:         graph.matmul %a, %w :
// CHECK-NEXT:    graph.relu
func.func @refusals(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %m = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = graph.relu %m : tensor<4x16xf32>
  %s = graph.sigmoid %r : tensor<4x16xf32>
  %m2 = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r2 = graph.relu %m2 : tensor<4x16xf32>
  func.return %s, %r2, %m2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
