// RUN: afc-opt %s --split-input-file --verify-diagnostics

// Each chunk holds one quantization op the verifier must reject; the message names what is wrong.

func.func @quantize_float_zero_point(%x: tensor<2x3xf32>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.quantize_linear': zero point has element type f32, not one of i8, ui8, i16, ui16}}
  %0 = graph.quantize_linear %x, %s, %z {axis = 1, block_size = 0} : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @quantize_result_type(%x: tensor<2x3xf32>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<2x3xi8> {
  // expected-error @+1 {{'graph.quantize_linear' result #0 has type tensor<2x3xi8>, but the operands give tensor<2x3xui8>}}
  %0 = graph.quantize_linear %x, %s, %z {axis = 1, block_size = 0} : (tensor<2x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}

// -----

func.func @quantize_per_axis_extent(%x: tensor<2x3xf32>, %s: tensor<2xf32>, %z: tensor<2xui8>) -> tensor<2x3xui8> {
  // expected-error @+1 {{'graph.quantize_linear': per-axis scale along axis 1 of 2x3 must be 3, got 2}}
  %0 = graph.quantize_linear %x, %s, %z {axis = 1, block_size = 0} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xui8>) -> tensor<2x3xui8>
  func.return %0 : tensor<2x3xui8>
}

// -----

func.func @dequantize_blocked_extent(%x: tensor<2x6xi8>, %s: tensor<2x2xf32>, %z: tensor<2x2xi8>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.dequantize_linear': blocked by 2 scale along axis 1 of 2x6 must be 2x3, got 2x2}}
  %0 = graph.dequantize_linear %x, %s, %z {axis = 1, block_size = 2} : (tensor<2x6xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}

// -----

func.func @dequantize_zero_point_type(%x: tensor<4xi8>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.dequantize_linear': zero point has element type ui8, not i8}}
  %0 = graph.dequantize_linear %x, %s, %z {axis = 1, block_size = 0} : (tensor<4xi8>, tensor<f32>, tensor<ui8>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @dynamic_quantize_f16(%x: tensor<4xf16>) {
  // expected-error @+1 {{'graph.dynamic_quantize_linear': input has element type f16, not one of f32}}
  %0, %1, %2 = graph.dynamic_quantize_linear %x : tensor<4xf16> -> (tensor<4xui8>, tensor<f32>, tensor<ui8>)
  func.return
}

// -----

func.func @matmul_integer_i16(%a: tensor<3x5xi16>, %b: tensor<5x4xi8>, %az: tensor<i16>, %bz: tensor<i8>) {
  // expected-error @+1 {{'graph.matmul_integer': A has element type i16, not one of i8, ui8}}
  %0 = graph.matmul_integer %a, %b, %az, %bz : (tensor<3x5xi16>, tensor<5x4xi8>, tensor<i16>, tensor<i8>) -> tensor<3x4xi32>
  func.return
}

// -----

func.func @matmul_integer_zero_point_extent(%a: tensor<3x5xui8>, %b: tensor<5x4xi8>, %az: tensor<5xui8>, %bz: tensor<i8>) {
  // expected-error @+1 {{'graph.matmul_integer': a_zero_point 5 is neither a scalar, 3 values nor 3x1}}
  %0 = graph.matmul_integer %a, %b, %az, %bz : (tensor<3x5xui8>, tensor<5x4xi8>, tensor<5xui8>, tensor<i8>) -> tensor<3x4xi32>
  func.return
}

// -----

func.func @qlinear_matmul_zero_point_vector(%a: tensor<3x5xui8>, %b: tensor<5x4xui8>, %s: tensor<f32>, %z: tensor<ui8>, %yz: tensor<2xui8>, %ys: tensor<2xf32>) {
  // expected-error @+1 {{'graph.qlinear_matmul': y_zero_point 2 is not a scalar}}
  %0 = graph.qlinear_matmul %a, %s, %z, %b, %s, %z, %ys, %yz : (tensor<3x5xui8>, tensor<f32>, tensor<ui8>, tensor<5x4xui8>, tensor<f32>, tensor<ui8>, tensor<2xf32>, tensor<2xui8>) -> tensor<3x4xui8>
  func.return
}

// -----

func.func @conv_integer_zero_point(%x: tensor<1x2x5x5xui8>, %w: tensor<4x2x3x3xui8>, %xz: tensor<2xui8>, %wz: tensor<ui8>) {
  // expected-error @+1 {{'graph.conv_integer': x_zero_point 2 is not a scalar}}
  %0 = graph.conv_integer %x, %w, %xz, %wz {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x2x5x5xui8>, tensor<4x2x3x3xui8>, tensor<2xui8>, tensor<ui8>) -> tensor<1x4x3x3xi32>
  func.return
}

// -----

func.func @qlinear_conv_bias(%x: tensor<1x2x5x5xui8>, %s: tensor<f32>, %z: tensor<ui8>, %w: tensor<4x2x3x3xui8>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'graph.qlinear_conv': bias has element type f32, not one of i32}}
  %0 = graph.qlinear_conv %x, %s, %z, %w, %s, %z, %s, %z, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x2x5x5xui8>, tensor<f32>, tensor<ui8>, tensor<4x2x3x3xui8>, tensor<f32>, tensor<ui8>, tensor<f32>, tensor<ui8>, tensor<4xf32>) -> tensor<1x4x3x3xui8>
  func.return
}
