// -t hfusion: each fusion group one hacc.entry DEVICE function of named linalg/hfusion ops
// on static tensors (the dynamic batch pinned by dynamic-size), a HOST function calling
// them in order; broadcasts are explicit and there is no linalg.generic.
// RUN: afc-opt %s -t 'hfusion{dynamic-size=4}' | filecheck %s
// RUN: afc-opt %s -t 'hfusion{dynamic-size=4}' | filecheck %s --check-prefix=NEG

func.func @main(%x: tensor<?x64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  %y = graph.fusion_group (%xa = %x : tensor<?x64xf32>, %ba = %b : tensor<64xf32>) -> tensor<?x64xf32> {
    %s = graph.add %xa, %ba : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %r = graph.relu %s : tensor<?x64xf32>
    graph.yield %r : tensor<?x64xf32>
  }
  %z = graph.fusion_group (%ya = %y : tensor<?x64xf32>) -> tensor<?x64xf32> {
    %p = graph.softmax %ya {axis = -1 : i64} : tensor<?x64xf32>
    graph.yield %p : tensor<?x64xf32>
  }
  func.return %z : tensor<?x64xf32>
}

// CHECK:      // graph.add, graph.relu: fusion kind ANY_PB
// CHECK-NEXT: func.func @afc_g1(%x: tensor<4x64xf32>, %b: tensor<64xf32>) -> tensor<4x64xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>} {
// CHECK:        %[[BB:v[0-9]+]] = linalg.broadcast ins(%b : tensor<64xf32>) outs(%{{.*}} : tensor<4x64xf32>) dimensions = [0]
// CHECK:        %[[ADD:v[0-9]+]] = linalg.elemwise_binary {fun = #linalg.binary_fn<add>} ins(%x, %[[BB]] : tensor<4x64xf32>, tensor<4x64xf32>)
// CHECK:        hfusion.elemwise_unary {fun = #hfusion.unary_fn<relu>} ins(%[[ADD]] : tensor<4x64xf32>)
// CHECK:      // graph.softmax: fusion kind LAST_AXIS_PBR
// CHECK-NEXT: func.func @afc_g2(
// CHECK:        linalg.reduce {arith.maximumf} ins(%{{.*}} : tensor<4x64xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [1]
// CHECK:        linalg.elemwise_unary {fun = #linalg.unary_fn<exp>}
// CHECK:        linalg.reduce {arith.addf}
// CHECK:        linalg.elemwise_binary {fun = #linalg.binary_fn<div>}
// CHECK:      func.func @main(%x: tensor<4x64xf32>, %b: tensor<64xf32>) -> tensor<4x64xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<HOST>} {
// CHECK-NEXT:   %[[G1:v[0-9]+]] = func.call @afc_g1(%x, %b) : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
// CHECK-NEXT:   %[[G2:v[0-9]+]] = func.call @afc_g2(%[[G1]]) : (tensor<4x64xf32>) -> tensor<4x64xf32>
// CHECK-NEXT:   func.return %[[G2]] : tensor<4x64xf32>

// NEG-NOT: linalg.generic
// NEG-NOT: ?x
