// RUN: afc-opt %s --split-input-file --verify-diagnostics

// The storage-only types are refused by every op but casts, (de)quantization, reshapes
// and transposes, naming the op and the type; a cast's round_mode must be one of ONNX's.

func.func @add_float8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'graph.add': graph.add does not take f8E4M3FN, a storage-only type (only casts, (de)quantization, reshapes and transposes do): cast or dequantize it}}
  %0 = graph.add %x, %x : tensor<4xf8E4M3FN>
  func.return %0 : tensor<4xf8E4M3FN>
}

// -----

func.func @matmul_int4(%a: tensor<2x4xi4>, %b: tensor<4x3xi4>) -> tensor<2x3xi4> {
  // expected-error @+1 {{'graph.matmul': graph.matmul does not take i4}}
  %0 = graph.matmul %a, %b : (tensor<2x4xi4>, tensor<4x3xi4>) -> tensor<2x3xi4>
  func.return %0 : tensor<2x3xi4>
}

// -----

func.func @compare_result(%x: tensor<4xf4E2M1FN>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.equal': graph.equal does not take f4E2M1FN}}
  %0 = graph.equal %x, %x : (tensor<4xf4E2M1FN>, tensor<4xf4E2M1FN>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @round_mode(%x: tensor<4xf32>) -> tensor<4xf8E8M0FNU> {
  // expected-error @+1 {{'graph.cast': round_mode 'zero' is not one of up, down, nearest}}
  %0 = graph.cast %x {round_mode = "zero"} : tensor<4xf32> -> tensor<4xf8E8M0FNU>
  func.return %0 : tensor<4xf8E8M0FNU>
}

// -----

func.func @quantize_e8m0(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<f8E8M0FNU>) -> tensor<4xf8E8M0FNU> {
  // expected-error @+1 {{'graph.quantize_linear': zero point has element type f8E8M0FNU, not one of i8, ui8, i16, ui16, i4, ui4, i2, ui2, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN}}
  %0 = graph.quantize_linear %x, %s, %z {axis = 0, block_size = 0} : (tensor<4xf32>, tensor<f32>, tensor<f8E8M0FNU>) -> tensor<4xf8E8M0FNU>
  func.return %0 : tensor<4xf8E8M0FNU>
}
