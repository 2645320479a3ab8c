// An op whose results nothing uses is left out of every kernel (a kernel of it would
// have no output to write); the live ops around it still fuse, lower and compile.
// RUN: rm -rf %t && mkdir -p %t
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion{remarks}' 2>%t/remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARKS --input-file=%t/remarks
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' -t ascendc | filecheck %s --check-prefix=KERNELS
// RUN: afc compile %s -o %t/out --check -q

func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %d = graph.neg %x : tensor<4x16xf32>
  %a = graph.exp %x : tensor<4x16xf32>
  %b = graph.relu %a : tensor<4x16xf32>
  func.return %b : tensor<4x16xf32>
}

// CHECK:      %d = graph.neg %x : tensor<4x16xf32>
// CHECK-NEXT: %{{.*}} = graph.fusion_group
// CHECK:        graph.exp
// CHECK-NEXT:   graph.relu
// REMARKS: graph.neg %d: its results are never used (dead code)
// KERNELS: Exp(
// KERNELS-NOT: Neg(
