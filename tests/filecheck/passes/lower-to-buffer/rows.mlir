// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910},lower-to-buffer' | filecheck %s --check-prefix=A1

// A bias + GELU group over a dynamic batch becomes one vector kernel: the host reads
// the batch size, calls the tiling function and launches the kernel.

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[N:.*]] = buffer.dim %x[0] : tensor<?x64xf16>
// CHECK:         %[[P0:.*]], %{{.*}}, %[[B:.*]] = func.call @main_kernel0_tiling(%[[N]], %c64) : (index, index) -> (index, index, index, index, index, index, index, index, index)
// CHECK-NEXT:    %{{.*}} = buffer.launch @main_kernel0 blocks(%[[B]]) (%x, %b) tiling(%[[P0]], {{.*}}) dims(%[[N]]) {afc.plan = {{.*}}template = "rows", tiling = {split = 1 : i64, tile_elems = 4864 : i64}{{.*}}, afc.report = {{.*}}} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
// CHECK-NOT:     graph.fusion_group

// The kernel: vector-only, double-buffered VECIN/VECOUT queues bounded by the plan's
// tile, a tile loop over this core's range, and the three stages.
// CHECK:       buffer.kernel @main_kernel0(%in0: memref<?xf16, #buffer.space<gm>>, %in1: memref<?xf16, #buffer.space<gm>>, %out0: memref<?xf16, #buffer.space<gm>>, %rows: index, %cols: index, %tile_rows: index, %tile_cols: index, %tile_stride: index, %col_tiles: index, %tiles: index, %per_core: index) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv"
// CHECK:         %bid = buffer.block_idx
// CHECK:         %q_in0 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<vecin>
// CHECK:         %q_in1 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<vecin>
// CHECK:         %q_out0 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<vecout>
// CHECK:         scf.for %tile = %{{.*}} to %{{.*}} step %c1 {
// CHECK:           buffer.stage "copy_in" {
// CHECK:             buffer.copy %{{.*}} to %slot blocks %nrows x %ncols strides %cols, %tile_stride : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<ub>>
// CHECK:           buffer.stage "compute" {
// CHECK:             buffer.vcast %{{.*}} round "none"
// CHECK:             buffer.vbinary "add"
// CHECK:             buffer.vunary "exp"
// CHECK:             buffer.vcast %y, %{{.*}} round "rint"
// CHECK:           buffer.stage "copy_out" {
// CHECK:             buffer.copy %{{.*}} to %{{.*}} blocks %nrows x %ncols strides %tile_stride, %cols : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK:         buffer.return

// The host tiling function: the largest tile, balanced over the 48 vector cores.
// CHECK:       func.func private @main_kernel0_tiling(%rows: index, %cols: index)
// CHECK:         arith.ceildivsi %rows, %c48
// CHECK:         func.return

// Ascend910 (A1) has 4 queue buffers per position: two streamed inputs keep double
// buffering, and the kernel is sized for its 248 KB UB and 32 cores.
// A1:          attributes {chip = "Ascend910", template = "rows"
// A1:          %q_in0 = buffer.alloc_queue %{{.*}} buffers 2
// A1:          arith.ceildivsi %rows, %c32

func.func @main(%x: tensor<?x64xf16>, %b: tensor<64xf16>) -> tensor<?x64xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<?x64xf16>, %bb = %b : tensor<64xf16>) -> tensor<?x64xf16> {
    %a = graph.add %xx, %bb : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
    %y = graph.gelu %a {approximate = "tanh"} : tensor<?x64xf16>
    graph.yield %y : tensor<?x64xf16>
  }
  func.return %r : tensor<?x64xf16>
}
