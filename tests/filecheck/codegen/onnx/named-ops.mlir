// Ops with no single ONNX op at the opset are calls of model-local functions in the
// domain ai.afc whose bodies are standard ops; from the opset that has the op, they
// are that op. A body is shared by all calls with the same body.
// RUN: afc-opt %s -t onnx | filecheck %s
// RUN: afc-opt %s -t 'onnx{opset=24}' | filecheck %s --check-prefix=NATIVE

func.func @main(%x: tensor<8xf32>, %h: tensor<8xf16>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf32>) {
  %g = graph.gelu %x {approximate = "tanh"} : tensor<8xf32>
  %s = graph.silu %g : tensor<8xf32>
  %t = graph.silu %s : tensor<8xf32>
  %u = graph.silu %h : tensor<8xf16>
  %r = graph.rsqrt %x : tensor<8xf32>
  func.return %s, %t, %u, %r : tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf32>
}

// CHECK:      opset_import: ["" : 17, "ai.afc" : 1]
// CHECK:      g = ai.afc.GeluTanh (arg0)
// CHECK-NEXT: out0 = ai.afc.Silu (g)
// CHECK-NEXT: out1 = ai.afc.Silu (out0)
// CHECK-NEXT: out2 = ai.afc.Silu_1 (arg1)
// CHECK-NEXT: out3 = ai.afc.Rsqrt (arg0)
// CHECK:      domain: "ai.afc"
// CHECK:      GeluTanh (input) => (output)
// CHECK:        tanh = Tanh (mul_3)
// CHECK:      Silu (input) => (output)
// CHECK-NEXT: {
// CHECK-NEXT:   sigmoid = Sigmoid (input)
// CHECK-NEXT:   output = Mul (input, sigmoid)
// CHECK-NEXT: }
// f16 is computed in float32 and rounded once, as the graph dialect does
// CHECK:      Silu_1 (input) => (output)
// CHECK-NEXT: {
// CHECK-NEXT:   f32 = Cast <to: int = 1> (input)
// CHECK-NEXT:   sigmoid = Sigmoid (f32)
// CHECK-NEXT:   mul = Mul (f32, sigmoid)
// CHECK-NEXT:   output = Cast <to: int = 10> (mul)
// CHECK-NEXT: }
// CHECK:      Rsqrt (input) => (output)
// CHECK-NEXT: {
// CHECK-NEXT:   sqrt = Sqrt (input)
// CHECK-NEXT:   output = Reciprocal (sqrt)
// CHECK-NEXT: }

// NATIVE:      opset_import: ["" : 24, "ai.afc" : 1]
// NATIVE:      g = Gelu <approximate: string = "tanh"> (arg0)
// NATIVE-NEXT: out0 = Swish (g)
// NATIVE-NEXT: out1 = Swish (out0)
// NATIVE-NEXT: out2 = Swish (arg1)
// NATIVE-NEXT: out3 = ai.afc.Rsqrt (arg0)
// NATIVE-NOT:  Silu
