// RUN: not afc-opt %s -t ascendc 2>&1 | filecheck %s

// InferShape computes an output's dynamic dims from the input shapes, as the host code
// before the launch does; a dim that comes from elsewhere (here an index argument of the
// host function) cannot be inferred, and the verifier refuses the op, at the launch
// (autofusion/dialects/host_rules.py; plain afc-opt: dialects/buffer/invalid-host.mlir).

// CHECK: errors-op-def-shape.mlir:13:3: error: the output shape of @k depends on an argument of its host function that is not a tensor dimension
// CHECK-NOT: Traceback

func.func @main(%x: tensor<64xf32>, %n: index) -> tensor<?xf32> {
  %blocks = arith.constant 1 : index
  %o = buffer.launch @k blocks(%blocks) (%x) tiling() dims(%n) : (tensor<64xf32>) -> tensor<?xf32>
  func.return %o : tensor<?xf32>
}
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}
