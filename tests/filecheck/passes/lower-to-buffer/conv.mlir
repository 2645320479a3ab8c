// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend310P3},lower-to-buffer' --verify-diagnostics | filecheck %s --check-prefix=P3
// The groups are planned for the module's one target, and lower-to-buffer lowers them
// for that target: no option gives it another chip (ub-fusion{chip=Ascend910B1},
// lower-to-buffer{chip=Ascend310P3} used to fail with "cannot lower fusion group").
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | afc-opt --split-input-file -p lower-to-buffer | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | not afc-opt --split-input-file -p 'set-target{chip=Ascend310P3},lower-to-buffer' 2>&1 | filecheck %s --check-prefix=ONE-TARGET
// RUN: not afc-opt %s --split-input-file -p 'ub-fusion{chip=Ascend910B1},lower-to-buffer{chip=Ascend310P3}' 2>&1 | filecheck %s --check-prefix=OLD-OPTIONS
// ONE-TARGET: afc-opt: error: chip Ascend310P3 contradicts the module's afc.target = #afc.target<"Ascend910B1">
// OLD-OPTIONS: afc-opt: error: ub-fusion{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before ub-fusion


// A conv with its folded-BN bias and ReLU (as graph-fusion leaves conv+bn+relu) over a
// dynamic batch: implicit GEMM [Cout x K] @ X_col [K x OH*OW] per image, K = (c, r, s).
// On a split chip the block's two AIVs build each output tile's X_col in a GM workspace
// slot (explicit im2col): a table of byte offsets (kh + kw rows of scalar writes, one
// i32 add per tap, a min that sends padding taps to a zero block), then per input
// channel (every other one each) its rows GM -> UB, one gather of all taps, UB -> GM;
// flag 2 hands the slot to the AIC, flag 3 gives it back. At step u they fill tile u's
// slot while the AIC computes tile u - 1 and they run its epilogue. The AIC loads X_col
// like a matmul's B (no LoadData3DV2 im2col), so the L0C tile [channels x pixels] is
// already NCHW. The bias is resident in UB, one value per row.
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK:         %[[N:.*]] = buffer.dim %x[0] : tensor<?x16x32x32xf16>
// CHECK:         func.call @conv_bias_relu_kernel0_tiling(%[[N]]) : (index)
// CHECK:       buffer.kernel @conv_bias_relu_kernel0({{.*}}, %ws_bytes: index, %ws_col_bytes: index) attributes {chip = "Ascend910B1", template = "conv", core_type = "mix"
// CHECK:         %ws = buffer.workspace %ws_bytes : memref<?xf32, #buffer.space<gm>>
// CHECK:         %ws_col = buffer.workspace %ws_col_bytes : memref<?xf16, #buffer.space<gm>>
// CHECK:         %q_a1 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<a1>
// CHECK:         %q_b1 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<b1>
// CHECK:         %q_c = buffer.alloc_queue %{{.*}} of f32 : !buffer.queue<co1>
// CHECK:         %q_fmap = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<vecin>
// CHECK:         %q_col = buffer.alloc_queue %{{.*}} buffers 2 max_bytes {{[0-9]+}} of f16 : !buffer.queue<vecout>
// CHECK:         %offsets = buffer.alloc_buf "veccalc" %{{.*}} max_bytes {{[0-9]+}} -> memref<?xi32, #buffer.space<ub>>
// CHECK:         %res0 = buffer.alloc_buf "veccalc" %c64 max_bytes 64 -> memref<?xf16, #buffer.space<ub>>
// CHECK:         buffer.copy %in2 to %res0 blocks %c1 x %c32
// CHECK:         scf.for %step =
// CHECK:             buffer.cross_core_wait 3 on "aiv"
// CHECK:             buffer.stage "compute" {
// CHECK:               scf.for %r = %c0 to %c3
// CHECK:                 buffer.set_value %offsets[%{{.*}}], %{{.*}} : memref<?xi32, #buffer.space<ub>>, i32
// CHECK:               scf.for %s = %c0 to %c3
// CHECK:                 buffer.set_value %offsets[%{{.*}}], %{{.*}} : memref<?xi32, #buffer.space<ub>>, i32
// CHECK:               scf.for %tap = %c0 to %c9
// CHECK:                 buffer.vbinary "add" {{.*}} : memref<?xi32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
// CHECK:               buffer.vscalar "mins" {{.*}} : memref<?xi32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>, i32
// CHECK:             %sub = buffer.sub_block_idx
// CHECK:               buffer.stage "copy_in" {
// CHECK:                 buffer.copy %{{.*}} to %fmap blocks %c1 x %{{.*}} : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<ub>>
// CHECK:               buffer.stage "compute" {
// CHECK:                 buffer.vdup %{{.*}}, %{{.*}}, %c16 : memref<?xf16, #buffer.space<ub>>, f32
// CHECK:                 buffer.vgather %cols, %fmap_1, %{{.*}}, %{{.*}} : memref<?xf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
// CHECK:               buffer.stage "copy_out" {
// CHECK:                 buffer.copy %cols_1 to %{{.*}} blocks %c9 x %ncols strides %tn, %tn : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK:             buffer.cross_core_set 2 from "aiv" after "mte3"
// CHECK:           %tile = arith.subi %step, %c1 : index
// CHECK:             buffer.stage "cube" {
// CHECK:               buffer.cross_core_wait 2 on "aic"
// CHECK:               scf.for %cs = %c0 to %c_stages step %c1 {
// CHECK:                 buffer.copy %{{.*}} to %a1 blocks %m{{.*}} x %{{.*}} strides %c144, %c144 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
// CHECK:                 buffer.copy %{{.*}} to %b1 blocks %{{.*}} x %ncols{{.*}} strides %tn, %tn : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
// CHECK:                 scf.for %kk =
// CHECK:                   buffer.copy %{{.*}} to %a2 {{.*}} : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
// CHECK-NOT:               buffer.im2col
// CHECK:                   buffer.copy %{{.*}} to %b2 {{.*}} : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
// CHECK:                   buffer.mmad %c, %a2_1, %b2_1
// CHECK:               buffer.cross_core_set 3 from "aic" after "mte2"
// CHECK:               buffer.copy %c to %{{.*}} : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
// CHECK:               buffer.cross_core_set 0 from "aic" after "fix"
// CHECK:             buffer.cross_core_wait 0 on "aiv"
// CHECK:             %sub_1 = buffer.sub_block_idx
// CHECK:                 buffer.stage "compute" {
// CHECK:                   buffer.vscalar "adds"
// CHECK:                   buffer.vunary "relu"
// CHECK:                 buffer.stage "copy_out" {
// CHECK:                   buffer.copy %{{.*}} blocks %nrows x %ncols{{.*}} strides %tile_stride, %c256 : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK:               buffer.cross_core_set 1 from "aiv" after "mte2"
// On 310P (coupled: one core, no workspace) the same core builds X_col in UB (its
// input rows staged in %fmap, every tap gathered through the offset table), copies it
// UB -> L1, and brings the result back L0C -> UB (CO2) for the epilogue.
// P3-LABEL:    buffer.kernel @conv_bias_relu_kernel0
// P3-SAME:       chip = "Ascend310P3", template = "conv", core_type = "mix"
// P3-NOT:        buffer.workspace
// P3:            %fmap = buffer.alloc_buf "veccalc"
// P3:            %xcol = buffer.alloc_buf "veccalc"
// P3:            %offsets = buffer.alloc_buf "veccalc"
// P3:            buffer.vgather %{{.*}}, %fmap
// P3:            buffer.copy %xcol to %b1 {{.*}} : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<l1>>
// P3-NOT:        buffer.im2col
// P3:            buffer.copy %{{.*}} to %c_ub {{.*}} : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
// P3:            buffer.copy %c_ub to %slot {{.*}} : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
func.func @conv_bias_relu(%x: tensor<?x16x32x32xf16>, %w: tensor<32x16x3x3xf16>, %b: tensor<32xf16>) -> tensor<?x32x16x16xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<?x16x32x32xf16>, %ww = %w : tensor<32x16x3x3xf16>, %bb = %b : tensor<32xf16>) -> tensor<?x32x16x16xf16> {
    %c = graph.conv2d %xx, %ww, %bb {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, activation = "relu"} : (tensor<?x16x32x32xf16>, tensor<32x16x3x3xf16>, tensor<32xf16>) -> tensor<?x32x16x16xf16>
    graph.yield %c : tensor<?x32x16x16xf16>
  }
  func.return %r : tensor<?x32x16x16xf16>
}

// -----

// A depthwise conv (group = channels, Cout/group = 1 row of 16 per cube tile) without
// bias or epilogue: on 910B the AIVs only gather X_col (the dilation and the padding
// are in their offset tables), and the AIC's Fixpipe applies the ReLU on its way to
// the NCHW output.
// CHECK-LABEL: buffer.kernel @depthwise_kernel0
// CHECK-SAME:    core_type = "mix"
// CHECK:         buffer.vgather
// CHECK:         buffer.cross_core_set 2 from "aiv" after "mte3"
// CHECK:         buffer.stage "cube" {
// CHECK:           buffer.cross_core_wait 2 on "aic"
// CHECK:           buffer.copy %c to %{{.*}} relu true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>
// CHECK-NOT:     buffer.cross_core_set 0
// 310P has no DataCopyPad: 1-channel weight rows of 9 f16 are not 32-byte multiples.
func.func @depthwise(%x: tensor<1x8x12x12xf16>, %w: tensor<8x1x3x3xf16>) -> tensor<1x8x12x12xf16> {
  // expected-error @+1 {{cannot lower fusion group depthwise_kernel0 (graph.fusion_group %r): the conv's weight rows (Cin/group*kh*kw) or input rows (W) are not 32-byte multiples and the chip has no DataCopyPad}}
  %r = graph.fusion_group (%xx = %x : tensor<1x8x12x12xf16>, %ww = %w : tensor<8x1x3x3xf16>) -> tensor<1x8x12x12xf16> {
    %c = graph.conv2d %xx, %ww {strides = [1, 1], pads = [2, 2, 2, 2], dilations = [2, 2], group = 8, activation = "relu"} : (tensor<1x8x12x12xf16>, tensor<8x1x3x3xf16>) -> tensor<1x8x12x12xf16>
    graph.yield %c : tensor<1x8x12x12xf16>
  }
  func.return %r : tensor<1x8x12x12xf16>
}
