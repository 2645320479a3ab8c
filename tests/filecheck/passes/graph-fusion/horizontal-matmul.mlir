// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=HorizontalMatMulFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=HorizontalMatMulFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// Q, K and V projections of one hidden state (GQA widths 4, 2, 2) with bias adds (V has
// none: zeros) become one matmul with the merged bias and a split, in block order.
// CHECK-LABEL: func.func @qkv
// CHECK-NEXT:    %[[W:.*]] = graph.constant {name = "attn.merged.weight"} dense<{{\[}}[1.000000e+00, 0.000000e+00, 5.000000e-01, -1.000000e+00, 1.000000e+00, 2.000000e+00, 5.000000e-01, 5.000000e-01], {{.*}}]> : tensor<2x8xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant {name = "attn.merged.bias"} dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01, -1.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<8xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %x, %[[W]], %[[B]] : (tensor<2x3x2xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %qb, %kb, %v = graph.split %[[M]] {axis = 2, sizes = [4, 2, 2]}
// CHECK-NEXT:    func.return %qb, %kb, %v
func.func @qkv(%x: tensor<2x3x2xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x2xf32>, tensor<2x3x2xf32>) {
  %wq = graph.constant {name = "attn.q.weight"} dense<[[1.0, 0.0, 0.5, -1.0], [0.0, 1.0, 0.25, 2.0]]> : tensor<2x4xf32>
  %bq = graph.constant {name = "attn.q.bias"} dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %q = graph.matmul %x, %wq : (tensor<2x3x2xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
  %qb = graph.add %q, %bq : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %wk = graph.constant {name = "attn.k.weight"} dense<[[1.0, 2.0], [0.5, -1.0]]> : tensor<2x2xf32>
  %bk = graph.constant {name = "attn.k.bias"} dense<[[[-1.0, 1.0]]]> : tensor<1x1x2xf32>
  %k = graph.matmul %x, %wk : (tensor<2x3x2xf32>, tensor<2x2xf32>) -> tensor<2x3x2xf32>
  %kb = graph.add %bk, %k : (tensor<1x1x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  %wv = graph.constant {name = "attn.v.weight"} dense<[[0.5, 0.5], [1.0, 0.0]]> : tensor<2x2xf32>
  %v = graph.matmul %x, %wv : (tensor<2x3x2xf32>, tensor<2x2xf32>) -> tensor<2x3x2xf32>
  func.return %qb, %kb, %v : tensor<2x3x4xf32>, tensor<2x3x2xf32>, tensor<2x3x2xf32>
}

// -----

// Gemm siblings with trans_b: weights [N, K] concatenate along axis 0; beta folds into
// the merged C (beta = 1).
// CHECK-LABEL: func.func @gemm_trans_b
// CHECK-NEXT:    %[[W:.*]] = graph.constant {name = "fc1.merged.weight"} dense<{{.*}}> : tensor<5x2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant {name = "fc1.merged.bias"} dense<[5.000000e-01, 1.000000e+00, 2.000000e+00, 0.000000e+00, -2.000000e+00]> : tensor<5xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm %x, %[[W]], %[[C]] {alpha = 2.000000e+00, beta = 1.000000e+00, trans_a = false, trans_b = true}
// CHECK-NEXT:    %y1, %y2 = graph.split %[[G]] {axis = 1, sizes = [2, 3]} : tensor<3x5xf32> -> (tensor<3x2xf32>, tensor<3x3xf32>)
func.func @gemm_trans_b(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x3xf32>) {
  %w1 = graph.constant {name = "fc1.weight"} dense<[[1.0, -1.0], [0.5, 2.0]]> : tensor<2x2xf32>
  %c1 = graph.constant {name = "fc1.bias"} dense<[1.0, 2.0]> : tensor<2xf32>
  %w2 = graph.constant {name = "fc2.weight"} dense<[[0.0, 1.0], [1.0, 1.0], [-1.0, 0.5]]> : tensor<3x2xf32>
  %c2 = graph.constant {name = "fc2.bias"} dense<[[4.0, 0.0, -4.0]]> : tensor<1x3xf32>
  %y1 = graph.gemm %x, %w1, %c1 {trans_a = false, trans_b = true, alpha = 2.0, beta = 0.5} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %y2 = graph.gemm %x, %w2, %c2 {trans_a = false, trans_b = true, alpha = 2.0, beta = 0.5} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  func.return %y1, %y2 : tensor<3x2xf32>, tensor<3x3xf32>
}

// -----

// Shape-only weights merge into a shape-only weight (planning without values).
// CHECK-LABEL: func.func @shape_only
// CHECK-NEXT:    %[[W:.*]] = graph.constant {name = "mlp.merged.weight"} shape_only : tensor<64x128xf16>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %x, %[[W]]
// CHECK-NEXT:    %g, %u = graph.split %[[M]] {axis = 2, sizes = [64, 64]}
func.func @shape_only(%x: tensor<1x16x64xf16>) -> (tensor<1x16x64xf16>, tensor<1x16x64xf16>) {
  %wg = graph.constant {name = "mlp.gate_proj.weight"} shape_only : tensor<64x64xf16>
  %wu = graph.constant {name = "mlp.up_proj.weight"} shape_only : tensor<64x64xf16>
  %g = graph.matmul %x, %wg : (tensor<1x16x64xf16>, tensor<64x64xf16>) -> tensor<1x16x64xf16>
  %u = graph.matmul %x, %wu : (tensor<1x16x64xf16>, tensor<64x64xf16>) -> tensor<1x16x64xf16>
  func.return %g, %u : tensor<1x16x64xf16>, tensor<1x16x64xf16>
}

// -----

// Negatives: a sibling with a runtime weight is left out, so one remains; activation
// epilogues differ; gemms with different transposes; a weight used elsewhere.
// CHECK-LABEL: func.func @refusals
// CHECK-NOT:     graph.split
func.func @refusals(%x: tensor<2x4xf32>, %r: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = graph.constant dense<[[1.0, 0.0, 0.5, -1.0], [0.0, 1.0, 0.25, 2.0], [1.5, -0.5, 0.0, 1.0], [0.0, 0.0, 1.0, 0.5]]> : tensor<4x4xf32>
  %w2 = graph.constant dense<[[0.0, 1.0, 0.5, -1.0], [1.0, 1.0, 0.25, 2.0], [1.5, -0.5, 0.0, 1.0], [0.0, 2.0, 1.0, 0.5]]> : tensor<4x4xf32>
  %w3 = graph.constant dense<[[2.0, 1.0, 0.5, -1.0], [1.0, 1.0, 0.25, 2.0], [1.5, -0.5, 3.0, 1.0], [0.0, 2.0, 1.0, 0.5]]> : tensor<4x4xf32>
  %a = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b = graph.matmul %x, %r : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = graph.relu %x : tensor<2x4xf32>
  %c = graph.matmul %y, %w2 {activation = "relu"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %d = graph.matmul %y, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %z = graph.sigmoid %x : tensor<2x4xf32>
  %e = graph.gemm %z, %w {trans_a = false, trans_b = true, alpha = 1.0, beta = 1.0} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %f = graph.gemm %z, %w2 {trans_a = false, trans_b = false, alpha = 1.0, beta = 1.0} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %t = graph.tanh %x : tensor<2x4xf32>
  %g = graph.matmul %t, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %h = graph.matmul %t, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  func.return %a, %b, %c, %d, %w, %e, %f, %g, %h : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Negative: a gated MLP, silu(x @ wg) * (x @ wu). The products meet only in the mul
// (a swiglu once SwiGluFusionPass has run): apart, it is the up projection's epilogue,
// reading the gate's product once; merged, a kernel of its own would read the whole
// merged output back.
// CHECK-LABEL: func.func @gated_mlp
// CHECK-COUNT-2: graph.matmul %x, %w
// CHECK-NOT:     graph.split
// LOG: not applied to graph.matmul %g: the products meet only in one graph.mul: apart, it is the later matmul's epilogue; merged, a kernel re-reading the whole merged output
func.func @gated_mlp(%x: tensor<1x16x64xf16>) -> tensor<1x16x64xf16> {
  %wg = graph.constant {name = "mlp.gate_proj.weight"} shape_only : tensor<64x64xf16>
  %wu = graph.constant {name = "mlp.up_proj.weight"} shape_only : tensor<64x64xf16>
  %g = graph.matmul %x, %wg : (tensor<1x16x64xf16>, tensor<64x64xf16>) -> tensor<1x16x64xf16>
  %u = graph.matmul %x, %wu : (tensor<1x16x64xf16>, tensor<64x64xf16>) -> tensor<1x16x64xf16>
  %s = graph.silu %g : tensor<1x16x64xf16>
  %y = graph.mul %s, %u : tensor<1x16x64xf16>
  func.return %y : tensor<1x16x64xf16>
}

// -----

// A parallel block (Phi): Q, K, V and the MLP's up projection read one input. Q, K and V
// merge; the up projection, whose product goes through a GELU, stays apart (its GELU an
// epilogue, or FFNFusionPass's graph.ffn with the down projection).
// CHECK-LABEL: func.func @parallel_block
// CHECK:         %[[QKV:.*]] = graph.matmul %x, %{{.*}} : (tensor<2x8xf32>, tensor<8x24xf32>) -> tensor<2x24xf32>
// CHECK-NEXT:    graph.split %[[QKV]] {axis = 1, sizes = [8, 8, 8]}
// CHECK:         %h = graph.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT:    graph.gelu %h
func.func @parallel_block(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x16xf32>) {
  %wq = graph.constant dense<0.25> : tensor<8x8xf32>
  %wk = graph.constant dense<-0.5> : tensor<8x8xf32>
  %wv = graph.constant dense<0.125> : tensor<8x8xf32>
  %w1 = graph.constant dense<0.75> : tensor<8x16xf32>
  %q = graph.matmul %x, %wq : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %k = graph.matmul %x, %wk : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %v = graph.matmul %x, %wv : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %h = graph.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = graph.gelu %h {approximate = "tanh"} : tensor<2x16xf32>
  func.return %q, %k, %v, %a : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x16xf32>
}

// -----

// Near-miss: two siblings, one through a ReLU: one plain product is nothing to merge.
// CHECK-LABEL: func.func @one_plain_sibling
// CHECK-COUNT-2: graph.matmul %x, %w
// CHECK-NOT:     graph.split
// LOG: not applied to graph.matmul %p: the products go through an activation: an MLP's up projection stays apart, its activation an epilogue
func.func @one_plain_sibling(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x16xf32>) {
  %wp = graph.constant dense<0.25> : tensor<8x8xf32>
  %w1 = graph.constant dense<0.75> : tensor<8x16xf32>
  %p = graph.matmul %x, %wp : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %h = graph.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = graph.relu %h : tensor<2x16xf32>
  func.return %p, %a : tensor<2x8xf32>, tensor<2x16xf32>
}
