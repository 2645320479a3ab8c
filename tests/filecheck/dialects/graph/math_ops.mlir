// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Every graph_math op in its custom syntax, with dynamic dims; the custom and generic
// forms round-trip.

// CHECK-LABEL: func.func @float_unary
// CHECK-NEXT:    %0 = graph.tan %x : tensor<2x?xf32>
// CHECK-NEXT:    %1 = graph.asin %0 : tensor<2x?xf32>
// CHECK-NEXT:    %2 = graph.acos %1 : tensor<2x?xf32>
// CHECK-NEXT:    %3 = graph.atan %2 : tensor<2x?xf32>
// CHECK-NEXT:    %4 = graph.sinh %3 : tensor<2x?xf32>
// CHECK-NEXT:    %5 = graph.cosh %4 : tensor<2x?xf32>
// CHECK-NEXT:    %6 = graph.asinh %5 : tensor<2x?xf32>
// CHECK-NEXT:    %7 = graph.acosh %6 : tensor<2x?xf32>
// CHECK-NEXT:    %8 = graph.atanh %7 : tensor<2x?xf32>
// CHECK-NEXT:    %9 = graph.floor %8 : tensor<2x?xf32>
// CHECK-NEXT:    %10 = graph.ceil %9 : tensor<2x?xf32>
// CHECK-NEXT:    %11 = graph.round %10 : tensor<2x?xf32>
// CHECK-NEXT:    %12 = graph.sign %11 : tensor<2x?xf32>
// CHECK-NEXT:    %13 = graph.celu %12 {alpha = 2.000000e+00} : tensor<2x?xf32>
// CHECK-NEXT:    %14 = graph.shrink %13 {bias = 5.000000e-01, lambd = 1.500000e+00} : tensor<2x?xf32>
// CHECK-NEXT:    %15 = graph.is_nan %14 : tensor<2x?xf32> -> tensor<2x?xi1>
// CHECK-NEXT:    %16 = graph.is_inf %14 {detect_negative = false, detect_positive = true} : tensor<2x?xf32> -> tensor<2x?xi1>
// CHECK-NEXT:    %17 = graph.swish %14 {alpha = 5.000000e-01} : tensor<2x?xf32>
// CHECK-GENERIC: "graph.is_inf"(%{{.*}}) <{detect_negative = false, detect_positive = true}> : (tensor<2x?xf32>) -> tensor<2x?xi1>
func.func @float_unary(%x: tensor<2x?xf32>) -> (tensor<2x?xi1>, tensor<2x?xi1>, tensor<2x?xf32>) {
  %0 = graph.tan %x : tensor<2x?xf32>
  %1 = graph.asin %0 : tensor<2x?xf32>
  %2 = graph.acos %1 : tensor<2x?xf32>
  %3 = graph.atan %2 : tensor<2x?xf32>
  %4 = graph.sinh %3 : tensor<2x?xf32>
  %5 = graph.cosh %4 : tensor<2x?xf32>
  %6 = graph.asinh %5 : tensor<2x?xf32>
  %7 = graph.acosh %6 : tensor<2x?xf32>
  %8 = graph.atanh %7 : tensor<2x?xf32>
  %9 = graph.floor %8 : tensor<2x?xf32>
  %10 = graph.ceil %9 : tensor<2x?xf32>
  %11 = graph.round %10 : tensor<2x?xf32>
  %12 = graph.sign %11 : tensor<2x?xf32>
  %13 = graph.celu %12 {alpha = 2.0} : tensor<2x?xf32>
  %14 = graph.shrink %13 {bias = 0.5, lambd = 1.5} : tensor<2x?xf32>
  %15 = graph.is_nan %14 : tensor<2x?xf32> -> tensor<2x?xi1>
  %16 = graph.is_inf %14 {detect_negative = false, detect_positive = true} : tensor<2x?xf32> -> tensor<2x?xi1>
  %17 = graph.swish %14 {alpha = 0.5} : tensor<2x?xf32>
  func.return %15, %16, %17 : tensor<2x?xi1>, tensor<2x?xi1>, tensor<2x?xf32>
}

// CHECK-LABEL: func.func @integer
// CHECK-NEXT:    %0 = graph.mod %a, %b {fmod = false} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %1 = graph.mod %0, %b {fmod = true} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %2 = graph.bit_shift %1, %b {direction = "LEFT"} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %3 = graph.bit_shift %2, %b {direction = "RIGHT"} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %4 = graph.bitwise_and %3, %b : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %5 = graph.bitwise_or %4, %b : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %6 = graph.bitwise_xor %5, %b : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
// CHECK-NEXT:    %7 = graph.bitwise_not %6 : tensor<?x4xi32>
// CHECK-NEXT:    %8 = graph.sign %7 : tensor<?x4xi32>
// CHECK-NEXT:    %9 = graph.shrink %8 {bias = 1.000000e+00, lambd = 2.000000e+00} : tensor<?x4xi32>
func.func @integer(%a: tensor<?x4xi32>, %b: tensor<4xi32>) -> tensor<?x4xi32> {
  %0 = graph.mod %a, %b {fmod = false} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %1 = graph.mod %0, %b {fmod = true} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %2 = graph.bit_shift %1, %b {direction = "LEFT"} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %3 = graph.bit_shift %2, %b {direction = "RIGHT"} : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %4 = graph.bitwise_and %3, %b : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %5 = graph.bitwise_or %4, %b : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %6 = graph.bitwise_xor %5, %b : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %7 = graph.bitwise_not %6 : tensor<?x4xi32>
  %8 = graph.sign %7 : tensor<?x4xi32>
  %9 = graph.shrink %8 {bias = 1.0, lambd = 2.0} : tensor<?x4xi32>
  func.return %9 : tensor<?x4xi32>
}

// CHECK-LABEL: func.func @search
// CHECK-NEXT:    %0 = graph.reduce_prod %x {axes = [1], keepdims = false} : tensor<?x5xf32> -> tensor<?xf32>
// CHECK-NEXT:    %1 = graph.arg_max %x {axis = 1, keepdims = true, select_last_index = false} : tensor<?x5xf32> -> tensor<?x1xi64>
// CHECK-NEXT:    %2 = graph.arg_min %x {axis = 0, keepdims = false, select_last_index = true} : tensor<?x5xf32> -> tensor<5xi64>
// CHECK-NEXT:    %3 = graph.hardmax %x {axis = -1} : tensor<?x5xf32>
// CHECK-NEXT:    %4, %5 = graph.top_k %x {axis = -1, k = 2, largest = true, sorted = true} : tensor<?x5xf32> -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK-NEXT:    %6 = graph.cum_sum %x {axis = 0, exclusive = true, reverse = false} : tensor<?x5xf32>
// CHECK-NEXT:    %7 = graph.cum_prod %x {axis = -1, exclusive = false, reverse = true} : tensor<?x5xf32>
// CHECK-GENERIC: "graph.top_k"(%{{.*}}) <{axis = -1 : i64, k = 2 : i64, largest = true, sorted = true}> : (tensor<?x5xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
func.func @search(%x: tensor<?x5xf32>) {
  %0 = graph.reduce_prod %x {axes = [1], keepdims = false} : tensor<?x5xf32> -> tensor<?xf32>
  %1 = graph.arg_max %x {axis = 1, keepdims = true, select_last_index = false} : tensor<?x5xf32> -> tensor<?x1xi64>
  %2 = graph.arg_min %x {axis = 0, keepdims = false, select_last_index = true} : tensor<?x5xf32> -> tensor<5xi64>
  %3 = graph.hardmax %x {axis = -1} : tensor<?x5xf32>
  %4, %5 = graph.top_k %x {axis = -1, k = 2, largest = true, sorted = true} : tensor<?x5xf32> -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %6 = graph.cum_sum %x {axis = 0, exclusive = true, reverse = false} : tensor<?x5xf32>
  %7 = graph.cum_prod %x {axis = -1, exclusive = false, reverse = true} : tensor<?x5xf32>
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7) : (tensor<?xf32>, tensor<?x1xi64>, tensor<5xi64>, tensor<?x5xf32>, tensor<?x2xf32>, tensor<?x2xi64>, tensor<?x5xf32>, tensor<?x5xf32>) -> ()
  func.return
}
