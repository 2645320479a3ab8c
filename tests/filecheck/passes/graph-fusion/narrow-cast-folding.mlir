// RUN: afc-opt %s -p 'graph-fusion{only=ConstantFoldingPass}' | filecheck %s
// RUN: afc-opt %s -p 'graph-fusion{only=ConstantFoldingPass}' | afc-opt | filecheck %s

// Casts of constants to the storage-only types fold with ONNX's rounding: to float8
// E4M3FN saturating (500 and +-1e6 clamp to +-448), to E5M2 without saturation (-1e6 and
// 1e6 overflow to -inf and inf: non-finite values print as raw codes, which parse back to
// the same codes), to E8M0 rounding to nearest (0.3 -> 0.25, 3 -> 4, 5 -> 4), to float4
// E2M1 (ties to even: 2.5 -> 2, 5 -> 4, 0.75 -> 1), to int4 truncating and wrapping (-9.5 -> 7,
// 8 -> -8, 15 -> -1); back to f32 the float8 values are exact.
// CHECK-LABEL: func.func @fold
// CHECK-DAG:     %[[A:.*]] = graph.constant {name = "x.cast"} dense<[3.125000e-01, 4.480000e+02, -4.480000e+02, 4.480000e+02]> : tensor<4xf8E4M3FN>
// CHECK-DAG:     %[[B:.*]] = graph.constant {name = "x.cast"} dense<"0x3560FC7C"> : tensor<4xf8E5M2>
// CHECK-DAG:     %[[C:.*]] = graph.constant {name = "y.cast"} dense<[2.500000e-01, 4.000000e+00, 4.000000e+00]> : tensor<3xf8E8M0FNU>
// CHECK-DAG:     %[[F:.*]] = graph.constant {name = "h.cast"} dense<[2.000000e+00, 4.000000e+00, 1.000000e+00]> : tensor<3xf4E2M1FN>
// CHECK-DAG:     %[[D:.*]] = graph.constant {name = "i.cast"} dense<[7, 7, -8, -1]> : tensor<4xi4>
// CHECK-DAG:     %[[E:.*]] = graph.constant {name = "x.cast.cast"} dense<[3.125000e-01, 4.480000e+02, -4.480000e+02, 4.480000e+02]> : tensor<4xf32>
// CHECK-NOT:     graph.cast
// CHECK:         func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]], %[[F]]
func.func @fold() -> (tensor<4xf8E4M3FN>, tensor<4xf8E5M2>, tensor<3xf8E8M0FNU>, tensor<4xi4>, tensor<4xf32>, tensor<3xf4E2M1FN>) {
  %x = graph.constant {name = "x"} dense<[0.3, 500.0, -1000000.0, 1000000.0]> : tensor<4xf32>
  %a = graph.cast %x : tensor<4xf32> -> tensor<4xf8E4M3FN>
  %b = graph.cast %x {saturate = false} : tensor<4xf32> -> tensor<4xf8E5M2>
  %y = graph.constant {name = "y"} dense<[0.3, 3.0, 5.0]> : tensor<3xf32>
  %c = graph.cast %y {round_mode = "nearest"} : tensor<3xf32> -> tensor<3xf8E8M0FNU>
  %i = graph.constant {name = "i"} dense<[-9.5, 7.9, 8.0, 15.0]> : tensor<4xf32>
  %d = graph.cast %i : tensor<4xf32> -> tensor<4xi4>
  %e = graph.cast %a : tensor<4xf8E4M3FN> -> tensor<4xf32>
  %h = graph.constant {name = "h"} dense<[2.5, 5.0, 0.75]> : tensor<3xf32>
  %f = graph.cast %h : tensor<3xf32> -> tensor<3xf4E2M1FN>
  func.return %a, %b, %c, %d, %e, %f : tensor<4xf8E4M3FN>, tensor<4xf8E5M2>, tensor<3xf8E8M0FNU>, tensor<4xi4>, tensor<4xf32>, tensor<3xf4E2M1FN>
}
