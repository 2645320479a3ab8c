// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Indexing ops round-trip; the data-dependent ones have a dynamic result dim.

// CHECK-LABEL: func.func @gather_scatter
// CHECK-NEXT:    %0 = graph.gather_elements %x, %i {axis = 1} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT:    %1 = graph.scatter_elements %x, %i, %u {axis = -1, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %2 = graph.scatter_nd %c, %p, %n {reduction = "none"} : (tensor<1x8x32x64xf16>, tensor<1x1x1x3xi64>, tensor<1x1x1x64xf16>) -> tensor<1x8x32x64xf16>
// CHECK-GENERIC: "graph.gather_elements"(%x, %i) <{axis = 1 : i64}> : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
func.func @gather_scatter(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>, %c: tensor<1x8x32x64xf16>, %p: tensor<1x1x1x3xi64>, %n: tensor<1x1x1x64xf16>) {
  %0 = graph.gather_elements %x, %i {axis = 1} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %1 = graph.scatter_elements %x, %i, %u {axis = -1, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %2 = graph.scatter_nd %c, %p, %n {reduction = "none"} : (tensor<1x8x32x64xf16>, tensor<1x1x1x3xi64>, tensor<1x1x1x64xf16>) -> tensor<1x8x32x64xf16>
  func.return
}

// CHECK-LABEL: func.func @select
// CHECK-NEXT:    %0 = graph.one_hot %i, %v {axis = 1, depth = 5} : (tensor<3x2xi64>, tensor<2xf32>) -> tensor<3x5x2xf32>
// CHECK-NEXT:    %1 = graph.reverse_sequence %x, %l {batch_axis = 0, time_axis = 1} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK-NEXT:    %2 = graph.compress %x, %b {axis = 1} : (tensor<3x4xf32>, tensor<4xi1>) -> tensor<3x?xf32>
// CHECK-NEXT:    %3 = graph.compress %x, %b : (tensor<3x4xf32>, tensor<4xi1>) -> tensor<?xf32>
// CHECK-NEXT:    %4 = graph.non_zero %x : tensor<3x4xf32> -> tensor<2x?xi64>
// CHECK-NEXT:    %5, %6, %7, %8 = graph.unique %x {sorted = true} : tensor<3x4xf32> -> (tensor<?xf32>, tensor<?xi64>, tensor<12xi64>, tensor<?xi64>)
// CHECK-NEXT:    %9, %10, %11, %12 = graph.unique %x {axis = 0, sorted = false} : tensor<3x4xf32> -> (tensor<?x4xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
func.func @select(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %v: tensor<2xf32>, %l: tensor<3xi64>, %b: tensor<4xi1>) {
  %0 = graph.one_hot %i, %v {axis = 1, depth = 5} : (tensor<3x2xi64>, tensor<2xf32>) -> tensor<3x5x2xf32>
  %1 = graph.reverse_sequence %x, %l {batch_axis = 0, time_axis = 1} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %2 = graph.compress %x, %b {axis = 1} : (tensor<3x4xf32>, tensor<4xi1>) -> tensor<3x?xf32>
  %3 = graph.compress %x, %b : (tensor<3x4xf32>, tensor<4xi1>) -> tensor<?xf32>
  %4 = graph.non_zero %x : tensor<3x4xf32> -> tensor<2x?xi64>
  %5, %6, %7, %8 = graph.unique %x {sorted = true} : tensor<3x4xf32> -> (tensor<?xf32>, tensor<?xi64>, tensor<12xi64>, tensor<?xi64>)
  %9, %10, %11, %12 = graph.unique %x {axis = 0, sorted = false} : tensor<3x4xf32> -> (tensor<?x4xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  func.return
}

// CHECK-LABEL: func.func @softcap
// CHECK-NEXT:    %0 = graph.flash_attention %q, %q, %q {causal = false, layout = "BNSD", scale = 1.250000e-01, softcap = 3.000000e+01} : tensor<1x2x4x8xf32>
func.func @softcap(%q: tensor<1x2x4x8xf32>) {
  %0 = graph.flash_attention %q, %q, %q {scale = 0.125, causal = false, layout = "BNSD", softcap = 30.0} : tensor<1x2x4x8xf32>
  func.return
}
