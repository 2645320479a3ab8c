// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// graph.flash_attention's mask forms round-trip: an i1 mask true where a key is hidden
// (mask_polarity = "hide") and NaN for a fully masked row (masked_row = "nan").

// CHECK-LABEL: func.func @mask_forms
// CHECK-NEXT:    %0 = graph.flash_attention %q, %q, %q, %m {causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan", scale = 5.000000e-01} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %1 = graph.flash_attention %q, %q, %q, %a {causal = false, layout = "BNSD", masked_row = "zero", scale = 5.000000e-01} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-GENERIC: "graph.flash_attention"(%q, %q, %q, %m) <{scale = 5.000000e-01 : f64, causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan"}>
func.func @mask_forms(%q: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>, %a: tensor<4x4xf32>) {
  %0 = graph.flash_attention %q, %q, %q, %m {scale = 0.5, causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
  %1 = graph.flash_attention %q, %q, %q, %a {scale = 0.5, causal = false, layout = "BNSD", masked_row = "zero"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}
