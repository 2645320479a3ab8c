// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// A hand-written vector kernel, y = relu(x + 1), in the shape lower-to-buffer produces:
// each core takes a contiguous range of tiles; a tile goes through CopyIn, Compute and
// CopyOut over double-buffered queues.

// CHECK-LABEL: buffer.kernel @add_relu(%x: memref<?xf32, #buffer.space<gm>>, %y: memref<?xf32, #buffer.space<gm>>, %n: index, %tile: index) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64} {
// CHECK:         %qin = buffer.alloc_queue %bytes buffers 2 max_bytes 32768 of f32 : !buffer.queue<vecin>
// CHECK:         buffer.stage "copy_in" {
// CHECK-NEXT:      %t = buffer.queue_alloc %qin : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
// CHECK-NEXT:      %src = buffer.view %x[%off] : memref<?xf32, #buffer.space<gm>>
// CHECK-NEXT:      buffer.copy %src to %t blocks %c1 x %len strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
// CHECK:           buffer.vscalar "adds" %o, %i, %one, %len : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, f32
// CHECK-NEXT:      buffer.vunary "relu" %o, %o, %len
// CHECK-GENERIC: "buffer.kernel"() <{sym_name = "add_relu"
// CHECK-LABEL: func.func @main
// CHECK:         %y = buffer.launch @add_relu blocks(%blocks) (%x) tiling(%n, %tile) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
buffer.kernel @add_relu(%x: memref<?xf32, #buffer.space<gm>>, %y: memref<?xf32, #buffer.space<gm>>, %n: index, %tile: index) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64} {
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

func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %n = buffer.dim %x[0] : tensor<?xf32>
  %tile = arith.constant 24 : index
  %blocks = arith.constant 3 : index
  %y = buffer.launch @add_relu blocks(%blocks) (%x) tiling(%n, %tile) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// A mix kernel on a split chip: the AIC computes a tile, writes it into the workspace and says so;
// each AIV waits for it, reads its sub-block's half and frees the slot.
// CHECK-LABEL: buffer.kernel @handover
// CHECK:         %sb = buffer.sub_block_idx
// CHECK:         buffer.stage "cube" {
// CHECK:           buffer.cross_core_set 0 from "aic" after "fix"
// CHECK:         buffer.cross_core_wait 0 on "aiv"
// CHECK:         buffer.cross_core_set 1 from "aiv" after "mte2"
// CHECK:         buffer.cross_core_wait 1 on "aic"
// CHECK-GENERIC: "buffer.cross_core_set"() <{flag = 0 : i64, core = "aic", pipe = "fix"}> : () -> ()
// CHECK-GENERIC: "buffer.cross_core_wait"() <{flag = 0 : i64, core = "aiv"}> : () -> ()
buffer.kernel @handover(%y: memref<?xf32, #buffer.space<gm>>, %bytes: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c16 = arith.constant 16 : index
  %ws = buffer.workspace %bytes : memref<?xf32, #buffer.space<gm>>
  %c = buffer.alloc_buf "co1" %bytes max_bytes 1024 -> memref<?xf32, #buffer.space<l0c>>
  %u = buffer.alloc_buf "veccalc" %bytes max_bytes 1024 -> memref<?xf32, #buffer.space<ub>>
  %a = buffer.alloc_buf "a2" %bytes max_bytes 512 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %bytes max_bytes 512 -> memref<?xf16, #buffer.space<l0b>>
  %false = arith.constant false
  %sb = buffer.sub_block_idx
  %row = arith.muli %sb, %c16 : index
  buffer.stage "cube" {
    buffer.mmad %c, %a, %b, %c16, %c16, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
    buffer.copy %c to %ws blocks %c16 x %c16 strides %c16, %c16 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
    buffer.cross_core_set 0 from "aic" after "fix"
  }
  buffer.cross_core_wait 0 on "aiv"
  buffer.stage "copy_in" {
    %src = buffer.view %ws[%row] : memref<?xf32, #buffer.space<gm>>
    buffer.copy %src to %u blocks %c16 x %c16 strides %c16, %c16 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
  }
  buffer.cross_core_set 1 from "aiv" after "mte2"
  buffer.cross_core_wait 1 on "aic"
  buffer.return
}

// -----

// A kernel that reads its input past L2 (l2_bypass: GM input indices)
// CHECK-LABEL: buffer.kernel @bypass(%x: memref<?xf16, #buffer.space<gm>>, %y: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64, l2_bypass = [0 : i64]} {
// CHECK-GENERIC: "buffer.kernel"() <{sym_name = "bypass"
// CHECK-GENERIC: }) {l2_bypass = [0 : i64]} : () -> ()
buffer.kernel @bypass(%x: memref<?xf16, #buffer.space<gm>>, %y: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64, l2_bypass = [0 : i64]} {
  buffer.return
}

// -----

// The split chips' im2col gather: UB elements at i32 byte offsets (Gather).
// CHECK-LABEL: buffer.kernel @gather
// CHECK:         buffer.vgather %cols, %fmap, %offsets, %n : memref<?xf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
// CHECK-GENERIC: "buffer.vgather"(%cols, %fmap, %offsets, %n) : (memref<?xf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>, index) -> ()
buffer.kernel @gather(%y: memref<?xf16, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910B1", template = "conv", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c64 = arith.constant 64 : index
  %fmap = buffer.alloc_buf "vecin" %c64 max_bytes 64 -> memref<?xf16, #buffer.space<ub>>
  %cols = buffer.alloc_buf "vecout" %c64 max_bytes 64 -> memref<?xf16, #buffer.space<ub>>
  %offsets = buffer.alloc_buf "veccalc" %c64 max_bytes 64 -> memref<?xi32, #buffer.space<ub>>
  buffer.vgather %cols, %fmap, %offsets, %n : memref<?xf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
  buffer.return
}

// -----

// Atomic adds (SetAtomicAdd<T>): a UB tile added into GM by the AIVs, and an L0C tile
// (an mmad's) added by the AIC's Fixpipe (in f16: the add is in the destination's type); between
// them the hard all-core sync of a mix kernel on a split chip.
// CHECK-LABEL: buffer.kernel @atomics
// CHECK:         buffer.stage "copy_out" {
// CHECK-NEXT:      buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
// CHECK-NEXT:    }
// CHECK-NEXT:    buffer.sync_all
// CHECK-NEXT:    buffer.stage "cube" {
// CHECK-NEXT:      buffer.mmad %c, %a, %b, %c16, %n, %c16, %false
// CHECK-NEXT:      buffer.copy %c to %y2 blocks %n x %n strides %n, %n relu true atomic true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>
// CHECK-NEXT:      buffer.copy %c to %y3 blocks %n x %n strides %n, %n : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
// CHECK-NEXT:    }
// CHECK-NEXT:    buffer.sync_all
// CHECK-NEXT:    buffer.return
// CHECK-GENERIC: "buffer.copy"(%u, %y, %c1, %n, %c0, %c0) <{atomic = true}> : (memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<gm>>, index, index, index, index) -> ()
// CHECK-GENERIC: "buffer.sync_all"() : () -> ()
// CHECK-GENERIC: "buffer.copy"(%c, %y2, %n, %n, %n, %n) <{relu = true, atomic = true}> : (memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<gm>>, index, index, index, index) -> ()
// CHECK-GENERIC: "buffer.copy"(%c, %y3, %n, %n, %n, %n) : (memref<?xf32, #buffer.space<l0c>>, memref<?xf32, #buffer.space<gm>>, index, index, index, index) -> ()
// CHECK-GENERIC: "buffer.sync_all"() : () -> ()
buffer.kernel @atomics(%y: memref<?xf32, #buffer.space<gm>>, %y2: memref<?xf16, #buffer.space<gm>>, %y3: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 3 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xf32, #buffer.space<ub>>
  %c = buffer.alloc_buf "co1" %n max_bytes 1024 -> memref<?xf32, #buffer.space<l0c>>
  %a = buffer.alloc_buf "a2" %n max_bytes 512 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 512 -> memref<?xf16, #buffer.space<l0b>>
  %c16 = arith.constant 16 : index
  %false = arith.constant false
  buffer.stage "copy_out" {
    buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  }
  buffer.sync_all
  buffer.stage "cube" {
    buffer.mmad %c, %a, %b, %c16, %n, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
    buffer.copy %c to %y2 blocks %n x %n strides %n, %n relu true atomic true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>
    buffer.copy %c to %y3 blocks %n x %n strides %n, %n : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
  }
  buffer.sync_all
  buffer.return
}

// -----

// The other chips add from UB only: float on the training series (Ascend910), half,
// float and int16_t on the inference series' AI Core (Ascend310P3); no sync_all there.
// CHECK-LABEL: buffer.kernel @atomic_910
// CHECK:         buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
// CHECK-LABEL: buffer.kernel @atomic_310p
// CHECK:         buffer.copy %h to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK-NEXT:    buffer.copy %s to %z blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xi16, #buffer.space<ub>> to memref<?xi16, #buffer.space<gm>>
// CHECK-NEXT:    buffer.copy %f to %w blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
// CHECK-GENERIC-LABEL: "buffer.kernel"() <{sym_name = "atomic_910"
// CHECK-GENERIC: "buffer.copy"(%u, %y, %c1, %n, %c0, %c0) <{atomic = true}>
// CHECK-GENERIC-LABEL: "buffer.kernel"() <{sym_name = "atomic_310p"
// CHECK-GENERIC: "buffer.copy"(%h, %y, %c1, %n, %c0, %c0) <{atomic = true}>
// CHECK-GENERIC: "buffer.copy"(%s, %z, %c1, %n, %c0, %c0) <{atomic = true}>
// CHECK-GENERIC: "buffer.copy"(%f, %w, %c1, %n, %c0, %c0) <{atomic = true}>
buffer.kernel @atomic_910(%y: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  buffer.return
}
buffer.kernel @atomic_310p(%y: memref<?xf16, #buffer.space<gm>>, %z: memref<?xi16, #buffer.space<gm>>, %w: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend310P3", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 3 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xf16, #buffer.space<ub>>
  %s = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xi16, #buffer.space<ub>>
  %f = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %h to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
  buffer.copy %s to %z blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xi16, #buffer.space<ub>> to memref<?xi16, #buffer.space<gm>>
  buffer.copy %f to %w blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  buffer.return
}

// A K loop that accumulates into one L0C tile: m padded to 16 (an Mmad with m = 1 reads
// L0A as a GEMV row), PipeBarrier<PIPE_M> before each Mmad that may accumulate, needed
// only on small tiles; one m = 1 Mmad whose K fits one fractal row (GEMV reads the same).
// CHECK-LABEL: buffer.kernel @k_loop
// CHECK:         %mp = arith.maxsi %m, %c16 : index
// CHECK:         scf.for %s = %c0 to %steps step %c1 {
// CHECK-NEXT:      %acc = arith.cmpi ne, %s, %c0 : index
// CHECK-NEXT:      buffer.pipe_barrier "M" small_mmad(%mp, %n)
// CHECK-NEXT:      buffer.mmad %c, %a, %b, %mp, %n, %k, %acc
// CHECK:         buffer.pipe_barrier "ALL"
// CHECK-NEXT:    buffer.mmad %c, %a, %b, %c1, %n, %c16, %true
// CHECK-GENERIC-LABEL: "buffer.kernel"() <{sym_name = "k_loop"
// CHECK-GENERIC: "buffer.pipe_barrier"(%mp, %n) <{pipe = "M"}> : (index, index) -> ()
// CHECK-GENERIC: "buffer.pipe_barrier"() <{pipe = "ALL"}> : () -> ()
buffer.kernel @k_loop(%m: index, %n: index, %k: index, %steps: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %true = arith.constant true
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %mp = arith.maxsi %m, %c16 : index
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.pipe_barrier "M" small_mmad(%mp, %n)
    buffer.mmad %c, %a, %b, %mp, %n, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.pipe_barrier "ALL"
  buffer.mmad %c, %a, %b, %c1, %n, %c16, %true : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.return
}
