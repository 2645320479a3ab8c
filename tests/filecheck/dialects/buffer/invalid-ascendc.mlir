// RUN: afc-opt %s --split-input-file --verify-diagnostics

// The rules Ascend C imposes on buffer IR (autofusion/dialects/ascendc_rules.py) are the
// verifier's: plain afc-opt rejects, in one line at the op, what -t ascendc could not print.

// Cast has no half -> bfloat16_t pair on A2 (ascend.md 2.8).
buffer.kernel @cast() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %a = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>
  %b = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vcast: Cast from f16 to bf16 with round mode 'rint' is not an Ascend C Cast on Ascend910B1 (ascend.md 2.8)}}
  buffer.vcast %b, %a, %c8 round "rint" : memref<?xbf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>
  buffer.return
}

// -----

// Add takes f16, f32 and i32 (ascend.md 2.8).
buffer.kernel @add_bf16() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %b = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vbinary: Add does not take bf16 (it takes f16, f32, i32; ascend.md 2.8)}}
  buffer.vbinary "add" %b, %b, %b, %c8 : memref<?xbf16, #buffer.space<ub>>, memref<?xbf16, #buffer.space<ub>>, memref<?xbf16, #buffer.space<ub>>
  buffer.return
}

// -----

// A vector API takes operands of one element type.
buffer.kernel @mixed() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %a = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>
  %f = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vunary: Exp needs operands of one element type, got f16, f32}}
  buffer.vunary "exp" %f, %a, %c8 : memref<?xf32, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>
  buffer.return
}

// -----

// Exp takes f16 and f32.
buffer.kernel @exp_i32() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %i = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vunary: Exp does not take i32 (it takes f16, f32; ascend.md 2.8)}}
  buffer.vunary "exp" %i, %i, %c8 : memref<?xi32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
  buffer.return
}

// -----

// Muls takes f16, f32 and i32.
buffer.kernel @muls_bf16() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %b = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  %s = arith.constant 2.0 : bf16
  // expected-error @+1 {{buffer.vscalar: Muls does not take bf16}}
  buffer.vscalar "muls" %b, %b, %s, %c8 : memref<?xbf16, #buffer.space<ub>>, memref<?xbf16, #buffer.space<ub>>, bf16
  buffer.return
}

// -----

// ReduceSum takes f16 and f32.
buffer.kernel @reduce_i32() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %i = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vreduce: ReduceSum does not take i32}}
  buffer.vreduce "sum" %i, %i, %i, %c8 : memref<?xi32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
  buffer.return
}

// -----

// Duplicate takes f16, bf16, f32 and i32.
buffer.kernel @dup_i8() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %i = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi8, #buffer.space<ub>>
  %s = arith.constant 1 : i8
  // expected-error @+1 {{buffer.vdup: Duplicate does not take i8}}
  buffer.vdup %i, %s, %c8 : memref<?xi8, #buffer.space<ub>>, i8
  buffer.return
}

// -----

// Compare writes its mask into a byte buffer.
buffer.kernel @compare_dst() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %f = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  %m = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vcompare: Compare writes its mask into a u8/i8 (or i1) buffer}}
  buffer.vcompare "lt" %m, %f, %f, %c8 : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// Compare writes a bitmask that only Select reads (ascend.md 2.8).
buffer.kernel @mask_read() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %f = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  %g = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  %m = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi8, #buffer.space<ub>>
  %h = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>
  buffer.vcompare "lt" %m, %f, %g, %c8 : memref<?xi8, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vcast reads a buffer.vcompare mask: Ascend C's Compare writes a bitmask that only Select can read}}
  buffer.vcast %h, %m, %c8 round "none" : memref<?xf16, #buffer.space<ub>>, memref<?xi8, #buffer.space<ub>>
  buffer.return
}

// -----

// int64 -> float32 has no CAST_NONE on A2 (asc-devkit Cast.md: rint, floor, ceil, round
// or trunc); afc widens int64 position ids with rint.
buffer.kernel @cast_i64_none() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %i = buffer.alloc_buf "veccalc" %c64 max_bytes 64 -> memref<?xi64, #buffer.space<ub>>
  %f = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  buffer.vcast %f, %i, %c8 round "rint" : memref<?xf32, #buffer.space<ub>>, memref<?xi64, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vcast: Cast from i64 to f32 with round mode 'none' is not an Ascend C Cast on Ascend910B1 (ascend.md 2.8)}}
  buffer.vcast %f, %i, %c8 round "none" : memref<?xf32, #buffer.space<ub>>, memref<?xi64, #buffer.space<ub>>
  buffer.return
}

// -----

// The int64 Casts are A2/A3 only: Ascend910's vector unit has none (asc-devkit's
// dav_c100 has no vconv_s642f32).
buffer.kernel @cast_i64_910() attributes {chip = "Ascend910", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %i = buffer.alloc_buf "veccalc" %c64 max_bytes 64 -> memref<?xi64, #buffer.space<ub>>
  %f = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vcast: Cast from i64 to f32 with round mode 'rint' is not an Ascend C Cast on Ascend910 (ascend.md 2.8)}}
  buffer.vcast %f, %i, %c8 round "rint" : memref<?xf32, #buffer.space<ub>>, memref<?xi64, #buffer.space<ub>>
  buffer.return
}

// -----

// Tensor-tensor Select needs A2: Ascend910 has only VSEL_CMPMASK_SPR (ascend.md 2.8).
buffer.kernel @select_910() attributes {chip = "Ascend910", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %f = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  %m = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi8, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vselect: Ascend910 has only Select mode VSEL_CMPMASK_SPR (ascend.md 2.8); tensor-tensor Select needs A2}}
  buffer.vselect %f, %m, %f, %f, %c8 : memref<?xf32, #buffer.space<ub>>, memref<?xi8, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// bf16 only on chips that have it.
buffer.kernel @bf16_910() attributes {chip = "Ascend910", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{kernel @bf16_910: buffer.alloc_buf uses bf16, which Ascend910 does not have}}
  %b = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  buffer.vunary "relu" %b, %b, %c8 : memref<?xbf16, #buffer.space<ub>>, memref<?xbf16, #buffer.space<ub>>
  buffer.return
}

// -----

// TPipe::InitBuffer runs once, in Init: allocations sit at the kernel's top level.
buffer.kernel @alloc_loop() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c8 step %c1 {
  // expected-error @+1 {{buffer.alloc_buf: buffers are allocated once, at the kernel's top level (TPipe::InitBuffer in Init)}}
      %t = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
    }
  buffer.return
}

// -----

// A workspace is a GM buffer the host allocates: it sits at the kernel's top level.
buffer.kernel @ws_loop(%bytes: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c8 step %c1 {
  // expected-error @+1 {{buffer.workspace: a workspace is declared at the kernel's top level}}
      %w = buffer.workspace %bytes : memref<?xf32, #buffer.space<gm>>
    }
  buffer.return
}

// -----

// Host ops have no place in a kernel.
buffer.kernel @host_dim() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %t = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{buffer.dim cannot appear inside a buffer.kernel}}
  %d = buffer.dim %t[0] : tensor<8xf32>
  buffer.return
}

// -----

// Mmad's type pairs on A2: half/bf16/float -> float, int8 -> int32 (ascend.md 2.10).
buffer.kernel @mmad_types() attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %a = buffer.alloc_buf "a2" %c32 max_bytes 512 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %c32 max_bytes 512 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %c32 max_bytes 512 -> memref<?xf16, #buffer.space<l0c>>
  %false = arith.constant false
  // expected-error @+1 {{buffer.mmad: Mmad of f16 x f16 -> f16 is not a cube type pair on A2}}
  buffer.mmad %c, %a, %b, %c16, %c16, %c16, %false : memref<?xf16, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.return
}


// -----

// CO1 -> CO2 (l0c -> ub, coupled chips) is printed for the f32 accumulator only.
buffer.kernel @co2_i32() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c16 = arith.constant 16 : index
  %nb = arith.constant 1024 : index
  %acc = buffer.alloc_buf "co1" %nb max_bytes 1024 -> memref<?xi32, #buffer.space<l0c>>
  %ub = buffer.alloc_buf "veccalc" %nb max_bytes 1024 -> memref<?xi32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: afc prints CO1 -> CO2 of the f32 accumulator only}}
  buffer.copy %acc to %ub blocks %c16 x %c16 strides %c16, %c16 : memref<?xi32, #buffer.space<l0c>> to memref<?xi32, #buffer.space<ub>>
  buffer.return
}

// -----

// LoadData transposes each fractal (a plain copy into L0B) for half, bf16 and float only.
buffer.kernel @int8_b() attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 0, num_outputs = 0} {
  %c32 = arith.constant 32 : index
  %nb = arith.constant 1024 : index
  %l1 = buffer.alloc_buf "b1" %nb max_bytes 1024 -> memref<?xi8, #buffer.space<l1>>
  %b2 = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xi8, #buffer.space<l0b>>
  // expected-error @+1 {{buffer.copy: this load transposes each fractal, which afc prints for half, bfloat16_t and float only}}
  buffer.copy %l1 to %b2 blocks %c32 x %c32 strides %c32, %c32 : memref<?xi8, #buffer.space<l1>> to memref<?xi8, #buffer.space<l0b>>
  buffer.return
}

// -----

// Buffers are allocated in Init (TPipe::InitBuffer): the sizes they take are index
// arithmetic on tiling scalars and constants, not values read from a buffer.
buffer.kernel @init_size() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %a = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.get_value: a buffer size depends on it, but only index arithmetic can run in Init}}
  %v = buffer.get_value %a[%c0] : memref<?xi32, #buffer.space<ub>> -> i32
  %n = arith.index_cast %v : i32 to index
  %b = buffer.alloc_buf "veccalc" %n max_bytes 32 -> memref<?xi32, #buffer.space<ub>>
  buffer.return
}
