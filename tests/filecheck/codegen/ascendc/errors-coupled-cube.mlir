// RUN: afc-opt %s -t ascendc --verify-diagnostics

// Cube kernels print on the coupled chips (910, 310P: coupled-cube.mlir); what still has
// no Ascend C form there is one line naming the op. buffer.im2col, the LoadData3DV2-style
// im2col of an NCHW map into L0B, is one: LoadData3DV2 expands an NC1HWC0 map with taps
// ordered (c1, kh, kw, c0) into a pixel-major matrix (and 910 has no LoadData3DV2). The
// conv template never emits it: coupled chips gather X_col in UB and copy it into L1.

buffer.kernel @k(%in: memref<?xf16, #buffer.space<gm>>) attributes {chip = "Ascend910", template = "test", core_type = "mix", num_inputs = 1, num_outputs = 0} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %nb = arith.constant 2048 : index
  %l1 = buffer.alloc_buf "b1" %nb max_bytes 2048 -> memref<?xf16, #buffer.space<l1>>
  %l0 = buffer.alloc_buf "b2" %nb max_bytes 2048 -> memref<?xf16, #buffer.space<l0b>>
  buffer.copy %in to %l1 blocks %c1 x %c64 strides %c0, %c0 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  // expected-error @+1 {{buffer.im2col: LoadData3DV2 expands an NC1HWC0 feature map with taps ordered (c1, kh, kw, c0)}}
  buffer.im2col %l0, %l1 fmap(%c1, %c4, %c16) pads(%c1, %c1) out_width %c16 pixels(%c0, %c16) k(%c0, %c3) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
  buffer.return
}
