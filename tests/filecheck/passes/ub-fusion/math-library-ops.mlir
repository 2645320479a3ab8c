// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// graph_math ops have no vector kernel: the elementwise ones among them (tan) and the
// search ops (arg_max, top_k) stay outside the kernels as library ops, named with why;
// the exps around them still fuse.
// CHECK-LABEL: func.func @library
// CHECK:         graph.fusion_group
// CHECK-NEXT:      graph.exp
// CHECK:         %t = graph.tan %a : tensor<16x256xf32>
// CHECK-NEXT:    graph.fusion_group
// CHECK-NEXT:      graph.exp
// CHECK:         %m = graph.arg_max
// CHECK-NEXT:    %v, %i = graph.top_k
// CHECK-NOT:     graph.fusion_group
// REMARK: ub-fusion: library op graph.tan %t: graph.tan has no vector kernel
// REMARK: ub-fusion: library op graph.arg_max %m: graph.arg_max has no vector kernel
// REMARK: ub-fusion: library op graph.top_k %v: graph.top_k has no vector kernel
func.func @library(%x: tensor<16x256xf32>) -> (tensor<16x256xf32>, tensor<16x1xi64>, tensor<16x4xf32>) {
  %a = graph.exp %x : tensor<16x256xf32>
  %t = graph.tan %a : tensor<16x256xf32>
  %e = graph.exp %t : tensor<16x256xf32>
  %m = graph.arg_max %e {axis = 1, keepdims = true, select_last_index = false} : tensor<16x256xf32> -> tensor<16x1xi64>
  %v, %i = graph.top_k %e {axis = -1, k = 4, largest = true, sorted = true} : tensor<16x256xf32> -> (tensor<16x4xf32>, tensor<16x4xi64>)
  func.return %e, %m, %v : tensor<16x256xf32>, tensor<16x1xi64>, tensor<16x4xf32>
}
