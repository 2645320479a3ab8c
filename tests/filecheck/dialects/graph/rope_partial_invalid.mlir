// RUN: afc-opt %s --split-input-file --verify-diagnostics

// A partial rope's rotary_dim must be even (it rotates halves or pairs) and at most D.

func.func @rotary_dim_odd(%x: tensor<2x8xf32>, %t: tensor<2x3xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'graph.rope': rotary_dim 3 must be even, positive and at most the last dim of 2x8}}
  %0 = graph.rope %x, %t, %t {interleaved = false, rotary_dim = 3} : (tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

func.func @rotary_dim_over_d(%x: tensor<2x8xf32>, %t: tensor<2x10xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'graph.rope': rotary_dim 10 must be even, positive and at most the last dim of 2x8}}
  %0 = graph.rope %x, %t, %t {interleaved = false, rotary_dim = 10} : (tensor<2x8xf32>, tensor<2x10xf32>, tensor<2x10xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

func.func @tables_not_r_wide(%x: tensor<2x8xf32>, %t: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'graph.rope': cos 2x8 does not broadcast to 2x4}}
  %0 = graph.rope %x, %t, %t {interleaved = false, rotary_dim = 4} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
