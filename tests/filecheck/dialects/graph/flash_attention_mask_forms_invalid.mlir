// RUN: afc-opt %s --split-input-file --verify-diagnostics

func.func @polarity_of_float_mask(%q: tensor<1x2x4x8xf32>, %a: tensor<4x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': mask_polarity applies to an i1 mask only}}
  %0 = graph.flash_attention %q, %q, %q, %a {scale = 0.5, causal = false, layout = "BNSD", mask_polarity = "hide"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @polarity_without_mask(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': mask_polarity applies to an i1 mask only}}
  %0 = graph.flash_attention %q, %q, %q {scale = 0.5, causal = false, layout = "BNSD", mask_polarity = "keep"} : tensor<1x2x4x8xf32>
  func.return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @unknown_polarity(%q: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': mask_polarity must be one of ('keep', 'hide'), got 'masked'}}
  %0 = graph.flash_attention %q, %q, %q, %m {scale = 0.5, causal = false, layout = "BNSD", mask_polarity = "masked"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
  func.return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @unknown_masked_row(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'graph.flash_attention': masked_row must be one of ('zero', 'nan'), got 'mean'}}
  %0 = graph.flash_attention %q, %q, %q {scale = 0.5, causal = false, layout = "BNSD", masked_row = "mean"} : tensor<1x2x4x8xf32>
  func.return %0 : tensor<1x2x4x8xf32>
}
