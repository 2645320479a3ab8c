// Graph ops become standard ONNX ops; properties that ONNX takes as inputs become
// Constant nodes next to their use; weights become initializers; every intermediate
// value gets a value_info (a dynamic dim is a dim_param).
// RUN: afc-opt %s --split-input-file -t onnx | filecheck %s

func.func @main(%x: tensor<?x4xf32> {graph.name = "input"}, %w: tensor<4x3xf32>) -> (tensor<?x3xf32> {graph.name = "y"}) {
  %b = graph.constant {name = "fc.bias"} dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %m = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  %a = graph.add %m, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %c = graph.clip %a {max = 6.0, min = 0.0} : tensor<?x3xf32>
  %s = graph.reduce_sum %c {axes = [1], keepdims = true} : tensor<?x3xf32> -> tensor<?x1xf32>
  %r = graph.div %c, %s : (tensor<?x3xf32>, tensor<?x1xf32>) -> tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}

// CHECK:      ir_version: 8,
// CHECK-NEXT: opset_import: ["" : 17],
// CHECK:      main (float[input_dim0,4] input, float[4,3] arg1) => (float[y_dim0,3] y)
// CHECK-NEXT:   <float[3] "fc.bias" = {1,2,3}, float[m_dim0,3] m, float[a_dim0,3] a, float c_min, float c_max, float[c_dim0,3] c, int64[1] s_axes, float[s_dim0,1] s>
// CHECK-NEXT: {
// CHECK-NEXT:   m = MatMul (input, arg1)
// CHECK-NEXT:   a = Add (m, "fc.bias")
// CHECK-NEXT:   c_min = Constant <value: tensor = float c_min {0}> ()
// CHECK-NEXT:   c_max = Constant <value: tensor = float c_max {6}> ()
// CHECK-NEXT:   c = Clip (a, c_min, c_max)
// CHECK-NEXT:   s_axes = Constant <value: tensor = int64[1] s_axes {1}> ()
// CHECK-NEXT:   s = ReduceSum <keepdims: int = 1> (c, s_axes)
// CHECK-NEXT:   y = Div (c, s)
// CHECK-NEXT: }

// -----

// Data movement: Reshape/Slice/Pad/Split parameters are int64 Constant nodes.
func.func @main(%x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<2x3xf32>, tensor<1x6xf32>, tensor<1x6xf32>) {
  %r = graph.reshape %x {shape = [3, -1]} : tensor<2x6xf32> -> tensor<3x4xf32>
  %s = graph.slice %x {axes = [1], ends = [6], starts = [0], steps = [2]} : tensor<2x6xf32> -> tensor<2x3xf32>
  %p:2 = graph.split %x {axis = 0, sizes = [1, 1]} : tensor<2x6xf32> -> (tensor<1x6xf32>, tensor<1x6xf32>)
  func.return %r, %s, %p#0, %p#1 : tensor<3x4xf32>, tensor<2x3xf32>, tensor<1x6xf32>, tensor<1x6xf32>
}

// CHECK:      out0_shape = Constant <value: tensor = int64[2] out0_shape {3,-1}> ()
// CHECK-NEXT: out0 = Reshape (arg0, out0_shape)
// CHECK:      out1 = Slice (arg0, out1_starts, out1_ends, out1_axes, out1_steps)
// CHECK:      out2_split = Constant <value: tensor = int64[2] out2_split {1,1}> ()
// CHECK-NEXT: out2, out3 = Split <axis: int = 0> (arg0, out2_split)
