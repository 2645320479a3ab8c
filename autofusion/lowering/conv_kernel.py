"""The `conv` template: a Conv2dOp (bias, activation, any group incl. depthwise, strides,
pads, dilations) plus an elementwise epilogue, as one implicit-GEMM cube kernel.

Per image n and group g the convolution is the GEMM

    out[n, g*Cog + co, p] = sum_k W[g*Cog + co, k] * X_col[k, p]     co < Cog = Cout/group
    k = (c, r, s) flattened (c < Cg = Cin/group), p = oh * OW + ow

with M = Cog output channels, N = OH*OW output pixels, K = Cg*kh*kw. The weight is the
left operand (GM -> L1 -> L0A as a plain [M x K] matrix: [Cout, Cg, kh, kw] is already
row-major [Cout x K]). The L0C tile is [channels x pixels], the NCHW output's own
layout, so the epilogue's [N*Cout x OH*OW] view and Fixpipe's ND output need no
transpose. How the right operand X_col [K x pixels] reaches L0B depends on the conv and
the chip:

* pointwise (1x1, unit strides, no padding): X_col is the input itself, [Cin x H*W] per
  image; its pixel tile is loaded like a matmul's B (GM -> L1 Nd2Nz -> L0B);
* split chips (910B), any other conv: an **explicit im2col** by the AIVs. LoadData3DV2,
  the cube's own im2col, reads an NC1HWC0 feature map, orders taps (c1, kh, kw, c0) and
  makes the pixels the rows of its result (L0A) or the K of it (L0B), so for an NCHW
  map it would need the map re-laid in NC1HWC0 (through GM: the AIV cannot write L1),
  the weight's K permuted to (c1, kh, kw, c0), and the pixel-major result transposed
  back to NCHW. Instead, for each output tile the block's two AIVs write the tile's
  X_col [K x tn] into a GM workspace slot (`ws_col`, two per block), every other
  input channel each: the channel's input rows GM -> UB (DataCopyPad), one `Gather`
  (`buffer.vgather`) picks every tap's pixels through a table of byte offsets (padding
  taps point at a zero block after the rows), UB -> GM. The AIC then loads the slot as
  it loads a pointwise conv's pixels: the standard GEMM path, no special load. The AIVs
  fill the next tile's slot while the AIC computes the current one: flag 2 (AIVs ->
  AIC, after MTE3) says a slot is written, flag 3 (AIC -> AIVs, after MTE2) that the
  AIC has read it (flags 0 and 1 hand the output tiles to the epilogue, cube_common);
* coupled chips (910, 310P), any other conv: the same explicit im2col on the one AI core
  (no workspace, no flags). Their LoadData3D (Load3Dv1; 910 has no Load3Dv2) has the
  same NC1HWC0 / tap order problems and 910 has no Nd2Nz into L1 from UB, so per L1
  stage of cstep channels the vector unit builds X_col [cstep*kh*kw x tn] in UB: each
  channel's input rows GM -> UB, every tap's pixels gathered through the tile's offset
  table (`buffer.vgather` on 310P, whose AI Core has Gather; the scalar unit on 910,
  which has none), then the block UB -> L1 as fractal strips (DataCopy, docs/codegen.md)
  and L1 -> L0B like a pointwise conv's pixels. The result comes back L0C -> UB
  (CO1 -> CO2, cube_common.copy_l0c_rows_to_co2) for the epilogue.

The offset table of a tile (built per tile by each AIV, i32): for tap (r, s) and pixel j
of the tile, with (oh, ow) = divmod(p0 + j, OW), ih = oh*sh + r*dh - pt and
iw = ow*sw + s*dw - pl,

    table[r*kw + s][j] = min(row[r][j] + col[s][j], Z*w)
    row[r][j] = (ih - a)*W*w if 0 <= ih < H and j < ncols, else Z*w
    col[s][j] = iw*w if 0 <= iw < W, else Z*w

(a: the first staged input row, Z = round_up(h_stage*W, 32 B / w): the zero block's
element offset in the staged channel): kh + kw rows of scalar writes and two vector ops
instead of kh*kw rows of scalar work.

Tiling (static bounds from the chip, runtime values from `conv_tiling`):

    tm  = min(baseM, round16(Cog)); mt = ceil(Cog / tm)
    tn  = min(baseN, round16(ceil(P / clamp(ceil(cores / (N*group*mt)), 1, ceil(P/16)))))
    pt  = ceil(P / tn);  tk = min(baseK, round16(K))
    an L1 stage holds cstep whole channels: the weight block [tm x cstep*kh*kw] and
    * pointwise / any im2col: the [cstep*kh*kw x tn] block of X_col, rows padded to 16:
        2*tm*round16(cstep*kh*kw)*w + 2*round16(cstep*kh*kw)*tn*w <= L1
    * a pixel tile needs rows_out = min(OH, (tn-1) // OW + 2) output rows -> h_stage =
      min(H, (rows_out-1)*sh + (kh-1)*dh + 1) input rows of W elements per channel
    2*tm*tk*w <= L0A,  2*tk*tn*w <= L0B,  tm*tn*4 <= L0C
    the explicit im2col's UB (2 staged channels, 2 X_col blocks [kh*kw x tn], the i32
    tables) takes at most half the UB; the epilogue plans with the rest
    coupled chips: one staged channel, the X_col block [cstep*kh*kw x tn] and the
    tables take at most half the UB (this bounds cstep), the epilogue the rest
    tiles = N * group * mt * pt (pixels fastest); blocks = min(tiles, cores)
    ws_col = blocks * 2 * K * tn * w bytes (explicit im2col)

For a pixel tile [p0, p0+ncols) the staged input rows are [a, a+h) with
    oh0 = p0 // OW, oh1 = (p0+ncols-1) // OW,  a = max(oh0*sh, pt) - pt,
    h = min(H+pt, max(oh1*sh+(kh-1)*dh+1, pt+a)) - pt - a
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from xdsl.builder import Builder
from xdsl.ir import SSAValue

from autofusion.dialects.group_plan import TilingValue
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.conv_cost import conv_cost
from autofusion.lowering.conv_emit import emit_conv_kernel
from autofusion.lowering.conv_host import conv_launch, conv_tiling_function
from autofusion.lowering.conv_plan import ConvPlan, plan_conv
from autofusion.lowering.conv_tiling import conv_footprint
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.recorded_tiling import EPILOGUE_TILE
from autofusion.lowering.template import GroupParts, HostLaunch, KernelCost, KernelTemplate, Lowered
from autofusion.passes.fusion_rule import Refusal


class ConvTemplate(KernelTemplate[ConvPlan]):
    """A Conv2dOp and its elementwise epilogue as one implicit-GEMM cube kernel; the
    concerns live in conv_plan, conv_tiling, conv_cost, conv_emit and conv_host."""

    name = "conv"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> ConvPlan | Refusal:
        return plan_conv(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> ConvPlan | Refusal:
        return plan_conv(parts, chip, tiling)

    def tiling(self, plan: ConvPlan) -> dict[str, TilingValue]:
        rows = {EPILOGUE_TILE: plan.rows.max_tile_elems} if plan.rows is not None else {}
        return {**asdict(plan.tiles), **rows}

    def footprint(self, plan: ConvPlan, chip: ChipSpec) -> dict[str, int]:
        cube = conv_footprint(plan.geometry, plan.tiles, byte_width(plan.in_elt))
        return {**cube, "ub": self.cost(plan, chip).ub_bytes}

    def cost(self, plan: ConvPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        return conv_cost(plan, chip, dims)

    def lower(self, plan: ConvPlan, name: str, chip: ChipSpec) -> Lowered:
        kernel, emitter = emit_conv_kernel(plan, name, chip)
        tiling = conv_tiling_function(plan, name, chip)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: ConvPlan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        return conv_launch(plan, b, idx, outside)
