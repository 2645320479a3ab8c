// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=SiluFusionPass,SwiGluFusionPass}' | filecheck %s

// x * sigmoid(x) in either order becomes silu; a sigmoid read elsewhere stays.
// CHECK-LABEL: func.func @silu
// CHECK-NEXT:    %y = graph.silu %x : tensor<4x8xf32>
// CHECK-NEXT:    %z = graph.silu %x : tensor<4x8xf32>
// CHECK-NEXT:    %s2 = graph.sigmoid %x
// CHECK-NEXT:    %w = graph.mul %x, %s2
// CHECK-NEXT:    func.return %y, %z, %w, %s2
func.func @silu(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = graph.sigmoid %x : tensor<4x8xf32>
  %y = graph.mul %x, %s : tensor<4x8xf32>
  %s1 = graph.sigmoid %x : tensor<4x8xf32>
  %z = graph.mul %s1, %x : tensor<4x8xf32>
  %s2 = graph.sigmoid %x : tensor<4x8xf32>
  %w = graph.mul %x, %s2 : tensor<4x8xf32>
  func.return %y, %z, %w, %s2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Llama's MLP under the exporters: gate = x W1, up = x W3, silu(gate) * up.
// CHECK-LABEL: func.func @swiglu
// CHECK:         %[[G:.*]] = graph.matmul %x, %w1
// CHECK:         %[[U:.*]] = graph.matmul %x, %w3
// CHECK-NEXT:    %[[Y:.*]] = graph.swiglu %[[G]], %[[U]] : tensor<2x4x16xf32>
// CHECK-NEXT:    %{{.*}} = graph.matmul %[[Y]], %w2
func.func @swiglu(%x: tensor<2x4x8xf32>, %w1: tensor<8x16xf32>, %w3: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<2x4x8xf32> {
  %g = graph.matmul %x, %w1 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %s = graph.sigmoid %g : tensor<2x4x16xf32>
  %a = graph.mul %g, %s : tensor<2x4x16xf32>
  %u = graph.matmul %x, %w3 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %h = graph.mul %a, %u : tensor<2x4x16xf32>
  %y = graph.matmul %h, %w2 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// -----

// Our torch frontend: silu kept whole, each projection a gemm between reshapes of its
// own; and the two halves of one merged projection (split).
// CHECK-LABEL: func.func @swiglu_views
// CHECK:         %[[Y:.*]] = graph.swiglu %gate, %up : tensor<2x4x16xf32>
// CHECK:         %[[Z:.*]] = graph.swiglu %parts, %parts_1 : tensor<8x16xf32>
// CHECK-NEXT:    func.return %[[Y]], %[[Z]]
func.func @swiglu_views(%x: tensor<2x4x8xf32>, %w1: tensor<16x8xf32>, %w3: tensor<16x8xf32>, %w13: tensor<8x32xf32>) -> (tensor<2x4x16xf32>, tensor<8x16xf32>) {
  %x1 = graph.reshape %x {shape = [8, 8]} : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %g = graph.gemm %x1, %w1 {alpha = 1.0, beta = 1.0, trans_a = false, trans_b = true} : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
  %gate = graph.reshape %g {shape = [2, 4, 16]} : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %a = graph.silu %gate : tensor<2x4x16xf32>
  %x3 = graph.reshape %x {shape = [8, 8]} : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %u = graph.gemm %x3, %w3 {alpha = 1.0, beta = 1.0, trans_a = false, trans_b = true} : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
  %up = graph.reshape %u {shape = [2, 4, 16]} : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %y = graph.mul %a, %up : tensor<2x4x16xf32>
  %gu = graph.matmul %x1, %w13 : (tensor<8x8xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %parts:2 = graph.split %gu {axis = -1, sizes = [16, 16]} : tensor<8x32xf32> -> (tensor<8x16xf32>, tensor<8x16xf32>)
  %b = graph.silu %parts#0 : tensor<8x16xf32>
  %z = graph.mul %parts#1, %b : tensor<8x16xf32>
  func.return %y, %z : tensor<2x4x16xf32>, tensor<8x16xf32>
}

// -----

// Negatives: the up value broadcasts; the gate is no projection; the projections read
// different inputs. The silu is still recognised.
// CHECK-LABEL: func.func @swiglu_refusals
// CHECK-NOT:     graph.swiglu
// CHECK:         func.return
func.func @swiglu_refusals(%x: tensor<4x8xf32>, %v: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w3: tensor<8x16xf32>, %b: tensor<16xf32>, %t: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %g = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = graph.silu %g : tensor<4x16xf32>
  %y1 = graph.mul %a, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %s = graph.sigmoid %t : tensor<4x16xf32>
  %st = graph.mul %t, %s : tensor<4x16xf32>
  %u = graph.matmul %x, %w3 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y2 = graph.mul %st, %u : tensor<4x16xf32>
  %g3 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a3 = graph.silu %g3 : tensor<4x16xf32>
  %u3 = graph.matmul %v, %w3 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y3 = graph.mul %a3, %u3 : tensor<4x16xf32>
  func.return %y1, %y2, %y3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
