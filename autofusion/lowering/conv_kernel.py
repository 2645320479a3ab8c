"""The `conv` template: a Conv2dOp (bias, activation, any group incl. depthwise, strides,
pads, dilations) plus an elementwise epilogue, as one implicit-GEMM cube kernel.

Per image n and group g the convolution is the GEMM

    out[n, g*Cog + co, p] = sum_k W[g*Cog + co, k] * X_col[k, p]     co < Cog = Cout/group
    k = (c, r, s) flattened (c < Cg = Cin/group), p = oh * OW + ow

with M = Cog output channels, N = OH*OW output pixels, K = Cg*kh*kw. The weight is the
left operand (GM -> L1 -> L0A as a plain [M x K] matrix: [Cout, Cg, kh, kw] is already
row-major [Cout x K]); the feature map is staged in L1 as [channels x rows x W] and
expanded by an im2col load straight into L0B (`buffer.im2col`, LoadData3DV2, ascend.md
1.6). The L0C tile is then [channels x pixels], the NCHW output's own layout, so the
epilogue's [N*Cout x OH*OW] view and Fixpipe's ND output need no transpose. A pointwise
conv (1x1, unit strides, no padding) needs no im2col: its pixel tile [channels x tn] is
loaded like a matmul's B (the form Ascend C code generation prints).

Tiling (static bounds from the chip, runtime values from `conv_tiling`):

    tm  = min(baseM, round16(Cog)); mt = ceil(Cog / tm)
    tn  = min(baseN, round16(ceil(P / clamp(ceil(cores / (N*group*mt)), 1, ceil(P/16)))))
    pt  = ceil(P / tn);  tk = min(baseK, round16(K))
    an L1 stage holds cstep whole channels: the weight block [tm x cstep*kh*kw] and the
    input rows a pixel tile needs, rows_out = min(OH, (tn-1) // OW + 2) output rows ->
    h_stage = min(H, (rows_out-1)*sh + (kh-1)*dh + 1) input rows of W elements, with
        2*tm*round16(cstep*kh*kw)*w + 2*cstep*h_stage*W*w <= L1
        2*tm*tk*w <= L0A,  2*tk*tn*w <= L0B,  tm*tn*4 <= L0C
    tiles = N * group * mt * pt (pixels fastest); blocks = min(tiles, cores)

For a pixel tile [p0, p0+ncols) the staged input rows are [a, a+h) with
    oh0 = p0 // OW, oh1 = (p0+ncols-1) // OW,  a = max(oh0*sh, pt) - pt,
    pad_top = pt - min(pt, oh0*sh),  h = min(H+pt, max(oh1*sh+(kh-1)*dh+1, pt+a)) - pt - a
and the im2col load reads pixels from m_start = p0 - oh0*OW of that staged map.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Generic, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Operation, Region, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import (
    FRACTAL,
    activation_of,
    await_slot,
    await_tile,
    blended_transfer,
    chunk_loop,
    concrete,
    cube_dtype_refusal,
    elt,
    emit_fitting,
    epilogue_io,
    epilogue_ub,
    epilogue_work,
    free,
    kernel_entry,
    load,
    max_epilogue_cols,
    nonzero,
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
    tiling_function,
    width,
)
from autofusion.lowering.index_expr import IndexOps, IntOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder
from autofusion.lowering.matmul_kernel import K_CANDIDATES, MN_CANDIDATES
from autofusion.lowering.row_kernel import RowKernel
from autofusion.lowering.row_plan import RowPlan
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

    def b1_elems(self, cstep: int, h_stage: int, tn: int) -> int:
        """Elements of one L1 input stage: staged input rows, or (pointwise) the pixel
        tile's [channels x tn] block with its rows padded to a fractal."""
        if self.pointwise:
            return round_up(cstep, FRACTAL) * tn
        return cstep * h_stage * self.w

    def stage_rows(self, tn: int) -> int:
        """Input rows an L1 stage holds for a pixel tile of at most tn pixels."""
        rows_out = min(self.oh, (tn - 1) // self.ow + 2)
        span = (rows_out - 1) * self.strides[0] + (self.kh - 1) * self.dilations[0] + 1
        return min(self.h, span)


@dataclass(frozen=True)
class ConvTiles:
    tm: int
    tn: int
    tk: int
    cstep: int  # channels per L1 stage
    h_stage: int  # input rows per L1 stage (bound)
    c_depth: int

    def kst(self, g: ConvGeometry) -> int:
        """Row stride of the L1 weight stage (its K extent, padded to a fractal)."""
        return round_up(self.cstep * g.taps, FRACTAL)


def choose_conv_tiles(
    g: ConvGeometry, chip: ChipSpec, w: int, max_cols: int | None, whole_k: bool
) -> ConvTiles | Refusal:
    """The largest tiles that fit L0A/L0B/L0C and an L1 stage of at least one channel
    (`whole_k`: all Cg channels in one stage, for chips without DataCopyPad)."""
    # no tile larger than the problem: a depthwise conv (Cog = 1) keeps wide pixel tiles
    max_m = round_up(g.cog, FRACTAL)
    max_n = round_up(g.pixels, FRACTAL)
    clamped = dict.fromkeys((min(tm, max_m), min(tn, max_n)) for tm, tn in MN_CANDIDATES)
    for tm, tn in clamped:
        if (max_cols is not None and tn > max_cols) or tm * tn * 4 > chip.l0c_bytes:
            continue
        for tk in K_CANDIDATES:
            if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                continue
            h_stage = g.stage_rows(tn)
            per_channel = 2 * h_stage * g.w * w + 2 * tm * g.taps * w
            reserve = 2 * tm * FRACTAL * w
            if g.pointwise:  # [channels x tn] blocks, rows padded to 16
                per_channel = 2 * tn * w + 2 * tm * g.taps * w
                reserve += 2 * (FRACTAL - 1) * tn * w
            fit = (chip.l1_bytes - reserve) // max(per_channel, 1)
            cstep = min(g.cg, fit)
            if whole_k and cstep < g.cg:
                continue
            if cstep < 1:
                continue
            t = ConvTiles(tm, tn, tk, cstep, h_stage, 2 if 2 * tm * tn * 4 <= chip.l0c_bytes else 1)
            if 2 * tm * t.kst(g) * w + 2 * g.b1_elems(cstep, h_stage, tn) * w <= chip.l1_bytes:
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
) -> ConvTiling[V]:
    """The runtime tiling over N images (module docstring)."""
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
    values = dict(zip(PARAMS, (n, tm, tn, tk, mt, pt, c_stages, tiles, per_core, stride, er, ws)))
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


def plan_conv(parts: GroupParts, chip: ChipSpec) -> ConvPlan | Refusal:
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
    rows: RowPlan | None = None
    raw = bias_rows = None
    ws_elt: Attribute | None = None
    max_cols = None
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
            root, raw, extra, epilogue, parts, 2, chip.ub_bytes, chip, resident=extra
        )
        if isinstance(planned, Refusal):
            return planned
        rows = planned
        max_cols = max_epilogue_cols(rows)
    whole_k = not chip.data_copy_pad
    if whole_k and ((g.k * w) % 32 or (g.w * w) % 32):
        return Refusal(
            "the conv's weight rows (Cin/group*kh*kw) or input rows (W) are not 32-byte "
            "multiples and the chip has no DataCopyPad"
        )
    tiles = choose_conv_tiles(g, chip, w, max_cols, whole_k)
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


class ConvTemplate(KernelTemplate):
    name = "conv"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> ConvPlan | Refusal:
        return plan_conv(parts, chip)

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
        if p.bias is not None:
            read += blocks * g.co * width(elt(p.bias))  # resident per core
        if p.direct:
            write += rows * g.pixels * width(elt(p.root.results[0]))
        ws = 0
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = rows * g.pixels * width(p.ws_elt)
        # every tile reads its weight block and its input rows of every channel it needs
        weights = tiles * t["tm"] * g.k * w
        inputs = tiles * g.cg * h_stage * g.w * w
        flops = (
            2.0
            * n
            * g.group
            * round_up(g.cog, FRACTAL)
            * round_up(g.pixels, FRACTAL)
            * round_up(g.k, FRACTAL)
        )
        tn = min(t["tn"], g.pixels)
        transfer = blended_transfer(
            [
                (weights, min(t["tm"], g.cog) * min(p.tiles.cstep, g.cg) * g.taps * w),
                (inputs, min(p.tiles.cstep, g.cg) * h_stage * g.w * w),
                (read + write + 2 * ws, min(t["er"], g.cog) * tn * 4),
            ]
        )
        return KernelCost(
            gm_read_bytes=weights + inputs + read + ws,
            gm_write_bytes=write + ws,
            vector_work=epilogue_work(p.rows, p.root, rows * g.pixels),
            cube_flops=flops,
            transfer_bytes=transfer,
            ub_bytes=epilogue_ub(p.rows),
            cube_cores_used=blocks,
            vector_cores_used=0 if p.direct else blocks * sub_blocks(chip, bool(ws)),
            notes=[f"workspace round trip {2 * ws} bytes"] if ws else [],
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
    )


class ConvKernel:
    """Builds the buffer.kernel of a ConvPlan."""

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

    def build(self) -> buffer.KernelOp:
        p = self.p
        gm = [(f"in{i}", elt(v)) for i, v in enumerate(self.kernel_inputs)]
        gm += [(f"out{i}", elt(v)) for i, v in enumerate(p.parts.outputs)]
        entry, gm_args, t = kernel_entry(gm, PARAMS)
        self.gm = dict(zip([*self.kernel_inputs, *p.parts.outputs], gm_args))
        if p.bias_rows is not None and p.bias is not None:
            self.gm[p.bias_rows] = self.gm[p.bias]
        self.t = t
        kb = KernelBuilder(entry)
        self.kb = kb
        self._body()
        kb.insert(buffer.ReturnOp())
        kb.finish()
        return buffer.KernelOp(
            self.name,
            [a.type for a in entry.args],
            Region(entry),
            self.chip.name,
            "conv",
            "aic" if p.direct else "mix",
            len(self.kernel_inputs),
            len(p.parts.outputs),
        )

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, w, in_elt = p.geometry, p.tiles, width(p.in_elt), p.in_elt
        c = idx.const
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["tiles"])
        ws = None
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], p.ws_elt), "ws").results[0]
        kst = tiles.kst(g)
        b1_elems = g.b1_elems(tiles.cstep, tiles.h_stage, tiles.tn)
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
        row = self.row
        if row is not None:
            rt = {"tile_rows": t["er"], "tile_stride": t["tile_stride"], "cols": c(g.pixels)}
            rt |= {"outer0": t["N"], "outer1": c(g.co)}
            gm = {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs)}
            row.attach(kb, gm, rt)
        with kb.loop(first, last, "tile") as tile:
            if row is not None:
                row.start_pool(cast(Operation, kb.entry.last_op))
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
            pad_top = idx.sub(c(pt), idx.min(c(pt), top))
            span_end = idx.add(idx.mul(oh1, c(sh)), c((g.kh - 1) * dh + 1))
            end = idx.sub(idx.min(c(g.h + pt), idx.max(span_end, idx.add(c(pt), a_row))), c(pt))
            h_rows = idx.sub(end, a_row)
            h_rows.name_hint = "h_rows"
            m_start = idx.sub(p0, idx.mul(oh0, c(g.ow)))
            co0 = idx.add(idx.mul(gi, c(g.cog)), m0)  # first output channel of the tile
            view_row = idx.add(idx.mul(n, c(g.co)), co0)
            with kb.stage("cube"):
                cbuf = kb.insert(buffer.QueueAllocOp(qc, f32), "c").results[0]
                with kb.loop(c(0), t["c_stages"], "cs") as s:
                    ch0 = idx.mul(s, c(tiles.cstep))
                    cs = idx.min(c(tiles.cstep), idx.sub(c(g.cg), ch0))
                    klen1 = idx.mul(cs, c(g.taps))

                    def fill_a1(slot: SSAValue) -> None:
                        at = idx.add(idx.mul(co0, c(g.k)), idx.mul(ch0, c(g.taps)))
                        src = kb.view(self.gm[p.weight], at)
                        kb.copy(src, slot, nrows, klen1, c(g.k), c(kst))

                    def fill_b1(slot: SSAValue) -> None:
                        chan = idx.add(idx.add(idx.mul(n, c(g.c)), idx.mul(gi, c(g.cg))), ch0)
                        if g.pointwise:  # the [cs x ncols] pixel block, rows tn apart
                            src = kb.view(self.gm[p.x], idx.add(idx.mul(chan, c(g.pixels)), p0))
                            kb.copy(src, slot, cs, ncols, c(g.pixels), t["tn"])
                            return
                        at = idx.mul(idx.add(idx.mul(chan, c(g.h)), a_row), c(g.w))
                        src = kb.view(self.gm[p.x], at)
                        hw = idx.mul(h_rows, c(g.w))
                        kb.copy(src, slot, cs, hw, c(g.h * g.w), hw)

                    a1 = load(kb, qa1, in_elt, fill_a1, "a1")
                    b1 = load(kb, qb1, in_elt, fill_b1, "b1")
                    with kb.loop(c(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                        k1 = idx.mul(kk, t["tk"])
                        klen = idx.min(t["tk"], idx.sub(klen1, k1))

                        def fill_a2(slot: SSAValue) -> None:
                            kb.copy(kb.view(a1, k1), slot, nrows, klen, c(kst), klen)

                        def fill_b2(slot: SSAValue) -> None:
                            if g.pointwise:
                                at = kb.view(b1, idx.mul(k1, t["tn"]))
                                kb.copy(at, slot, klen, ncols, t["tn"], ncols)
                                return
                            kb.insert(
                                buffer.Im2colOp(
                                    slot,
                                    b1,
                                    (cs, h_rows, c(g.w)),
                                    (pad_top, c(g.pads[1])),
                                    c(g.ow),
                                    (m_start, ncols),
                                    (k1, klen),
                                    (g.kh, g.kw),
                                    g.strides,
                                    g.dilations,
                                )
                            )

                        a2 = load(kb, qa2, in_elt, fill_a2, "a2")
                        b2 = load(kb, qb2, in_elt, fill_b2, "b2")
                        acc = nonzero(kb, idx.add(s, kk))
                        kb.insert(buffer.MmadOp(cbuf, a2, b2, nrows, ncols, klen, acc))
                        free(kb, qa2, a2)
                        free(kb, qb2, b2)
                    free(kb, qa1, a1)
                    free(kb, qb1, b1)
                if p.direct:
                    out = p.parts.outputs[0]
                    dst = kb.view(self.gm[out], idx.add(idx.mul(view_row, c(g.pixels)), p0))
                    relu = activation_of(p.root)[0] == "relu"
                    kb.insert(buffer.CopyOp(cbuf, dst, nrows, ncols, ncols, c(g.pixels), relu=relu))
                    free(kb, qc, cbuf)
                elif ws is not None:
                    base = self._slot_base(bid, tile, first, tm_tn)
                    await_slot(kb, tile, first)
                    kb.insert(buffer.CopyOp(cbuf, kb.view(ws, base), nrows, ncols, ncols, t["tn"]))
                    free(kb, qc, cbuf)
                    tile_written(kb)
                else:
                    kb.insert(buffer.EnqueOp(qc, cbuf))
            if row is not None:
                self._epilogue(
                    row, view_row, p0, nrows, ncols, qc, ws, bid, tile, (first, last), tm_tn
                )

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
            if cd is not None:
                row.source_views[p.raw] = (kb.view(cd, idx.mul(r_off, ncols)), ncols)
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
