// -t hfusion refuses a group with an op it has no HFusion lowering for: one line naming the
// op and where it is, and no module at all (not the groups before it).
// RUN: not afc-opt %s -t hfusion 2>&1 | filecheck %s

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.fusion_group (%a = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %e = graph.exp %a : tensor<4x8xf32>
    graph.yield %e : tensor<4x8xf32>
  }
  %z = graph.fusion_group (%b = %y : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %s = graph.sign %b : tensor<4x8xf32>
    graph.yield %s : tensor<4x8xf32>
  }
  func.return %z : tensor<4x8xf32>
}

// CHECK: refuse.mlir:11:{{[0-9]+}}: error: graph.sign has no HFusion lowering in afc
// CHECK-NOT: func.func
// CHECK-NOT: Traceback
