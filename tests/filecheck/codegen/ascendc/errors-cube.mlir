// RUN: not afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' -t ascendc 2>&1 | filecheck %s

// What the cube kernels still cannot print on a split chip is one line naming the op.
// Every conv prints (pointwise ones as a GEMM per image, the others with an explicit
// im2col: codegen/ascendc/conv.mlir); a GEMM with a transposed float A operand needs
// LoadData3DV2's enTranspose and Mmad's kDirectionAlign, which afc does not print.

// CHECK: afc-opt: error: buffer.copy{{.*}}: a transposed float A operand needs LoadData3DV2's enTranspose
// CHECK-NOT: Traceback

func.func @gemm_ta(%a: tensor<48x40xf32>, %b: tensor<48x32xf32>) -> tensor<40x32xf32> {
  %g = graph.gemm %a, %b {trans_a = true, trans_b = false, alpha = 1.0, beta = 1.0} : (tensor<48x40xf32>, tensor<48x32xf32>) -> tensor<40x32xf32>
  %y = graph.relu %g : tensor<40x32xf32>
  func.return %y : tensor<40x32xf32>
}
