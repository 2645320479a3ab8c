// Empty tensors (a zero-size dimension) are supported end to end: the graph level takes
// them (ONNX needs them: the shape of a scalar is tensor<0xi64>), and ub-fusion leaves an
// op on one as a library op with nothing to compute, instead of dividing by zero when it
// tiles it. The rest of the graph still fuses, compiles, and checks against the original.
// RUN: rm -rf %t && mkdir -p %t
// RUN: afc-opt %s -p 'ub-fusion{remarks}' 2>%t/remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARKS --input-file=%t/remarks
// RUN: afc-opt %s -p 'split-fusion,ub-fusion,lower-to-buffer' -t ascendc | filecheck %s --check-prefix=KERNELS
// RUN: afc compile %s -o %t/out --check -q
// RUN: filecheck %s --check-prefix=CHECKED --input-file=%t/out/check.json
// RUN: afc explain %s --op s | filecheck %s --check-prefix=EXPLAIN
// RUN: %python -c "import numpy as np; np.savez('%t/in.npz', arg0=np.zeros((0, 8), np.float32), arg1=np.ones((2, 8), np.float32))"
// RUN: afc run %t/out/buffer.mlir --inputs %t/in.npz | filecheck %s --check-prefix=OUT
// Dimensions beyond int64 are refused where they are read, as one located line.
// RUN: sed -e 's/2x8xf32/99999999999999999999x8xf32/g' %s > %t/big.mlir
// RUN: not afc-opt %t/big.mlir -p ub-fusion 2>&1 | filecheck %s --check-prefix=BIG
// RUN: not afc compile %t/big.mlir -o %t/big 2>&1 | filecheck %s --check-prefix=BIG
// RUN: not test -e %t/big
// RUN: sed -e 's/2x8xf32/9223372036854775807x8xf32/g' %s > %t/max.mlir
// RUN: afc-opt %t/max.mlir | filecheck %s --check-prefix=MAX

func.func @main(%x: tensor<0x8xf32>, %y: tensor<2x8xf32>) -> (tensor<8xf32>, tensor<2x8xf32>) {
  %e = graph.exp %x : tensor<0x8xf32>
  %s = graph.reduce_sum %e {axes = [0], keepdims = false} : tensor<0x8xf32> -> tensor<8xf32>
  %a = graph.exp %y : tensor<2x8xf32>
  %b = graph.relu %a : tensor<2x8xf32>
  func.return %s, %b : tensor<8xf32>, tensor<2x8xf32>
}

// CHECK:      %e = graph.exp %x : tensor<0x8xf32>
// CHECK-NEXT: %s = graph.reduce_sum %e
// CHECK-NEXT: %b = graph.fusion_group (%y_1 = %y : tensor<2x8xf32>)
// CHECK-NEXT:   %a = graph.exp %y_1
// CHECK-NEXT:   %b_1 = graph.relu %a
// REMARKS: ub-fusion: library op graph.exp %e: an empty tensor (nothing to compute)
// REMARKS: ub-fusion: library op graph.reduce_sum %s: an empty tensor (nothing to compute)
// KERNELS:     ===== op_kernel/main_kernel0.cpp =====
// KERNELS-NOT: op_kernel/main_kernel1
// CHECKED: "verdict": "pass: {{.*}}",
// CHECKED-NEXT: "ok": true
// EXPLAIN: stays a library op: an empty tensor (nothing to compute)
// OUT:      out0: float32[8]
// OUT-NEXT: [0. 0. 0. 0. 0. 0. 0. 0.]
// OUT-NEXT: out1: float32[2, 8]
// BIG: big.mlir:{{[0-9]+}}:{{[0-9]+}}: error: dimension 99999999999999999999 does not fit in int64{{$}}
// BIG-NOT: Traceback
// MAX: tensor<9223372036854775807x8xf32>
