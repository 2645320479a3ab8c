// -t hfusion keeps a batched matmul (both operands batched: linalg.batch_matmul, which
// bishengir 1.2.0's HFusion has no op pattern for) as a host call with a remark, cut from
// the vector work on either side, which become device functions.
// RUN: afc-opt %s -t hfusion | filecheck %s
// RUN: afc-opt %s -t hfusion | filecheck %s --check-prefix=NEG

func.func @main(%x: tensor<4x16x64xf32>, %w: tensor<4x64x32xf32>) -> tensor<4x16x32xf32> {
  %r = graph.fusion_group (%a = %x : tensor<4x16x64xf32>, %b = %w : tensor<4x64x32xf32>) -> tensor<4x16x32xf32> {
    %e = graph.exp %a : tensor<4x16x64xf32>
    %m = graph.matmul %e, %b : (tensor<4x16x64xf32>, tensor<4x64x32xf32>) -> tensor<4x16x32xf32>
    %y = graph.relu %m : tensor<4x16x32xf32>
    graph.yield %y : tensor<4x16x32xf32>
  }
  func.return %r : tensor<4x16x32xf32>
}

// CHECK:      // remark: afc_g1: UNKNOWN is not scheduled by HFusion 1.2.0; cut into 3 parts before each matmul that reads vector results, around each linalg.batch_matmul
// CHECK-NEXT: // remark: afc_g1_1: kept as a host call ({{.*}}HFusion 1.2.0 has no op pattern for linalg.batch_matmul
// CHECK:      // graph.exp, graph.matmul, graph.relu: fusion kind PURE_ELEMWISE
// CHECK-NEXT: func.func @afc_g1_0(%x: tensor<4x16x64xf32>) -> tensor<4x16x64xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>}
// CHECK:        linalg.elemwise_unary {fun = #linalg.unary_fn<exp>}
// CHECK:      // graph.exp, graph.matmul, graph.relu: fusion kind PURE_ELEMWISE
// CHECK-NEXT: func.func @afc_g1_2(%[[M:v[0-9]+]]: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>}
// CHECK:        hfusion.elemwise_unary {fun = #hfusion.unary_fn<relu>}
// CHECK:      func.func private @afc_g1_1(tensor<4x64x32xf32>, tensor<4x16x64xf32>) -> tensor<4x16x32xf32>
// CHECK:      func.func @main(
// CHECK-NEXT:   %[[E:v[0-9]+]] = func.call @afc_g1_0(%x)
// CHECK-NEXT:   %[[M]] = func.call @afc_g1_1(%w, %[[E]])
// CHECK-NEXT:   %{{v[0-9]+}} = func.call @afc_g1_2(%[[M]])

// NEG-NOT: = linalg.batch_matmul
// NEG-NOT: fusion kind UNKNOWN
