// RUN: afc-opt %s --split-input-file --verify-diagnostics

func.func @gather_elements_rank(%x: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.gather_elements': indices 3 and data 3x4 differ in rank}}
  %0 = graph.gather_elements %x, %i {axis = 0} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @gather_elements_float_indices(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.gather_elements': indices must be i32 or i64, got f32}}
  %0 = graph.gather_elements %x, %x {axis = 0} : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_reduction(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.scatter_elements': reduction must be one of ('none', 'add', 'mul', 'max', 'min')}}
  %0 = graph.scatter_elements %x, %i, %u {axis = 0, reduction = "mean"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_nd_updates(%x: tensor<4x5xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'graph.scatter_nd': updates 2x4 must have shape 2x5}}
  %0 = graph.scatter_nd %x, %i, %u {reduction = "none"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}

// -----

func.func @one_hot_values(%i: tensor<3xi64>, %v: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.one_hot': values must be [off, on] (shape [2]), got 3}}
  %0 = graph.one_hot %i, %v {axis = -1, depth = 4} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @reverse_axes(%x: tensor<3x4x2xf32>, %l: tensor<3xi64>) -> tensor<3x4x2xf32> {
  // expected-error @+1 {{'graph.reverse_sequence': batch_axis and time_axis must be 0 and 1 (in either order)}}
  %0 = graph.reverse_sequence %x, %l {batch_axis = 0, time_axis = 2} : (tensor<3x4x2xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  func.return %0 : tensor<3x4x2xf32>
}

// -----

func.func @compress_condition(%x: tensor<3x4xf32>, %c: tensor<4xi64>) -> tensor<3x?xf32> {
  // expected-error @+1 {{'graph.compress': condition must be a 1-D i1 tensor, got tensor<4xi64>}}
  %0 = graph.compress %x, %c {axis = 1} : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<3x?xf32>
  func.return %0 : tensor<3x?xf32>
}

// -----

func.func @non_zero_result(%x: tensor<3x4xf32>) -> tensor<3x?xi64> {
  // expected-error @+1 {{'graph.non_zero' result #0 has type tensor<3x?xi64>, but the operands give tensor<2x?xi64>}}
  %0 = graph.non_zero %x : tensor<3x4xf32> -> tensor<3x?xi64>
  func.return %0 : tensor<3x?xi64>
}

// -----

func.func @softcap(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': softcap must be > 0, got 0.0}}
  %0 = graph.flash_attention %q, %q, %q {scale = 0.125, causal = false, layout = "BNSD", softcap = 0.0} : tensor<1x2x4x8xf32>
  func.return %0 : tensor<1x2x4x8xf32>
}
