// RUN: afc-opt %s -t ascendc | filecheck %s

// Mmads that accumulate into one L0C tile wait for each other with PipeBarrier<PIPE_M>
// when (m / 16) * (n / 16) < 10 (Mmad.md, 同步优化说明; the matmul library's
// mmad_compute.h tests it the same way): at run time when the sizes are runtime values,
// always for a static small tile, never for a static large one. The padded m prints as
// afc::Max(m, 16); the Fixpipe's Nz column height is still that of m's rows.

// CHECK:       int64_t mp = afc::Max(m, 16);
// CHECK-NEXT:  for (int64_t s = 0; s < steps; ++s) {
// CHECK-NEXT:      if ((mp / 16) * (n / 16) < 10) {
// CHECK-NEXT:          PipeBarrier<PIPE_M>();
// CHECK-NEXT:      }
// CHECK-NEXT:      MmadParams [[P1:mmadParams[0-9]*]];
// CHECK-NEXT:      [[P1]].m = mp;
// CHECK-NEXT:      [[P1]].n = n;
// CHECK-NEXT:      [[P1]].k = k;
// CHECK-NEXT:      [[P1]].cmatrixInitVal = !(s != 0);
// CHECK-NEXT:      Mmad(c, a2, b2, [[P1]]);
// CHECK-NEXT:  }
// CHECK:       FixpipeParamsV220 [[FP:fixpipeParams[0-9]*]];
// CHECK-NEXT:  [[FP]].nSize = n;
// CHECK-NEXT:  [[FP]].mSize = m;
// CHECK-NEXT:  [[FP]].srcStride = (m + 15) / 16 * 16;
// CHECK:       for (int64_t s2 = 0; s2 < steps; ++s2) {
// CHECK-NEXT:      PipeBarrier<PIPE_M>();
// CHECK-NEXT:      MmadParams [[P2:mmadParams[0-9]*]];
// CHECK-NEXT:      [[P2]].m = 48;
// CHECK-NEXT:      [[P2]].n = 32;
// CHECK:       for (int64_t s3 = 0; s3 < steps; ++s3) {
// CHECK-NEXT:      MmadParams [[P3:mmadParams[0-9]*]];
// CHECK-NEXT:      [[P3]].m = 64;
// CHECK-NEXT:      [[P3]].n = 64;
// CHECK-NOT:   PipeBarrier

buffer.kernel @k_loops(%y: memref<?xf32, #buffer.space<gm>>, %m: index, %n: index, %k: index, %steps: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "aic", num_inputs = 0 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %a2 = buffer.alloc_buf "a2" %c64 max_bytes 8192 -> memref<?xf16, #buffer.space<l0a>>
  %b2 = buffer.alloc_buf "b2" %c64 max_bytes 8192 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %c64 max_bytes 16384 -> memref<?xf32, #buffer.space<l0c>>
  %mp = arith.maxsi %m, %c16 : index
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.pipe_barrier "M" small_mmad(%mp, %n)
    buffer.mmad %c, %a2, %b2, %mp, %n, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.copy %c to %y blocks %m x %n strides %n, %n : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.pipe_barrier "M" small_mmad(%c48, %c32)
    buffer.mmad %c, %a2, %b2, %c48, %c32, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  scf.for %s = %c0 to %steps step %c1 {
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.pipe_barrier "M" small_mmad(%c64, %c64)
    buffer.mmad %c, %a2, %b2, %c64, %c64, %k, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
  }
  buffer.return
}
