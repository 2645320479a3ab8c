// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910},lower-to-buffer' | filecheck %s --check-prefix=A1

// matmul + bias + GELU over a dynamic number of rows: one cube kernel. The host reads M
// and calls the tiling function with (M, N, K).
// CHECK-LABEL: func.func @bias_gelu
// CHECK:         %[[M:.*]] = buffer.dim %x[0] : tensor<?x256xf16>
// CHECK:         func.call @bias_gelu_kernel0_tiling(%[[M]], %c512, %c256)
// CHECK:         buffer.launch @bias_gelu_kernel0 blocks(%{{.*}}) (%x, %w, %b)

// The cube path: A and B stages in L1 (double buffered), L0A/L0B tiles, an f32 L0C
// accumulator; then, on 910B (split), Fixpipe to a per-core GM workspace that the two
// AIVs of each AIC read back in row chunks for the vector epilogue (every other chunk
// per sub-block), with cross-core flags for a written tile (0) and a freed slot (1).
// CHECK:       buffer.kernel @bias_gelu_kernel0(%in0: memref<?xf16, #buffer.space<gm>>, %in1: memref<?xf16, #buffer.space<gm>>, %in2: memref<?xf16, #buffer.space<gm>>, %out0: memref<?xf16, #buffer.space<gm>>, %M: index, %N: index, %K: index, %tm: index, %tn: index, %tk: index, %kl1: index, %mt: index, %nt: index, %k_stages: index, %tiles: index, %per_core: index, %tile_stride: index, %er: index, %ws_bytes: index, %group_m: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix"
// CHECK:         %ws = buffer.workspace %ws_bytes : memref<?xf32, #buffer.space<gm>>
// CHECK:         %q_a1 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 65536 of f16 : !buffer.queue<a1>
// CHECK:         %q_b1 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 131072 of f16 : !buffer.queue<b1>
// CHECK:         %q_a2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 16384 of f16 : !buffer.queue<a2>
// CHECK:         %q_b2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 32768 of f16 : !buffer.queue<b2>
// CHECK:         %q_c = buffer.alloc_queue %{{.*}} buffers 1 max_bytes 131072 of f32 : !buffer.queue<co1>
// CHECK:         %q_in0 = buffer.alloc_queue %{{.*}} of f32 : !buffer.queue<vecin>
// CHECK:         scf.for %tile =
// CHECK:           buffer.stage "cube" {
// CHECK:             scf.for %ks = %c0 to %k_stages step %c1 {
// CHECK:               buffer.copy %{{.*}} to %a1 blocks %m x %{{.*}} strides %K, %kl1 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
// CHECK:               buffer.copy %{{.*}} to %b1 blocks %{{.*}} x %ncols strides %N, %tn : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
// CHECK:               scf.for %kk =
// CHECK:                 buffer.copy %{{.*}} to %a2 {{.*}} : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
// CHECK:                 buffer.copy %{{.*}} to %b2 {{.*}} : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
// CHECK:                 %acc = arith.cmpi ne
// The Mmad's m is padded to 16 (m = 1 would read L0A as a GEMV row), and an Mmad that
// accumulates waits for the previous one on a small tile (PipeBarrier<PIPE_M>).
// CHECK-NEXT:            %mmad_m = arith.maxsi %m, %c16 : index
// CHECK-NEXT:            buffer.pipe_barrier "M" small_mmad(%mmad_m, %ncols)
// CHECK-NEXT:            buffer.mmad %c, %a2_1, %b2_1, %mmad_m, %ncols, %{{.*}}, %acc
// CHECK:             scf.if %{{.*}} {
// CHECK-NEXT:          buffer.cross_core_wait 1 on "aic"
// CHECK:             buffer.copy %c to %{{.*}} blocks %m x %ncols strides %ncols, %tn : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
// CHECK:             buffer.cross_core_set 0 from "aic" after "fix"
// CHECK:           buffer.cross_core_wait 0 on "aiv"
// CHECK:           %sub = buffer.sub_block_idx
// CHECK:             scf.for %chunk =
// CHECK:               buffer.stage "copy_in" {
// CHECK:                 buffer.copy %{{.*}} to %slot blocks %nrows x %ncols strides %tn, %tile_stride : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
// CHECK:               buffer.stage "compute" {
// CHECK:                 buffer.vunary "exp"
// CHECK:                 buffer.vcast %y, %{{.*}} round "rint"
// CHECK:               buffer.stage "copy_out" {
// CHECK:                 buffer.copy %{{.*}} to %{{.*}} blocks %nrows x %ncols strides %tile_stride, %N : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK:           scf.if %{{.*}} {
// CHECK-NEXT:        buffer.cross_core_set 1 from "aiv" after "mte2"
// CHECK:       func.func private @bias_gelu_kernel0_tiling(%M: index, %N: index, %K: index)

// Ascend910 (coupled): no workspace; L0C -> UB (CO2 is UB) into the c_ub stage, whose
// Nz fractals the epilogue's copy-in lays out as rows (ub -> ub).
// A1-LABEL:    buffer.kernel @bias_gelu_kernel0
// A1-NOT:        buffer.workspace
// A1:            %c_ub = buffer.alloc_buf "veccalc"
// A1:            %c_out = buffer.deque %q_c
// A1:            buffer.copy %{{.*}} to %c_ub blocks %nrows x %ncols strides %ncols, %tn : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
// A1:            buffer.copy %c_ub to %slot blocks %nrows x %ncols strides %tn, %tile_stride : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
// A1:            buffer.queue_free %q_c, %c_out
func.func @bias_gelu(%x: tensor<?x256xf16>, %w: tensor<256x512xf16>, %b: tensor<512xf16>) -> tensor<?x512xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<?x256xf16>, %ww = %w : tensor<256x512xf16>, %bb = %b : tensor<512xf16>) -> tensor<?x512xf16> {
    %m = graph.matmul %xx, %ww, %bb : (tensor<?x256xf16>, tensor<256x512xf16>, tensor<512xf16>) -> tensor<?x512xf16>
    %y = graph.gelu %m {approximate = "tanh"} : tensor<?x512xf16>
    graph.yield %y : tensor<?x512xf16>
  }
  func.return %r : tensor<?x512xf16>
}

// -----

// A transposed gemm with ReLU and nothing after it: on 910B a cube-only kernel whose
// Fixpipe applies ReLU and casts to f16 on the way to GM; B^T is loaded with transpose.
// CHECK-LABEL: buffer.kernel @gemm_relu_kernel0
// CHECK-SAME:    core_type = "aic"
// CHECK-NOT:     vecin
// CHECK:         buffer.copy %{{.*}} to %b2 blocks %ncols x %{{.*}} strides %kl1, %ncols transpose true : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
// CHECK:         buffer.mmad
// CHECK:         buffer.copy %c to %{{.*}} blocks %m x %ncols strides %ncols, %N relu true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>
// A1-LABEL:    buffer.kernel @gemm_relu_kernel0
// A1-SAME:       core_type = "mix"
// A1:            buffer.vunary "relu"
func.func @gemm_relu(%a: tensor<64x128xf16>, %b: tensor<96x128xf16>) -> tensor<64x96xf16> {
  %r = graph.fusion_group (%aa = %a : tensor<64x128xf16>, %bb = %b : tensor<96x128xf16>) -> tensor<64x96xf16> {
    %y = graph.gemm %aa, %bb {trans_a = false, trans_b = true, alpha = 1.0, beta = 1.0, activation = "relu"} : (tensor<64x128xf16>, tensor<96x128xf16>) -> tensor<64x96xf16>
    graph.yield %y : tensor<64x96xf16>
  }
  func.return %r : tensor<64x96xf16>
}

// -----

// Decode-sized (M = 4, one M tile): each band of the weight is read once, so the kernel
// reads it past L2 (l2_bypass names GM input 1, lowering/l2_hint.py); x, a graph input
// re-read for every N tile, uses L2. Ascend910 has no L2 cache hint.
// CHECK-LABEL: buffer.kernel @decode_kernel0
// CHECK-SAME:    l2_bypass = [1 : i64]
// A1-LABEL:    buffer.kernel @decode_kernel0
// A1-NOT:        l2_bypass
func.func @decode(%x: tensor<4x256xf16>) -> tensor<4x512xf16> {
  %w = graph.constant dense<0.5> : tensor<256x512xf16>
  %r = graph.fusion_group (%xx = %x : tensor<4x256xf16>, %ww = %w : tensor<256x512xf16>) -> tensor<4x512xf16> {
    %y = graph.matmul %xx, %ww : (tensor<4x256xf16>, tensor<256x512xf16>) -> tensor<4x512xf16>
    graph.yield %y : tensor<4x512xf16>
  }
  func.return %r : tensor<4x512xf16>
}

// -----

// No bypass: M = 256 is two M tiles (each B band is read twice, the second time from
// L2); a weight two kernels read (the second would find it in L2); a weight that is a
// function argument (an earlier launch may have left it dirty in L2).
// CHECK-LABEL: buffer.kernel @no_bypass_kernel0
// CHECK-NOT:     l2_bypass
// CHECK-LABEL: buffer.kernel @no_bypass_kernel1
// CHECK-NOT:     l2_bypass
// CHECK-LABEL: buffer.kernel @no_bypass_kernel2
// CHECK-NOT:     l2_bypass
// CHECK-LABEL: buffer.kernel @no_bypass_kernel3
// CHECK-NOT:     l2_bypass
func.func @no_bypass(%x: tensor<256x256xf16>, %v: tensor<4x256xf16>, %w2: tensor<256x512xf16>) -> (tensor<256x512xf16>, tensor<4x512xf16>, tensor<4x512xf16>, tensor<4x512xf16>) {
  %w = graph.constant dense<0.5> : tensor<256x512xf16>
  %r0 = graph.fusion_group (%xx = %x : tensor<256x256xf16>, %ww = %w : tensor<256x512xf16>) -> tensor<256x512xf16> {
    %y = graph.matmul %xx, %ww : (tensor<256x256xf16>, tensor<256x512xf16>) -> tensor<256x512xf16>
    graph.yield %y : tensor<256x512xf16>
  }
  %r1 = graph.fusion_group (%vv = %v : tensor<4x256xf16>, %ww = %w : tensor<256x512xf16>) -> tensor<4x512xf16> {
    %y = graph.matmul %vv, %ww : (tensor<4x256xf16>, tensor<256x512xf16>) -> tensor<4x512xf16>
    graph.yield %y : tensor<4x512xf16>
  }
  %r2 = graph.fusion_group (%vv = %v : tensor<4x256xf16>, %ww = %w : tensor<256x512xf16>) -> tensor<4x512xf16> {
    %y = graph.matmul %vv, %ww : (tensor<4x256xf16>, tensor<256x512xf16>) -> tensor<4x512xf16>
    graph.yield %y : tensor<4x512xf16>
  }
  %r3 = graph.fusion_group (%vv = %v : tensor<4x256xf16>, %ww = %w2 : tensor<256x512xf16>) -> tensor<4x512xf16> {
    %y = graph.matmul %vv, %ww : (tensor<4x256xf16>, tensor<256x512xf16>) -> tensor<4x512xf16>
    graph.yield %y : tensor<4x512xf16>
  }
  func.return %r0, %r1, %r2, %r3 : tensor<256x512xf16>, tensor<4x512xf16>, tensor<4x512xf16>, tensor<4x512xf16>
}
