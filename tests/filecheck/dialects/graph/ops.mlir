// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Every graph op in its custom syntax; the custom and generic forms round-trip.

// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %dense = graph.constant dense<[1.000000e+00, -2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %splat = graph.constant dense<0> : tensor<2x3xi64>
// CHECK-NEXT:    %blob = graph.constant dense_resource<fc_weight> : tensor<2x2xf16>
// CHECK-NEXT:    %shape = graph.constant {name = "layers.0.wq"} shape_only : tensor<3584x3584xf16>
// CHECK-NEXT:    %dyn = graph.constant dense<true> : tensor<2xi1>
// CHECK-GENERIC: "graph.constant"() <{value = dense<[1.000000e+00, -2.500000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
// CHECK-GENERIC: "graph.constant"() {name = "layers.0.wq"} : () -> tensor<3584x3584xf16>
func.func @constants() {
  %dense = graph.constant dense<[1.0, -2.5]> : tensor<2xf32>
  %splat = graph.constant dense<0> : tensor<2x3xi64>
  %blob = graph.constant dense_resource<fc_weight> : tensor<2x2xf16>
  %shape = graph.constant {name = "layers.0.wq"} shape_only : tensor<3584x3584xf16>
  %dyn = graph.constant dense<true> : tensor<2xi1>
  func.return
}

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %0 = graph.neg %x : tensor<2x?xf32>
// CHECK-NEXT:    %1 = graph.abs %0 : tensor<2x?xf32>
// CHECK-NEXT:    %2 = graph.exp %1 : tensor<2x?xf32>
// CHECK-NEXT:    %3 = graph.log %2 : tensor<2x?xf32>
// CHECK-NEXT:    %4 = graph.sqrt %3 : tensor<2x?xf32>
// CHECK-NEXT:    %5 = graph.rsqrt %4 : tensor<2x?xf32>
// CHECK-NEXT:    %6 = graph.reciprocal %5 : tensor<2x?xf32>
// CHECK-NEXT:    %7 = graph.relu %6 : tensor<2x?xf32>
// CHECK-NEXT:    %8 = graph.clip %7 {max = 6.000000e+00, min = 0.000000e+00} : tensor<2x?xf32>
// CHECK-NEXT:    %9 = graph.clip %8 {min = -1.000000e+00} : tensor<2x?xf32>
// CHECK-NEXT:    %10 = graph.sigmoid %9 : tensor<2x?xf32>
// CHECK-NEXT:    %11 = graph.tanh %10 : tensor<2x?xf32>
// CHECK-NEXT:    %12 = graph.erf %11 : tensor<2x?xf32>
// CHECK-NEXT:    %13 = graph.gelu %12 {approximate = "none"} : tensor<2x?xf32>
// CHECK-NEXT:    %14 = graph.gelu %13 {approximate = "tanh"} : tensor<2x?xf32>
// CHECK-NEXT:    %15 = graph.silu %14 : tensor<2x?xf32>
// CHECK-NEXT:    %16 = graph.sin %15 : tensor<2x?xf32>
// CHECK-NEXT:    %17 = graph.cos %16 : tensor<2x?xf32>
// CHECK-NEXT:    %18 = graph.cast %17 : tensor<2x?xf32> -> tensor<2x?xbf16>
// CHECK-NEXT:    %19 = graph.cast %18 : tensor<2x?xbf16> -> tensor<2x?xi1>
// CHECK-NEXT:    %20 = graph.not %19 : tensor<2x?xi1>
func.func @unary(%x: tensor<2x?xf32>) -> tensor<2x?xi1> {
  %0 = graph.neg %x : tensor<2x?xf32>
  %1 = graph.abs %0 : tensor<2x?xf32>
  %2 = graph.exp %1 : tensor<2x?xf32>
  %3 = graph.log %2 : tensor<2x?xf32>
  %4 = graph.sqrt %3 : tensor<2x?xf32>
  %5 = graph.rsqrt %4 : tensor<2x?xf32>
  %6 = graph.reciprocal %5 : tensor<2x?xf32>
  %7 = graph.relu %6 : tensor<2x?xf32>
  %8 = graph.clip %7 {min = 0.0, max = 6.0} : tensor<2x?xf32>
  %9 = graph.clip %8 {min = -1.0} : tensor<2x?xf32>
  %10 = graph.sigmoid %9 : tensor<2x?xf32>
  %11 = graph.tanh %10 : tensor<2x?xf32>
  %12 = graph.erf %11 : tensor<2x?xf32>
  %13 = graph.gelu %12 {approximate = "none"} : tensor<2x?xf32>
  %14 = graph.gelu %13 {approximate = "tanh"} : tensor<2x?xf32>
  %15 = graph.silu %14 : tensor<2x?xf32>
  %16 = graph.sin %15 : tensor<2x?xf32>
  %17 = graph.cos %16 : tensor<2x?xf32>
  %18 = graph.cast %17 : tensor<2x?xf32> -> tensor<2x?xbf16>
  %19 = graph.cast %18 : tensor<2x?xbf16> -> tensor<2x?xi1>
  %20 = graph.not %19 : tensor<2x?xi1>
  func.return %20 : tensor<2x?xi1>
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %0 = graph.add %a, %b : (tensor<4x1x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
// CHECK-NEXT:    %1 = graph.sub %0, %0 : tensor<4x3x8xf16>
// CHECK-NEXT:    %2 = graph.mul %1, %b : (tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
// CHECK-NEXT:    %3 = graph.div %2, %2 : tensor<4x3x8xf16>
// CHECK-NEXT:    %4 = graph.pow %3, %b : (tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
// CHECK-NEXT:    %5 = graph.max %4, %3 : tensor<4x3x8xf16>
// CHECK-NEXT:    %6 = graph.min %5, %3 : tensor<4x3x8xf16>
// CHECK-NEXT:    %7 = graph.equal %6, %b : (tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xi1>
// CHECK-NEXT:    %8 = graph.less %6, %5 : (tensor<4x3x8xf16>, tensor<4x3x8xf16>) -> tensor<4x3x8xi1>
// CHECK-NEXT:    %9 = graph.greater %6, %5 : (tensor<4x3x8xf16>, tensor<4x3x8xf16>) -> tensor<4x3x8xi1>
// CHECK-NEXT:    %10 = graph.and %7, %8 : tensor<4x3x8xi1>
// CHECK-NEXT:    %11 = graph.or %10, %9 : tensor<4x3x8xi1>
// CHECK-NEXT:    %12 = graph.where %11, %6, %b : (tensor<4x3x8xi1>, tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
func.func @binary(%a: tensor<4x1x8xf16>, %b: tensor<3x1xf16>) -> tensor<4x3x8xf16> {
  %0 = graph.add %a, %b : (tensor<4x1x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
  %1 = graph.sub %0, %0 : tensor<4x3x8xf16>
  %2 = graph.mul %1, %b : (tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
  %3 = graph.div %2, %2 : tensor<4x3x8xf16>
  %4 = graph.pow %3, %b : (tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
  %5 = graph.max %4, %3 : tensor<4x3x8xf16>
  %6 = graph.min %5, %3 : tensor<4x3x8xf16>
  %7 = graph.equal %6, %b : (tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xi1>
  %8 = graph.less %6, %5 : (tensor<4x3x8xf16>, tensor<4x3x8xf16>) -> tensor<4x3x8xi1>
  %9 = graph.greater %6, %5 : (tensor<4x3x8xf16>, tensor<4x3x8xf16>) -> tensor<4x3x8xi1>
  %10 = graph.and %7, %8 : tensor<4x3x8xi1>
  %11 = graph.or %10, %9 : tensor<4x3x8xi1>
  %12 = graph.where %11, %6, %b : (tensor<4x3x8xi1>, tensor<4x3x8xf16>, tensor<3x1xf16>) -> tensor<4x3x8xf16>
  func.return %12 : tensor<4x3x8xf16>
}

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %0 = graph.reduce_sum %x {axes = [1], keepdims = true} : tensor<?x6x8xf32> -> tensor<?x1x8xf32>
// CHECK-NEXT:    %1 = graph.reduce_mean %x {axes = [-1, 1], keepdims = false} : tensor<?x6x8xf32> -> tensor<?xf32>
// CHECK-NEXT:    %2 = graph.reduce_max %x {axes = [], keepdims = false} : tensor<?x6x8xf32> -> tensor<f32>
// CHECK-NEXT:    %3 = graph.reduce_min %x {axes = [2], keepdims = true} : tensor<?x6x8xf32> -> tensor<?x6x1xf32>
// CHECK-NEXT:    %4 = graph.softmax %x {axis = -1} : tensor<?x6x8xf32>
func.func @reductions(%x: tensor<?x6x8xf32>) {
  %0 = graph.reduce_sum %x {axes = [1], keepdims = true} : tensor<?x6x8xf32> -> tensor<?x1x8xf32>
  %1 = graph.reduce_mean %x {axes = [-1, 1], keepdims = false} : tensor<?x6x8xf32> -> tensor<?xf32>
  %2 = graph.reduce_max %x {axes = [], keepdims = false} : tensor<?x6x8xf32> -> tensor<f32>
  %3 = graph.reduce_min %x {axes = [2], keepdims = true} : tensor<?x6x8xf32> -> tensor<?x6x1xf32>
  %4 = graph.softmax %x {axis = -1} : tensor<?x6x8xf32>
  func.return
}

// CHECK-LABEL: func.func @cube
// CHECK-NEXT:    %0 = graph.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    %1 = graph.matmul %v, %b : (tensor<8xf32>, tensor<3x8x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %2 = graph.gemm %m, %n, %c {alpha = 1.000000e+00, beta = 5.000000e-01, trans_a = false, trans_b = true} : (tensor<4x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    %3 = graph.gemm %m, %k {alpha = 2.000000e+00, beta = 1.000000e+00, trans_a = true, trans_b = false} : (tensor<4x8xf32>, tensor<4x5xf32>) -> tensor<8x5xf32>
// CHECK-NEXT:    %4 = graph.conv2d %x, %w, %c {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x3x9x9xf32>, tensor<5x3x3x3xf32>, tensor<5xf32>) -> tensor<1x5x5x5xf32>
// CHECK-NEXT:    %5 = graph.conv2d %x, %dw {dilations = [2, 2], group = 3, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x9x9xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x5x5xf32>
func.func @cube(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %v: tensor<8xf32>, %m: tensor<4x8xf32>, %n: tensor<5x8xf32>, %k: tensor<4x5xf32>, %c: tensor<5xf32>, %x: tensor<1x3x9x9xf32>, %w: tensor<5x3x3x3xf32>, %dw: tensor<3x1x3x3xf32>) {
  %0 = graph.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  %1 = graph.matmul %v, %b : (tensor<8xf32>, tensor<3x8x5xf32>) -> tensor<3x5xf32>
  %2 = graph.gemm %m, %n, %c {trans_a = false, trans_b = true, alpha = 1.0, beta = 0.5} : (tensor<4x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %3 = graph.gemm %m, %k {trans_a = true, trans_b = false, alpha = 2.0, beta = 1.0} : (tensor<4x8xf32>, tensor<4x5xf32>) -> tensor<8x5xf32>
  %4 = graph.conv2d %x, %w, %c {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x3x9x9xf32>, tensor<5x3x3x3xf32>, tensor<5xf32>) -> tensor<1x5x5x5xf32>
  %5 = graph.conv2d %x, %dw {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [2, 2], group = 3} : (tensor<1x3x9x9xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x5x5xf32>
  func.return
}

// CHECK-LABEL: func.func @norms
// CHECK-NEXT:    %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-05} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
// CHECK-NEXT:    %1 = graph.layer_norm %h, %g, %g {axis = -1, epsilon = 1.000000e-12} : (tensor<2x?x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x?x16xf16>
// CHECK-NEXT:    %2 = graph.layer_norm %h, %g {axis = 2, epsilon = 1.000000e-05} : (tensor<2x?x16xf16>, tensor<16xf16>) -> tensor<2x?x16xf16>
// CHECK-NEXT:    %3 = graph.rms_norm %h, %g {axis = -1, epsilon = 1.000000e-06} : (tensor<2x?x16xf16>, tensor<16xf16>) -> tensor<2x?x16xf16>
func.func @norms(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %h: tensor<2x?x16xf16>, %g: tensor<16xf16>) {
  %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %1 = graph.layer_norm %h, %g, %g {axis = -1, epsilon = 1.0e-12} : (tensor<2x?x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x?x16xf16>
  %2 = graph.layer_norm %h, %g {axis = 2, epsilon = 1.0e-05} : (tensor<2x?x16xf16>, tensor<16xf16>) -> tensor<2x?x16xf16>
  %3 = graph.rms_norm %h, %g {axis = -1, epsilon = 1.0e-06} : (tensor<2x?x16xf16>, tensor<16xf16>) -> tensor<2x?x16xf16>
  func.return
}

// CHECK-LABEL: func.func @pools
// CHECK-NEXT:    %0 = graph.max_pool2d %x {ceil_mode = false, dilations = [1, 1], kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : tensor<1x8x7x7xf32> -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %1 = graph.avg_pool2d %x {ceil_mode = true, count_include_pad = false, kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x8x7x7xf32> -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %2 = graph.global_avg_pool %x : tensor<1x8x7x7xf32> -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %3 = graph.avg_pool2d %x {ceil_mode = false, count_include_pad = true, dilations = [2, 3], kernel_shape = [3, 3], pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<1x8x7x7xf32> -> tensor<1x8x3x1xf32>
func.func @pools(%x: tensor<1x8x7x7xf32>) {
  %0 = graph.max_pool2d %x {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], ceil_mode = false} : tensor<1x8x7x7xf32> -> tensor<1x8x4x4xf32>
  %1 = graph.avg_pool2d %x {kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], ceil_mode = true, count_include_pad = false} : tensor<1x8x7x7xf32> -> tensor<1x8x4x4xf32>
  %2 = graph.global_avg_pool %x : tensor<1x8x7x7xf32> -> tensor<1x8x1x1xf32>
  %3 = graph.avg_pool2d %x {kernel_shape = [3, 3], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [2, 3], ceil_mode = false, count_include_pad = true} : tensor<1x8x7x7xf32> -> tensor<1x8x3x1xf32>
  func.return
}

// A ceil_mode window larger than its input gives one output (transformers EfficientNet's
// pooler: a 640x640 window over 2x2).
// CHECK-LABEL: func.func @pool_window_larger_than_input
// CHECK-NEXT:    %0 = graph.avg_pool2d %x {ceil_mode = true, count_include_pad = false, kernel_shape = [640, 640], pads = [0, 0, 0, 0], strides = [640, 640]} : tensor<1x8x2x2xf32> -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %1 = graph.max_pool2d %x {ceil_mode = true, dilations = [2, 1], kernel_shape = [3, 5], pads = [0, 1, 0, 0], strides = [4, 4]} : tensor<1x8x2x2xf32> -> tensor<1x8x1x1xf32>
func.func @pool_window_larger_than_input(%x: tensor<1x8x2x2xf32>) {
  %0 = graph.avg_pool2d %x {kernel_shape = [640, 640], strides = [640, 640], pads = [0, 0, 0, 0], ceil_mode = true, count_include_pad = false} : tensor<1x8x2x2xf32> -> tensor<1x8x1x1xf32>
  %1 = graph.max_pool2d %x {kernel_shape = [3, 5], strides = [4, 4], pads = [0, 1, 0, 0], dilations = [2, 1], ceil_mode = true} : tensor<1x8x2x2xf32> -> tensor<1x8x1x1xf32>
  func.return
}

// CHECK-LABEL: func.func @injective
// CHECK-NEXT:    %0 = graph.reshape %x {shape = [0, -1, 4]} : tensor<?x6x8xf32> -> tensor<?x12x4xf32>
// CHECK-NEXT:    %1 = graph.transpose %x {perm = [0, 2, 1]} : tensor<?x6x8xf32> -> tensor<?x8x6xf32>
// CHECK-NEXT:    %2 = graph.concat %x, %x {axis = 1} : (tensor<?x6x8xf32>, tensor<?x6x8xf32>) -> tensor<?x12x8xf32>
// CHECK-NEXT:    %3, %4 = graph.split %x {axis = 2, sizes = [3, 5]} : tensor<?x6x8xf32> -> (tensor<?x6x3xf32>, tensor<?x6x5xf32>)
// CHECK-NEXT:    %5 = graph.slice %x {axes = [1, 2], ends = [9223372036854775807, 0], starts = [1, -1], steps = [2, -1]} : tensor<?x6x8xf32> -> tensor<?x3x7xf32>
// CHECK-NEXT:    %6 = graph.gather %t, %i {axis = 0} : (tensor<100x16xf16>, tensor<2x?xi64>) -> tensor<2x?x16xf16>
// CHECK-NEXT:    %7 = graph.expand %c {shape = [-1, 6, 8]} : tensor<1x1x8xf32> -> tensor<?x6x8xf32>
// CHECK-NEXT:    %8 = graph.pad %x {mode = "constant", pads = [0, 1, 0, 0, 2, -1], value = 0.000000e+00} : tensor<?x6x8xf32> -> tensor<?x9x7xf32>
// CHECK-NEXT:    %9 = graph.pad %x {mode = "wrap", pads = [0, 3, 0, 0, 0, 9], value = 0.000000e+00} : tensor<?x6x8xf32> -> tensor<?x9x17xf32>
func.func @injective(%x: tensor<?x6x8xf32>, %t: tensor<100x16xf16>, %i: tensor<2x?xi64>, %c: tensor<1x1x8xf32>) {
  %0 = graph.reshape %x {shape = [0, -1, 4]} : tensor<?x6x8xf32> -> tensor<?x12x4xf32>
  %1 = graph.transpose %x {perm = [0, 2, 1]} : tensor<?x6x8xf32> -> tensor<?x8x6xf32>
  %2 = graph.concat %x, %x {axis = 1} : (tensor<?x6x8xf32>, tensor<?x6x8xf32>) -> tensor<?x12x8xf32>
  %3, %4 = graph.split %x {axis = 2, sizes = [3, 5]} : tensor<?x6x8xf32> -> (tensor<?x6x3xf32>, tensor<?x6x5xf32>)
  %5 = graph.slice %x {starts = [1, -1], ends = [9223372036854775807, 0], axes = [1, 2], steps = [2, -1]} : tensor<?x6x8xf32> -> tensor<?x3x7xf32>
  %6 = graph.gather %t, %i {axis = 0} : (tensor<100x16xf16>, tensor<2x?xi64>) -> tensor<2x?x16xf16>
  %7 = graph.expand %c {shape = [-1, 6, 8]} : tensor<1x1x8xf32> -> tensor<?x6x8xf32>
  %8 = graph.pad %x {pads = [0, 1, 0, 0, 2, -1], mode = "constant", value = 0.0} : tensor<?x6x8xf32> -> tensor<?x9x7xf32>
  %9 = graph.pad %x {pads = [0, 3, 0, 0, 0, 9], mode = "wrap", value = 0.0} : tensor<?x6x8xf32> -> tensor<?x9x17xf32>
  func.return
}

// CHECK-LABEL: func.func @fusion_group
// CHECK-NEXT:    %0 = graph.fusion_group (%x = %a : tensor<8xf32>, %y = %b : tensor<8xf32>) -> tensor<8xf32> attributes {afc.benefit = 1.500000e+00 : f64} {
// CHECK-NEXT:      %s = graph.add %x, %y : tensor<8xf32>
// CHECK-NEXT:      %r = graph.relu %s : tensor<8xf32>
// CHECK-NEXT:      graph.yield %r : tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %1, %2 = graph.fusion_group (%x = %0 : tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:      %e = graph.exp %x : tensor<8xf32>
// CHECK-NEXT:      graph.yield %e, %x : tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-GENERIC: "graph.fusion_group"(%a, %b) ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<8xf32>, %y: tensor<8xf32>):
func.func @fusion_group(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.fusion_group (%x = %a : tensor<8xf32>, %y = %b : tensor<8xf32>) -> tensor<8xf32> attributes {afc.benefit = 1.5 : f64} {
    %s = graph.add %x, %y : tensor<8xf32>
    %r = graph.relu %s : tensor<8xf32>
    graph.yield %r : tensor<8xf32>
  }
  %1, %2 = graph.fusion_group (%x = %0 : tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %e = graph.exp %x : tensor<8xf32>
    graph.yield %e, %x : tensor<8xf32>, tensor<8xf32>
  }
  func.return %2 : tensor<8xf32>
}
