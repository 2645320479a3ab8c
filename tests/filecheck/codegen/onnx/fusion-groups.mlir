// Each graph.fusion_group is a call of its own function (fusion_group_<i>, or its
// `name`); constants inside are hoisted to initializers passed as extra inputs.
// RUN: afc-opt %s -t onnx | filecheck %s

func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = graph.fusion_group (%a = %x : tensor<4x8xf32>, %b = %w : tensor<8x8xf32>) -> tensor<4x8xf32> attributes {afc.benefit_us = 1.5 : f64} {
    %c = graph.constant {name = "bias"} dense<0.5> : tensor<8xf32>
    %m = graph.matmul %a, %b, %c {activation = "relu"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    graph.yield %m : tensor<4x8xf32>
  }
  %s:2 = graph.fusion_group (%u = %g : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {name = "softmax_kernel"} {
    %e = graph.exp %u : tensor<4x8xf32>
    %z = graph.softmax %e {axis = -1} : tensor<4x8xf32>
    graph.yield %z, %e : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %s#0, %s#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK:      main (float[4,8] arg0, float[8,8] arg1) => (float[4,8] out0, float[4,8] out1)
// CHECK-NEXT:   <float[8] bias = {0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}, float[4,8] g>
// CHECK-NEXT: {
// CHECK-NEXT:   g = ai.afc.fusion_group_0 (arg0, arg1, bias)
// CHECK-NEXT:   out0, out1 = ai.afc.softmax_kernel (g)
// CHECK-NEXT: }
// CHECK:      opset_import: ["" : 17,"ai.afc" : 1]
// CHECK:      fusion_group_0 (a, b, bias) => (m)
// CHECK-NEXT: {
// CHECK-NEXT:   m = ai.afc.MatMulBiasRelu (a, b, bias)
// CHECK-NEXT: }
// CHECK:      MatMulBiasRelu (lhs, rhs, bias) => (output)
// CHECK-NEXT: {
// CHECK-NEXT:   matmul = MatMul (lhs, rhs)
// CHECK-NEXT:   add = Add (matmul, bias)
// CHECK-NEXT:   output = Relu (add)
// CHECK-NEXT: }
// CHECK:      softmax_kernel (u) => (z, e)
// CHECK-NEXT: {
// CHECK-NEXT:   e = Exp (u)
// CHECK-NEXT:   z = Softmax <axis: int = -1> (e)
// CHECK-NEXT: }
