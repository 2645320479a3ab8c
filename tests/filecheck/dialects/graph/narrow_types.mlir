// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// The storage-only element types (float8, float4, E8M0, 4- and 2-bit integers) print and
// parse in MLIR's spelling, on the ops that take them: casts with their saturate and
// round_mode properties, (de)quantization, reshape and transpose, and constants.

// CHECK-LABEL: func.func @casts
// CHECK-NEXT:    %a = graph.cast %x : tensor<2x4xf32> -> tensor<2x4xf8E4M3FN>
// CHECK-NEXT:    %b = graph.cast %x {saturate = false} : tensor<2x4xf32> -> tensor<2x4xf8E5M2>
// CHECK-NEXT:    %c = graph.cast %x {round_mode = "nearest", saturate = false} : tensor<2x4xf32> -> tensor<2x4xf8E8M0FNU>
// CHECK-NEXT:    %d = graph.cast %x : tensor<2x4xf32> -> tensor<2x4xf4E2M1FN>
// CHECK-NEXT:    %e = graph.cast %x : tensor<2x4xf32> -> tensor<2x4xi4>
// CHECK-NEXT:    %f = graph.cast %e : tensor<2x4xi4> -> tensor<2x4xui2>
// CHECK-NEXT:    %g = graph.cast %a : tensor<2x4xf8E4M3FN> -> tensor<2x4xf8E4M3FNUZ>
// CHECK-NEXT:    %h = graph.cast %g : tensor<2x4xf8E4M3FNUZ> -> tensor<2x4xf8E5M2FNUZ>
// CHECK-NEXT:    %r = graph.reshape %h {shape = [8]} : tensor<2x4xf8E5M2FNUZ> -> tensor<8xf8E5M2FNUZ>
// CHECK-NEXT:    %t = graph.transpose %e {perm = [1, 0]} : tensor<2x4xi4> -> tensor<4x2xi4>
// CHECK-NEXT:    %k = graph.constant dense<[1.000000e+00, -5.000000e-01]> : tensor<2xf8E4M3FN>
// CHECK-NEXT:    %i = graph.constant dense<[-8, 7]> : tensor<2xi4>
// CHECK-GENERIC: "graph.cast"(%x) <{round_mode = "nearest", saturate = false}> : (tensor<2x4xf32>) -> tensor<2x4xf8E8M0FNU>
func.func @casts(%x: tensor<2x4xf32>) {
  %a = graph.cast %x : tensor<2x4xf32> -> tensor<2x4xf8E4M3FN>
  %b = graph.cast %x {saturate = false} : tensor<2x4xf32> -> tensor<2x4xf8E5M2>
  %c = graph.cast %x {round_mode = "nearest", saturate = false} : tensor<2x4xf32> -> tensor<2x4xf8E8M0FNU>
  %d = graph.cast %x : tensor<2x4xf32> -> tensor<2x4xf4E2M1FN>
  %e = graph.cast %x : tensor<2x4xf32> -> tensor<2x4xi4>
  %f = graph.cast %e : tensor<2x4xi4> -> tensor<2x4xui2>
  %g = graph.cast %a : tensor<2x4xf8E4M3FN> -> tensor<2x4xf8E4M3FNUZ>
  %h = graph.cast %g : tensor<2x4xf8E4M3FNUZ> -> tensor<2x4xf8E5M2FNUZ>
  %r = graph.reshape %h {shape = [8]} : tensor<2x4xf8E5M2FNUZ> -> tensor<8xf8E5M2FNUZ>
  %t = graph.transpose %e {perm = [1, 0]} : tensor<2x4xi4> -> tensor<4x2xi4>
  %k = graph.constant dense<[1.0, -0.5]> : tensor<2xf8E4M3FN>
  %i = graph.constant dense<[-8, 7]> : tensor<2xi4>
  func.return
}

// CHECK-LABEL: func.func @quantize
// CHECK-NEXT:    %0 = graph.quantize_linear %x, %s, %z8 {axis = 1, block_size = 0, saturate = false} : (tensor<2x4xf32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<2x4xf8E4M3FN>
// CHECK-NEXT:    %1 = graph.dequantize_linear %0, %s, %z8 {axis = 1, block_size = 0} : (tensor<2x4xf8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<2x4xf32>
// CHECK-NEXT:    %2 = graph.quantize_linear %x, %sb, %z4 {axis = 1, block_size = 2} : (tensor<2x4xf32>, tensor<2x2xf16>, tensor<2x2xui4>) -> tensor<2x4xui4>
// CHECK-NEXT:    %3 = graph.dequantize_linear %2, %sb, %z4 {axis = 1, block_size = 2} : (tensor<2x4xui4>, tensor<2x2xf16>, tensor<2x2xui4>) -> tensor<2x4xf16>
func.func @quantize(%x: tensor<2x4xf32>, %s: tensor<f32>, %z8: tensor<f8E4M3FN>, %sb: tensor<2x2xf16>, %z4: tensor<2x2xui4>) {
  %0 = graph.quantize_linear %x, %s, %z8 {axis = 1, block_size = 0, saturate = false} : (tensor<2x4xf32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<2x4xf8E4M3FN>
  %1 = graph.dequantize_linear %0, %s, %z8 {axis = 1, block_size = 0} : (tensor<2x4xf8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<2x4xf32>
  %2 = graph.quantize_linear %x, %sb, %z4 {axis = 1, block_size = 2} : (tensor<2x4xf32>, tensor<2x2xf16>, tensor<2x2xui4>) -> tensor<2x4xui4>
  %3 = graph.dequantize_linear %2, %sb, %z4 {axis = 1, block_size = 2} : (tensor<2x4xui4>, tensor<2x2xf16>, tensor<2x2xui4>) -> tensor<2x4xf16>
  func.return
}
