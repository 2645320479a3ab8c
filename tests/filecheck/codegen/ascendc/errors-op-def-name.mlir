// RUN: not afc-opt %s -t ascendc 2>&1 | filecheck %s

// The op package registers each kernel as op type camel(kernel), and CANN derives the
// kernel's entry name from that op type (Conv2D -> conv2_d): a kernel whose name does
// not survive the round trip is refused, naming both spellings.

// CHECK: afc-opt: error: kernel @conv_2d: CANN names the kernel of op type Conv2d 'conv2d', but its entry is 'conv_2d'; rename the kernel to lower_snake_case words
// CHECK-NOT: Traceback

func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %blocks = arith.constant 1 : index
  %o = buffer.launch @conv_2d blocks(%blocks) (%x) tiling() dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}
buffer.kernel @conv_2d(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}
