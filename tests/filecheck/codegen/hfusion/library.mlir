// -t hfusion keeps a convolution (not an HFusion op) as a call of a library operator from
// the host function, with a remark; its elementwise epilogue becomes a device function.
// RUN: afc-opt %s -t hfusion | filecheck %s

func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %y = graph.fusion_group (%xa = %x : tensor<1x4x8x8xf32>, %wa = %w : tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
    %c = graph.conv2d %xa, %wa {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
    %r = graph.relu %c : tensor<1x8x6x6xf32>
    graph.yield %r : tensor<1x8x6x6xf32>
  }
  func.return %y : tensor<1x8x6x6xf32>
}

// CHECK:      // remark: afc_g1: graph.conv2d kept as a host call (convolution is not an HFusion op)
// CHECK:      // graph.relu: fusion kind PURE_ELEMWISE
// CHECK-NEXT: func.func @afc_g1(%[[C:v[0-9]+]]: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>}
// CHECK:      // a host call: convolution is not an HFusion op
// CHECK-NEXT: func.func private @afc_g1_conv2d(tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
// CHECK:      func.func @main(
// CHECK-NEXT:   %[[C]] = func.call @afc_g1_conv2d(%x, %w)
// CHECK-NEXT:   %{{v[0-9]+}} = func.call @afc_g1(%[[C]])
