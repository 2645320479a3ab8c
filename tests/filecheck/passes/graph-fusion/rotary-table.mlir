// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=MatMulToMulFusionPass,ConcatMulFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=MatMulToMulFusionPass,ConcatMulFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// LlamaRotaryEmbedding: pos @ inv_freq is an outer product (a mul), and
// concat(freqs, freqs) folds into the constant: one broadcast mul feeds cos and sin.
// CHECK-LABEL: func.func @rotary_tables
// CHECK-NEXT:    %[[T:.*]] = graph.constant {name = "inv_freq.concat"} dense<{{\[}}[1.000000e+00, 1.000000e-01, 1.000000e+00, 1.000000e-01]]> : tensor<1x4xf32>
// CHECK-NEXT:    %emb = graph.mul %pos, %[[T]] : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %c = graph.cos %emb
// CHECK-NEXT:    %s = graph.sin %emb
// CHECK-NOT:     graph.concat
// CHECK-NOT:     graph.matmul
func.func @rotary_tables(%pos: tensor<?x1xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %inv_freq = graph.constant {name = "inv_freq"} dense<[[1.0, 0.1]]> : tensor<1x2xf32>
  %freqs = graph.matmul %pos, %inv_freq : (tensor<?x1xf32>, tensor<1x2xf32>) -> tensor<?x2xf32>
  %emb = graph.concat %freqs, %freqs {axis = -1} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x4xf32>
  %c = graph.cos %emb : tensor<?x4xf32>
  %s = graph.sin %emb : tensor<?x4xf32>
  func.return %c, %s : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Batched outer product in f16: batch dims broadcast as in the matmul.
// CHECK-LABEL: func.func @batched_f16
// CHECK-NEXT:    %y = graph.mul %a, %b : (tensor<2x3x1xf16>, tensor<1x1x4xf16>) -> tensor<2x3x4xf16>
func.func @batched_f16(%a: tensor<2x3x1xf16>, %b: tensor<1x1x4xf16>) -> tensor<2x3x4xf16> {
  %y = graph.matmul %a, %b : (tensor<2x3x1xf16>, tensor<1x1x4xf16>) -> tensor<2x3x4xf16>
  func.return %y : tensor<2x3x4xf16>
}

// -----

// Different constants per part concatenate along the axis; the mul's operands may be
// in either order.
// CHECK-LABEL: func.func @two_constants
// CHECK-NEXT:    %[[T:.*]] = graph.constant {name = "c1.concat"} dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x3xf32>
// CHECK-NEXT:    %y = graph.mul %x, %[[T]] : (tensor<5x1xf32>, tensor<1x3xf32>) -> tensor<5x3xf32>
func.func @two_constants(%x: tensor<5x1xf32>) -> tensor<5x3xf32> {
  %c1 = graph.constant {name = "c1"} dense<[[1.0]]> : tensor<1x1xf32>
  %c2 = graph.constant {name = "c2"} dense<[2.0, 3.0]> : tensor<2xf32>
  %p1 = graph.mul %x, %c1 : (tensor<5x1xf32>, tensor<1x1xf32>) -> tensor<5x1xf32>
  %p2 = graph.mul %c2, %x : (tensor<2xf32>, tensor<5x1xf32>) -> tensor<5x2xf32>
  %y = graph.concat %p1, %p2 {axis = 1} : (tensor<5x1xf32>, tensor<5x2xf32>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}

// -----

// Must not fuse: a real reduction (K = 2) stays a matmul; x is not broadcast along the
// concat axis (x has 2 columns), so concat(x * c1, x * c2) is not x * concat(c1, c2).
// CHECK-LABEL: func.func @no_fold
// CHECK:         graph.matmul
// CHECK:         graph.concat
// LOG: not applied to graph.concat %y: x is not broadcast along the concat axis
func.func @no_fold(%x: tensor<5x2xf32>, %w: tensor<2x3xf32>) -> (tensor<5x3xf32>, tensor<5x4xf32>) {
  %m = graph.matmul %x, %w : (tensor<5x2xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %c1 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c2 = graph.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %p1 = graph.mul %x, %c1 : (tensor<5x2xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  %p2 = graph.mul %x, %c2 : (tensor<5x2xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  %y = graph.concat %p1, %p2 {axis = 1} : (tensor<5x2xf32>, tensor<5x2xf32>) -> tensor<5x4xf32>
  func.return %m, %y : tensor<5x3xf32>, tensor<5x4xf32>
}

// -----

// Must not fuse: a part is read outside the concat (folding would compute it twice),
// and a K = 1 matmul with a bias keeps its cube epilogue.
// CHECK-LABEL: func.func @escaping_part
// CHECK:         graph.matmul %x, %w, %b
// CHECK:         graph.concat
// LOG: not applied to graph.concat %y: a scaled part has users besides the concat
// LOG: not applied to graph.matmul %m: the matmul has a bias or an activation epilogue
func.func @escaping_part(%x: tensor<5x1xf32>, %w: tensor<1x3xf32>) -> (tensor<5x3xf32>, tensor<5x4xf32>, tensor<5x2xf32>) {
  %b = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %m = graph.matmul %x, %w, %b : (tensor<5x1xf32>, tensor<1x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  %c1 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %p1 = graph.mul %x, %c1 : (tensor<5x1xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  %y = graph.concat %p1, %p1 {axis = 1} : (tensor<5x2xf32>, tensor<5x2xf32>) -> tensor<5x4xf32>
  func.return %m, %y, %p1 : tensor<5x3xf32>, tensor<5x4xf32>, tensor<5x2xf32>
}
