// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=CascadeTransposeRemovePass,UnchangedTransposeRemovePass,CascadeReshapeRemovePass,NoUseReshapeRemovePass,TransposeReshapeConstFoldingPass}' | filecheck %s

// transpose∘transpose is one transpose, or nothing when it is the identity; the inner
// transpose stays for its other user.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %[[I:.*]] = graph.transpose %x {perm = [0, 2, 1, 3]}
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x {perm = [0, 2, 3, 1]} : tensor<2x3x4x5xf32> -> tensor<2x4x5x3xf32>
// CHECK-NEXT:    func.return %x, %[[T]], %[[I]]
func.func @transposes(%x: tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x4x5x3xf32>, tensor<2x4x3x5xf32>) {
  %a = graph.transpose %x {perm = [0, 2, 1, 3]} : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %b = graph.transpose %a {perm = [0, 2, 1, 3]} : tensor<2x4x3x5xf32> -> tensor<2x3x4x5xf32>
  %c = graph.transpose %x {perm = [0, 2, 1, 3]} : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %d = graph.transpose %c {perm = [0, 1, 3, 2]} : tensor<2x4x3x5xf32> -> tensor<2x4x5x3xf32>
  func.return %b, %d, %c : tensor<2x3x4x5xf32>, tensor<2x4x5x3xf32>, tensor<2x4x3x5xf32>
}

// -----

// An identity transpose disappears; one that moves only size-1 axes is a reshape; a
// real transpose stays.
// CHECK-LABEL: func.func @unchanged_transposes
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %y {shape = [2, 3, 1, 8]} : tensor<2x1x3x8xf32> -> tensor<2x3x1x8xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x {perm = [1, 0, 2]}
// CHECK-NEXT:    func.return %x, %[[R]], %[[T]]
func.func @unchanged_transposes(%x: tensor<2x3x4xf32>, %y: tensor<2x1x3x8xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1x8xf32>, tensor<3x2x4xf32>) {
  %a = graph.transpose %x {perm = [0, 1, 2]} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %b = graph.transpose %y {perm = [0, 2, 1, 3]} : tensor<2x1x3x8xf32> -> tensor<2x3x1x8xf32>
  %c = graph.transpose %x {perm = [1, 0, 2]} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  func.return %a, %b, %c : tensor<2x3x4xf32>, tensor<2x3x1x8xf32>, tensor<3x2x4xf32>
}

// -----

// reshape∘reshape is one reshape (a 0 that copies an inner dim becomes explicit), or
// nothing when it restores the input shape; a reshape to the same shape disappears,
// with one dynamic dim too.
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x {shape = [6, 4]} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    func.return %[[R]], %x, %d
func.func @reshapes(%x: tensor<2x3x4xf32>, %d: tensor<?x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>, tensor<?x4xf32>) {
  %a = graph.reshape %x {shape = [24]} : tensor<2x3x4xf32> -> tensor<24xf32>
  %b = graph.reshape %a {shape = [-1, 4]} : tensor<24xf32> -> tensor<6x4xf32>
  %c = graph.reshape %x {shape = [2, 12]} : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %e = graph.reshape %c {shape = [0, 3, 4]} : tensor<2x12xf32> -> tensor<2x3x4xf32>
  %f = graph.reshape %d {shape = [-1, 4]} : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %b, %e, %f : tensor<6x4xf32>, tensor<2x3x4xf32>, tensor<?x4xf32>
}

// -----

// Transposes and reshapes of constants fold, shape-only weights too.
// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %[[T:.*]] = graph.constant {name = "w.transposed"} dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.constant {name = "b.reshaped"} dense<[5.000000e-01, 1.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant {name = "big.transposed"} shape_only : tensor<64x128xf16>
// CHECK-NEXT:    func.return %[[T]], %[[R]], %[[S]]
func.func @constants() -> (tensor<2x2xf32>, tensor<2xf32>, tensor<64x128xf16>) {
  %w = graph.constant {name = "w"} dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = graph.transpose %w {perm = [1, 0]} : tensor<2x2xf32> -> tensor<2x2xf32>
  %b = graph.constant {name = "b"} dense<[[0.5, 1.5]]> : tensor<1x2xf32>
  %r = graph.reshape %b {shape = [2]} : tensor<1x2xf32> -> tensor<2xf32>
  %big = graph.constant {name = "big"} shape_only : tensor<128x64xf16>
  %s = graph.transpose %big {perm = [1, 0]} : tensor<128x64xf16> -> tensor<64x128xf16>
  func.return %t, %r, %s : tensor<2x2xf32>, tensor<2xf32>, tensor<64x128xf16>
}

// -----

// Negative: a large weight that is also used elsewhere is not stored a second time.
// CHECK-LABEL: func.func @shared_weight
// CHECK:         graph.transpose %w
func.func @shared_weight(%x: tensor<2x128xf16>) -> (tensor<2x64xf16>, tensor<64x128xf16>) {
  %w = graph.constant {name = "lm_head.weight"} shape_only : tensor<128x64xf16>
  %y = graph.matmul %x, %w : (tensor<2x128xf16>, tensor<128x64xf16>) -> tensor<2x64xf16>
  %t = graph.transpose %w {perm = [1, 0]} : tensor<128x64xf16> -> tensor<64x128xf16>
  func.return %y, %t : tensor<2x64xf16>, tensor<64x128xf16>
}

// -----

// Dynamic shapes: a cascade that restores the input shape (one dynamic dim) is removed;
// a 0 that would copy a dynamic dim of the inner reshape is refused.
// CHECK-LABEL: func.func @dynamic_reshapes
// CHECK-NEXT:    %[[A:.*]] = graph.reshape %d {shape = [0, 2, 2]}
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %[[A]] {shape = [0, 4, 1]}
// CHECK-NEXT:    func.return %d, %[[B]]
func.func @dynamic_reshapes(%d: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4x1xf32>) {
  %a = graph.reshape %d {shape = [0, 2, 2]} : tensor<?x4xf32> -> tensor<?x2x2xf32>
  %b = graph.reshape %a {shape = [0, 4]} : tensor<?x2x2xf32> -> tensor<?x4xf32>
  %c = graph.reshape %a {shape = [0, 4, 1]} : tensor<?x2x2xf32> -> tensor<?x4x1xf32>
  func.return %b, %c : tensor<?x4xf32>, tensor<?x4x1xf32>
}
