// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Named fused ops and cube-op epilogues round-trip.

// CHECK-LABEL: func.func @attention
// CHECK-NEXT:    %0 = graph.flash_attention %q, %k, %v {causal = true, layout = "BNSD", scale = 1.250000e-01} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> tensor<2x8x16x64xf16>
// CHECK-NEXT:    %1 = graph.flash_attention %q, %k, %v, %m {causal = false, layout = "BNSD", scale = 1.250000e-01} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x1x1x16xi1>) -> tensor<2x8x16x64xf16>
// CHECK-NEXT:    %2 = graph.flash_attention %bq, %bq, %bq {causal = false, layout = "BSND", scale = 1.000000e+00} : tensor<2x16x8x64xf16>
// CHECK-GENERIC: "graph.flash_attention"(%q, %k, %v) <{scale = 1.250000e-01 : f64, causal = true, layout = "BNSD"}>
func.func @attention(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x16x64xf16>, %v: tensor<2x2x16x64xf16>, %m: tensor<2x1x1x16xi1>, %bq: tensor<2x16x8x64xf16>) {
  %0 = graph.flash_attention %q, %k, %v {scale = 0.125, causal = true, layout = "BNSD"} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> tensor<2x8x16x64xf16>
  %1 = graph.flash_attention %q, %k, %v, %m {scale = 0.125, causal = false, layout = "BNSD"} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x1x1x16xi1>) -> tensor<2x8x16x64xf16>
  %2 = graph.flash_attention %bq, %bq, %bq {scale = 1.0, causal = false, layout = "BSND"} : tensor<2x16x8x64xf16>
  func.return
}

// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %0 = graph.rope %x, %c, %s {interleaved = false} : (tensor<1x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK-NEXT:    %1 = graph.swiglu %x, %x : tensor<1x4x8x16xf32>
// CHECK-NEXT:    %2, %3 = graph.add_layer_norm %x, %x, %g, %g {axis = -1, epsilon = 1.000000e-05} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
// CHECK-NEXT:    %4, %5 = graph.add_rms_norm %x, %x, %g {axis = -1, epsilon = 1.000000e-06} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
// CHECK-NEXT:    %6, %7 = graph.layer_norm_stats %x {axis = -1, epsilon = 1.000000e-05} : tensor<1x4x8x16xf32> -> (tensor<1x4x8x1xf32>, tensor<1x4x8x1xf32>)
// CHECK-NEXT:    %8 = graph.layer_norm_apply %x, %6, %7, %g, %g {axis = -1} : (tensor<1x4x8x16xf32>, tensor<1x4x8x1xf32>, tensor<1x4x8x1xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x4x8x16xf32>
// CHECK-NEXT:    %9 = graph.rms_norm_stats %x {axis = -1, epsilon = 1.000000e-06} : tensor<1x4x8x16xf32> -> tensor<1x4x8x1xf32>
// CHECK-NEXT:    %10 = graph.rms_norm_apply %x, %9, %g {axis = -1} : (tensor<1x4x8x16xf32>, tensor<1x4x8x1xf32>, tensor<16xf32>) -> tensor<1x4x8x16xf32>
func.func @fused(%x: tensor<1x4x8x16xf32>, %c: tensor<8x16xf32>, %s: tensor<8x16xf32>, %g: tensor<16xf32>) {
  %0 = graph.rope %x, %c, %s {interleaved = false} : (tensor<1x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8x16xf32>
  %1 = graph.swiglu %x, %x : tensor<1x4x8x16xf32>
  %2, %3 = graph.add_layer_norm %x, %x, %g, %g {axis = -1, epsilon = 1.0e-05} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
  %4, %5 = graph.add_rms_norm %x, %x, %g {axis = -1, epsilon = 1.0e-06} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
  %6, %7 = graph.layer_norm_stats %x {axis = -1, epsilon = 1.0e-05} : tensor<1x4x8x16xf32> -> (tensor<1x4x8x1xf32>, tensor<1x4x8x1xf32>)
  %8 = graph.layer_norm_apply %x, %6, %7, %g, %g {axis = -1} : (tensor<1x4x8x16xf32>, tensor<1x4x8x1xf32>, tensor<1x4x8x1xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x4x8x16xf32>
  %9 = graph.rms_norm_stats %x {axis = -1, epsilon = 1.0e-06} : tensor<1x4x8x16xf32> -> tensor<1x4x8x1xf32>
  %10 = graph.rms_norm_apply %x, %9, %g {axis = -1} : (tensor<1x4x8x16xf32>, tensor<1x4x8x1xf32>, tensor<16xf32>) -> tensor<1x4x8x16xf32>
  func.return
}

// CHECK-LABEL: func.func @epilogues
// CHECK-NEXT:    %0 = graph.matmul %a, %w, %b {activation = "gelu"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %1 = graph.gemm %a, %w, %b {activation = "clip", alpha = 1.000000e+00, beta = 1.000000e+00, clip_max = 6.000000e+00, clip_min = 0.000000e+00, trans_a = false, trans_b = false} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %2 = graph.conv2d %x, %cw {activation = "relu", dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
func.func @epilogues(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %x: tensor<1x3x4x4xf32>, %cw: tensor<2x3x1x1xf32>) {
  %0 = graph.matmul %a, %w, %b {activation = "gelu"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = graph.gemm %a, %w, %b {trans_a = false, trans_b = false, alpha = 1.0, beta = 1.0, activation = "clip", clip_min = 0.0, clip_max = 6.0} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = graph.conv2d %x, %cw {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1, activation = "relu"} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// graph.ffn: gated with separate gate/up weights and a residual; a merged gate/up
// weight with its bias and a down bias (dynamic rows); a plain activation.
// CHECK-LABEL: func.func @ffn
// CHECK-NEXT:    %0 = graph.ffn %x, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<2x4x8xf16>, tensor<8x16xf16>, tensor<8x16xf16>, tensor<16x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
// CHECK-NEXT:    %1 = graph.ffn %d, %w13, %wd, %b13, %b2 {activation = "geglu", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (tensor<?x8xf16>, tensor<8x32xf16>, tensor<16x8xf16>, tensor<32xf16>, tensor<8xf16>) -> tensor<?x8xf16>
// CHECK-NEXT:    %2 = graph.ffn %x, %wg, %wd {activation = "gelu_tanh", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x4x8xf16>, tensor<8x16xf16>, tensor<16x8xf16>) -> tensor<2x4x8xf16>
// CHECK-GENERIC: "graph.ffn"(%x, %wg, %wu, %wd, %h) <{activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>}>
func.func @ffn(%x: tensor<2x4x8xf16>, %h: tensor<2x4x8xf16>, %wg: tensor<8x16xf16>, %wu: tensor<8x16xf16>, %wd: tensor<16x8xf16>, %d: tensor<?x8xf16>, %w13: tensor<8x32xf16>, %b13: tensor<32xf16>, %b2: tensor<8xf16>) {
  %0 = graph.ffn %x, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<2x4x8xf16>, tensor<8x16xf16>, tensor<8x16xf16>, tensor<16x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %1 = graph.ffn %d, %w13, %wd, %b13, %b2 {activation = "geglu", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (tensor<?x8xf16>, tensor<8x32xf16>, tensor<16x8xf16>, tensor<32xf16>, tensor<8xf16>) -> tensor<?x8xf16>
  %2 = graph.ffn %x, %wg, %wd {activation = "gelu_tanh", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x4x8xf16>, tensor<8x16xf16>, tensor<16x8xf16>) -> tensor<2x4x8xf16>
  func.return
}
