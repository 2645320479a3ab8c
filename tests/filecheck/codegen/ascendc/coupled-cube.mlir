// RUN: afc-opt %s -p 'set-target{chip=Ascend910},ub-fusion,lower-to-buffer' -t ascendc | filecheck %s --check-prefixes=CHECK,A910
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},ub-fusion,lower-to-buffer' -t ascendc | filecheck %s --check-prefixes=CHECK,P310


// Cube kernels on the coupled chips (910, 310P: one AI Core, CO2 is UB, ascend.md 1.7).
// The product leaves L0C by CO1 -> CO2: DataCopy with DataCopyEnhancedParams in
// BLOCK_MODE_MATRIX, whose blockLen counts 16x16 fractals, one call per fractal column
// of a chunk of rows; the fractals land in UB as Nz (the c_ub stage) and the epilogue's
// CopyIn lays them out as rows, one strided DataCopy per fractal column. No Fixpipe,
// no workspace, no cross-core flags, no DataCopyPad.

// CHECK-LABEL: op_kernel/mlp_kernel0.cpp
// CHECK:       void Process()
// CHECK:           LocalTensor<float> c_out = q_c.DeQue<float>();
// CHECK:               DataCopyEnhancedParams [[E:co2Enhanced[0-9]*]];
// CHECK-NEXT:          [[E]].blockMode = BlockMode::BLOCK_MODE_MATRIX;
// CHECK-NEXT:          int64_t [[ROW:row0[0-9]*]] = ({{.*}}) / ncols;
// CHECK-NEXT:          DataCopyParams [[P:co2Params[0-9]*]]{1, static_cast<uint16_t>((nrows + 15) / 16), 0, 0};
// CHECK-NEXT:          for (int64_t [[J:j[0-9]*]] = 0; [[J]] < (ncols + 15) / 16; ++[[J]]) {
// CHECK-NEXT:              DataCopy(c_ub[[[J]] * ((nrows + 15) / 16 * 16) * 16], c_out[([[J]] * ((m + 15) / 16 * 16) + [[ROW]]) * 16], [[P]], [[E]]);
// CHECK:       void CopyIn(int64_t nrows, int64_t ncols)
// CHECK:           for (int64_t [[K:j[0-9]+]] = 0; [[K]] < (ncols + 15) / 16; ++[[K]]) {
// CHECK:               DataCopyParams [[ND:nz2ndParams[0-9]*]]{static_cast<uint16_t>(nrows), blockLen, 0, static_cast<uint16_t>({{.*}} - blockLen)};
// CHECK-NEXT:          DataCopy(slot[[[K]] * 16], c_ub[[[K]] * ((nrows + 15) / 16 * 16) * 16], [[ND]]);
// CHECK-NOT:   Fixpipe
// CHECK:       TBuf<QuePosition::VECCALC> c_ubBuf;
// CHECK:       KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AICORE);

// A 3x3 conv: per L1 stage of input channels the core stages each channel's rows in
// UB and gathers every tap's pixels through the tile's offset table: with Gather on
// 310P (its AI Core has it), with GetValue/SetValue on 910 (no Gather there); the
// X_col block goes UB -> L1 as C0-wide strips (1001/2002 have no Nd2Nz from UB).

// CHECK-LABEL: op_kernel/conv_kernel1.cpp
// CHECK:       void Cube(
// CHECK:               DataCopy(fmap, in0Gm[{{.*}}], h_rows * 16);
// P310:            Gather(xcol[ch * [[N:v[0-9]+]]], fmap, [[T:v[0-9]+]].ReinterpretCast<uint32_t>(), 0, [[N]]);
// A910:            for (int64_t e = 0; e < [[N:v[0-9]+]]; ++e) {
// A910-NEXT:           int32_t [[O:v[0-9]+]] = [[T:v[0-9]+]].GetValue(e);
// A910-NEXT:           half [[V:v[0-9]+]] = fmap.GetValue(static_cast<int64_t>([[O]]) / 2);
// A910-NEXT:           [[C:v[0-9]+]].SetValue(e, [[V]]);
// CHECK:           for (int64_t strip = 0; strip < (ncols + 15) / 16; ++strip) {
// CHECK-NEXT:          DataCopyParams stripParams{static_cast<uint16_t>([[R:v[0-9]+]]), 1, 0, 0};
// CHECK-NEXT:          DataCopy(b1[strip * (([[R]] + 15) / 16 * 16) * 16], xcol[strip * 16], stripParams);
// CHECK:       KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AICORE);

func.func @mlp(%x: tensor<40x64xf16>, %w: tensor<64x64xf16>) -> tensor<40x64xf16> {
  %m = graph.matmul %x, %w : (tensor<40x64xf16>, tensor<64x64xf16>) -> tensor<40x64xf16>
  %y = graph.relu %m : tensor<40x64xf16>
  func.return %y : tensor<40x64xf16>
}

func.func @conv(%x: tensor<1x16x8x16xf16>, %w: tensor<32x16x3x3xf16>) -> tensor<1x32x8x16xf16> {
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x16x8x16xf16>, tensor<32x16x3x3xf16>) -> tensor<1x32x8x16xf16>
  %y = graph.relu %c : tensor<1x32x8x16xf16>
  func.return %y : tensor<1x32x8x16xf16>
}
