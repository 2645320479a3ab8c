// RUN: afc-opt %s --split-input-file --verify-diagnostics

// The rules of fractal (cube) data, and of the copies whose Ascend C form depends on
// tiling values, are the verifier's (autofusion/dialects/fractal_rules.py): plain afc-opt
// rejects, in one line at the op, what -t ascendc could not print. Sizes are proven from
// the host code that computes the tiling scalars (autofusion/dialects/tiling_facts.py).

// LoadData reads the fractals a copy wrote to L1: an L1 buffer nothing wrote has no layout.
buffer.kernel @unknown_layout() attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %l0a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  // expected-error @+1 {{buffer.copy: the L1 source was not written by a copy or mmad in this kernel, so its fractal layout is unknown}}
  buffer.copy %l1 to %l0a blocks %c16 x %c16 strides %c16, %c16 : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.return
}

// -----

// Mmad reads and writes whole L0 buffers: fractal layouts have no element offsets.
buffer.kernel @mmad_view() attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %nb max_bytes 1024 -> memref<?xf32, #buffer.space<l0c>>
  %av = buffer.view %a[%c16] : memref<?xf16, #buffer.space<l0a>>
  // expected-error @+1 {{buffer.mmad: the A operand must be a whole L1/L0 buffer, not a view into one (fractal layouts have no element offsets)}}
  buffer.mmad %c, %av, %b, %c16, %c16, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.return
}

// -----

// Nd2Nz writes a whole L1 buffer.
buffer.kernel @nd2nz_view(%x: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %v = buffer.view %l1[%c16] : memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.copy: the destination must be a whole L1/L0 buffer, not a view into one (fractal layouts have no element offsets)}}
  buffer.copy %x to %v blocks %c16 x %c16 strides %c16, %c16 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  buffer.return
}

// -----

// On coupled chips UB -> L1 copies C0-column strips: the UB row stride is a multiple of 32 bytes.
buffer.kernel @strips() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %ub = buffer.alloc_buf "veccalc" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<ub>>
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.copy: the UB row stride is not a multiple of 32 bytes, so its C0-column strips have no DataCopy form}}
  buffer.copy %ub to %l1 blocks %c16 x %c16 strides %c20, %c16 : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<l1>>
  buffer.return
}

// -----

// CO1 -> CO2 moves whole 16x16 fractals: whole rows of the mmad's result.
buffer.kernel @co2_rows() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %acc, %a, %b, %c16, %c32, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  %w = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: CO1 -> CO2 moves whole fractals: the copy must take whole rows of the mmad's result (length and row stride its n)}}
  buffer.copy %acc to %w blocks %c16 x %c16 strides %c32, %c32 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// CO1 -> CO2 writes a whole UB buffer.
buffer.kernel @co2_view() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %acc, %a, %b, %c16, %c32, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  %w = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  %wv = buffer.view %w[%c16] : memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: CO1 -> CO2 writes a whole UB buffer (its Nz fractals), not a view into one}}
  buffer.copy %acc to %wv blocks %c16 x %c32 strides %c32, %c32 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// The Nz -> ND reorder reads the rows and columns CO1 -> CO2 wrote.
buffer.kernel @nz_rows() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %acc, %a, %b, %c16, %c32, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  %w = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  %o = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %acc to %w blocks %c16 x %c32 strides %c32, %c32 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: reads other rows or columns of the Nz fractals than CO1 -> CO2 copied there}}
  buffer.copy %w to %o blocks %c16 x %c16 strides %c32, %c32 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// The Nz -> ND reorder reads the Nz fractals from their start.
buffer.kernel @nz_offset() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %acc, %a, %b, %c16, %c32, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  %w = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  %o = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %acc to %w blocks %c16 x %c32 strides %c32, %c32 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  %wv = buffer.view %w[%c16] : memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: reads the Nz fractals at a view offset}}
  buffer.copy %wv to %o blocks %c16 x %c32 strides %c32, %c32 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// The Nz -> ND reorder writes rows of 32-byte multiples.
buffer.kernel @nz_stride() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %acc, %a, %b, %c16, %c32, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  %w = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  %o = buffer.alloc_buf "veccalc" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %acc to %w blocks %c16 x %c32 strides %c32, %c32 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: the destination's row stride is not a multiple of 32 bytes, so the Nz -> ND reorder has no DataCopy form}}
  buffer.copy %w to %o blocks %c16 x %c32 strides %c32, %c20 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
  buffer.return
}

// -----

// LoadData reads L1 with the row stride the copy wrote it with.
buffer.kernel @l1_stride(%x: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %l0a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  buffer.copy %x to %l1 blocks %c16 x %c32 strides %c32, %c32 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.copy: reads L1 with a row stride other than the one it was written with, which a fractal layout cannot express}}
  buffer.copy %l1 to %l0a blocks %c16 x %c16 strides %c16, %c16 : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.return
}

// -----

// An Nz matrix in L1 has rows of whole fractal columns (16 halves).
buffer.kernel @l1_c0(%x: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %l0a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  buffer.copy %x to %l1 blocks %c16 x %c20 strides %c20, %c20 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.copy: the L1 row stride is not a multiple of 16 elements (one fractal column), so the matrix has no Nz layout there}}
  buffer.copy %l1 to %l0a blocks %c16 x %c20 strides %c20, %c20 : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.return
}

// -----

// LoadData starts at a fractal: a view offset of whole fractal columns.
buffer.kernel @l1_offset(%x: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %l0a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  buffer.copy %x to %l1 blocks %c16 x %c32 strides %c32, %c32 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  %lv = buffer.view %l1[%c8] : memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.copy: reads L1 at a view offset that is not a multiple of 16 elements; fractal reads start at multiples of 16 rows and one fractal column}}
  buffer.copy %lv to %l0a blocks %c16 x %c16 strides %c32, %c16 : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.return
}

// -----

// Fixpipe reads L0C with the mmad's n as its row stride.
buffer.kernel @fixpipe_stride(%y: memref<?xf32, #buffer.space<gm>>) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 0, num_outputs = 1} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0b>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 2048 -> memref<?xf32, #buffer.space<l0c>>
  buffer.mmad %acc, %a, %b, %c16, %c32, %c16, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  // expected-error @+1 {{buffer.copy: reads L0C with a row stride other than the mmad's n}}
  buffer.copy %acc to %y blocks %c16 x %c16 strides %c16, %c32 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
  buffer.return
}

// -----

// A UB copy that is not a 32-byte multiple is printed as Muls (x * 1), which takes f16, f32
// and i32.
buffer.kernel @ub_copy_i8() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %u = buffer.alloc_buf "veccalc" %nb max_bytes 64 -> memref<?xi8, #buffer.space<ub>>
  %u2 = buffer.alloc_buf "veccalc" %nb max_bytes 64 -> memref<?xi8, #buffer.space<ub>>
  // expected-error @+1 {{buffer.copy: a UB copy of i8 that is not a 32-byte multiple has no Ascend C form (DataCopy truncates, Muls does not take the type)}}
  buffer.copy %u to %u2 blocks %c1 x %c20 strides %c0, %c0 : memref<?xi8, #buffer.space<ub>> to memref<?xi8, #buffer.space<ub>>
  buffer.return
}

// -----

// Whether the L1 row stride is whole fractal columns is proven from the host code that
// computes it: the only launch of this kernel passes 48, a multiple of 16.
buffer.kernel @host_ok(%x: memref<?xf16, #buffer.space<gm>>, %s: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %l0a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  buffer.copy %x to %l1 blocks %c16 x %s strides %s, %s : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  buffer.copy %l1 to %l0a blocks %c16 x %s strides %s, %s : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.return
}

func.func @main(%x: tensor<?xf16>) {
  %s = arith.constant 48 : index
  buffer.launch @host_ok blocks(%s) (%x) tiling(%s) dims() : (tensor<?xf16>) -> ()
  func.return
}

// -----

// ... and this one passes 40.
buffer.kernel @host_bad(%x: memref<?xf16, #buffer.space<gm>>, %s: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aic", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  %nb = arith.constant 512 : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l1>>
  %l0a = buffer.alloc_buf "a2" %nb max_bytes 1024 -> memref<?xf16, #buffer.space<l0a>>
  buffer.copy %x to %l1 blocks %c16 x %s strides %s, %s : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.copy: the L1 row stride is not a multiple of 16 elements (one fractal column), so the matrix has no Nz layout there}}
  buffer.copy %l1 to %l0a blocks %c16 x %s strides %s, %s : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.return
}

func.func @main(%x: tensor<?xf16>) {
  %s = arith.constant 40 : index
  buffer.launch @host_bad blocks(%s) (%x) tiling(%s) dims() : (tensor<?xf16>) -> ()
  func.return
}
