// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=ConvBatchnormFusionPass}' | filecheck %s

// BN folds into a conv with bias.
// CHECK-LABEL: func.func @with_bias
// CHECK-NEXT:    %[[W:.*]] = graph.constant {name = "conv.weight.bn_folded"} dense<{{.*}}> : tensor<2x3x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant {name = "conv.weight.bn_folded.bias"} dense<[-0.39999938, 6.999900e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %[[W]], %[[B]] {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1]}
// CHECK-NOT:     graph.batch_norm
// CHECK:         func.return %[[Y]]
func.func @with_bias(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[1.0]], [[2.0]], [[3.0]]], [[[-1.0]], [[0.5]], [[0.25]]]]> : tensor<2x3x1x1xf32>
  %b = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %g = graph.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %be = graph.constant dense<[0.1, 0.2]> : tensor<2xf32>
  %m = graph.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %v = graph.constant dense<[4.0, 0.25]> : tensor<2xf32>
  %c = graph.conv2d %x, %w, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %g, %be, %m, %v {epsilon = 1.0e-05} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// A depthwise conv without bias gets one; shape-only weights fold to shape-only weights.
// CHECK-LABEL: func.func @depthwise_shape_only
// CHECK:         %{{.*}} = graph.constant {name = "dw.weight.bn_folded"} shape_only : tensor<8x1x3x3xf16>
// CHECK-NEXT:    %{{.*}} = graph.constant {name = "dw.weight.bn_folded.bias"} shape_only : tensor<8xf16>
// CHECK-NEXT:    graph.conv2d %x, %{{.*}}, %{{.*}} {dilations = [1, 1], group = 8, pads = [1, 1, 1, 1], strides = [2, 2]}
// CHECK-NOT:     graph.batch_norm
func.func @depthwise_shape_only(%x: tensor<1x8x16x16xf16>) -> tensor<1x8x8x8xf16> {
  %w = graph.constant {name = "dw.weight"} shape_only : tensor<8x1x3x3xf16>
  %g = graph.constant shape_only : tensor<8xf16>
  %c = graph.conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 8} : (tensor<1x8x16x16xf16>, tensor<8x1x3x3xf16>) -> tensor<1x8x8x8xf16>
  %y = graph.batch_norm %c, %g, %g, %g, %g {epsilon = 1.0e-05} : (tensor<1x8x8x8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<1x8x8x8xf16>
  func.return %y : tensor<1x8x8x8xf16>
}

// -----

// Negative: the conv's output is also used elsewhere, so folding would change that use.
// CHECK-LABEL: func.func @conv_has_other_users
// CHECK:         graph.batch_norm
func.func @conv_has_other_users(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %p = graph.constant dense<1.0> : tensor<2xf32>
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-05} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// Negative: the filter is a function argument, not a constant.
// CHECK-LABEL: func.func @runtime_filter
// CHECK:         graph.batch_norm
func.func @runtime_filter(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %p = graph.constant dense<1.0> : tensor<2xf32>
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-05} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Negative: a BatchNorm after something other than a conv is left alone.
// CHECK-LABEL: func.func @no_conv
// CHECK:         graph.batch_norm
func.func @no_conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %p = graph.constant dense<1.0> : tensor<2xf32>
  %r = graph.relu %x : tensor<1x2x4x4xf32>
  %y = graph.batch_norm %r, %p, %p, %p, %p {epsilon = 1.0e-05} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
