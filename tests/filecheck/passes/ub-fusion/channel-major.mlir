// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910},ub-fusion{remarks=true}' 2>&1 | filecheck %s --check-prefix=A1

// ConvNeXt's channels-first LayerNorm: the NCHW -> NHWC transpose of its input and the
// NHWC -> NCHW one of its result join the norm's rows kernel (row_transpose.py), which
// reads and writes the channel-major tensors itself: no transpose is left outside.
// CHECK-LABEL: func.func @norm_sandwich
// CHECK-NEXT:    %n, %r = graph.fusion_group (%x_1 = %x : tensor<2x8x4x6xf16>, {{.*}}template = "rows", tiling = {split = 3 : i64
// CHECK-NEXT:      %t = graph.transpose %x_1 {perm = [0, 2, 3, 1]}
// CHECK-NEXT:      %n_1 = graph.layer_norm %t
// CHECK-NEXT:      %r_1 = graph.transpose %n_1 {perm = [0, 3, 1, 2]}
// CHECK-NEXT:      graph.yield %n_1, %r_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %n

// Without DataCopyPad (Ascend910) the channel runs cannot be copied: both stay library ops.
// A1: ub-fusion: library op graph.transpose %t: channel-major transposes need DataCopyPad, which the chip lacks
// A1: ub-fusion: library op graph.transpose %r: channel-major transposes need DataCopyPad, which the chip lacks
// A1-LABEL: func.func @norm_sandwich
// A1-NEXT:    %t = graph.transpose %x {perm = [0, 2, 3, 1]}
func.func @norm_sandwich(%x: tensor<2x8x4x6xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> (tensor<2x8x4x6xf16>, tensor<2x4x6x8xf16>) {
  %t = graph.transpose %x {perm = [0, 2, 3, 1]} : tensor<2x8x4x6xf16> -> tensor<2x4x6x8xf16>
  %n = graph.layer_norm %t, %g, %b {axis = -1, epsilon = 1.0e-06} : (tensor<2x4x6x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<2x4x6x8xf16>
  %r = graph.transpose %n {perm = [0, 3, 1, 2]} : tensor<2x4x6x8xf16> -> tensor<2x8x4x6xf16>
  func.return %r, %n : tensor<2x8x4x6xf16>, tensor<2x4x6x8xf16>
}

// -----

// Must not fold: a transpose that keeps the innermost axis ([0, 2, 1, 3], attention's
// heads) moves whole rows, not channels; one whose result is also read inside the
// kernel in NCHW (here by the add) cannot be the kernel's output addressing.
// CHECK: ub-fusion: not fused graph.transpose %c -> graph.add %o: a channel-major transpose inside a kernel must be its output
// CHECK: ub-fusion: library op graph.transpose %h: transpose perm [0, 2, 1, 3] neither moves one axis innermost (a kernel input) nor the innermost one back
// CHECK-LABEL: func.func @not_channel_major
// CHECK:         %h = graph.transpose %{{.*}} {perm = [0, 2, 1, 3]}
// CHECK:         graph.fusion_group
// CHECK:           %m = graph.mul
// CHECK-NEXT:      %c_1 = graph.transpose %m {perm = [0, 3, 1, 2]}
// CHECK-NEXT:      graph.yield %c_1
// CHECK:         graph.fusion_group
// CHECK:           graph.add
func.func @not_channel_major(%x: tensor<2x4x6x8xf32>, %s: tensor<8xf32>, %res: tensor<2x8x4x6xf32>) -> (tensor<2x6x4x8xf32>, tensor<2x8x4x6xf32>) {
  %e = graph.exp %x : tensor<2x4x6x8xf32>
  %h = graph.transpose %e {perm = [0, 2, 1, 3]} : tensor<2x4x6x8xf32> -> tensor<2x6x4x8xf32>
  %m = graph.mul %x, %s : (tensor<2x4x6x8xf32>, tensor<8xf32>) -> tensor<2x4x6x8xf32>
  %c = graph.transpose %m {perm = [0, 3, 1, 2]} : tensor<2x4x6x8xf32> -> tensor<2x8x4x6xf32>
  %o = graph.add %res, %c : tensor<2x8x4x6xf32>
  func.return %h, %o : tensor<2x6x4x8xf32>, tensor<2x8x4x6xf32>
}
