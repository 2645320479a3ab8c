// RUN: afc-opt %s -t ascendc | filecheck %s

// The cube path (ascend.md 2.10) of a hand-written kernel: GM -> L1 as Nz fractals
// (Nd2NzParams), L1 -> L0A (Zz) and L0B (Zn: each fractal transposed) with LoadData,
// Mmad into L0C (accumulating after the first K step), Fixpipe to GM with the f32 -> f16
// conversion and ReLU on the fly. TBufs are ordered with events between the MTE2, MTE1,
// M and FIX pipes.

// CHECK:       Nd2NzParams [[ND:nd2nzParams[0-9]*]];
// CHECK-NEXT:  [[ND]].ndNum = 1;
// CHECK-NEXT:  [[ND]].nValue = m;
// CHECK-NEXT:  [[ND]].dValue = k;
// CHECK-NEXT:  [[ND]].srcNdMatrixStride = 0;
// CHECK-NEXT:  [[ND]].srcDValue = k;
// CHECK-NEXT:  [[ND]].dstNzC0Stride = (m + 15) / 16 * 16;
// CHECK-NEXT:  [[ND]].dstNzNStride = 1;
// CHECK-NEXT:  [[ND]].dstNzMatrixStride = 0;
// CHECK-NEXT:  DataCopy(a1, aGm, [[ND]]);
// CHECK:       SetFlag<HardEvent::MTE2_MTE1>
// CHECK:       for (int64_t m1 = 0; m1 < (m + 15) / 16; ++m1) {
// CHECK-NEXT:      LoadData2DParams [[LA:loadParams[0-9]*]];
// CHECK-NEXT:      [[LA]].startIndex = m1;
// CHECK-NEXT:      [[LA]].repeatTimes = [[FA:fractals[0-9]*]];
// CHECK-NEXT:      [[LA]].srcStride = [[RA:srcFractalRows[0-9]*]];
// CHECK-NEXT:      [[LA]].ifTranspose = false;
// CHECK-NEXT:      LoadData(a2[m1 * [[FA]] * 256], a1, [[LA]]);
// CHECK:       [[LB:loadParams[0-9]*]].ifTranspose = true;
// CHECK-NEXT:  LoadData(b2[k1 * {{.*}} * 256], b1, [[LB]]);
// CHECK:       SetFlag<HardEvent::MTE1_M>
// CHECK:       MmadParams [[MM:mmadParams[0-9]*]];
// CHECK-NEXT:  [[MM]].m = afc::Max(m, 16);
// CHECK-NEXT:  [[MM]].n = n;
// CHECK-NEXT:  [[MM]].k = k;
// CHECK-NEXT:  [[MM]].cmatrixInitVal = true;
// CHECK-NEXT:  Mmad(co, a2, b2, [[MM]]);
// CHECK:       SetFlag<HardEvent::M_FIX>
// CHECK:       FixpipeParamsV220 [[FP:fixpipeParams[0-9]*]];
// CHECK-NEXT:  [[FP]].nSize = n;
// CHECK-NEXT:  [[FP]].mSize = m;
// CHECK-NEXT:  [[FP]].srcStride = 32;
// CHECK-NEXT:  [[FP]].dstStride = n;
// CHECK-NEXT:  [[FP]].reluEn = true;
// CHECK-NEXT:  [[FP]].quantPre = QuantMode_t::F322F16;
// CHECK-NEXT:  Fixpipe(cGm, co, [[FP]]);
// CHECK:       TBuf<QuePosition::A1> a1Buf;
// CHECK:       TBuf<QuePosition::A2> a2Buf;
// CHECK:       TBuf<QuePosition::CO1> coBuf;
// CHECK:       KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);

func.func @main(%a: tensor<32x64xf16>, %b: tensor<64x32xf16>) -> tensor<32x32xf16> {
  %one = arith.constant 1 : index
  %m = arith.constant 32 : index
  %n = arith.constant 32 : index
  %k = arith.constant 64 : index
  %c = buffer.launch @matmul_relu blocks(%one) (%a, %b) tiling(%m, %n, %k) dims() : (tensor<32x64xf16>, tensor<64x32xf16>) -> tensor<32x32xf16>
  func.return %c : tensor<32x32xf16>
}
buffer.kernel @matmul_relu(%a: memref<?xf16, #buffer.space<gm>>, %b: memref<?xf16, #buffer.space<gm>>, %c: memref<?xf16, #buffer.space<gm>>, %m: index, %n: index, %k: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 2, num_outputs = 1} {
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %false = arith.constant false
  %mk = arith.muli %m, %k : index
  %a_bytes = arith.muli %mk, %c2 : index
  %kn = arith.muli %k, %n : index
  %b_bytes = arith.muli %kn, %c2 : index
  %mn = arith.muli %m, %n : index
  %c_bytes = arith.muli %mn, %c4 : index
  %a1 = buffer.alloc_buf "a1" %a_bytes max_bytes 4096 -> memref<?xf16, #buffer.space<l1>>
  %b1 = buffer.alloc_buf "b1" %b_bytes max_bytes 4096 -> memref<?xf16, #buffer.space<l1>>
  %a2 = buffer.alloc_buf "a2" %a_bytes max_bytes 4096 -> memref<?xf16, #buffer.space<l0a>>
  %b2 = buffer.alloc_buf "b2" %b_bytes max_bytes 4096 -> memref<?xf16, #buffer.space<l0b>>
  %co = buffer.alloc_buf "co1" %c_bytes max_bytes 4096 -> memref<?xf32, #buffer.space<l0c>>
  buffer.copy %a to %a1 blocks %m x %k strides %k, %k : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  buffer.copy %b to %b1 blocks %k x %n strides %n, %n : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
  buffer.copy %a1 to %a2 blocks %m x %k strides %k, %k : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
  buffer.copy %b1 to %b2 blocks %k x %n strides %n, %n : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
  %mp = arith.maxsi %m, %c16 : index
  buffer.mmad %co, %a2, %b2, %mp, %n, %k, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  buffer.copy %co to %c blocks %m x %n strides %n, %n relu true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>
  buffer.return
}
