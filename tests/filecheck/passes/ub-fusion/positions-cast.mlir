// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910},ub-fusion{remarks=true}' 2>&1 | filecheck %s --check-prefix=A1
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' | filecheck %s --check-prefix=BUF

// The int64 position ids of the rotary tables join their rows kernel: the kernel copies
// them in as int64 and widens them with A2's Cast int64 -> float32 (CAST_RINT: there is
// no CAST_NONE for the pair, asc-devkit Cast.md), so no library cast is left.
// The reshape of the positions is the kernel's edge view (fusion/edge_views.py).
// CHECK-LABEL: func.func @main
// CHECK:         %cos, %sin = graph.fusion_group (%{{.*}} = %positions : tensor<?xi64>, %{{.*}} = %inv_freq : tensor<1x8xf32>) -> (tensor<?x8xf16>, tensor<?x8xf16>) plan {{.*}}template = "rows"
// CHECK-NEXT:      graph.reshape %{{.*}} {afc.edge_view = unit, shape = [-1, 1]} : tensor<?xi64> -> tensor<?x1xi64>
// CHECK-NEXT:      graph.cast %{{.*}} : tensor<?x1xi64> -> tensor<?x1xf32>
// CHECK:           graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %cos, %sin
// BUF-LABEL: buffer.kernel @main_kernel0(%in0: memref<?xi64, #buffer.space<gm>>
// BUF:         buffer.alloc_queue {{.*}} of i64
// BUF:         buffer.vcast %{{.*}}, %x, %nrows round "rint" : memref<?xf32, #buffer.space<ub>>, memref<?xi64, #buffer.space<ub>>
// Negative: Ascend910 (arch 1001) has no int64 Cast (asc-devkit's dav_c100 lacks
// vconv_s642f32), so the cast stays a library op.
// A1: ub-fusion: library op graph.cast %pos: graph.cast of i64: the chip's Cast has no i64 -> float32
// A1-LABEL: func.func @main
// A1:         %pos = graph.cast %0 : tensor<?x1xi64> -> tensor<?x1xf32>
func.func @main(%positions: tensor<?xi64>) -> (tensor<?x8xf16>, tensor<?x8xf16>) {
  %inv_freq = graph.constant dense<[[1.0, 0.1, 0.01, 0.001, 1.0, 0.1, 0.01, 0.001]]> : tensor<1x8xf32>
  %0 = graph.reshape %positions {shape = [-1, 1]} : tensor<?xi64> -> tensor<?x1xi64>
  %pos = graph.cast %0 : tensor<?x1xi64> -> tensor<?x1xf32>
  %emb = graph.mul %pos, %inv_freq : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  %c = graph.cos %emb : tensor<?x8xf32>
  %cos = graph.cast %c : tensor<?x8xf32> -> tensor<?x8xf16>
  %s = graph.sin %emb : tensor<?x8xf32>
  %sin = graph.cast %s : tensor<?x8xf32> -> tensor<?x8xf16>
  func.return %cos, %sin : tensor<?x8xf16>, tensor<?x8xf16>
}

// -----

// Negative: an integer input a kernel does more with than widen it (here an add) keeps
// its op out of the kernel: vector kernels compute floats.
// A1-LABEL: func.func @integer_math
// CHECK-LABEL: func.func @integer_math
// CHECK:         %s = graph.add %i, %i
// CHECK-NEXT:    %f = graph.fusion_group (%s_1 = %s : tensor<?x16xi64>) -> tensor<?x16xf32>
// CHECK-NEXT:      graph.cast %s_1
func.func @integer_math(%i: tensor<?x16xi64>) -> tensor<?x16xf32> {
  %s = graph.add %i, %i : tensor<?x16xi64>
  %f = graph.cast %s : tensor<?x16xi64> -> tensor<?x16xf32>
  func.return %f : tensor<?x16xf32>
}
