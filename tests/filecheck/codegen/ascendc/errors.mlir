// RUN: afc-opt %s --verify-diagnostics

// An op Ascend C cannot express is one line naming the op: Cast has no half -> bfloat16_t
// pair on A2 (ascend.md 2.8). The verifier says so (plain afc-opt, no -t ascendc).

buffer.kernel @k() attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0} {
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %a = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>
  %b = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  // expected-error @+1 {{buffer.vcast: Cast from f16 to bf16 with round mode 'rint' is not an Ascend C Cast on Ascend910B1 (ascend.md 2.8)}}
  buffer.vcast %b, %a, %c8 round "rint" : memref<?xbf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>
  buffer.return
}
