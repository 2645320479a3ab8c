// RUN: afc-opt %s --verify-diagnostics

// CO1 -> CO2 (L0C -> UB on 910/310P) moves whole 16x16 fractals: the UB buffer it fills
// holds Nz fractals, which only a ub -> ub copy can read (the Nz -> ND reorder). A
// vector op reading it directly is one line naming the op, from the verifier (plain
// afc-opt, no -t ascendc: autofusion/dialects/ascendc_rules.py).

buffer.kernel @k() attributes {chip = "Ascend310P3", template = "test", core_type = "mix", num_inputs = 0, num_outputs = 0} {
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %nb = arith.constant 1024 : index
  %acc = buffer.alloc_buf "co1" %nb max_bytes 1024 -> memref<?xf32, #buffer.space<l0c>>
  %ub = buffer.alloc_buf "veccalc" %nb max_bytes 1024 -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %acc to %ub blocks %c16 x %c16 strides %c16, %c16 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vunary uses a UB buffer an l0c -> ub copy fills: CO1 -> CO2 leaves Nz fractals there}}
  buffer.vunary "relu" %ub, %ub, %c256 : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>
  buffer.return
}
