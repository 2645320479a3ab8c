// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer,super-kernel' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' | filecheck %s --check-prefix=OFF
// RUN: not afc-opt %s -p 'set-target{chip=Ascend310P3},ub-fusion,lower-to-buffer,super-kernel' 2>&1 | filecheck %s --check-prefix=P310

// The matmul + relu (a mix kernel) and the softmax (a vector kernel) run back to back
// with only host scalar code between them: one super kernel. The transpose stays a
// library op, which a launch cannot run between two stages: it ends the run, and the
// exp kernel after it is a run of one launch, no super kernel.

// CHECK-LABEL: func.func @layer
// CHECK:       buffer.launch @layer_kernel0 {{.*}}afc.super_kernel = "layer_super0"
// CHECK:       buffer.launch @layer_kernel1 {{.*}}afc.super_kernel = "layer_super0"
// CHECK:       graph.transpose
// CHECK-NOT:   afc.super_kernel
// CHECK:       func.return

// Without the pass no launch is marked.
// OFF-NOT:     afc.super_kernel

// 310P has no hard SyncAll.
// P310: super-kernel: the stages of a super kernel wait for each other at SyncAll<false>, the hard all-core sync of Atlas A2/A3, which Ascend310P3 does not have

func.func @layer(%x: tensor<?x48xf16>, %w: tensor<48x64xf16>) -> tensor<64x?xf16> {
  %m = graph.matmul %x, %w : (tensor<?x48xf16>, tensor<48x64xf16>) -> tensor<?x64xf16>
  %r = graph.relu %m : tensor<?x64xf16>
  %s = graph.softmax %r {axis = -1 : i64} : tensor<?x64xf16>
  %t = graph.transpose %s {perm = [1, 0]} : tensor<?x64xf16> -> tensor<64x?xf16>
  %e = graph.exp %t : tensor<64x?xf16>
  %y = graph.softmax %e {axis = 0 : i64} : tensor<64x?xf16>
  func.return %y : tensor<64x?xf16>
}
