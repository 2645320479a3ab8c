// RUN: afc-opt %s --split-input-file --verify-diagnostics

// Each chunk holds one random op the verifier must reject; the message names what is wrong.

func.func @high_below_low() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.random_uniform': high -1.0 is below low 1.0}}
  %0 = graph.random_uniform {dtype = "f32", high = -1.0, low = 1.0, shape = [4]} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @negative_scale() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.random_normal': scale -2.0 must be >= 0}}
  %0 = graph.random_normal {dtype = "f32", mean = 0.0, scale = -2.0, shape = [4]} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @integer_normal() -> tensor<4xi32> {
  // expected-error @+1 {{'graph.random_normal': dtype 'i32' is not one of f16, bf16, f32, f64}}
  %0 = graph.random_normal {dtype = "i32", mean = 0.0, scale = 1.0, shape = [4]} : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @unknown_dtype() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.random_uniform': dtype 'float' is not one of f16, bf16, f32, f64}}
  %0 = graph.random_uniform {dtype = "float", high = 1.0, low = 0.0, shape = [4]} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @integer_probabilities(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.bernoulli': input element type i32 is not one of f16, bf16, f32, f64}}
  %0 = graph.bernoulli %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @wrong_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'graph.random_uniform_like' result #0 has type tensor<3x2xf32>, but the operands give tensor<2x3xf32>}}
  %0 = graph.random_uniform_like %x {high = 1.0, low = 0.0} : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @multinomial_rank(%x: tensor<6xf32>) -> tensor<6x5xi32> {
  // expected-error @+1 {{'graph.multinomial': input 6 is not [batch, class]}}
  %0 = graph.multinomial %x {dtype = "i32", sample_size = 5 : i64} : tensor<6xf32> -> tensor<6x5xi32>
  func.return %0 : tensor<6x5xi32>
}

// -----

func.func @integer_log_probabilities(%x: tensor<2x3xi32>) -> tensor<2x5xi32> {
  // expected-error @+1 {{'graph.multinomial': input element type i32 is not one of f16, bf16, f32, f64}}
  %0 = graph.multinomial %x {dtype = "i32", sample_size = 5 : i64} : tensor<2x3xi32> -> tensor<2x5xi32>
  func.return %0 : tensor<2x5xi32>
}

// -----

func.func @no_samples(%x: tensor<2x3xf32>) -> tensor<2x0xi32> {
  // expected-error @+1 {{'graph.multinomial': sample_size 0 must be >= 1}}
  %0 = graph.multinomial %x {dtype = "i32", sample_size = 0 : i64} : tensor<2x3xf32> -> tensor<2x0xi32>
  func.return %0 : tensor<2x0xi32>
}

// -----

func.func @multinomial_without_dtype(%x: tensor<2x3xf32>) -> tensor<2x5xi32> {
  // expected-error @+1 {{'graph.multinomial': missing property 'dtype'}}
  %0 = graph.multinomial %x {sample_size = 5 : i64} : tensor<2x3xf32> -> tensor<2x5xi32>
  func.return %0 : tensor<2x5xi32>
}

// -----

func.func @negative_shape() -> tensor<4xf32> {
  // expected-error @+1 {{'graph.random_normal': shape 4x-2 has a negative or unknown dimension}}
  %0 = graph.random_normal {dtype = "f32", mean = 0.0, scale = 1.0, shape = [4, -2]} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @bernoulli_dtype(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.bernoulli': dtype 'f8E4M3FN' is not one of f16, bf16, f32, f64, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1}}
  %0 = graph.bernoulli %x {dtype = "f8E4M3FN"} : tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
