// RUN: afc-opt %s --split-input-file --verify-diagnostics -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s

// A channels-first LayerNorm group (NCHW -> NHWC, norm over C, NHWC -> NCHW) lowers to one
// rows kernel that addresses the NCHW tensors itself (row_transpose.py): per run of
// pixels of one image, one strided copy of the C channel runs in (blockCount 8, source
// stride 24 pixels) and out, and a Gather each way through tables built once.
// CHECK-LABEL: func.func @main
// CHECK:         buffer.launch @main_kernel0 {{.*}}(%g, %b, %x)
// CHECK:       buffer.kernel @main_kernel0(
// CHECK:         %run_len = arith.minsi %tile_rows, %c24 : index
// CHECK:         %run_stride = arith.muli %{{.*}}, %c16 : index
// CHECK:         %cm = buffer.alloc_buf "veccalc" {{.*}} -> memref<?xf32, #buffer.space<ub>>
// CHECK:         %cm_in = buffer.alloc_buf "veccalc" {{.*}} -> memref<?xi32, #buffer.space<ub>>
// CHECK:         buffer.set_value %cm_in
// CHECK:         %cm_out = buffer.alloc_buf "veccalc" {{.*}} -> memref<?xi32, #buffer.space<ub>>
// CHECK:         buffer.set_value %cm_out
// CHECK:         buffer.stage "copy_in" {
// CHECK:           scf.for %run = %c0 to %{{.*}} step %c1 {
// CHECK:             buffer.copy %{{.*}} to %{{.*}} blocks %c8 x %run_len strides %c24, %run_stride : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<ub>>
// CHECK:         buffer.stage "compute" {
// CHECK:           buffer.vcast %cm, %x_2, %{{.*}} round "none"
// CHECK:           buffer.vgather %{{.*}}, %{{.*}}, %cm_in, %{{.*}}
// CHECK:           buffer.vreduce "sum"
// CHECK:           buffer.vgather %{{.*}}, %{{.*}}, %cm_out, %{{.*}}
// CHECK:           buffer.vcast %y, %cm, %{{.*}} round "rint"
// CHECK:         buffer.stage "copy_out" {
// CHECK:             buffer.copy %{{.*}} to %{{.*}} blocks %c8 x %run_len strides %run_stride, %c24 : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK-NOT:     graph.transpose

// The host tiling keeps tiles of whole runs: the largest divisor of the 24 pixels that
// fits, or a multiple of them.
// CHECK:       func.func private @main_kernel0_tiling(%rows: index, %cols: index)
// CHECK:         arith.divsi %{{.*}}, %c24 : index
// CHECK:         arith.divsi %{{.*}}, %c12 : index
// CHECK:         func.return
func.func @main(%x: tensor<2x8x4x6xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> tensor<2x8x4x6xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<2x8x4x6xf16>, %gg = %g : tensor<8xf16>, %bb = %b : tensor<8xf16>) -> tensor<2x8x4x6xf16> {
    %t = graph.transpose %xx {perm = [0, 2, 3, 1]} : tensor<2x8x4x6xf16> -> tensor<2x4x6x8xf16>
    %n = graph.layer_norm %t, %gg, %bb {axis = -1, epsilon = 1.0e-06} : (tensor<2x4x6x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<2x4x6x8xf16>
    %y = graph.transpose %n {perm = [0, 3, 1, 2]} : tensor<2x4x6x8xf16> -> tensor<2x8x4x6xf16>
    graph.yield %y : tensor<2x8x4x6xf16>
  }
  func.return %r : tensor<2x8x4x6xf16>
}

// -----

// Must not lower: a transpose inside a kernel that is not channel-major (attention's
// heads keep the innermost axis) has no addressing in the rows kernel.
func.func @heads(%x: tensor<2x4x6x8xf16>) -> tensor<2x6x4x8xf16> {
  // expected-error @+1 {{cannot lower fusion group heads_kernel0 (graph.fusion_group %r): transpose perm [0, 2, 1, 3] neither moves one axis innermost (a kernel input) nor the innermost one back}}
  %r = graph.fusion_group (%xx = %x : tensor<2x4x6x8xf16>) -> tensor<2x6x4x8xf16> {
    %e = graph.exp %xx : tensor<2x4x6x8xf16>
    %h = graph.transpose %e {perm = [0, 2, 1, 3]} : tensor<2x4x6x8xf16> -> tensor<2x6x4x8xf16>
    graph.yield %h : tensor<2x6x4x8xf16>
  }
  func.return %r : tensor<2x6x4x8xf16>
}
