// RUN: afc-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{kernel @too_big needs 200000 bytes of ub, Ascend910B1 has 188160}}
buffer.kernel @too_big(%x: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 0 : i64} {
  %q = buffer.alloc_queue %n buffers 2 max_bytes 100000 of f32 : !buffer.queue<vecin>
  buffer.return
}

// -----

// expected-error @+1 {{kernel @no_path: Ascend910B1 has no l0c -> ub path (cube and vector cores exchange data only through GM)}}
buffer.kernel @no_path(%x: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 1 : i64, num_outputs = 0 : i64} {
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %u = buffer.alloc_buf "veccalc" %n max_bytes 4096 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %c to %u blocks %n x %n strides %n, %n : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

func.func @gm_to_l0a(%x: memref<?xf16, #buffer.space<gm>>, %a: memref<?xf16, #buffer.space<l0a>>, %n: index) {
  // expected-error @+1 {{there is no data path gm -> l0a}}
  buffer.copy %x to %a blocks %n x %n strides %n, %n : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l0a>>
  func.return
}

// -----

func.func @vector_in_l1(%x: memref<?xf16, #buffer.space<l1>>, %n: index) {
  // expected-error @+1 {{vector operand #0 is in l1, not ub}}
  buffer.vunary "exp" %x, %x, %n : memref<?xf16, #buffer.space<l1>>, memref<?xf16, #buffer.space<l1>>
  func.return
}

// -----

func.func @mmad_spaces(%a: memref<?xf16, #buffer.space<ub>>, %b: memref<?xf16, #buffer.space<l0b>>, %c: memref<?xf32, #buffer.space<l0c>>, %n: index, %f: i1) {
  // expected-error @+1 {{mmad operand A must be in l0a, got ub}}
  buffer.mmad %c, %a, %b, %n, %n, %n, %f : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<l0b>>
  func.return
}

// -----

// expected-error @+1 {{kernel @queues uses 6 vecin queue buffers, Ascend910 allows 4 per position}}
buffer.kernel @queues(%x: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 0 : i64} {
  %q0 = buffer.alloc_queue %n buffers 2 max_bytes 64 of f32 : !buffer.queue<vecin>
  %q1 = buffer.alloc_queue %n buffers 2 max_bytes 64 of f32 : !buffer.queue<vecin>
  %q2 = buffer.alloc_queue %n buffers 2 max_bytes 64 of f32 : !buffer.queue<vecin>
  buffer.return
}

// -----

// expected-error @+1 {{kernel @chip: unknown chip 'Ascend999'; known chips: Ascend310P3, Ascend910, Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4}}
buffer.kernel @chip(%x: memref<?xf32, #buffer.space<gm>>) attributes {chip = "Ascend999", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 0 : i64} {
  buffer.return
}

// -----

// expected-error @+1 {{kernel @flag_in_vector_kernel: buffer.cross_core_set exists only in mix kernels on split chips (AIC + AIV)}}
buffer.kernel @flag_in_vector_kernel() attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.cross_core_set 0 from "aiv" after "mte3"
  buffer.return
}

// -----

// expected-error @+1 {{kernel @flag_on_coupled_chip: buffer.sub_block_idx exists only in mix kernels on split chips (AIC + AIV)}}
buffer.kernel @flag_on_coupled_chip() attributes {chip = "Ascend910", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %sb = buffer.sub_block_idx
  buffer.return
}

// -----

buffer.kernel @flag_id() attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  // expected-error @+1 {{cross-core flag ids are 0..10, got 11}}
  buffer.cross_core_wait 11 on "aic"
  buffer.return
}

// -----

buffer.kernel @flag_core() attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.stage "cube" {
    // expected-error @+1 {{buffer.cross_core_set on the aiv inside a 'cube' stage, which runs on the aic}}
    buffer.cross_core_set 0 from "aiv" after "mte3"
  }
  buffer.return
}

// -----

// a mix kernel on a split chip states the core of every op on on-chip buffers
// expected-error @+1 {{kernel @unstaged: buffer.vdup touches AIV buffers outside a buffer.stage; in a mix kernel on a split chip every such op is in a stage of its core}}
buffer.kernel @unstaged(%x: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 1 : i64, num_outputs = 0 : i64} {
  %z = arith.constant 0.0 : f32
  %u = buffer.alloc_buf "veccalc" %n max_bytes 4096 -> memref<?xf32, #buffer.space<ub>>
  buffer.vdup %u, %z, %n : memref<?xf32, #buffer.space<ub>>, f32
  buffer.return
}

// -----

// expected-error @+1 {{kernel @wrong_stage: buffer.mmad touches AIC buffers inside a 'compute' stage, which runs on the AIV}}
buffer.kernel @wrong_stage(%n: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %f = arith.constant false
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  buffer.stage "compute" {
    buffer.mmad %c, %a, %b, %n, %n, %n, %f : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.return
}

// -----

// l2_bypass names GM inputs, not outputs
// expected-error @+1 {{kernel @bypass_output: l2_bypass [1] must name GM inputs (0..0) once each, in ascending order}}
buffer.kernel @bypass_output(%x: memref<?xf16, #buffer.space<gm>>, %y: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64, l2_bypass = [1 : i64]} {
  buffer.return
}

// -----

// Ascend910 (Atlas training series) has no GlobalTensor::SetL2CacheHint
// expected-error @+1 {{kernel @bypass_910: Ascend910 cannot read past L2 (GlobalTensor::SetL2CacheHint is for Atlas A2/A3), but l2_bypass is set}}
buffer.kernel @bypass_910(%x: memref<?xf16, #buffer.space<gm>>, %y: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64, l2_bypass = [0 : i64]} {
  buffer.return
}

// -----

// an atomic add goes to GM: not into UB ...
func.func @atomic_gm_to_ub(%x: memref<?xf32, #buffer.space<gm>>, %u: memref<?xf32, #buffer.space<ub>>, %n: index) {
  // expected-error @+1 {{an atomic add copies ub -> gm or l0c -> gm only}}
  buffer.copy %x to %u blocks %n x %n strides %n, %n atomic true : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
  func.return
}

// -----

// ... nor within UB
func.func @atomic_ub_to_ub(%u: memref<?xf32, #buffer.space<ub>>, %v: memref<?xf32, #buffer.space<ub>>, %n: index) {
  // expected-error @+1 {{an atomic add copies ub -> gm or l0c -> gm only}}
  buffer.copy %u to %v blocks %n x %n strides %n, %n atomic true : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
  func.return
}

// -----

// SetAtomicAdd has no 64-bit types
func.func @atomic_i64(%u: memref<?xi64, #buffer.space<ub>>, %y: memref<?xi64, #buffer.space<gm>>, %n: index) {
  // expected-error @+1 {{an atomic add of i64 does not exist (SetAtomicAdd takes f32/f16/bf16/i32/i16/i8)}}
  buffer.copy %u to %y blocks %n x %n strides %n, %n atomic true : memref<?xi64, #buffer.space<ub>> to memref<?xi64, #buffer.space<gm>>
  func.return
}

// -----

// nor unsigned ones (a type afc's dtypes do not know is named as MLIR spells it)
func.func @atomic_ui16(%u: memref<?xui16, #buffer.space<ub>>, %y: memref<?xui16, #buffer.space<gm>>, %n: index) {
  // expected-error @+1 {{an atomic add of ui16 does not exist (SetAtomicAdd takes f32/f16/bf16/i32/i16/i8)}}
  buffer.copy %u to %y blocks %n x %n strides %n, %n atomic true : memref<?xui16, #buffer.space<ub>> to memref<?xui16, #buffer.space<gm>>
  func.return
}

// -----

// the training series (Ascend910, arch 1001) adds float only ...
// expected-error @+1 {{kernel @atomic_910_f16: Ascend910 has no atomic add of f16 on ub -> gm (SetAtomicAdd: f32 from ub)}}
buffer.kernel @atomic_910_f16(%y: memref<?xf16, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xf16, #buffer.space<ub>>
  buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
  buffer.return
}

// -----

// ... and only from UB: not by the Fixpipe from L0C
// expected-error @+1 {{kernel @atomic_910_l0c: Ascend910 has no atomic add of f32 on l0c -> gm (SetAtomicAdd: f32 from ub)}}
buffer.kernel @atomic_910_l0c(%y: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend910", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c = buffer.alloc_buf "co1" %n max_bytes 1024 -> memref<?xf32, #buffer.space<l0c>>
  buffer.copy %c to %y blocks %n x %n strides %n, %n atomic true : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
  buffer.return
}

// -----

// the inference series' AI Core (Ascend310P3, arch 2002) adds float, half and int16_t ...
// expected-error @+1 {{kernel @atomic_310p_i32: Ascend310P3 has no atomic add of i32 on ub -> gm (SetAtomicAdd: f32, f16, i16 from ub)}}
buffer.kernel @atomic_310p_i32(%y: memref<?xi32, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend310P3", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xi32, #buffer.space<ub>>
  buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xi32, #buffer.space<ub>> to memref<?xi32, #buffer.space<gm>>
  buffer.return
}

// -----

// expected-error @+1 {{kernel @atomic_310p_i8: Ascend310P3 has no atomic add of i8 on ub -> gm (SetAtomicAdd: f32, f16, i16 from ub)}}
buffer.kernel @atomic_310p_i8(%y: memref<?xi8, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend310P3", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = buffer.alloc_buf "vecout" %n max_bytes 1024 -> memref<?xi8, #buffer.space<ub>>
  buffer.copy %u to %y blocks %c1 x %n strides %c0, %c0 atomic true : memref<?xi8, #buffer.space<ub>> to memref<?xi8, #buffer.space<gm>>
  buffer.return
}

// -----

// ... from UB only
// expected-error @+1 {{kernel @atomic_310p_l0c: Ascend310P3 has no atomic add of f16 on l0c -> gm (SetAtomicAdd: f32, f16, i16 from ub)}}
buffer.kernel @atomic_310p_l0c(%y: memref<?xf16, #buffer.space<gm>>, %n: index) attributes {chip = "Ascend310P3", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c = buffer.alloc_buf "co1" %n max_bytes 1024 -> memref<?xf32, #buffer.space<l0c>>
  buffer.copy %c to %y blocks %n x %n strides %n, %n atomic true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>
  buffer.return
}

// -----

// SyncAll runs on every core of the launch: not in a stage (one core kind's part) ...
buffer.kernel @sync_in_stage() attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.stage "compute" {
    // expected-error @+1 {{buffer.sync_all runs on every core: it cannot be inside a stage}}
    buffer.sync_all
  }
  buffer.return
}

// -----

// ... nor in a loop inside one
buffer.kernel @sync_in_staged_loop(%n: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  buffer.stage "cube" {
    scf.for %i = %c0 to %n step %c1 {
      // expected-error @+1 {{buffer.sync_all runs on every core: it cannot be inside a stage}}
      buffer.sync_all
    }
  }
  buffer.return
}

// -----

func.func @sync_outside_kernel() {
  // expected-error @+1 {{buffer.sync_all must be inside a buffer.kernel}}
  buffer.sync_all
  func.return
}

// -----

// the hard all-core sync is SyncAll<false> of a mix kernel on Atlas A2/A3: not in a
// vector kernel ...
// expected-error @+1 {{kernel @sync_in_vector_kernel: buffer.sync_all needs a mix kernel on a split chip (the hard SyncAll<false> of Atlas A2/A3), not in this aiv kernel on Ascend910B1}}
buffer.kernel @sync_in_vector_kernel() attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.sync_all
  buffer.return
}

// -----

// ... nor a cube kernel ...
// expected-error @+1 {{kernel @sync_in_cube_kernel: buffer.sync_all needs a mix kernel on a split chip (the hard SyncAll<false> of Atlas A2/A3), not in this aic kernel on Ascend910B1}}
buffer.kernel @sync_in_cube_kernel() attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.sync_all
  buffer.return
}

// -----

// ... nor on a coupled chip
// expected-error @+1 {{kernel @sync_on_910: buffer.sync_all needs a mix kernel on a split chip (the hard SyncAll<false> of Atlas A2/A3), not in this mix kernel on Ascend910}}
buffer.kernel @sync_on_910() attributes {chip = "Ascend910", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.sync_all
  buffer.return
}

// -----

// expected-error @+1 {{kernel @sync_on_310p: buffer.sync_all needs a mix kernel on a split chip (the hard SyncAll<false> of Atlas A2/A3), not in this mix kernel on Ascend310P3}}
buffer.kernel @sync_on_310p() attributes {chip = "Ascend310P3", template = "matmul", core_type = "mix", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  buffer.sync_all
  buffer.return
}

// -----

// m is a tiling scalar that can be 1: Mmad would read L0A as a GEMV row (Mmad.md)
// expected-error @+1 {{kernel @unpadded_m: buffer.mmad with m = %rows may run with m = 1, where Mmad reads L0A as one contiguous row (GEMV, Mmad.md) but the L1 -> L0A load leaves Zz fractals: pad m to 16 (arith.maxsi %m, %c16), as the matmul library does}}
buffer.kernel @unpadded_m(%m: index, %n: index, %k: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %f = arith.constant false
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %rows = arith.minsi %m, %n : index
  buffer.mmad %c, %a, %b, %rows, %n, %k, %f : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.return
}

// -----

// m = 1 with 16 floats of K: more than one fractal row (8 floats)
// expected-error @+1 {{kernel @one_row_float: buffer.mmad with m = %c1 may run with m = 1}}
buffer.kernel @one_row_float(%n: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %f = arith.constant false
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %c, %a, %b, %c1, %n, %c16, %f : memref<?xf32, #buffer.space<l0c>>, memref<?xf32, #buffer.space<l0a>>, memref<?xf32, #buffer.space<l0b>>
  buffer.return
}

// -----

// a K loop that accumulates with no PipeBarrier<PIPE_M> between its Mmads
// expected-error @+1 {{kernel @no_barrier: buffer.mmad with m = %mp may accumulate into an L0C tile an earlier mmad wrote, with no buffer.pipe_barrier "M" between them in its block (Mmad.md: PipeBarrier<PIPE_M> when (m / 16) * (n / 16) < 10)}}
buffer.kernel @no_barrier(%m: index, %n: index, %k: index, %steps: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %mp = arith.maxsi %m, %c16 : index
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.mmad %c, %a, %b, %mp, %n, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.return
}

// -----

// the barrier is before the first Mmad, not between the two that accumulate
// expected-error @+1 {{kernel @barrier_too_early: buffer.mmad with m = %mp may accumulate into an L0C tile an earlier mmad wrote, with no buffer.pipe_barrier "M" between them}}
buffer.kernel @barrier_too_early(%m: index, %n: index, %k: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %c16 = arith.constant 16 : index
  %f = arith.constant false
  %t = arith.constant true
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %mp = arith.maxsi %m, %c16 : index
  buffer.pipe_barrier "M"
  buffer.mmad %c, %a, %b, %mp, %n, %k, %f : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.mmad %c, %a, %b, %mp, %n, %k, %t : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.return
}

// -----

// the guard tests another tile's sizes
// expected-error @+1 {{kernel @guard_of_other_sizes: buffer.mmad with m = %mp: the small_mmad guard of the pipe_barrier before it must test this mmad's own m and n}}
buffer.kernel @guard_of_other_sizes(%m: index, %n: index, %k: index, %steps: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %mp = arith.maxsi %m, %c16 : index
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.pipe_barrier "M" small_mmad(%mp, %k)
    buffer.mmad %c, %a, %b, %mp, %n, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.return
}

// -----

// n changes from one K step to the next: the guard cannot stand for the previous Mmad
// expected-error @+1 {{kernel @sizes_change_in_the_loop: buffer.mmad with m = %mp: its m or n changes inside a loop that accumulates into the tile, so a small_mmad guard cannot stand for the previous mmad: use an unguarded buffer.pipe_barrier "M"}}
buffer.kernel @sizes_change_in_the_loop(%m: index, %n: index, %k: index, %steps: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %a = buffer.alloc_buf "a2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %n max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %n max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  %mp = arith.maxsi %m, %c16 : index
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    %cols = arith.subi %n, %s : index
    buffer.pipe_barrier "M" small_mmad(%mp, %cols)
    buffer.mmad %c, %a, %b, %mp, %cols, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.return
}

// -----

func.func @barrier_pipe(%m: index) {
  // expected-error @+1 {{pipe_barrier pipe must be one of M, ALL, got 'V'}}
  buffer.pipe_barrier "V"
  func.return
}

// -----

func.func @guarded_all(%m: index, %n: index) {
  // expected-error @+1 {{pipe_barrier small_mmad is a barrier of pipe "M"}}
  buffer.pipe_barrier "ALL" small_mmad(%m, %n)
  func.return
}

// -----

// a kernel is for its module's target (the chip it was lowered for)
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  // expected-error @+1 {{kernel @other_chip is for Ascend310P3, but the module targets Ascend910B1}}
  buffer.kernel @other_chip(%x: memref<?xf32, #buffer.space<gm>>) attributes {chip = "Ascend310P3", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 0 : i64} {
    buffer.return
  }
}
