// With no buffer.kernel to print, -t ascendc says what is missing, and its hint is one
// that works: it names lower-to-buffer only when there are fusion groups to lower.
// RUN: not afc-opt %s -t ascendc 2>&1 | filecheck %s --check-prefix=UNGROUPED
// RUN: not afc-opt %s -p ub-fusion -t ascendc 2>&1 | filecheck %s --check-prefix=UNLOWERED
// RUN: afc-opt %s -p ub-fusion,lower-to-buffer -t ascendc | filecheck %s --check-prefix=KERNEL
// Only library ops (atan has no vector kernel): no pass makes a kernel, so no hint to loop on.
// RUN: sed -e 's/graph.exp/graph.atan/g' %s > %t.mlir
// RUN: not afc-opt %t.mlir -p ub-fusion,lower-to-buffer -t ascendc 2>&1 | filecheck %s --check-prefix=LIBRARY
// RUN: not afc-opt %t.mlir -t ascendc 2>&1 | filecheck %s --check-prefix=LIBRARY
// RUN: echo 'builtin.module {}' | not afc-opt - -t ascendc 2>&1 | filecheck %s --check-prefix=EMPTY
// The emulator gives the same cause.
// RUN: %python -c "import numpy as np; np.savez('%t.npz', x=np.ones((2, 3), np.float32))"
// RUN: not afc run %s --emulate --inputs %t.npz 2>&1 | filecheck %s --check-prefix=EMULATE

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.exp %x : tensor<2x3xf32>
  %f = graph.exp %e : tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}

// UNGROUPED: afc-opt: error: the module has no buffer.kernel: its graph ops are not grouped into kernels yet (run ub-fusion,lower-to-buffer first){{$}}
// UNLOWERED: afc-opt: error: the module has no buffer.kernel: its 1 graph.fusion_group op(s) are not lowered yet (run lower-to-buffer first){{$}}
// KERNEL: ===== op_kernel/main_kernel0.cpp =====
// LIBRARY: afc-opt: error: the module has no buffer.kernel, and ub-fusion makes none: every op stays a library op (graph.atan %e: graph.atan has no vector kernel){{$}}
// LIBRARY-NOT: first
// EMPTY: afc-opt: error: the module has no buffer.kernel, and no graph op that computes (nothing to fuse){{$}}
// EMULATE: afc: error: --emulate runs buffer-level IR, and the module has no buffer.kernel: its graph ops are not grouped into kernels yet (run ub-fusion,lower-to-buffer first)
