// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=SiluFusionPass,SwiGluFusionPass,GeluFusionPass,MatMulBiasAddFusionPass,MatMulActivationFusionPass,FFNFusionPass}' | filecheck %s

// Qwen's MLP with its residual: h + (silu(hn @ Wg) * (hn @ Wu)) @ Wd, weights as
// constants; the sum is the function's result (no norm after it): one graph.ffn.
// CHECK-LABEL: func.func @swiglu_residual
// CHECK-NEXT:    %wg = graph.constant
// CHECK-NEXT:    %wu = graph.constant
// CHECK-NEXT:    %wd = graph.constant
// CHECK-NEXT:    %y = graph.ffn %x, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %y
func.func @swiglu_residual(%x: tensor<2x4x8xf32>, %h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %wg = graph.constant dense<0.25> : tensor<8x16xf32>
  %wu = graph.constant dense<-0.5> : tensor<8x16xf32>
  %wd = graph.constant dense<0.125> : tensor<16x8xf32>
  %g = graph.matmul %x, %wg : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %s = graph.sigmoid %g : tensor<2x4x16xf32>
  %a = graph.mul %g, %s : tensor<2x4x16xf32>
  %u = graph.matmul %x, %wu : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %p = graph.mul %a, %u : tensor<2x4x16xf32>
  %d = graph.matmul %p, %wd : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.add %h, %d : tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// -----

// Weights as function arguments, f16, the graph.swiglu SwiGluFusionPass makes; the
// residual sum feeds an RMS norm (a decomposed one: pow, reduce_mean, the next layer's
// input norm): the FFN still takes the residual (its kernel adds it where the product
// is; AddRmsNormFusionGraphPass leaves an add after a projection alone).
// CHECK-LABEL: func.func @swiglu_args_norm_after
// CHECK:         %y = graph.ffn %x, %wg, %wu, %wd, %h {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>}
// CHECK-NOT:     graph.add
// CHECK:         %sq = graph.pow %y
func.func @swiglu_args_norm_after(%x: tensor<4x8xf16>, %h: tensor<4x8xf16>, %wg: tensor<8x16xf16>, %wu: tensor<8x16xf16>, %wd: tensor<16x8xf16>) -> (tensor<4x8xf16>, tensor<4x1xf16>) {
  %g = graph.matmul %x, %wg : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %u = graph.matmul %x, %wu : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %p = graph.swiglu %g, %u : tensor<4x16xf16>
  %d = graph.matmul %p, %wd : (tensor<4x16xf16>, tensor<16x8xf16>) -> tensor<4x8xf16>
  %y = graph.add %h, %d : tensor<4x8xf16>
  %two = graph.constant dense<2.0> : tensor<f16>
  %sq = graph.pow %y, %two : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %ms = graph.reduce_mean %sq {axes = [-1], keepdims = true} : tensor<4x8xf16> -> tensor<4x1xf16>
  func.return %y, %ms : tensor<4x8xf16>, tensor<4x1xf16>
}

// -----

// A merged gate/up projection split in two (HorizontalMatMulFusionPass's form) with a
// bias; GeGLU (erf gelu, then the product); the down projection's bias.
// CHECK-LABEL: func.func @geglu_merged
// CHECK-NEXT:    %y = graph.ffn %x, %w13, %w2, %b13, %b2 {activation = "geglu", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (tensor<6x8xf32>, tensor<8x32xf32>, tensor<16x8xf32>, tensor<32xf32>, tensor<8xf32>) -> tensor<6x8xf32>
// CHECK-NEXT:    func.return %y
func.func @geglu_merged(%x: tensor<6x8xf32>, %w13: tensor<8x32xf32>, %b13: tensor<32xf32>, %w2: tensor<16x8xf32>, %b2: tensor<8xf32>) -> tensor<6x8xf32> {
  %gu = graph.matmul %x, %w13, %b13 : (tensor<6x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  %parts:2 = graph.split %gu {axis = -1, sizes = [16, 16]} : tensor<6x32xf32> -> (tensor<6x16xf32>, tensor<6x16xf32>)
  %a = graph.gelu %parts#0 {approximate = "none"} : tensor<6x16xf32>
  %p = graph.mul %parts#1, %a : tensor<6x16xf32>
  %d = graph.matmul %p, %w2 : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %y = graph.add %d, %b2 : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  func.return %y : tensor<6x8xf32>
}

// -----

// T5 v1.1's gated-gelu MLP as the dynamo exporter writes it (gelu_new decomposed: 0.5 x
// (1 + tanh(0.7978846 (x + 0.044715 x^3)))), with the residual: GeluFusionPass makes the
// tanh graph.gelu, MatMulActivationFusionPass the gate's epilogue, then one graph.ffn
// geglu_tanh. Gemma's gelu_pytorch_tanh MLP, a graph.gelu tanh op on the gate, the up
// projection on the left of the product, f16: geglu_tanh as well.
// CHECK-LABEL: func.func @geglu_tanh
// CHECK-NEXT:    %y = graph.ffn %x, %wg, %wu, %wd, %h {activation = "geglu_tanh", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 1>} : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %z = graph.ffn %v, %vg, %vu, %vd {activation = "geglu_tanh", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 0>} : (tensor<6x8xf16>, tensor<8x16xf16>, tensor<8x16xf16>, tensor<16x8xf16>) -> tensor<6x8xf16>
// CHECK-NEXT:    func.return %y, %z
func.func @geglu_tanh(%x: tensor<2x4x8xf32>, %h: tensor<2x4x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>, %v: tensor<6x8xf16>, %vg: tensor<8x16xf16>, %vu: tensor<8x16xf16>, %vd: tensor<16x8xf16>) -> (tensor<2x4x8xf32>, tensor<6x8xf16>) {
  %g = graph.matmul %x, %wg : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %hg = graph.mul %g, %half : (tensor<2x4x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %g3 = graph.pow %g, %three : (tensor<2x4x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
  %kappa = graph.constant dense<4.471500e-02> : tensor<f32>
  %k3 = graph.mul %g3, %kappa : (tensor<2x4x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
  %inner = graph.add %g, %k3 : tensor<2x4x16xf32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %z0 = graph.mul %inner, %beta : (tensor<2x4x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
  %th = graph.tanh %z0 : tensor<2x4x16xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %th, %one : (tensor<2x4x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
  %a = graph.mul %hg, %t : tensor<2x4x16xf32>
  %u = graph.matmul %x, %wu : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %p = graph.mul %a, %u : tensor<2x4x16xf32>
  %d = graph.matmul %p, %wd : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.add %h, %d : tensor<2x4x8xf32>
  %g2 = graph.matmul %v, %vg : (tensor<6x8xf16>, tensor<8x16xf16>) -> tensor<6x16xf16>
  %a2 = graph.gelu %g2 {approximate = "tanh"} : tensor<6x16xf16>
  %u2 = graph.matmul %v, %vu : (tensor<6x8xf16>, tensor<8x16xf16>) -> tensor<6x16xf16>
  %p2 = graph.mul %u2, %a2 : tensor<6x16xf16>
  %z = graph.matmul %p2, %vd : (tensor<6x16xf16>, tensor<16x8xf16>) -> tensor<6x8xf16>
  func.return %y, %z : tensor<2x4x8xf32>, tensor<6x8xf16>
}

// -----

// Gated tanh-GELU products that are no FFN: the gate's GELU is also returned; the up
// projection applies the tanh GELU too (both factors activated); the gate and up
// projections read different inputs; a sigmoid gate (no gated form of graph.ffn).
// CHECK-LABEL: func.func @geglu_tanh_refusals
// CHECK-NOT:     graph.ffn
// CHECK:         %y1 = graph.matmul %p1, %wd
// CHECK:         %y2 = graph.matmul %p2, %wd
// CHECK:         %y3 = graph.matmul %p3, %wd
// CHECK:         %y4 = graph.matmul %p4, %wd
// CHECK-NOT:     graph.ffn
// CHECK:         func.return
func.func @geglu_tanh_refusals(%x: tensor<4x8xf32>, %v: tensor<4x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g1 = graph.matmul %x, %wg : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a1 = graph.gelu %g1 {approximate = "tanh"} : tensor<4x16xf32>
  %u1 = graph.matmul %x, %wu : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p1 = graph.mul %a1, %u1 : tensor<4x16xf32>
  %y1 = graph.matmul %p1, %wd : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %g2 = graph.matmul %x, %wg {activation = "gelu_tanh"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %u2 = graph.matmul %x, %wu {activation = "gelu_tanh"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p2 = graph.mul %g2, %u2 : tensor<4x16xf32>
  %y2 = graph.matmul %p2, %wd : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %g3 = graph.matmul %x, %wg {activation = "gelu_tanh"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %u3 = graph.matmul %v, %wu : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p3 = graph.mul %g3, %u3 : tensor<4x16xf32>
  %y3 = graph.matmul %p3, %wd : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %g4 = graph.matmul %x, %wg {activation = "sigmoid"} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %u4 = graph.matmul %x, %wu : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p4 = graph.mul %g4, %u4 : tensor<4x16xf32>
  %y4 = graph.matmul %p4, %wd : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return %y1, %a1, %y2, %y3, %y4 : tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A BERT-style MLP: bias adds folded first, the tanh GELU as the first projection's
// epilogue, then the FFN; and our torch frontend's form, gemms with transposed constant
// weights between 2-D reshapes (the rewrite lays the weights out [K, N]).
// CHECK-LABEL: func.func @plain
// CHECK:         %y = graph.ffn %x, %w1, %w2, %b1, %b2 {activation = "gelu_tanh", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}
// CHECK:         %[[F:.*]] = graph.ffn %x1, %{{.*}}, %{{.*}} {activation = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<8x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %z = graph.reshape %[[F]] {shape = [2, 4, 8]}
// CHECK-NOT:     graph.gemm
// CHECK:         func.return %y, %z
func.func @plain(%x: tensor<2x4x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>, %w2: tensor<16x8xf32>, %b2: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %h = graph.matmul %x, %w1 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %hb = graph.add %h, %b1 : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %a = graph.gelu %hb {approximate = "tanh"} : tensor<2x4x16xf32>
  %d = graph.matmul %a, %w2 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.add %d, %b2 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %v1 = graph.constant dense<0.5> : tensor<16x8xf32>
  %v2 = graph.constant dense<0.25> : tensor<8x16xf32>
  %x1 = graph.reshape %x {shape = [8, 8]} : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %e = graph.gemm %x1, %v1 {alpha = 1.0, beta = 1.0, trans_a = false, trans_b = true} : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
  %e3 = graph.reshape %e {shape = [2, 4, 16]} : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %r = graph.relu %e3 : tensor<2x4x16xf32>
  %r2 = graph.reshape %r {shape = [8, 16]} : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %f = graph.gemm %r2, %v2 {alpha = 1.0, beta = 1.0, trans_a = false, trans_b = true} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
  %z = graph.reshape %f {shape = [2, 4, 8]} : tensor<8x8xf32> -> tensor<2x4x8xf32>
  func.return %y, %z : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Negatives: the activation is read elsewhere; the weight is computed (a transpose of
// an argument); the gate and up projections read different inputs. An activation after
// the down projection and an addend that broadcasts over the columns (no residual, no
// bias) stay outside the two FFNs.
// CHECK-LABEL: func.func @refusals
// CHECK:         %y1 = graph.matmul %a, %w2
// CHECK:         %y2 = graph.matmul %a2, %t
// CHECK:         %y3 = graph.matmul %p3, %w2
// CHECK-NEXT:    %d4 = graph.ffn %x, %w1, %w2 {activation = "relu"
// CHECK-NEXT:    %y4 = graph.relu %d4
// CHECK-NEXT:    %d5 = graph.ffn %x, %w3, %w2 {activation = "sigmoid"
// CHECK-NEXT:    %y5 = graph.add %d5, %r
// CHECK-NEXT:    func.return
func.func @refusals(%x: tensor<4x8xf32>, %v: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w3: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %wt: tensor<8x16xf32>, %r: tensor<4x1xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = graph.relu %h : tensor<4x16xf32>
  %y1 = graph.matmul %a, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %t = graph.transpose %wt {perm = [1, 0]} : tensor<8x16xf32> -> tensor<16x8xf32>
  %h2 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a2 = graph.relu %h2 : tensor<4x16xf32>
  %y2 = graph.matmul %a2, %t : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %g3 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s3 = graph.silu %g3 : tensor<4x16xf32>
  %u3 = graph.matmul %v, %w3 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p3 = graph.mul %s3, %u3 : tensor<4x16xf32>
  %y3 = graph.matmul %p3, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %h4 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a4 = graph.relu %h4 : tensor<4x16xf32>
  %d4 = graph.matmul %a4, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y4 = graph.relu %d4 : tensor<4x8xf32>
  %h5 = graph.matmul %x, %w3 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a5 = graph.sigmoid %h5 : tensor<4x16xf32>
  %d5 = graph.matmul %a5, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y5 = graph.add %d5, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %y1, %a, %y2, %y3, %y4, %y5 : tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
