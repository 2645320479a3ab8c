// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s
// RUN: not afc-opt %s --split-input-file -p 'set-target{chip=Ascend910},lower-to-buffer' 2>&1 | filecheck %s --check-prefix=A1

// graph.flash_attention's mask forms in the attention kernel.

// HF eager's mask read as it is (mask_polarity = "hide"), fully masked rows 0: on 910B
// a key is kept where the mask is 0 (Compare EQ with zeros); on 910 by the bound
// (m - 0.5) * -inf, which is -inf where m is 1. The factor 1 / l is computed in place.
// CHECK-LABEL: buffer.kernel @hide_zero_kernel0
// CHECK:         buffer.vcompare "eq" %cmp, %mask_h, %zeros_h
// CHECK-NEXT:    buffer.vselect %{{.*}}, %cmp, %{{.*}}, %neg_inf
// CHECK:         buffer.vscalar "maxs" %l_run, %l_run
// CHECK-NOT:     arith.select
// A1-LABEL: buffer.kernel @hide_zero_kernel0
// A1:         %[[NINF:.*]] = arith.constant 0xff800000 : f32
// A1:         buffer.vscalar "adds" %neg_inf, %neg_inf
// A1-NEXT:    buffer.vscalar "muls" %neg_inf, %neg_inf, %[[NINF]]
// A1-NEXT:    buffer.vbinary "min"
func.func @hide_zero(%q: tensor<1x4x16x32xf16>, %k: tensor<1x2x64x32xf16>, %v: tensor<1x2x64x32xf16>, %m: tensor<16x64xi1>) -> tensor<1x4x16x32xf16> {
  %o = graph.fusion_group (%q_ = %q : tensor<1x4x16x32xf16>, %k_ = %k : tensor<1x2x64x32xf16>, %v_ = %v : tensor<1x2x64x32xf16>, %m_ = %m : tensor<16x64xi1>) -> tensor<1x4x16x32xf16> plan {template = "attention"} {
    %fa = graph.flash_attention %q_, %k_, %v_, %m_ {scale = 0.25, causal = false, layout = "BNSD", mask_polarity = "hide"} : (tensor<1x4x16x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<16x64xi1>) -> tensor<1x4x16x32xf16>
    graph.yield %fa : tensor<1x4x16x32xf16>
  }
  func.return %o : tensor<1x4x16x32xf16>
}

// -----

// masked_row = "nan": a fully masked row is the one whose running sum l is 0; one
// select on the row's factor 1 / l (computed into row_sum, so that l is kept) puts NaN
// there. 910 computes in saturation mode (NaN becomes 0): refused, with the reason.
// CHECK-LABEL: buffer.kernel @hide_nan_kernel0
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[NAN:.*]] = arith.constant 0x7fc00000 : f32
// CHECK:         buffer.vcompare "eq" %cmp, %mask_h, %zeros_h
// CHECK:         buffer.vscalar "maxs" %row_sum, %l_run
// CHECK-NEXT:    buffer.vunary "reciprocal" %row_sum, %row_sum
// CHECK:           %[[INV:.*]] = buffer.get_value %row_sum[%[[R:.*]]]
// CHECK-NEXT:      %[[L:.*]] = buffer.get_value %l_run[%[[R]]]
// CHECK-NEXT:      %[[EMPTY:.*]] = arith.cmpf oeq, %[[L]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[F:.*]] = arith.select %[[EMPTY]], %[[NAN]], %[[INV]] : f32
// CHECK-NEXT:      buffer.vscalar "muls" %{{.*}}, %{{.*}}, %[[F]]
// A1: error: cannot lower fusion group hide_nan_kernel0 (graph.fusion_group %o): masked_row = "nan" on Ascend910, whose vector unit computes in saturation mode (NaN becomes 0)
func.func @hide_nan(%q: tensor<1x4x16x32xf16>, %k: tensor<1x2x64x32xf16>, %v: tensor<1x2x64x32xf16>, %m: tensor<16x64xi1>) -> tensor<1x4x16x32xf16> {
  %o = graph.fusion_group (%q_ = %q : tensor<1x4x16x32xf16>, %k_ = %k : tensor<1x2x64x32xf16>, %v_ = %v : tensor<1x2x64x32xf16>, %m_ = %m : tensor<16x64xi1>) -> tensor<1x4x16x32xf16> plan {template = "attention"} {
    %fa = graph.flash_attention %q_, %k_, %v_, %m_ {scale = 0.25, causal = false, layout = "BNSD", mask_polarity = "hide", masked_row = "nan"} : (tensor<1x4x16x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<16x64xi1>) -> tensor<1x4x16x32xf16>
    graph.yield %fa : tensor<1x4x16x32xf16>
  }
  func.return %o : tensor<1x4x16x32xf16>
}
