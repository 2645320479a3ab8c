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
  (CO1 -> CO2, cube_common.co2_copy) for the epilogue.

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

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import ClassVar, Generic, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, f32, i32
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering import matmul_kernel
from autofusion.lowering.cube_common import (
    FRACTAL,
    CubeKernel,
    activation_of,
    await_slot,
    await_tile,
    blended_transfer,
    chunk_loop,
    co2_copy,
    co2_stage,
    co2_stage_bytes,
    concrete,
    cube_dtype_refusal,
    elt,
    emit_fitting,
    epilogue_io,
    epilogue_ub,
    epilogue_unique_read,
    epilogue_work,
    free,
    load,
    max_epilogue_cols,
    mmad_step,
    output_dims,
    plan_epilogue,
    pseudo_value,
    root_emitter,
    round_up,
    runtime_dim,
    shape,
    slot_read,
    split_group,
    sub_blocks,
    tile_written,
    width,
)
from autofusion.lowering.index_expr import IndexOps, IntOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.recorded_tiling import (
    EPILOGUE_TILE,
    fractal_refusal,
    overflow,
    take_row_tile,
    take_tiles,
)
from autofusion.lowering.row_kernel import RowKernel
from autofusion.lowering.row_plan import RowPlan
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import (
    GroupParts,
    HostLaunch,
    KernelCost,
    KernelTemplate,
    Lowered,
    Plan,
)
from autofusion.passes.fusion_rule import Refusal

V = TypeVar("V")

# Cross-core flags of the explicit im2col (flags 0 and 1 hand output tiles to the
# epilogue, cube_common): the AIVs say a tile's X_col slot is written, the AIC that it
# has read one; two slots per block
COL_READY, COL_FREE = 2, 3
COL_SLOTS = 2


@dataclass(frozen=True)
class ConvGeometry:
    """The static shape of one convolution."""

    c: int  # input channels
    h: int
    w: int
    co: int  # output channels
    cg: int  # input channels per group
    kh: int
    kw: int
    group: int
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilations: tuple[int, int]
    oh: int
    ow: int

    @property
    def cog(self) -> int:
        return self.co // self.group

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def k(self) -> int:
        return self.cg * self.taps

    @property
    def pixels(self) -> int:
        return self.oh * self.ow

    @property
    def pointwise(self) -> bool:
        """A 1x1 conv with unit strides and no padding: per image the plain GEMM
        W [Cout x Cin] @ X [Cin x H*W], whose pixel tiles are contiguous in GM (no
        im2col: the input block is loaded into L0B like a matmul's B)."""
        return (self.kh, self.kw) == (1, 1) and self.strides == (1, 1) and not any(self.pads)

    def b1_elems(self, cstep: int, tn: int) -> int:
        """Elements of one L1 input stage: the [cstep*kh*kw x tn] block of X_col (the
        input's pixels when pointwise) with its rows padded to a fractal."""
        return round_up(cstep * self.taps, FRACTAL) * tn

    def stage_rows(self, tn: int) -> int:
        """Input rows an L1 stage holds for a pixel tile of at most tn pixels."""
        rows_out = min(self.oh, (tn - 1) // self.ow + 2)
        span = (rows_out - 1) * self.strides[0] + (self.kh - 1) * self.dilations[0] + 1
        return min(self.h, span)

    def zero_at(self, h_stage: int, w: int) -> int:
        """Element offset of the zero block after a staged input channel (explicit
        im2col): the staged rows rounded up to 32 bytes."""
        return round_up(h_stage * self.w, 32 // w)

    def local_ub(self, tn: int, cstep: int, w: int) -> int:
        """UB bytes of the coupled chips' im2col (module docstring): a staged input
        channel (rows and zero block), the X_col block [cstep*kh*kw x tn] of an L1 stage
        and the i32 offset tables."""
        h_stage = self.stage_rows(tn)
        staged = round_up((self.zero_at(h_stage, w) + 32 // w) * w, 32)
        cols = round_up(cstep * self.taps * tn * w, 32)
        tables = round_up((self.kh + self.kw + self.taps) * tn * 4, 32)
        return staged + cols + tables

    def im2col_ub(self, tn: int, w: int) -> int:
        """UB bytes of the explicit im2col: two staged channels (rows and zero block),
        two X_col blocks [kh*kw x tn] and the i32 offset tables."""
        h_stage = self.stage_rows(tn)
        staged = round_up((self.zero_at(h_stage, w) + 32 // w) * w, 32)
        cols = round_up(self.taps * tn * w, 32)
        tables = round_up((self.kh + self.kw + self.taps) * tn * 4, 32)
        return 2 * staged + 2 * cols + tables


@dataclass(frozen=True)
class ConvTiles:
    tm: int
    tn: int
    tk: int
    cstep: int  # channels per L1 stage
    h_stage: int  # input rows per L1 stage (bound)
    c_depth: int
    explicit: bool = False  # X_col built by the AIVs in a GM workspace
    local: bool = False  # X_col built in UB and copied into L1 on the same core (coupled)

    def b1_elems(self, g: ConvGeometry) -> int:
        return g.b1_elems(self.cstep, self.tn)

    def kst(self, g: ConvGeometry) -> int:
        """Row stride of the L1 weight stage (its K extent, padded to a fractal)."""
        return round_up(self.cstep * g.taps, FRACTAL)


def choose_conv_tiles(
    g: ConvGeometry,
    chip: ChipSpec,
    w: int,
    max_cols: int | None,
    whole_k: bool,
    explicit: bool = False,
    local: bool = False,
) -> ConvTiles | Refusal:
    """The largest tiles that fit L0A/L0B/L0C and an L1 stage of at least one channel
    (`whole_k`: chips without DataCopyPad copy whole 32-byte weight rows, so a stage is
    all Cg channels or a number of them whose kh*kw taps are a 32-byte multiple;
    `explicit`: X_col comes from a GM workspace; `local`: X_col is built in UB, whose
    half it may take, module docstring)."""
    # no tile larger than the problem: a depthwise conv (Cog = 1) keeps wide pixel tiles
    max_m = round_up(g.cog, FRACTAL)
    max_n = round_up(g.pixels, FRACTAL)
    # the matmul template's candidates, read at call time (tests force small ones)
    candidates = matmul_kernel.MN_CANDIDATES
    clamped = dict.fromkeys((min(tm, max_m), min(tn, max_n)) for tm, tn in candidates)
    for tm, tn in clamped:
        if (max_cols is not None and tn > max_cols) or tm * tn * 4 > chip.l0c_bytes:
            continue
        for tk in matmul_kernel.K_CANDIDATES:
            if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                continue
            h_stage = g.stage_rows(tn)
            # weight [tm x channels*taps] and X_col [channels*taps x tn], K padded to 16
            per_channel = 2 * tn * g.taps * w + 2 * tm * g.taps * w
            reserve = 2 * tm * FRACTAL * w + 2 * (FRACTAL - 1) * tn * w
            fit = (chip.l1_bytes - reserve) // max(per_channel, 1)
            cstep = min(g.cg, fit)
            if local:  # the stage's X_col block in UB
                room = chip.ub_bytes // 2 - g.local_ub(tn, 0, w)
                cstep = min(cstep, room // (g.taps * tn * w))
            if whole_k and cstep < g.cg:
                unit = 32 // math.gcd(g.taps * w, 32)
                cstep = cstep // unit * unit
            if cstep < 1:
                continue
            depth = 2 if 2 * tm * tn * 4 <= chip.l0c_bytes else 1
            t = ConvTiles(tm, tn, tk, cstep, h_stage, depth, explicit, local)
            if 2 * tm * t.kst(g) * w + 2 * t.b1_elems(g) * w <= chip.l1_bytes:
                return t
    if max_cols is not None and max_cols < FRACTAL:
        return Refusal("the epilogue's buffers do not fit UB for even 16 output pixels")
    return Refusal(
        f"L1 of {chip.name} cannot stage one channel of {g.h}x{g.w} input rows with a "
        "16x16 fractal tile"
    )


@dataclass
class ConvPlan(Plan):
    template: ClassVar[str] = "conv"
    parts: GroupParts
    root: Operation
    epilogue: list[Operation]
    geometry: ConvGeometry
    bias: SSAValue | None
    bias_rows: SSAValue | None  # the bias as a [Cout, 1, 1] value of the epilogue view
    tiles: ConvTiles
    direct: bool
    l0c_to_ub: bool
    ws_elt: Attribute | None
    rows: RowPlan | None
    raw: SSAValue | None

    @property
    def ops(self) -> list[Operation]:
        """The group's ops (root and epilogue), in program order."""
        return self.parts.ops

    @property
    def x(self) -> SSAValue:
        return self.root.operands[0]

    @property
    def weight(self) -> SSAValue:
        return self.root.operands[1]

    @property
    def in_elt(self) -> Attribute:
        return elt(self.x)

    @property
    def explicit(self) -> bool:
        """X_col is built by the AIVs in a GM workspace (module docstring)."""
        return self.tiles.explicit

    @property
    def local(self) -> bool:
        """X_col is built in UB and copied into L1 on the same core (coupled chips)."""
        return self.tiles.local


PARAMS = (
    "N",
    "tm",
    "tn",
    "tk",
    "mt",
    "pt",
    "c_stages",
    "tiles",
    "per_core",
    "tile_stride",
    "er",
    "ws_bytes",
    "ws_col_bytes",
)


@dataclass
class ConvTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


def conv_tiling(
    ops: IndexOps[V],
    n: V,
    g: ConvGeometry,
    t: ConvTiles,
    cores: int,
    align: int,
    max_tile_elems: int,
    ws_width: int,
    col_width: int = 0,
) -> ConvTiling[V]:
    """The runtime tiling over N images (module docstring); `col_width`: bytes per X_col
    element of the explicit im2col's workspace (0: none)."""
    c = ops.const
    tm = c(min(t.tm, round_up(g.cog, FRACTAL)))
    mt = ops.ceildiv(c(g.cog), tm)
    rows_of_tiles = ops.mul(ops.mul(n, c(g.group)), mt)
    n_split = ops.max(
        c(1), ops.min(ops.ceildiv(c(cores), rows_of_tiles), c(-(-g.pixels // FRACTAL)))
    )
    tn = ops.min(c(t.tn), ops.round_up(ops.ceildiv(c(g.pixels), n_split), FRACTAL))
    pt = ops.ceildiv(c(g.pixels), tn)
    tk = c(min(t.tk, round_up(g.k, FRACTAL)))
    c_stages = c(-(-g.cg // t.cstep))
    tiles = ops.mul(rows_of_tiles, pt)
    blocks = ops.max(c(1), ops.min(tiles, c(cores)))
    per_core = ops.ceildiv(tiles, blocks)
    stride = ops.round_up(tn, align)
    er = ops.min(
        tm, ops.max(c(FRACTAL), ops.round_down(ops.floordiv(c(max_tile_elems), stride), FRACTAL))
    )
    ws = ops.mul(ops.mul(blocks, c(2 * ws_width)), ops.mul(tm, tn))
    ws_col = ops.mul(ops.mul(blocks, c(COL_SLOTS * col_width * g.k)), tn)
    values = dict(
        zip(PARAMS, (n, tm, tn, tk, mt, pt, c_stages, tiles, per_core, stride, er, ws, ws_col))
    )
    return ConvTiling(values, blocks)


def _geometry(op: graph.Conv2dOp) -> ConvGeometry | Refusal:
    p = graph.Props(op.properties, op.name)
    xs, ws, ys = shape(op.input), shape(op.weight), shape(op.output)
    if DYN in (*xs[1:], *ws, *ys[1:]):
        return Refusal("a conv with dynamic channels or spatial dims (only the batch may be)")
    sh, sw = p.integers("strides")
    pt, pl, pb, pr = p.integers("pads")
    dh, dw = p.integers("dilations")
    return ConvGeometry(
        xs[1],
        xs[2],
        xs[3],
        ws[0],
        ws[1],
        ws[2],
        ws[3],
        p.integer("group"),
        (sh, sw),
        (pt, pl, pb, pr),
        (dh, dw),
        ys[2],
        ys[3],
    )


def plan_conv(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> ConvPlan | Refusal:
    found = split_group(parts, graph.Conv2dOp, "conv")
    if isinstance(found, Refusal):
        return found
    root, epilogue = found
    op = cast(graph.Conv2dOp, root)
    why = cube_dtype_refusal(root, chip)
    if why is not None:
        return why
    geometry = _geometry(op)
    if isinstance(geometry, Refusal):
        return geometry
    g = geometry
    w = width(elt(op.input))
    bias = op.bias
    act = activation_of(root)
    direct = (
        not chip.l0c_to_ub
        and not epilogue
        and parts.outputs == [root.results[0]]
        and bias is None
        and act[0] in (None, "relu")
    )
    explicit = not chip.l0c_to_ub and not g.pointwise
    local = chip.l0c_to_ub and not g.pointwise
    ub_epilogue, slots = chip.ub_bytes, None
    col_cap: int | None = None
    if explicit:
        fits = _im2col_cols(g, chip, w)
        if isinstance(fits, Refusal):
            return fits
        col_cap = fits
        ub_epilogue -= g.im2col_ub(col_cap, w)
        slots = queue_slots(chip) - 2  # the im2col's VECIN and VECOUT queues
    elif local:  # the im2col takes at most half the UB (its X_col blocks adapt)
        unit = min(g.cg, 32 // math.gcd(g.taps * w, 32))
        fits = _im2col_cols(g, chip, w, lambda tn: g.local_ub(tn, unit, w))
        if isinstance(fits, Refusal):
            return fits
        col_cap = fits
        ub_epilogue -= chip.ub_bytes // 2
    rows: RowPlan | None = None
    raw = bias_rows = None
    ws_elt: Attribute | None = None
    max_cols = col_cap
    out_elt = elt(root.results[0])
    if not direct:
        plain = bias is None and act[0] is None
        ws_elt = out_elt if (plain and not chip.l0c_to_ub) else f32
        raw = pseudo_value(ws_elt, shape(root.results[0]), "raw")
        extra: list[SSAValue] = []
        if bias is not None:
            bias_rows = pseudo_value(elt(bias), (g.co, 1, 1), "bias")
            extra.append(bias_rows)
        planned = plan_epilogue(
            root, raw, extra, epilogue, parts, 2, ub_epilogue, chip, resident=extra, slots=slots
        )
        if isinstance(planned, Refusal):
            return planned
        rows = planned
        max_cols = max_epilogue_cols(rows)
        if col_cap is not None:
            max_cols = min(max_cols, col_cap)
    whole_k = not chip.data_copy_pad
    if whole_k and ((g.k * w) % 32 or (g.w * w) % 32):
        return Refusal(
            "the conv's weight rows (Cin/group*kh*kw) or input rows (W) are not 32-byte "
            "multiples and the chip has no DataCopyPad"
        )
    if tiling is None:
        tiles = choose_conv_tiles(g, chip, w, max_cols, whole_k, explicit, local)
    else:
        tiles = _recorded_conv_tiles(tiling, g, rows, max_cols, chip, w)
    if isinstance(tiles, Refusal):
        return tiles
    return ConvPlan(
        parts,
        root,
        epilogue,
        g,
        bias,
        bias_rows,
        tiles,
        direct,
        chip.l0c_to_ub,
        ws_elt,
        rows,
        raw,
    )


def conv_footprint(g: ConvGeometry, t: ConvTiles, w: int) -> dict[str, int]:
    """Bytes of L0A/L0B/L0C/L1 the tiles take (double-buffered stages): the bounds
    `choose_conv_tiles` keeps within the chip."""
    return {
        "l0a": 2 * t.tm * t.tk * w,
        "l0b": 2 * t.tk * t.tn * w,
        "l0c": t.c_depth * t.tm * t.tn * 4,
        "l1": 2 * t.tm * t.kst(g) * w + 2 * t.b1_elems(g) * w,
    }


def _recorded_conv_tiles(
    tiling: Mapping[str, TilingValue],
    g: ConvGeometry,
    rows: RowPlan | None,
    max_cols: int | None,
    chip: ChipSpec,
    w: int,
) -> ConvTiles | Refusal:
    """The conv tiles a recorded tiling gives, when they fit the chip and keep the
    im2col mode and stage rows the analysis derives (`choose_conv_tiles`' rules)."""
    t = take_tiles(ConvTiles, tiling, "conv", [EPILOGUE_TILE] if rows is not None else [])
    if isinstance(t, Refusal):
        return t
    explicit = not chip.l0c_to_ub and not g.pointwise
    local = chip.l0c_to_ub and not g.pointwise
    why = fractal_refusal("conv", tm=t.tm, tn=t.tn, tk=t.tk)
    if (t.explicit, t.local) != (explicit, local):
        why = why or Refusal(
            f"the conv tiling's explicit/local must be {str(explicit).lower()}/{str(local).lower()} (the chip and the "
            "conv's geometry decide where X_col is built)"
        )
    if t.h_stage != g.stage_rows(t.tn):
        why = why or Refusal(
            f"the conv tiling's h_stage must be {g.stage_rows(t.tn)} for tn = {t.tn}"
        )
    if t.cstep > g.cg:
        why = why or Refusal(f"the conv tiling's cstep exceeds the {g.cg} channels per group")
    unit = 32 // math.gcd(g.taps * w, 32)
    if not chip.data_copy_pad and t.cstep < g.cg and t.cstep % unit:
        why = why or Refusal(
            f"the conv tiling's cstep must be all {g.cg} channels or a multiple of {unit} "
            "(whole 32-byte weight rows: the chip has no DataCopyPad)"
        )
    if local and g.local_ub(t.tn, t.cstep, w) > chip.ub_bytes // 2:
        why = why or Refusal("the conv tiling's X_col block exceeds half the UB")
    why = why or overflow(conv_footprint(g, t, w), chip)
    if rows is not None:
        why = why or take_row_tile(rows, tiling, EPILOGUE_TILE)
        max_cols = (
            max_epilogue_cols(rows) if max_cols is None else min(max_cols, max_epilogue_cols(rows))
        )
    if why is None and max_cols is not None and t.tn > max_cols:
        why = Refusal(f"the conv tiling's tn = {t.tn} exceeds the {max_cols} columns UB holds")
    return why or t


def _im2col_cols(
    g: ConvGeometry, chip: ChipSpec, w: int, ub: Callable[[int], int] | None = None
) -> int | Refusal:
    """The widest pixel tile whose im2col buffers (`ub`, default the explicit im2col's)
    take at most half the UB."""
    for base_n in (256, 128, 64, 32, 16):
        tn = min(base_n, round_up(g.pixels, FRACTAL))
        if (ub(tn) if ub is not None else g.im2col_ub(tn, w)) <= chip.ub_bytes // 2:
            return tn
    return Refusal(
        f"the im2col of {g.kh}x{g.kw} taps over {g.w}-wide input rows does not fit half of "
        f"the {chip.name} UB for 16 output pixels"
    )


class ConvTemplate(KernelTemplate):
    name = "conv"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> ConvPlan | Refusal:
        return plan_conv(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> ConvPlan | Refusal:
        return plan_conv(parts, chip, tiling)

    def tiling(self, plan: Plan) -> dict[str, TilingValue]:
        p = cast(ConvPlan, plan)
        rows = {EPILOGUE_TILE: p.rows.max_tile_elems} if p.rows is not None else {}
        return {**asdict(p.tiles), **rows}

    def footprint(self, plan: Plan, chip: ChipSpec) -> dict[str, int]:
        p = cast(ConvPlan, plan)
        w = width(p.in_elt)
        cube = conv_footprint(p.geometry, p.tiles, w)
        return {**cube, "ub": self.cost(p, chip).ub_bytes}

    def cost(self, plan: Plan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        p = cast(ConvPlan, plan)
        g = p.geometry
        n = concrete(shape(p.x), dims)[0]
        tiling = _tiling(IntOps(), p, chip, n)
        t, blocks = tiling.values, tiling.blocks
        w = width(p.in_elt)
        rows = n * g.co
        tiles = t["tiles"]
        h_stage = g.stage_rows(t["tn"])
        chunks = tiles * -(-t["tm"] // t["er"])
        external = [v for v in (p.raw, p.bias_rows) if v is not None]
        read, write = epilogue_io(
            p.rows, external, rows, g.pixels, chunks, t["tn"], t["pt"], blocks, dims
        )
        bias_once = 0
        if p.bias is not None:
            bias_once = g.co * width(elt(p.bias))
            read += blocks * bias_once  # resident per core
        if p.direct:
            write += rows * g.pixels * width(elt(p.root.results[0]))
        ws = 0
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = rows * g.pixels * width(p.ws_elt)
        # every tile reads its weight block and its input rows of every channel it needs
        # (pointwise: its [Cg x tn] pixel block); with the explicit im2col the AIVs read
        # the rows and write X_col [K x ncols] per tile, which the AIC reads back
        m_sweeps = n * g.group * t["mt"]
        weights = tiles * t["tm"] * g.k * w
        inputs = m_sweeps * g.cg * g.pixels * w if g.pointwise else tiles * g.cg * h_stage * g.w * w
        col = m_sweeps * g.k * g.pixels * w if p.explicit else 0
        local_col = m_sweeps * g.k * g.pixels if p.local else 0  # X_col elements built in UB
        flops = (
            2.0
            * n
            * g.group
            * round_up(g.cog, FRACTAL)
            * round_up(g.pixels, FRACTAL)
            * round_up(g.k, FRACTAL)
        )
        tn = min(t["tn"], g.pixels)
        stage_in = tn if g.pointwise else h_stage * g.w
        transfer = blended_transfer(
            [
                (weights, min(t["tm"], g.cog) * min(p.tiles.cstep, g.cg) * g.taps * w),
                (inputs, min(p.tiles.cstep, g.cg) * stage_in * w),
                (2 * col, g.taps * tn * w),
                (read + write + 2 * ws, min(t["er"], g.cog) * tn * 4),
            ]
        )
        # HBM on a cold L2: the input, the weight and the epilogue's operands once (an
        # image's input and a weight block are re-read while they are in L2); the
        # workspace slots are rewritten in place and never leave L2
        x_once = n * g.c * g.h * g.w * w
        w_once = g.co * g.k * w
        epilogue_in = epilogue_unique_read(p.rows, external, dims)
        notes = [f"workspace round trip {2 * ws} bytes"] if ws else []
        if col:
            notes.append(f"explicit im2col round trip {2 * col} bytes")
        im2col_ub = g.im2col_ub(p.tiles.tn, w) if p.explicit else 0
        if p.local:
            im2col_ub = g.local_ub(p.tiles.tn, p.tiles.cstep, w)
            notes.append(f"im2col in UB: {local_col} X_col elements gathered")
        return KernelCost(
            gm_read_bytes=weights + inputs + col + read + ws,
            gm_write_bytes=write + ws + col,
            hbm_read_bytes=min(inputs, x_once)
            + min(weights, w_once)
            + bias_once
            + min(read - blocks * bias_once, epilogue_in),
            hbm_write_bytes=write,
            # the gathers move every X_col element once
            vector_work=epilogue_work(p.rows, p.root, rows * g.pixels) + col // w + local_col,
            cube_flops=flops,
            transfer_bytes=transfer,
            ub_bytes=epilogue_ub(p.rows) + im2col_ub,
            cube_cores_used=blocks,
            vector_cores_used=(
                0 if p.direct and not p.explicit else blocks * sub_blocks(chip, bool(ws or col))
            ),
            notes=notes,
        )

    def lower(self, plan: Plan, name: str, chip: ChipSpec) -> Lowered:
        p = cast(ConvPlan, plan)
        emitters: list[ConvKernel] = []

        def build() -> buffer.KernelOp:
            emitters.append(ConvKernel(p, name, chip))
            return emitters[-1].build()

        def shrink(max_cols: int) -> None:
            if p.tiles.tn > max_cols:
                tn = max_cols // FRACTAL * FRACTAL
                p.tiles = replace(p.tiles, tn=tn, h_stage=p.geometry.stage_rows(tn))

        kernel = emit_fitting(build, p.rows, chip, shrink)
        emitter = emitters[-1]

        def body(kb: KernelBuilder) -> list[SSAValue]:
            t = _tiling(kb.idx, p, chip, kb.entry.args[0])
            return [*t.values.values(), t.blocks]

        tiling = tiling_function(name, ["N"], body)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: Plan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        p = cast(ConvPlan, plan)
        g = p.geometry
        n = runtime_dim(b, [(outside.get(p.x), 0)], shape(p.x)[0])
        n_value = idx.const(n) if isinstance(n, int) else n
        anchor = [n_value, idx.const(g.co), idx.const(g.oh), idx.const(g.ow)]
        return HostLaunch([n_value], [], output_dims(p.parts.outputs, anchor, 4))


def _tiling(ops: IndexOps[V], p: ConvPlan, chip: ChipSpec, n: V) -> ConvTiling[V]:
    rows = p.rows
    return conv_tiling(
        ops,
        n,
        p.geometry,
        p.tiles,
        chip.cube_cores,
        rows.align_elems if rows is not None else 8,
        rows.max_tile_elems if rows is not None else p.tiles.tm * p.tiles.tn,
        width(p.ws_elt) if p.ws_elt is not None and not p.l0c_to_ub else 0,
        width(p.in_elt) if p.explicit else 0,
    )


@dataclass
class TileAt:
    """Index values of one output tile (ConvKernel._coords)."""

    n: SSAValue  # image
    chan: SSAValue  # its group's first input channel, over all images
    co0: SSAValue  # first output channel
    view_row: SSAValue  # first row of the epilogue's [N*Cout x OH*OW] view
    m0: SSAValue
    p0: SSAValue  # first output pixel
    nrows: SSAValue
    ncols: SSAValue
    a_row: SSAValue  # first staged input row
    h_rows: SSAValue  # staged input rows


class ConvKernel(CubeKernel):
    """Builds the buffer.kernel of a ConvPlan."""

    template = "conv"

    def __init__(self, plan: ConvPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        self.row: RowKernel | None = None
        gm_inputs: list[SSAValue] = []
        if plan.rows is not None:
            assert plan.raw is not None
            self.row = RowKernel(
                plan.rows,
                name,
                chip.name,
                chip.cube_cores,
                sources=[plan.raw],
                emitters={
                    plan.root: root_emitter(
                        plan.raw, plan.bias_rows, 1.0, 1.0, activation_of(plan.root)
                    )
                },
            )
            for v in self.row.gm_inputs:
                gm_inputs.append(plan.bias if v is plan.bias_rows and plan.bias else v)
        inputs = [plan.x, plan.weight, *gm_inputs]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return list(self.p.parts.outputs)

    def params(self) -> Sequence[str]:
        return PARAMS

    def core_type(self) -> str:
        return "aic" if self.p.direct and not self.p.explicit else "mix"

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        if p.bias_rows is not None and p.bias is not None:
            self.gm[p.bias_rows] = self.gm[p.bias]  # the epilogue's bias is the conv's
        g, tiles, w, in_elt = p.geometry, p.tiles, width(p.in_elt), p.in_elt
        c = idx.const
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["tiles"])
        self.bid, self.first, self.last = bid, first, last
        ws = None
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], p.ws_elt), "ws").results[0]
        self.ws_col: SSAValue | None = None
        if p.explicit:
            self.ws_col = kb.insert(
                buffer.WorkspaceOp(t["ws_col_bytes"], in_elt), "ws_col"
            ).results[0]
        kst = tiles.kst(g)
        b1_elems = tiles.b1_elems(g)
        qa1 = kb.queue("a1", 2, c(tiles.tm * kst * w), tiles.tm * kst * w, in_elt, "q_a1")
        qb1 = kb.queue("b1", 2, c(b1_elems * w), b1_elems * w, in_elt, "q_b1")
        qa2 = kb.queue(
            "a2",
            2,
            idx.mul(idx.mul(t["tm"], t["tk"]), c(w)),
            tiles.tm * tiles.tk * w,
            in_elt,
            "q_a2",
        )
        qb2 = kb.queue(
            "b2",
            2,
            idx.mul(idx.mul(t["tk"], t["tn"]), c(w)),
            tiles.tk * tiles.tn * w,
            in_elt,
            "q_b2",
        )
        tm_tn = idx.mul(t["tm"], t["tn"])
        qc = kb.queue(
            "co1", tiles.c_depth, idx.mul(tm_tn, c(4)), tiles.tm * tiles.tn * 4, f32, "q_c"
        )
        if p.explicit:
            self._im2col_buffers()
        if p.local:
            self._local_buffers()
        row = self.row
        self.c_ub: SSAValue | None = None
        if row is not None and p.l0c_to_ub:
            nbytes = idx.mul(idx.mul(t["er"], t["tn"]), c(4))
            self.c_ub = co2_stage(kb, nbytes, co2_stage_bytes(row.plan, tiles.tm, tiles.tn))
        if row is not None:
            rt = {"tile_rows": t["er"], "tile_stride": t["tile_stride"], "cols": c(g.pixels)}
            rt |= {"outer0": t["N"], "outer1": c(g.co)}
            gm = {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs)}
            row.attach(kb, gm, rt)
        if not p.explicit:
            with kb.loop(first, last, "tile") as tile:
                if row is not None:
                    row.start_pool(cast(Operation, kb.entry.last_op))
                self._tile(tile, (qa1, qb1, qa2, qb2, qc), ws)
            return
        # explicit im2col: at step u the AIVs fill tile u's X_col slot while the AIC
        # computes tile u - 1 (the AIVs then run its epilogue): one step more than tiles
        with kb.loop(first, idx.add(last, c(1)), "step") as step:
            if row is not None:
                row.start_pool(cast(Operation, kb.entry.last_op))
            with kb.when(kb.less(step, last)):
                self._im2col(step)
            with kb.when(kb.less(first, step)):
                self._tile(idx.sub(step, c(1)), (qa1, qb1, qa2, qb2, qc), ws)

    def _tile(
        self,
        tile: SSAValue,
        queues: tuple[SSAValue, SSAValue, SSAValue, SSAValue, SSAValue],
        ws: SSAValue | None,
    ) -> None:
        """Output tile `tile`: the AIC's cube stage, then the AIVs' epilogue."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g = p.geometry
        c = idx.const
        bid, first, last, row = self.bid, self.first, self.last, self.row
        qa1, qb1, qa2, qb2, qc = queues
        tm_tn = idx.mul(t["tm"], t["tn"])
        tile.name_hint = tile.name_hint or "tile"
        at = self._coords(tile)
        if p.local:  # the tile's gather offsets, for every L1 stage's X_col
            with kb.stage("compute"):
                self._offset_table(at)
        with kb.stage("cube"):
            cbuf = kb.insert(buffer.QueueAllocOp(qc, f32), "c").results[0]
            if p.explicit:
                kb.insert(buffer.CrossCoreWaitOp(COL_READY, "aic"))
            self._k_loop(cbuf, tile, at, (qa1, qb1, qa2, qb2))
            if p.explicit:  # the AIVs may refill this slot for the tile two ahead
                with kb.when(kb.less(idx.add(tile, c(COL_SLOTS)), last)):
                    kb.insert(buffer.CrossCoreSetOp(COL_FREE, "aic", "mte2"))
            if p.direct:
                out = p.parts.outputs[0]
                dst = kb.view(self.gm[out], idx.add(idx.mul(at.view_row, c(g.pixels)), at.p0))
                relu = activation_of(p.root)[0] == "relu"
                kb.insert(
                    buffer.CopyOp(cbuf, dst, at.nrows, at.ncols, at.ncols, c(g.pixels), relu=relu)
                )
                free(kb, qc, cbuf)
            elif ws is not None:
                base = self._slot_base(bid, tile, first, tm_tn)
                await_slot(kb, tile, first)
                kb.insert(
                    buffer.CopyOp(cbuf, kb.view(ws, base), at.nrows, at.ncols, at.ncols, t["tn"])
                )
                free(kb, qc, cbuf)
                tile_written(kb)
            else:
                kb.insert(buffer.EnqueOp(qc, cbuf))
        if row is not None:
            self._epilogue(
                row,
                at.view_row,
                at.p0,
                at.nrows,
                at.ncols,
                qc,
                ws,
                bid,
                tile,
                (first, last),
                tm_tn,
            )

    def _coords(self, tile: SSAValue) -> TileAt:
        """Where output tile `tile` is: image, group, channels, pixels and input rows."""
        idx, t, g = self.kb.idx, self.t, self.p.geometry
        c = idx.const
        pi = idx.rem(tile, t["pt"])
        rest = idx.floordiv(tile, t["pt"])
        mi = idx.rem(rest, t["mt"])
        rest2 = idx.floordiv(rest, t["mt"])
        gi = idx.rem(rest2, c(g.group))
        n = idx.floordiv(rest2, c(g.group))
        m0 = idx.mul(mi, t["tm"])
        p0 = idx.mul(pi, t["tn"])
        nrows = idx.min(t["tm"], idx.sub(c(g.cog), m0))
        ncols = idx.min(t["tn"], idx.sub(c(g.pixels), p0))
        nrows.name_hint, ncols.name_hint = "m", "ncols"
        # output rows of the pixel tile and the input rows they need
        sh, dh, pt = g.strides[0], g.dilations[0], g.pads[0]
        oh0 = idx.floordiv(p0, c(g.ow))
        oh1 = idx.floordiv(idx.sub(idx.add(p0, ncols), c(1)), c(g.ow))
        top = idx.mul(oh0, c(sh))
        a_row = idx.sub(idx.max(top, c(pt)), c(pt))
        span_end = idx.add(idx.mul(oh1, c(sh)), c((g.kh - 1) * dh + 1))
        end = idx.sub(idx.min(c(g.h + pt), idx.max(span_end, idx.add(c(pt), a_row))), c(pt))
        h_rows = idx.sub(end, a_row)
        h_rows.name_hint = "h_rows"
        co0 = idx.add(idx.mul(gi, c(g.cog)), m0)  # first output channel of the tile
        view_row = idx.add(idx.mul(n, c(g.co)), co0)
        chan = idx.add(idx.mul(n, c(g.c)), idx.mul(gi, c(g.cg)))  # first input channel
        return TileAt(n, chan, co0, view_row, m0, p0, nrows, ncols, a_row, h_rows)

    def _col_slot(self, tile: SSAValue) -> SSAValue:
        """Element offset of tile `tile`'s X_col slot [K x tn] in the workspace."""
        idx = self.kb.idx
        slot = idx.rem(idx.sub(tile, self.first), idx.const(COL_SLOTS))
        block = idx.add(idx.mul(self.bid, idx.const(COL_SLOTS)), slot)
        return idx.mul(idx.mul(block, idx.const(self.p.geometry.k)), self.t["tn"])

    def _k_loop(
        self,
        cbuf: SSAValue,
        tile: SSAValue,
        at: TileAt,
        queues: tuple[SSAValue, SSAValue, SSAValue, SSAValue],
    ) -> None:
        """Accumulate W[co0.., :] @ X_col[:, p0..] into the L0C tile, in L1 stages of
        cstep input channels."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, in_elt = p.geometry, p.tiles, p.in_elt
        c = idx.const
        qa1, qb1, qa2, qb2 = queues
        kst = tiles.kst(g)
        nrows, ncols = at.nrows, at.ncols
        col_slot = self._col_slot(tile) if p.explicit else None
        with kb.loop(c(0), t["c_stages"], "cs") as s:
            ch0 = idx.mul(s, c(tiles.cstep))
            cs = idx.min(c(tiles.cstep), idx.sub(c(g.cg), ch0))
            klen1 = idx.mul(cs, c(g.taps))

            def fill_a1(slot: SSAValue) -> None:
                w_at = idx.add(idx.mul(at.co0, c(g.k)), idx.mul(ch0, c(g.taps)))
                src = kb.view(self.gm[p.weight], w_at)
                kb.copy(src, slot, nrows, klen1, c(g.k), c(kst))

            def fill_b1(slot: SSAValue) -> None:
                chan = idx.add(at.chan, ch0)
                if p.local:  # X_col of these channels, built in UB, then into L1
                    self._local_im2col(at, chan, cs)
                    kb.copy(self.xcol, slot, klen1, ncols, t["tn"], t["tn"])
                    return
                if col_slot is not None:  # the AIVs' X_col rows of these channels
                    assert self.ws_col is not None
                    rows_at = idx.mul(idx.mul(ch0, c(g.taps)), t["tn"])
                    src = kb.view(self.ws_col, idx.add(col_slot, rows_at))
                    kb.copy(src, slot, klen1, ncols, t["tn"], t["tn"])
                    return
                # pointwise: the [cs x ncols] pixel block, rows tn apart
                src = kb.view(self.gm[p.x], idx.add(idx.mul(chan, c(g.pixels)), at.p0))
                kb.copy(src, slot, cs, ncols, c(g.pixels), t["tn"])

            a1 = load(kb, qa1, in_elt, fill_a1, "a1")
            b1 = load(kb, qb1, in_elt, fill_b1, "b1")
            with kb.loop(c(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                k1 = idx.mul(kk, t["tk"])
                klen = idx.min(t["tk"], idx.sub(klen1, k1))

                def fill_a2(slot: SSAValue) -> None:
                    kb.copy(kb.view(a1, k1), slot, nrows, klen, c(kst), klen)

                def fill_b2(slot: SSAValue) -> None:  # X_col [K x tn] rows of L1
                    src = kb.view(b1, idx.mul(k1, t["tn"]))
                    kb.copy(src, slot, klen, ncols, t["tn"], ncols)

                mmad_step(
                    kb,
                    (qa2, qb2),
                    in_elt,
                    (fill_a2, fill_b2),
                    cbuf,
                    (nrows, ncols, klen),
                    idx.add(s, kk),
                )
            free(kb, qa1, a1)
            free(kb, qb1, b1)

    # ---- the explicit im2col (split chips, module docstring) ------------------------------

    def _im2col_buffers(self) -> None:
        """The AIVs' buffers: a staged input channel (its rows, then a zero block), an
        X_col block [kh*kw x tn], and the i32 offset tables (rows, columns, taps)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, w, in_elt = p.geometry, p.tiles, width(p.in_elt), p.in_elt
        c = idx.const
        self.zero_at = g.zero_at(tiles.h_stage, w)
        staged = (self.zero_at + 32 // w) * w
        self.q_fmap = kb.queue("vecin", 2, c(staged), staged, in_elt, "q_fmap")
        cols = g.taps * tiles.tn * w
        self.q_col = kb.queue("vecout", 2, idx.mul(t["tn"], c(g.taps * w)), cols, in_elt, "q_col")
        per_col = (g.kh + g.kw + g.taps) * 4
        self.offsets = kb.tbuf(idx.mul(t["tn"], c(per_col)), per_col * tiles.tn, i32, "offsets")

    # ---- the im2col of coupled chips (module docstring) ----------------------------------

    def _local_buffers(self) -> None:
        """A staged input channel (its rows, then a zero block), the X_col block of an
        L1 stage [cstep*kh*kw x tn] and the i32 offset tables, all in UB; the zero block
        is written once."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, w, in_elt = p.geometry, p.tiles, width(p.in_elt), p.in_elt
        c = idx.const
        self.zero_at = g.zero_at(tiles.h_stage, w)
        staged = (self.zero_at + 32 // w) * w
        self.fmap = kb.tbuf(c(staged), staged, in_elt, "fmap")
        per_tn = tiles.cstep * g.taps * w
        self.xcol = kb.tbuf(idx.mul(t["tn"], c(per_tn)), per_tn * tiles.tn, in_elt, "xcol")
        per_col = (g.kh + g.kw + g.taps) * 4
        self.offsets = kb.tbuf(idx.mul(t["tn"], c(per_col)), per_col * tiles.tn, i32, "offsets")
        with kb.stage("compute"):
            kb.insert(buffer.VDupOp(kb.view(self.fmap, c(self.zero_at)), kb.f32(0.0), c(32 // w)))

    def _local_im2col(self, at: TileAt, chan: SSAValue, cs: SSAValue) -> None:
        """X_col rows of input channels chan.. (cs of them) for tile `at`: per channel
        its staged rows GM -> UB, then every tap's pixels gathered through the offset
        table: Gather on 310P (its AI Core has it, asc-devkit Gather.md); on 910, which
        has no Gather, the scalar unit does the same gather element by element."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g = p.geometry
        c = idx.const
        tn = t["tn"]
        count = idx.mul(tn, c(g.taps))
        table = kb.view(self.offsets, idx.mul(tn, c(g.kh + g.kw)))
        with kb.loop(c(0), cs, "ch") as ch:
            x_at = idx.mul(idx.add(idx.mul(idx.add(chan, ch), c(g.h)), at.a_row), c(g.w))
            with kb.when(kb.less(c(0), at.h_rows)):  # not all padding
                kb.copy_1d(kb.view(self.gm[p.x], x_at), self.fmap, idx.mul(at.h_rows, c(g.w)))
            cols = kb.view(self.xcol, idx.mul(ch, count))
            if self.chip.arch == 2002:
                kb.insert(buffer.VGatherOp(cols, self.fmap, table, count))
            else:
                self._scalar_gather(cols, table, count)

    def _scalar_gather(self, cols: SSAValue, table: SSAValue, count: SSAValue) -> None:
        """cols[e] = the staged channel's element at byte offset table[e], e < count, by
        the scalar unit (GetValue/SetValue)."""
        kb, c = self.kb, self.kb.idx.const
        w = width(self.p.in_elt)
        with kb.loop(c(0), count, "e") as e:
            byte = kb.insert(arith.IndexCastOp(kb.get(table, e), IndexType())).results[0]
            at_e = kb.insert(arith.DivSIOp(byte, c(w))).results[0]
            kb.set(cols, e, kb.get(self.fmap, at_e))

    def _im2col(self, tile: SSAValue) -> None:
        """The AIVs' part of tile `tile`: its X_col [K x ncols] into the tile's slot, every
        other input channel each, then flag COL_READY for the AIC."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, w, in_elt = p.geometry, width(p.in_elt), p.in_elt
        c = idx.const
        assert self.ws_col is not None
        at = self._coords(tile)
        col_slot = self._col_slot(tile)
        done = idx.sub(tile, self.first)
        with kb.when(kb.less(c(COL_SLOTS - 1), done)):  # the AIC has read the slot
            kb.insert(buffer.CrossCoreWaitOp(COL_FREE, "aiv"))
        tn = t["tn"]
        with kb.stage("compute"):
            self._offset_table(at)
        count = idx.mul(tn, c(g.taps))
        with chunk_loop(kb, c(g.cg), sub_blocks(self.chip, True)) as ch:
            with kb.stage("copy_in"):
                fmap = kb.insert(buffer.QueueAllocOp(self.q_fmap, in_elt), "fmap").results[0]
                x_at = idx.mul(idx.add(idx.mul(idx.add(at.chan, ch), c(g.h)), at.a_row), c(g.w))
                with kb.when(kb.less(c(0), at.h_rows)):  # not all padding
                    kb.copy_1d(kb.view(self.gm[p.x], x_at), fmap, idx.mul(at.h_rows, c(g.w)))
                kb.insert(buffer.EnqueOp(self.q_fmap, fmap))
            with kb.stage("compute"):
                fmap = kb.insert(buffer.DequeOp(self.q_fmap, in_elt), "fmap").results[0]
                zero = kb.view(fmap, c(self.zero_at))
                kb.insert(buffer.VDupOp(zero, kb.f32(0.0), c(32 // w)))
                cols = kb.insert(buffer.QueueAllocOp(self.q_col, in_elt), "cols").results[0]
                table = kb.view(self.offsets, idx.mul(tn, c(g.kh + g.kw)))
                kb.insert(buffer.VGatherOp(cols, fmap, table, count))
                kb.insert(buffer.EnqueOp(self.q_col, cols))
                free(kb, self.q_fmap, fmap)
            with kb.stage("copy_out"):
                cols = kb.insert(buffer.DequeOp(self.q_col, in_elt), "cols").results[0]
                dst = kb.view(self.ws_col, idx.add(col_slot, idx.mul(idx.mul(ch, c(g.taps)), tn)))
                kb.copy(cols, dst, c(g.taps), at.ncols, tn, tn)
                free(kb, self.q_col, cols)
        kb.insert(buffer.CrossCoreSetOp(COL_READY, "aiv", "mte3"))

    def _offset_table(self, at: TileAt) -> None:
        """The tile's gather offsets [kh*kw x tn] (bytes into a staged channel; module
        docstring): kh + kw rows by the scalar unit, then one add per tap and a min."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, w = p.geometry, width(p.in_elt)
        c = idx.const
        tn = t["tn"]
        cap = c(self.zero_at * w)  # the zero block
        sh, sw = g.strides
        dh, dw = g.dilations
        pt, pl = g.pads[0], g.pads[1]

        def outside(v: SSAValue, size: int, value: SSAValue) -> SSAValue:
            """value if 0 <= v < size, else the zero block's offset."""
            value = self._select(kb.less(v, c(size)), value, cap)
            return self._select(kb.less(v, c(0)), cap, value)

        with kb.loop(c(0), c(g.kh), "r") as r, kb.loop(c(0), tn, "j") as j:
            oh = idx.floordiv(idx.add(at.p0, j), c(g.ow))
            ih = idx.add(idx.mul(oh, c(sh)), idx.sub(idx.mul(r, c(dh)), c(pt)))
            v = outside(ih, g.h, idx.mul(idx.sub(ih, at.a_row), c(g.w * w)))
            v = self._select(kb.less(j, at.ncols), v, cap)
            kb.set(self.offsets, idx.add(idx.mul(r, tn), j), self._i32(v))
        cols_at = idx.mul(tn, c(g.kh))
        with kb.loop(c(0), c(g.kw), "s") as s_, kb.loop(c(0), tn, "j") as j:
            ow = idx.rem(idx.add(at.p0, j), c(g.ow))
            iw = idx.add(idx.mul(ow, c(sw)), idx.sub(idx.mul(s_, c(dw)), c(pl)))
            v = outside(iw, g.w, idx.mul(iw, c(w)))
            kb.set(self.offsets, idx.add(idx.add(cols_at, idx.mul(s_, tn)), j), self._i32(v))
        table = kb.view(self.offsets, idx.mul(tn, c(g.kh + g.kw)))
        with kb.loop(c(0), c(g.taps), "tap") as tap:
            row = kb.view(self.offsets, idx.mul(idx.floordiv(tap, c(g.kw)), tn))
            col = kb.view(self.offsets, idx.add(cols_at, idx.mul(idx.rem(tap, c(g.kw)), tn)))
            kb.binary("add", kb.view(table, idx.mul(tap, tn)), row, col, tn)
        cap32 = kb.insert(arith.ConstantOp(IntegerAttr(self.zero_at * w, i32))).results[0]
        kb.scalar("mins", table, table, cap32, idx.mul(tn, c(g.taps)))

    def _select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.insert(arith.SelectOp(cond, a, b)).results[0]

    def _i32(self, v: SSAValue) -> SSAValue:
        return self.kb.insert(arith.IndexCastOp(v, i32)).results[0]

    def _slot_base(
        self, bid: SSAValue, tile: SSAValue, first: SSAValue, tm_tn: SSAValue
    ) -> SSAValue:
        idx = self.kb.idx
        slot = idx.rem(idx.sub(tile, first), idx.const(2))
        return idx.mul(idx.add(idx.mul(bid, idx.const(2)), slot), tm_tn)

    def _epilogue(
        self,
        row: RowKernel,
        view_row: SSAValue,
        p0: SSAValue,
        nrows: SSAValue,
        ncols: SSAValue,
        qc: SSAValue,
        ws: SSAValue | None,
        bid: SSAValue,
        tile: SSAValue,
        bounds: tuple[SSAValue, SSAValue],
        tm_tn: SSAValue,
    ) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        assert p.raw is not None
        first, last = bounds
        cd = None
        if ws is None:
            cd = kb.insert(buffer.DequeOp(qc, f32), "c_out").results[0]
        else:
            await_tile(kb)
        chunks = idx.ceildiv(nrows, t["er"])
        with chunk_loop(kb, chunks, sub_blocks(self.chip, ws is not None)) as e:
            r_off = idx.mul(e, t["er"])
            ner = idx.min(t["er"], idx.sub(nrows, r_off))
            if cd is not None:  # CO1 -> CO2 lands Nz fractals: the row kernel lays them out
                assert self.c_ub is not None
                co2_copy(kb, kb.view(cd, idx.mul(r_off, ncols)), self.c_ub, ner, ncols, t["tn"])
                row.source_views[p.raw] = (self.c_ub, t["tn"])
            else:
                assert ws is not None
                base = self._slot_base(bid, tile, first, tm_tn)
                src = kb.view(ws, idx.add(base, idx.mul(r_off, t["tn"])))
                row.source_views[p.raw] = (src, t["tn"])
            row.emit_tile(idx.add(view_row, r_off), p0, ner, ncols)
        if cd is not None:
            free(kb, qc, cd)
        else:
            slot_read(kb, tile, last)


__all__ = ["ConvGeometry", "ConvPlan", "ConvTemplate", "choose_conv_tiles", "conv_tiling"]
