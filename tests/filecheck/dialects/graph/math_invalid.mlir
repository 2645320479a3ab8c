// RUN: afc-opt %s --split-input-file --verify-diagnostics

// Each chunk holds one graph_math op the verifier must reject; the message names what
// is wrong.

func.func @tan_of_integers(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.tan': expects a floating-point operand, got i32}}
  %y = graph.tan %x : tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

func.func @is_nan_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.is_nan' result #0 has type tensor<4xf32>, but the operands give tensor<4xi1>}}
  %y = graph.is_nan %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @is_inf_missing_flag(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{property 'detect_negative' expected in operation 'graph.is_inf'}}
  %y = graph.is_inf %x {detect_positive = true} : tensor<4xf32> -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// -----

func.func @sign_of_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.sign': expects a numeric operand, got i1}}
  %y = graph.sign %x : tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// -----

func.func @bitwise_on_floats(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.bitwise_and': expects an integer operand, got f32}}
  %y = graph.bitwise_and %a, %a : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @bitwise_not_on_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.bitwise_not': expects an integer operand, got i1}}
  %y = graph.bitwise_not %a : tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// -----

func.func @shift_direction(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.bit_shift': direction must be one of ('LEFT', 'RIGHT')}}
  %y = graph.bit_shift %a, %a {direction = "UP"} : tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

func.func @mod_broadcast(%a: tensor<4xi32>, %b: tensor<3xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.mod': shapes 4, 3 do not broadcast (dim 0)}}
  %y = graph.mod %a, %b {fmod = true} : (tensor<4xi32>, tensor<3xi32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

func.func @shrink_lambd(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.shrink': lambd must be >= 0, got -1.0}}
  %y = graph.shrink %x {bias = 0.0, lambd = -1.0} : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @celu_alpha(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.celu': alpha must be nonzero}}
  %y = graph.celu %x {alpha = 0.0} : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @arg_max_type(%x: tensor<2x3xf32>) -> tensor<2x1xi32> {
  // expected-error @+1 {{'graph.arg_max' result #0 has type tensor<2x1xi32>, but the operands give tensor<2x1xi64>}}
  %y = graph.arg_max %x {axis = 1, keepdims = true, select_last_index = false} : tensor<2x3xf32> -> tensor<2x1xi32>
  func.return %y : tensor<2x1xi32>
}

// -----

func.func @arg_min_axis(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'graph.arg_min': axis 2 is out of range for rank 2}}
  %y = graph.arg_min %x {axis = 2, keepdims = false, select_last_index = false} : tensor<2x3xf32> -> tensor<2xi64>
  func.return %y : tensor<2xi64>
}

// -----

func.func @arg_max_empty(%x: tensor<2x0xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'graph.arg_max': axis 1 is empty: there is no extreme value}}
  %y = graph.arg_max %x {axis = 1, keepdims = false, select_last_index = false} : tensor<2x0xf32> -> tensor<2xi64>
  func.return %y : tensor<2xi64>
}

// -----

func.func @hardmax_int(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'graph.hardmax': expects a floating-point operand, got i32}}
  %y = graph.hardmax %x {axis = -1} : tensor<2x3xi32>
  func.return %y : tensor<2x3xi32>
}

// -----

func.func @top_k_too_large(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'graph.top_k': k = 5 is larger than axis 1 (size 4)}}
  %v, %i = graph.top_k %x {axis = -1, k = 5, largest = true, sorted = true} : tensor<3x4xf32> -> (tensor<3x5xf32>, tensor<3x5xi64>)
  func.return
}

// -----

func.func @top_k_result_count(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{Expected 2 results, but got 1}}
  %v = graph.top_k %x {axis = -1, k = 2, largest = true, sorted = true} : tensor<3x4xf32> -> tensor<3x2xf32>
  func.return
}

// -----

func.func @cum_sum_flags(%x: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{Expected attribute i1 but got i64}}
  %y = graph.cum_sum %x {axis = 0, exclusive = 1, reverse = false} : tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

func.func @reduce_prod_bool(%x: tensor<5xi1>) -> tensor<i1> {
  // expected-error @+1 {{'graph.reduce_prod': expects a numeric operand, got i1}}
  %y = graph.reduce_prod %x {axes = [], keepdims = false} : tensor<5xi1> -> tensor<i1>
  func.return %y : tensor<i1>
}
