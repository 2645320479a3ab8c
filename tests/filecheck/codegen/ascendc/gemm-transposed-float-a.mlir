// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion{remarks},lower-to-buffer' 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK < %t.remarks
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' -t ascendc | filecheck %s --check-prefix=CC

// A GEMM with a transposed float A operand: LoadData cannot transpose 16x8 float fractals
// into L0A, and Huawei's way (LoadData3DV2's enTranspose with Mmad's kDirectionAlign) is
// not emitted, so the matmul template refuses it (the buffer verifier rejects such a load:
// dialects/buffer/invalid-transposed-float-a.mlir). The gemm stays a library op and its
// epilogue is a vector kernel of its own, which prints.

// CHECK:     graph.gemm %{{.*}} {{.*}}trans_a = true
// CHECK-NOT: #buffer.space<l0a>
// CHECK:     buffer.launch
// REMARK:    transposed f32 A operand has no L1 -> L0A load afc emits
// CC-NOT:    LoadData
// CC:        __global__ __aicore__ void

func.func @gemm_ta(%a: tensor<48x40xf32>, %b: tensor<48x32xf32>) -> tensor<40x32xf32> {
  %g = graph.gemm %a, %b {trans_a = true, trans_b = false, alpha = 1.0, beta = 1.0} : (tensor<48x40xf32>, tensor<48x32xf32>) -> tensor<40x32xf32>
  %y = graph.relu %g : tensor<40x32xf32>
  func.return %y : tensor<40x32xf32>
}
