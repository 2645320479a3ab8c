// RUN: afc-opt %s --split-input-file -p 'graph-fusion{only=GeluFusionPass}' | filecheck %s

// The legacy torch exporter: x / 1.4142135, Erf, + 1, x * (.), (.) * 0.5.
// CHECK-LABEL: func.func @gelu_erf_legacy
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "none"} : tensor<2x16xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_erf_legacy(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %c = graph.constant dense<1.41421354> : tensor<f32>
  %a = graph.div %x, %c : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %e = graph.erf %a : tensor<2x16xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %e, %one : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %p = graph.mul %x, %t : tensor<2x16xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %y = graph.mul %p, %half : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}

// -----

// The dynamo exporter: 0.5 * (1 + erf(.)) first, then x * (.).
// CHECK-LABEL: func.func @gelu_erf_dynamo
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "none"} : tensor<2x16xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_erf_dynamo(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %c = graph.constant dense<1.41421354> : tensor<f32>
  %a = graph.div %x, %c : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %e = graph.erf %a : tensor<2x16xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %e, %one : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %h = graph.mul %half, %t : (tensor<f32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = graph.mul %x, %h : tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}

// -----

// x * 0.70710678 inside erf, 1 + erf commuted, (0.5 * x) * (.); x is itself a product
// (the two-level product must not be flattened through it).
// CHECK-LABEL: func.func @gelu_erf_commuted
// CHECK-NEXT:    %x = graph.mul %u, %v
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "none"} : tensor<4x8xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_erf_commuted(%u: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %x = graph.mul %u, %v : tensor<4x8xf32>
  %c = graph.constant dense<0.707106769> : tensor<1xf32>
  %a = graph.mul %c, %x : (tensor<1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = graph.erf %a : tensor<4x8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %hx = graph.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %y = graph.mul %t, %hx : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// GPT-2's gelu_new through the dynamo exporter: (0.5 * x) * (1 + tanh(0.7978846 *
// (x + 0.044715 * pow(x, 3)))).
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "tanh"} : tensor<2x16xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_tanh_pow(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %hx = graph.mul %x, %half : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %x3 = graph.pow %x, %three : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %kappa = graph.constant dense<4.471500e-02> : tensor<f32>
  %k3 = graph.mul %x3, %kappa : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %inner = graph.add %x, %k3 : tensor<2x16xf32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %z = graph.mul %inner, %beta : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %th = graph.tanh %z : tensor<2x16xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %th, %one : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %y = graph.mul %hx, %t : tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}

// -----

// torch's own decomposition of gelu(approximate="tanh"): x * x * x, beta on the left.
// CHECK-LABEL: func.func @gelu_tanh_cube
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "tanh"} : tensor<8xf32>
// CHECK-NEXT:    func.return %y
func.func @gelu_tanh_cube(%x: tensor<8xf32>) -> tensor<8xf32> {
  %xx = graph.mul %x, %x : tensor<8xf32>
  %x3 = graph.mul %xx, %x : tensor<8xf32>
  %kappa = graph.constant dense<4.471500e-02> : tensor<f32>
  %k3 = graph.mul %kappa, %x3 : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %inner = graph.add %k3, %x : tensor<8xf32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %z = graph.mul %beta, %inner : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %th = graph.tanh %z : tensor<8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %t = graph.add %one, %th : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %hx = graph.mul %half, %x : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = graph.mul %hx, %t : tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negatives: x / 2 is not x / sqrt(2); a missing 0.5; 0.04 is not the tanh form's
// 0.044715; the erf term also returned (refused: it would be computed twice).
// CHECK-LABEL: func.func @gelu_negatives
// CHECK-NOT:     graph.gelu
// CHECK:         func.return
func.func @gelu_negatives(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %a1 = graph.div %x, %two : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e1 = graph.erf %a1 : tensor<8xf32>
  %t1 = graph.add %e1, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %p1 = graph.mul %x, %t1 : tensor<8xf32>
  %y1 = graph.mul %p1, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %a2 = graph.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e2 = graph.erf %a2 : tensor<8xf32>
  %t2 = graph.add %e2, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y2 = graph.mul %x, %t2 : tensor<8xf32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %x3 = graph.pow %x, %three : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %kappa = graph.constant dense<4.0e-02> : tensor<f32>
  %k3 = graph.mul %x3, %kappa : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %inner = graph.add %x, %k3 : tensor<8xf32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %z = graph.mul %inner, %beta : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %th = graph.tanh %z : tensor<8xf32>
  %t3 = graph.add %th, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %hx = graph.mul %x, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y3 = graph.mul %hx, %t3 : tensor<8xf32>
  %a4 = graph.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e4 = graph.erf %a4 : tensor<8xf32>
  %t4 = graph.add %e4, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %p4 = graph.mul %x, %t4 : tensor<8xf32>
  %y4 = graph.mul %p4, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y1, %y2, %y3, %y4, %e4 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
