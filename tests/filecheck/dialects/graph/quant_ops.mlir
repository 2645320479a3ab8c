// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Quantization ops (graph_quant.py) round-trip: per-axis, per-tensor and blocked
// (de)quantization on i8/ui8/ui16 with dynamic dims, dynamic quantization, integer and
// quantized matmul (per-row/column zero points) and conv (groups, per-channel weights).

// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %0 = graph.quantize_linear %x, %s, %z {axis = 1, block_size = 0} : (tensor<?x3x4xf32>, tensor<3xf32>, tensor<3xi8>) -> tensor<?x3x4xi8>
// CHECK-NEXT:    %1 = graph.dequantize_linear %0, %s, %z {axis = 1, block_size = 0} : (tensor<?x3x4xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<?x3x4xf32>
// CHECK-NEXT:    %2 = graph.quantize_linear %xh, %sb, %zb {axis = -1, block_size = 3} : (tensor<?x3x4xf16>, tensor<?x3x2xf16>, tensor<?x3x2xui16>) -> tensor<?x3x4xui16>
// CHECK-NEXT:    %3 = graph.dequantize_linear %2, %sb, %zb {axis = 2, block_size = 3} : (tensor<?x3x4xui16>, tensor<?x3x2xf16>, tensor<?x3x2xui16>) -> tensor<?x3x4xf16>
// CHECK-NEXT:    %4 = graph.quantize_linear %x, %st, %zt {axis = 1, block_size = 0} : (tensor<?x3x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<?x3x4xui8>
// CHECK-NEXT:    %5, %6, %7 = graph.dynamic_quantize_linear %x : tensor<?x3x4xf32> -> (tensor<?x3x4xui8>, tensor<f32>, tensor<ui8>)
// CHECK-LABEL: func.func @integer
// CHECK-NEXT:    %0 = graph.matmul_integer %a, %b, %az, %bz : (tensor<?x3x5xui8>, tensor<5x4xi8>, tensor<3xui8>, tensor<4xi8>) -> tensor<?x3x4xi32>
// CHECK-NEXT:    %1 = graph.qlinear_matmul %a, %sa, %az, %b, %sb, %bz, %s, %yz : (tensor<?x3x5xui8>, tensor<3xf32>, tensor<3xui8>, tensor<5x4xi8>, tensor<4xf32>, tensor<4xi8>, tensor<f32>, tensor<i8>) -> tensor<?x3x4xi8>
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %0 = graph.conv_integer %x, %w, %xz, %wz {dilations = [1, 1], group = 2, pads = [1, 0, 1, 2], strides = [2, 1]} : (tensor<?x4x7x6xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<6xi8>) -> tensor<?x6x4x6xi32>
// CHECK-NEXT:    %1 = graph.qlinear_conv %x, %s, %xz, %w, %ws, %wz, %s, %yz, %bias {dilations = [1, 1], group = 2, pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<?x4x7x6xui8>, tensor<f32>, tensor<ui8>, tensor<6x2x3x3xi8>, tensor<6xf32>, tensor<6xi8>, tensor<f32>, tensor<ui8>, tensor<6xi32>) -> tensor<?x6x7x6xui8>
// CHECK-GENERIC: "graph.quantize_linear"(%x, %s, %z) <{axis = 1 : i64, block_size = 0 : i64}>
// CHECK-GENERIC: "graph.dequantize_linear"(%0, %s, %z)
// CHECK-GENERIC: "graph.dynamic_quantize_linear"(%x)
// CHECK-GENERIC: "graph.matmul_integer"(%a, %b, %az, %bz)
// CHECK-GENERIC: "graph.qlinear_matmul"(%a, %sa, %az, %b, %sb, %bz, %s, %yz)
// CHECK-GENERIC: "graph.conv_integer"(%x, %w, %xz, %wz) <{strides = array<i64: 2, 1>
// CHECK-GENERIC: "graph.qlinear_conv"(%x, %s, %xz, %w, %ws, %wz, %s, %yz, %bias)

func.func @linear(%x: tensor<?x3x4xf32>, %s: tensor<3xf32>, %z: tensor<3xi8>, %sb: tensor<?x3x2xf16>, %zb: tensor<?x3x2xui16>, %st: tensor<f32>, %zt: tensor<ui8>, %xh: tensor<?x3x4xf16>) {
  %0 = graph.quantize_linear %x, %s, %z {axis = 1, block_size = 0} : (tensor<?x3x4xf32>, tensor<3xf32>, tensor<3xi8>) -> tensor<?x3x4xi8>
  %1 = graph.dequantize_linear %0, %s, %z {axis = 1, block_size = 0} : (tensor<?x3x4xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<?x3x4xf32>
  %2 = graph.quantize_linear %xh, %sb, %zb {axis = -1, block_size = 3} : (tensor<?x3x4xf16>, tensor<?x3x2xf16>, tensor<?x3x2xui16>) -> tensor<?x3x4xui16>
  %3 = graph.dequantize_linear %2, %sb, %zb {axis = 2, block_size = 3} : (tensor<?x3x4xui16>, tensor<?x3x2xf16>, tensor<?x3x2xui16>) -> tensor<?x3x4xf16>
  %4 = graph.quantize_linear %x, %st, %zt {axis = 1, block_size = 0} : (tensor<?x3x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<?x3x4xui8>
  %5, %6, %7 = graph.dynamic_quantize_linear %x : tensor<?x3x4xf32> -> (tensor<?x3x4xui8>, tensor<f32>, tensor<ui8>)
  func.return
}

func.func @integer(%a: tensor<?x3x5xui8>, %b: tensor<5x4xi8>, %az: tensor<3xui8>, %bz: tensor<4xi8>, %s: tensor<f32>, %sa: tensor<3xf32>, %sb: tensor<4xf32>, %yz: tensor<i8>) {
  %0 = graph.matmul_integer %a, %b, %az, %bz : (tensor<?x3x5xui8>, tensor<5x4xi8>, tensor<3xui8>, tensor<4xi8>) -> tensor<?x3x4xi32>
  %1 = graph.qlinear_matmul %a, %sa, %az, %b, %sb, %bz, %s, %yz : (tensor<?x3x5xui8>, tensor<3xf32>, tensor<3xui8>, tensor<5x4xi8>, tensor<4xf32>, tensor<4xi8>, tensor<f32>, tensor<i8>) -> tensor<?x3x4xi8>
  func.return
}

func.func @conv(%x: tensor<?x4x7x6xui8>, %w: tensor<6x2x3x3xi8>, %xz: tensor<ui8>, %wz: tensor<6xi8>, %s: tensor<f32>, %ws: tensor<6xf32>, %yz: tensor<ui8>, %bias: tensor<6xi32>) {
  %0 = graph.conv_integer %x, %w, %xz, %wz {strides = [2, 1], pads = [1, 0, 1, 2], dilations = [1, 1], group = 2} : (tensor<?x4x7x6xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<6xi8>) -> tensor<?x6x4x6xi32>
  %1 = graph.qlinear_conv %x, %s, %xz, %w, %ws, %wz, %s, %yz, %bias {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 2} : (tensor<?x4x7x6xui8>, tensor<f32>, tensor<ui8>, tensor<6x2x3x3xi8>, tensor<6xf32>, tensor<6xi8>, tensor<f32>, tensor<ui8>, tensor<6xi32>) -> tensor<?x6x7x6xui8>
  func.return
}
