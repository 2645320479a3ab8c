// RUN: afc-opt %s -t ascendc | filecheck %s

// A kernel input read past L2 (the kernel's l2_bypass, lowering/l2_hint.py): its
// GlobalTensor gets SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE) right after
// SetGlobalBuffer, in Init (asc-devkit docs atlasascendc_api_07_00033); the output does not.

// CHECK:       __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, int64_t n, int64_t tile)
// CHECK:         xGm.SetGlobalBuffer((__gm__ float*)x);
// CHECK-NEXT:    yGm.SetGlobalBuffer((__gm__ float*)y);
// CHECK-NEXT:    xGm.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
// CHECK-NOT:     SetL2CacheHint
buffer.kernel @add_relu(%x: memref<?xf32, #buffer.space<gm>>, %y: memref<?xf32, #buffer.space<gm>>, %n: index, %tile: index) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64, l2_bypass = [0 : i64]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  %bytes = arith.muli %tile, %c4 : index
  %qin = buffer.alloc_queue %bytes buffers 2 max_bytes 32768 of f32 : !buffer.queue<vecin>
  %qout = buffer.alloc_queue %bytes buffers 2 max_bytes 32768 of f32 : !buffer.queue<vecout>
  %bid = buffer.block_idx
  %nb = buffer.block_num
  %tiles = arith.ceildivsi %n, %tile : index
  %per_core = arith.ceildivsi %tiles, %nb : index
  %first = arith.muli %bid, %per_core : index
  %last0 = arith.addi %first, %per_core : index
  %last = arith.minsi %last0, %tiles : index
  scf.for %t_i = %first to %last step %c1 {
    %off = arith.muli %t_i, %tile : index
    %rest = arith.subi %n, %off : index
    %len = arith.minsi %tile, %rest : index
    buffer.stage "copy_in" {
      %t = buffer.queue_alloc %qin : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
      %src = buffer.view %x[%off] : memref<?xf32, #buffer.space<gm>>
      buffer.copy %src to %t blocks %c1 x %len strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
      buffer.enque %qin, %t : !buffer.queue<vecin>, memref<?xf32, #buffer.space<ub>>
    }
    buffer.stage "compute" {
      %i = buffer.deque %qin : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
      %o = buffer.queue_alloc %qout : !buffer.queue<vecout> -> memref<?xf32, #buffer.space<ub>>
      buffer.vscalar "adds" %o, %i, %one, %len : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, f32
      buffer.vunary "relu" %o, %o, %len : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>
      buffer.enque %qout, %o : !buffer.queue<vecout>, memref<?xf32, #buffer.space<ub>>
      buffer.queue_free %qin, %i : !buffer.queue<vecin>, memref<?xf32, #buffer.space<ub>>
    }
    buffer.stage "copy_out" {
      %o = buffer.deque %qout : !buffer.queue<vecout> -> memref<?xf32, #buffer.space<ub>>
      %dst = buffer.view %y[%off] : memref<?xf32, #buffer.space<gm>>
      buffer.copy %o to %dst blocks %c1 x %len strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
      buffer.queue_free %qout, %o : !buffer.queue<vecout>, memref<?xf32, #buffer.space<ub>>
    }
  }
  buffer.return
}
