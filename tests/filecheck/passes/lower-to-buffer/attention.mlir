// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910},lower-to-buffer' | filecheck %s --check-prefix=A1

// Causal grouped-query attention (8 query heads, 2 key/value heads) with a key-padding
// mask [B, 1, 1, Skv] and a residual add, over a dynamic batch and query length.
// CHECK-LABEL: func.func @gqa_causal
// CHECK:         %[[B:.*]] = buffer.dim %q[0] : tensor<?x8x?x64xf16>
// CHECK:         %[[SQ:.*]] = buffer.dim %q[2] : tensor<?x8x?x64xf16>
// CHECK:         func.call @gqa_causal_kernel0_tiling(%[[B]], %c8, %c2, %[[SQ]], %c256)
// CHECK:         buffer.launch @gqa_causal_kernel0 blocks(%{{.*}}) (%q, %k, %v, %m, %x)

// On 910B, S and P@V (f32) and P (f16) cross between AIC and AIV through workspaces,
// each hand-over a cross-core flag (S ready 0, P ready 1, P@V ready 2); the two AIVs
// take half of each query block's rows each. The query block lives in L0A for a whole
// step; keys and values stream through L1.
// CHECK:       buffer.kernel @gqa_causal_kernel0({{.*}}) attributes {chip = "Ascend910B1", template = "attention", core_type = "mix"
// CHECK:         %sub = buffer.sub_block_idx
// CHECK:         %ws = buffer.workspace %ws_bytes : memref<?xf32, #buffer.space<gm>>
// CHECK:         %ws_p = buffer.workspace %wsp_bytes : memref<?xf16, #buffer.space<gm>>
// CHECK:         %q_l0a = buffer.alloc_buf "a2"
// CHECK:         %q_mask = buffer.alloc_queue %{{.*}} of i1 : !buffer.queue<vecin>
// CHECK:         %o_acc = buffer.alloc_buf "veccalc"
// CHECK:         %m_run = buffer.alloc_buf "veccalc"
// CHECK:         %l_run = buffer.alloc_buf "veccalc"
// The boolean mask becomes Compare's bitmask (cast to half, compare with zeros); the
// causal ramp ramp[r, j] = j - r is built once per core.
// CHECK:         %ramp = buffer.alloc_buf "veccalc"
// CHECK:         %zeros_h = buffer.alloc_buf "veccalc"
// CHECK:         buffer.stage "compute" {
// CHECK:           buffer.vdup %zeros_h
// CHECK:           scf.for %j = %c0 to %ts step %c1 {
// CHECK:         scf.for %step =
// CHECK:           buffer.stage "cube" {
// CHECK:             buffer.copy %q1_1 to %q_l0a blocks %nq x %c64 {{.*}} to memref<?xf16, #buffer.space<l0a>>
// CHECK:           buffer.vdup %m_run, %{{.*}}, %{{.*}}
// Key blocks before the diagonal need no causal mask ...
// CHECK:           scf.for %kv = %c0 to %[[UNMASKED:.*]] step %c1 {
// CHECK:             buffer.stage "cube" {
// CHECK:               buffer.copy %k1_1 to %k2 blocks %nkv x %c64 strides %c64, %nkv transpose true : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
// CHECK:               buffer.mmad %s, %q_l0a, %k2_1, %mmad_m{{(_[0-9]+)?}}, %nkv, %c64
// CHECK:               buffer.copy %s to %{{.*}} : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
// CHECK:               buffer.cross_core_set 0 from "aic" after "fix"
// CHECK:             buffer.cross_core_wait 0 on "aiv"
// CHECK:             buffer.stage "copy_in" {
// CHECK:               buffer.copy %{{.*}} to %mask blocks %c1 x %nkv strides %Skv, %ts : memref<?xi1, #buffer.space<gm>> to memref<?xi1, #buffer.space<ub>>
// CHECK:             buffer.stage "compute" {
// CHECK:               buffer.vcast %mask_h, %mask_1, %ts round "none"
// CHECK:               buffer.vcompare "ne" %cmp, %mask_h, %zeros_h
// CHECK:               buffer.vselect %{{.*}}, %cmp, %{{.*}}, %neg_inf, %ts
// CHECK:               buffer.vreduce "max"
// CHECK:               buffer.vbinary "max" %m_new, %m_run, %row_max
// CHECK:               buffer.vunary "exp" %alpha, %alpha
// CHECK:               buffer.vunary "exp" %s_ub_1, %s_ub_1
// CHECK:               buffer.vreduce "sum"
// CHECK:               buffer.vcast %p, %s_ub_1, %{{.*}} round "rint"
// CHECK:               buffer.copy %p_ub to %{{.*}} : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<gm>>
// CHECK:             buffer.cross_core_set 1 from "aiv" after "mte3"
// CHECK:             buffer.stage "cube" {
// CHECK:               buffer.cross_core_wait 1 on "aic"
// CHECK:               buffer.copy %{{.*}} to %p1 {{.*}} : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
// CHECK:               buffer.mmad %pv, %p2_1, %v2_1, %mmad_m{{(_[0-9]+)?}}, %c64, %nkv
// CHECK:             buffer.stage "compute" {
// CHECK:               buffer.vbinary "add" %o_acc, %o_acc
// ... blocks on the diagonal are masked where key > query; later blocks are skipped.
// CHECK:           scf.for %kv_1 = %[[UNMASKED]] to %{{.*}} step %c1 {
// CHECK:               buffer.vcompare "gt" %cmp, %ramp, %threshold
// CHECK:               buffer.vselect %s_ub_3, %cmp, %neg_inf, %s_ub_3
// Then out = O / l (a fully masked row, l = 0, gives 0) and the epilogue (the residual
// add) on this core's rows of the block.
// CHECK:           buffer.vscalar "maxs" %l_run, %l_run
// CHECK:           buffer.vunary "reciprocal" %l_run, %l_run
// CHECK:           buffer.stage "copy_in" {
// CHECK:           buffer.stage "compute" {
// CHECK:             buffer.vbinary "add"
// CHECK:           buffer.stage "copy_out" {
// CHECK:       func.func private @gqa_causal_kernel0_tiling(%B: index, %Hq: index, %Hkv: index, %Sq: index, %Skv: index)

// Ascend910 (coupled): no workspace, S and P@V leave L0C for UB (whole fractals into
// the c_ub stage, then laid out as rows), P goes UB -> L1; 910 has no Select with a
// tensor mask, so the causal and boolean masks are Min against +-inf bounds.
// A1-LABEL:    buffer.kernel @gqa_causal_kernel0
// A1-NOT:        buffer.workspace
// A1:            %c_ub = buffer.alloc_buf "veccalc"
// A1:            buffer.copy %s_c to %c_ub blocks %nq x %nkv strides %nkv, %c64 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
// A1:            buffer.copy %c_ub to %s_ub blocks %nq x %nkv strides %c64, %ts : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
// A1-NOT:        buffer.vselect
// A1:            buffer.vbinary "min"
// A1:            buffer.copy %p_ub to %p1 blocks %nq x %nkv strides %ts, %tkv : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<l1>>
// A1:            buffer.copy %pv_c to %c_ub blocks %nq x %c64 strides %c64, %c64 : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>
func.func @gqa_causal(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x256x64xf16>, %v: tensor<?x2x256x64xf16>, %m: tensor<?x1x1x256xi1>, %x: tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %r = graph.fusion_group (%qq = %q : tensor<?x8x?x64xf16>, %kk = %k : tensor<?x2x256x64xf16>, %vv = %v : tensor<?x2x256x64xf16>, %mm = %m : tensor<?x1x1x256xi1>, %xx = %x : tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
    %a = graph.flash_attention %qq, %kk, %vv, %mm {scale = 0.125, causal = true, layout = "BNSD"} : (tensor<?x8x?x64xf16>, tensor<?x2x256x64xf16>, tensor<?x2x256x64xf16>, tensor<?x1x1x256xi1>) -> tensor<?x8x?x64xf16>
    %y = graph.add %a, %xx : tensor<?x8x?x64xf16>
    graph.yield %y : tensor<?x8x?x64xf16>
  }
  func.return %r : tensor<?x8x?x64xf16>
}
