// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=ProducerDuplicateFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=ProducerDuplicateFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=ProducerDuplicateFusionPass max-duplicates=2}' | filecheck %s --check-prefix=MAXDUP

// A widening cast read by two reductions over different trailing blocks (one kernel
// reduces whole rows of one view only). Without copies the f32 result is written and
// read back; with one copy per user each reduction's kernel reads the f16 input instead.
// CHECK-LABEL: func.func @cast_into_two_reductions
// CHECK-NEXT:    %[[C0:.*]] = graph.cast %x : tensor<256x32x128xf16> -> tensor<256x32x128xf32>
// CHECK-NEXT:    %[[C1:.*]] = graph.cast %x : tensor<256x32x128xf16> -> tensor<256x32x128xf32>
// CHECK-NEXT:    graph.reduce_sum %[[C0]] {axes = [2], keepdims = true}
// CHECK-NEXT:    graph.reduce_max %[[C1]] {axes = [1, 2], keepdims = true}
// LOG: GraphFusionPass[ProducerDuplicateFusionPass]: pattern=Elemwise|Broadcast|Reshape->(users in several kernels), matched_times=1, effected_times=1.
func.func @cast_into_two_reductions(%x: tensor<256x32x128xf16>) -> (tensor<256x32x1xf32>, tensor<256x1x1xf32>) {
  %c = graph.cast %x : tensor<256x32x128xf16> -> tensor<256x32x128xf32>
  %s = graph.reduce_sum %c {axes = [2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x32x1xf32>
  %m = graph.reduce_max %c {axes = [1, 2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x1x1xf32>
  func.return %s, %m : tensor<256x32x1xf32>, tensor<256x1x1xf32>
}

// -----

// A broadcast (a per-batch scale) read by three kernels, over two views: each recomputes
// it. With max-duplicates=2 there are too many users, and it stays one op.
// CHECK-LABEL: func.func @broadcast_three_users
// CHECK-COUNT-3: graph.mul %x, %scale : (tensor<256x32x128xf32>, tensor<256x1x1xf32>) -> tensor<256x32x128xf32>
// CHECK-NEXT:    graph.reduce_sum
// MAXDUP-LABEL: func.func @broadcast_three_users
// MAXDUP-COUNT-1: graph.mul %x, %scale
// MAXDUP-NOT:   graph.mul %x, %scale
// MAXDUP-LABEL: func.func @users_share_a_kernel
func.func @broadcast_three_users(%x: tensor<256x32x128xf32>, %scale: tensor<256x1x1xf32>) -> (tensor<256x32x1xf32>, tensor<256x1x1xf32>, tensor<256x1x1xf32>) {
  %p = graph.mul %x, %scale : (tensor<256x32x128xf32>, tensor<256x1x1xf32>) -> tensor<256x32x128xf32>
  %s = graph.reduce_sum %p {axes = [2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x32x1xf32>
  %m = graph.reduce_max %p {axes = [1, 2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x1x1xf32>
  %n = graph.reduce_min %p {axes = [1, 2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x1x1xf32>
  func.return %s, %m, %n : tensor<256x32x1xf32>, tensor<256x1x1xf32>, tensor<256x1x1xf32>
}

// -----

// Negative (cost): both users fuse with the producer into one kernel anyway; a copy
// would only read the inputs twice.
// CHECK-LABEL: func.func @users_share_a_kernel
// CHECK-COUNT-1: graph.add %a, %b
// CHECK-NOT:     graph.add %a, %b
// LOG: not applied to graph.add %p: no estimated gain: the 4 ops around it take {{.*}} us in 1 kernels, {{.*}} when copied into each of its 2 users
func.func @users_share_a_kernel(%a: tensor<256x1024xf32>, %b: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %p = graph.add %a, %b : tensor<256x1024xf32>
  %e = graph.exp %p : tensor<256x1024xf32>
  %r = graph.relu %p : tensor<256x1024xf32>
  %y = graph.mul %e, %r : tensor<256x1024xf32>
  func.return %y : tensor<256x1024xf32>
}

// -----

// Negative (cost): a reshape has no vector kernel, so a copy is one more library op.
// CHECK-LABEL: func.func @reshape_two_users
// CHECK-COUNT-1: graph.reshape
// CHECK-NOT:     graph.reshape
// LOG: not applied to graph.reshape %r: no estimated gain
func.func @reshape_two_users(%x: tensor<256x32x128xf32>) -> (tensor<256x1xf32>, tensor<256x1xf32>) {
  %r = graph.reshape %x {shape = [256, 4096]} : tensor<256x32x128xf32> -> tensor<256x4096xf32>
  %s = graph.reduce_sum %r {axes = [1], keepdims = true} : tensor<256x4096xf32> -> tensor<256x1xf32>
  %m = graph.reduce_max %r {axes = [1], keepdims = true} : tensor<256x4096xf32> -> tensor<256x1xf32>
  func.return %s, %m : tensor<256x1xf32>, tensor<256x1xf32>
}

// -----

// Negative (bound): five users are more than max-duplicates=4.
// CHECK-LABEL: func.func @five_users
// CHECK-COUNT-1: graph.cast %x
// CHECK-NOT:     graph.cast %x
// LOG: not applied to graph.cast %c: 5 users, more than max-duplicates=4
func.func @five_users(%x: tensor<64x64xf16>) -> (tensor<64x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<64x1xf32>, tensor<64x1xf32>) {
  %c = graph.cast %x : tensor<64x64xf16> -> tensor<64x64xf32>
  %a = graph.reduce_sum %c {axes = [1], keepdims = true} : tensor<64x64xf32> -> tensor<64x1xf32>
  %b = graph.reduce_max %c {axes = [0, 1], keepdims = true} : tensor<64x64xf32> -> tensor<1x1xf32>
  %d = graph.reduce_min %c {axes = [0, 1], keepdims = true} : tensor<64x64xf32> -> tensor<1x1xf32>
  %e = graph.reduce_mean %c {axes = [1], keepdims = true} : tensor<64x64xf32> -> tensor<64x1xf32>
  %f = graph.reduce_min %c {axes = [1], keepdims = true} : tensor<64x64xf32> -> tensor<64x1xf32>
  func.return %a, %b, %d, %e, %f : tensor<64x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<64x1xf32>, tensor<64x1xf32>
}
