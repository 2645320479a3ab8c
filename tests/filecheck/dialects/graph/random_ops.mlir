// RUN: afc-opt %s | afc-opt | filecheck %s
// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// The random ops print and parse back with their properties; a -Like op or Bernoulli
// without `dtype` takes its input's element type.

// CHECK-LABEL: func.func @draws
// CHECK: graph.random_normal {dtype = "f16", mean = 1.000000e+00, scale = 2.000000e+00, seed = 3.000000e+00, shape = [2, 3]} : tensor<2x3xf16>
// CHECK: graph.random_uniform {dtype = "f32", high = 1.000000e+00, low = -1.000000e+00, shape = [4]} : tensor<4xf32>
// CHECK: graph.random_normal_like %x {dtype = "f64", mean = 0.000000e+00, scale = 1.000000e+00} : tensor<2x3xf32> -> tensor<2x3xf64>
// CHECK: graph.random_uniform_like %x {high = 1.000000e+00, low = 0.000000e+00} : tensor<2x3xf32>
// CHECK: graph.bernoulli %x {dtype = "i1", seed = 1.000000e+00} : tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK-GENERIC: "graph.random_normal"() <{dtype = "f16", mean = 1.000000e+00 : f64, scale = 2.000000e+00 : f64, seed = 3.000000e+00 : f64, shape = array<i64: 2, 3>}> : () -> tensor<2x3xf16>
// CHECK-GENERIC: "graph.bernoulli"(%x) <{dtype = "i1", seed = 1.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xi1>
func.func @draws(%x: tensor<2x3xf32>) -> (tensor<2x3xf16>, tensor<4xf32>, tensor<2x3xf64>, tensor<2x3xf32>, tensor<2x3xi1>) {
  %0 = graph.random_normal {dtype = "f16", mean = 1.0, scale = 2.0, seed = 3.0, shape = [2, 3]} : tensor<2x3xf16>
  %1 = graph.random_uniform {dtype = "f32", high = 1.0, low = -1.0, shape = [4]} : tensor<4xf32>
  %2 = graph.random_normal_like %x {dtype = "f64", mean = 0.0, scale = 1.0} : tensor<2x3xf32> -> tensor<2x3xf64>
  %3 = graph.random_uniform_like %x {high = 1.0, low = 0.0} : tensor<2x3xf32>
  %4 = graph.bernoulli %x {dtype = "i1", seed = 1.0} : tensor<2x3xf32> -> tensor<2x3xi1>
  func.return %0, %1, %2, %3, %4 : tensor<2x3xf16>, tensor<4xf32>, tensor<2x3xf64>, tensor<2x3xf32>, tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @multinomial
// CHECK: graph.multinomial %x {dtype = "i64", sample_size = 5} : tensor<2x3xf32> -> tensor<2x5xi64>
// CHECK-GENERIC: "graph.multinomial"(%x) <{dtype = "i64", sample_size = 5 : i64}> : (tensor<2x3xf32>) -> tensor<2x5xi64>
func.func @multinomial(%x: tensor<2x3xf32>) -> tensor<2x5xi64> {
  %0 = graph.multinomial %x {dtype = "i64", sample_size = 5 : i64} : tensor<2x3xf32> -> tensor<2x5xi64>
  func.return %0 : tensor<2x5xi64>
}
