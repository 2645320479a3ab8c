"""The `ffn` template: a graph.ffn as one mix kernel on split chips (910B).

    y = [residual +] act(x @ W1 + b1) @ W2 + b2        x: [M, K1], W1: [K1, F], W2: [F, N2]

The intermediate F is cut into bands of bf columns. A work item is one (M tile of tm
rows, band); for each, on one block (an AIC and its two AIVs):

1. AIC: h = x_tile @ W1[:, band] (gate and up, sharing each staged x block), in
   sub-tiles of tn columns: GM -> L1 -> L0A/L0B -> Mmad into f32 L0C -> Fixpipe into
   the block's gate/up workspace slot (f16/bf16 when the graph rounds a plain
   product there, else f32), then cross-core flag READY;
2. AIVs (each every other chunk of rows x columns): g = act(gate [+ b1g]) [* (up [+ b1u])]
   in float32, rounded as graph.ffn rounds, into the block's g workspace slot; flag
   G_READY (which also frees the gate/up slot: the AIVs have read it);
3. AIC: y_acc[tile] += g @ W2[band, :], in N2 chunks of tn: g is loaded into L1 once
   and stays there (the A operand of every chunk), W2 streams through L1 in stages;
   each chunk's L0C tile is added to an f32 accumulator in GM by an atomic Fixpipe
   (`buffer.copy ... atomic`: SetAtomicAdd<float>, asc-devkit SetAtomicAdd.md; Atlas
   A2/A3 add from L0C).

The AIC runs step 1 of item s before step 3 of item s - 1, so the AIVs' activation of
s - 1 overlaps the AIC's gate/up of s (two slots per workspace; READY / G_READY order
every reuse). Every block contributes to many accumulator tiles and every tile gets a
contribution per band, so the accumulator needs all cores at its edges: the AIVs of
all blocks set it first to the residual in float32 (or zero it), `buffer.sync_all`
(SyncAll<false>, the hard all-core sync of Atlas A2/A3), the main loop,
`buffer.sync_all`, and the AIVs compute y = round(acc + b2) into the output (graph.ffn's
single rounding). SyncAll needs every block resident: blocks <= the chip's cube cores.

Items are numbered band-major (item = band * mt + M tile) and dealt round-robin
(block b takes b, b + blocks, ...): at any time the cores work on the M tiles of one or
two bands, so each band of W1 and W2 comes from HBM once and its other mt - 1 reads hit
L2, x (every band reads all of it) stays in L2, and so does the accumulator (touched by
every band). The gate/up and g never reach HBM: their slots are rewritten in place. The
residual is read first, before the weights stream through L2 (read last, as the
decomposed graph's add does, it would be pushed out of L2 by them and read back).

Tiling (static bounds `choose_ffn_tiles`, runtime values `ffn_tiling`):

    tm, tn, tk: multiples of 16 with  parts * tm * tn * 4 <= L0C (parts: 2 gated, 1 plain)
                2 * tm * tk * w <= L0A,  2 * tk * tn * w <= L0B
    bf (band):  2 * tm * kl1 * w + parts * 2 * kl1 * tn * w + tm * bf * w <= L1
    tm' = min(tm, round16(M)); mt = ceil(M / tm'); bf' = min(bf, round_up(F, tn));
    ft = ceil(F / bf'); items = mt * ft; blocks = min(items, cube cores)
    the activation chunks: ec = min(bf', EC) columns (EC: the epilogue's UB budget),
    er = min(tm', 16-multiple rows of the budget); the final pass: rows x cols tiles of
    its own budget over [M, N2], dealt round-robin over the blocks' AIVs
    workspaces: blocks * 2 * parts * tm * bf * w_gu (gate/up), blocks * 2 * tm * bf * w
    (g), M * N2 * 4 (the accumulator)

Chips: split chips only (the ffn needs SyncAll<false> and the L0C -> GM atomic add);
elsewhere graph.ffn stays a library op (CANN's FFN is an Atlas A2/A3 op too).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import ClassVar, Generic, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.buffer_verifier import footprint
from autofusion.dialects.graph_fused import FFN_GATED
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import (
    FRACTAL,
    CubeKernel,
    blended_transfer,
    chunk_loop,
    concrete,
    elt,
    epilogue_ub,
    epilogue_work,
    free,
    load,
    max_epilogue_cols,
    mmad,
    nonzero,
    pseudo_value,
    root_emitter,
    runtime_dim,
    shape,
    sub_blocks,
    width,
)
from autofusion.lowering.index_expr import IndexOps, IntOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.recorded_tiling import fractal_refusal, overflow, take_row_tile, take_tiles
from autofusion.lowering.row_kernel import RowKernel
from autofusion.lowering.row_plan import RowPlan, _plan_for_split
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import (
    GroupParts,
    HostLaunch,
    KernelCost,
    KernelTemplate,
    Lowered,
    NotApplicable,
    Plan,
)
from autofusion.passes.fusion_rule import Refusal

V = TypeVar("V")

# the gate's activation op of each gated graph.ffn activation (FFN_GATED) but swiglu,
# which is one graph.swiglu of gate and up
GATE_ACTIVATIONS: dict[str, tuple[type[graph.GraphOp], dict[str, str]]] = {
    "geglu": (graph.GeluOp, {"approximate": "none"}),
    "geglu_tanh": (graph.GeluOp, {"approximate": "tanh"}),
    "reglu": (graph.ReluOp, {}),
}

# static tile candidates, in order of preference (tests force small ones)
MN_CANDIDATES = (
    (128, 128),
    (128, 64),
    (64, 128),
    (64, 64),
    (32, 64),
    (32, 32),
    (16, 32),
    (16, 16),
)
K_CANDIDATES = (128, 64, 32, 16)
STEP_K = (2, 1)
# band widths: the widest whose g tile stays in L1 (fewer accumulator read-modify-writes)
BAND_CANDIDATES = (1024, 512, 256, 128, 64, 32, 16)
ZERO_ELEMS = 2048  # float32 zeros one AIV writes per copy when it clears the accumulator
# cross-core flags: gate/up in the slot (AIC -> AIVs); g in the slot (AIVs -> AIC)
READY, G_READY = 0, 1
SLOTS = 2


@dataclass(frozen=True)
class FfnTiles:
    tm: int
    tn: int
    tk: int
    step_k: int
    bf: int

    @property
    def kl1(self) -> int:
        return self.tk * self.step_k


def l1_bytes(tm: int, tn: int, kl1: int, bf: int, w: int, parts: int) -> int:
    """L1 of the kernel: x stages, W1/W2 stages (one queue per projection), the g tile."""
    return 2 * tm * kl1 * w + parts * 2 * kl1 * tn * w + tm * bf * w


def choose_ffn_tiles(chip: ChipSpec, w: int, parts: int) -> FfnTiles | Refusal:
    """The largest output tiles, then the widest band, then the deepest K stages that fit
    L0A/L0B/L0C and L1."""
    for tm, tn in MN_CANDIDATES:
        if parts * tm * tn * 4 > chip.l0c_bytes:
            continue
        for bf in BAND_CANDIDATES:
            for tk in K_CANDIDATES:
                if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                    continue
                for step in STEP_K:
                    if bf >= tn and l1_bytes(tm, tn, tk * step, bf, w, parts) <= chip.l1_bytes:
                        return FfnTiles(tm, tn, tk, step, bf)
    return Refusal(f"L0/L1 of {chip.name} cannot hold the ffn's 16x16 tiles of {w}-byte data")


def ffn_footprint(t: FfnTiles, w: int, parts: int) -> dict[str, int]:
    """Bytes of L0A/L0B/L0C/L1 the tiles take: the bounds `choose_ffn_tiles` keeps."""
    return {
        "l0a": 2 * t.tm * t.tk * w,
        "l0b": 2 * t.tk * t.tn * w,
        "l0c": parts * t.tm * t.tn * 4,
        "l1": l1_bytes(t.tm, t.tn, t.kl1, t.bf, w, parts),
    }


# the tiling keys of the vector passes' row tiles (elements): activation, final, first
ACT_TILE, OUT_TILE, INIT_TILE = "act_tile_elems", "out_tile_elems", "init_tile_elems"


def _recorded_ffn_tiles(
    tiling: Mapping[str, TilingValue],
    row_plans: Mapping[str, RowPlan],
    chip: ChipSpec,
    w: int,
    parts: int,
) -> FfnTiles | Refusal:
    """The ffn tiles and the vector passes' row tiles a recorded tiling gives, when they
    are fractals, the band holds a column tile, and they fit L0/L1 and UB."""
    t = take_tiles(FfnTiles, tiling, "ffn", list(row_plans))
    if isinstance(t, Refusal):
        return t
    why = fractal_refusal("ffn", tm=t.tm, tn=t.tn, tk=t.tk)
    if t.bf < t.tn:
        why = why or Refusal(f"the ffn tiling's band bf = {t.bf} is narrower than tn = {t.tn}")
    why = why or overflow(ffn_footprint(t, w, parts), chip)
    for key, rows in row_plans.items():
        why = why or take_row_tile(rows, tiling, key)
    return why or t


@dataclass
class FfnPlan(Plan):
    template: ClassVar[str] = "ffn"
    parts: GroupParts
    root: graph.FfnOp
    tiles: FfnTiles
    gu_elt: Attribute  # the gate/up workspace's element type
    act_rows: RowPlan  # the AIVs' activation: gate/up -> g
    out_rows: RowPlan  # the AIVs' final pass: acc (+ b2) -> y
    init_rows: RowPlan | None  # the AIVs' first pass: residual -> acc (float32)
    gate_raw: SSAValue
    up_raw: SSAValue | None
    gate_mm: Operation  # the synthetic projections whose emitters apply b1 (and act)
    up_mm: Operation | None
    bias_ps: list[SSAValue]  # the activation plan's bias1 values (gate, up)
    g_ps: SSAValue
    acc_ps: SSAValue
    down_mm: Operation
    b2_ps: SSAValue | None
    y_ps: SSAValue
    res_ps: SSAValue | None  # the first pass's residual and float32 result
    init_ps: SSAValue | None

    @property
    def ffn(self) -> graph.FfnOp:
        return self.root

    @property
    def row_plans(self) -> list[RowPlan]:
        return [r for r in (self.act_rows, self.out_rows, self.init_rows) if r is not None]

    @property
    def in_elt(self) -> Attribute:
        return elt(self.root.input)

    @property
    def gated(self) -> bool:
        return self.root.gated

    @property
    def merged(self) -> bool:
        return self.gated and len(self.root.weight1) == 1

    @property
    def parts_count(self) -> int:
        return 2 if self.gated else 1

    def sizes(self, dims: Sequence[int] | None = None) -> tuple[int, int, int, int]:
        """(M, K1, F, N2), dynamic dims from `dims` in order (output dims, then K1)."""
        out = shape(self.root.output)
        k1 = shape(self.root.input)[-1]
        f = shape(self.root.weight2)[0]
        sized = concrete([*out, k1, f], dims)
        m = si.num_elements(sized[:-3]) or 1
        return m, sized[-2], sized[-1], sized[-3]


# ---- the tiling rule ---------------------------------------------------------------------

PARAMS = (
    "M",
    "K1",
    "F",
    "N2",
    "tm",
    "tn",
    "tk",
    "kl1",
    "bf",
    "mt",
    "ft",
    "nt",
    "items",
    "k_stages",
    "er",
    "ec",
    "a_stride",
    "fr",
    "fc",
    "f_stride",
    "f_col_tiles",
    "f_row_blocks",
    "ir",
    "ic",
    "i_stride",
    "i_col_tiles",
    "i_row_blocks",
    "z_pieces",
    "gu_bytes",
    "g_bytes",
    "acc_bytes",
)


@dataclass
class FfnTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


def _pass_tiling(
    ops: IndexOps[V], rows: RowPlan, m: V, n2: V, aivs: V, n2_static: int
) -> tuple[V, V, V, V, V]:
    """(rows, cols, UB row stride, column tiles, row blocks) of a pass over [M x N2]
    whose row blocks are dealt round-robin over `aivs` vector cores, each with all its
    column tiles (row_tiling's rule otherwise). A row block's rows are a multiple of
    q = 8 / gcd(N2, 8), so every block starts 32-byte aligned in the float32
    accumulator: no 32-byte granule is written by two cores."""
    c = ops.const
    q = 8 // math.gcd(n2_static, 8)
    cols = ops.min(n2, c(max(rows.align_elems, rows.max_tile_elems // q)))
    stride = ops.round_up(cols, rows.align_elems)
    fit = ops.floordiv(c(rows.max_tile_elems), stride)
    balanced = ops.ceildiv(m, aivs)
    tile_rows = ops.max(c(q), ops.round_down(ops.min(fit, balanced), q))
    return tile_rows, cols, stride, ops.ceildiv(n2, cols), ops.ceildiv(m, tile_rows)


def ffn_tiling(
    ops: IndexOps[V], m: V, k1: V, f: V, n2: V, p: FfnPlan, chip: ChipSpec
) -> FfnTiling[V]:
    """The runtime tiling (module docstring)."""
    c = ops.const
    t = p.tiles
    tm = ops.min(c(t.tm), ops.round_up(m, FRACTAL))
    tn = c(t.tn)
    mt = ops.ceildiv(m, tm)
    bf = ops.min(c(t.bf), ops.round_up(f, t.tn))
    ft = ops.ceildiv(f, bf)
    nt = ops.ceildiv(n2, tn)
    items = ops.mul(mt, ft)
    blocks = ops.max(c(1), ops.min(items, c(chip.cube_cores)))
    tk = ops.min(c(t.tk), ops.round_up(k1, FRACTAL))
    kl1 = ops.min(c(t.kl1), ops.mul(ops.ceildiv(k1, tk), tk))
    k_stages = ops.ceildiv(k1, kl1)
    a = p.act_rows
    ec = ops.min(bf, c(max_epilogue_cols(a)))
    a_stride = ops.round_up(ec, a.align_elems)
    er = ops.min(
        tm,
        ops.max(c(FRACTAL), ops.round_down(ops.floordiv(c(a.max_tile_elems), a_stride), FRACTAL)),
    )
    aivs = ops.mul(blocks, c(2))
    n2_static = shape(p.root.output)[-1]
    fr, fc, f_stride, f_col_tiles, f_tiles = _pass_tiling(ops, p.out_rows, m, n2, aivs, n2_static)
    first = _pass_tiling(ops, p.init_rows or p.out_rows, m, n2, aivs, n2_static)
    z_pieces = ops.ceildiv(ops.mul(m, n2), c(ZERO_ELEMS))
    slot = ops.mul(tm, bf)
    gu = ops.mul(ops.mul(blocks, c(SLOTS * p.parts_count * width(p.gu_elt))), slot)
    g = ops.mul(ops.mul(blocks, c(SLOTS * width(p.in_elt))), slot)
    acc = ops.mul(ops.mul(m, n2), c(4))
    ordered = [m, k1, f, n2, tm, tn, tk, kl1, bf, mt, ft, nt, items, k_stages, er, ec]
    ordered += [a_stride, fr, fc, f_stride, f_col_tiles, f_tiles, *first, z_pieces, gu, g, acc]
    values = dict(zip(PARAMS, ordered))
    return FfnTiling(values, blocks)


# ---- planning ------------------------------------------------------------------------------


def _activation_plan(
    root: graph.FfnOp, m: int, f: int, gu_elt: Attribute, ub: int, slots: int
) -> tuple[RowPlan, list[SSAValue], list[Operation], list[SSAValue], SSAValue] | Refusal:
    """The AIVs' activation as a row plan over [M x F]: synthetic projections (their
    emitters add b1 and, plain, apply the activation) and graph.ffn's gating ops.
    Returns (plan, raw values, projections, bias values, g)."""
    t = elt(root.input)
    k1 = shape(root.input)[-1]
    act = root.activation.data
    x_ps = pseudo_value(t, [m, k1], "x")
    w_ps = pseudo_value(t, [k1, f], "w1")
    raws: list[SSAValue] = []
    mms: list[Operation] = []
    biases: list[SSAValue] = []
    for what in ("gate", "up") if root.gated else ("h",):
        raw = pseudo_value(gu_elt, [m, f], what)
        operands = [x_ps, w_ps]
        if root.bias1:
            biases.append(pseudo_value(t, [f], f"b1_{what}"))
            operands.append(biases[-1])
        props = {} if root.gated else {"activation": act}
        mms.append(graph.MatmulOp.make(operands, props))
        raws.append(raw)
    ops: list[Operation] = list(mms)
    if act == "swiglu":
        ops.append(graph.SwigluOp.make([mms[0].results[0], mms[1].results[0]]))
    elif act in FFN_GATED:
        gate_op, gate_props = GATE_ACTIVATIONS[act]
        a = gate_op.make([mms[0].results[0]], gate_props)
        ops += [a, graph.MulOp.make([a.results[0], mms[1].results[0]])]
    g = ops[-1].results[0]
    inputs = [*raws, *biases]
    plan = _plan_for_split(ops, inputs, [g], (m, f), 1, False, ub, slots)
    if isinstance(plan, Refusal):
        return plan
    plan.parts = GroupParts(ops, inputs, [g])
    return plan, raws, mms, biases, g


def _output_plan(
    root: graph.FfnOp, m: int, n2: int, ub: int, slots: int
) -> tuple[RowPlan, SSAValue, Operation, SSAValue | None, SSAValue] | Refusal:
    """The AIVs' final pass as a row plan over [M x N2]: y = round(acc + b2), the
    synthetic down projection's emitter adding b2. Returns (plan, acc, the down
    projection, b2, y)."""
    t = elt(root.input)
    f = shape(root.weight2)[0]
    acc = pseudo_value(f32, [m, n2], "acc")
    operands = [pseudo_value(t, [m, f], "g"), pseudo_value(t, [f, n2], "w2")]
    b2 = pseudo_value(t, [n2], "b2") if root.bias2 is not None else None
    if b2 is not None:
        operands.append(b2)
    down = graph.MatmulOp.make(operands)
    y = down.results[0]
    inputs = [acc, *(v for v in (b2,) if v is not None)]
    plan = _plan_for_split([down], inputs, [y], (m, n2), 1, False, ub, slots)
    if isinstance(plan, Refusal):
        return plan
    plan.parts = GroupParts([down], inputs, [y])
    return plan, acc, down, b2, y


def _init_plan(
    root: graph.FfnOp, m: int, n2: int, ub: int, slots: int
) -> tuple[RowPlan, SSAValue, SSAValue] | Refusal:
    """The AIVs' first pass as a row plan over [M x N2]: acc = float32(residual).
    Returns (plan, residual, acc)."""
    res = pseudo_value(elt(root.input), [m, n2], "residual")
    cast_op = graph.CastOp.make([res], result_types=[graph.tensor([m, n2], f32)])
    out = cast_op.results[0]
    plan = _plan_for_split([cast_op], [res], [out], (m, n2), 1, False, ub, slots)
    if isinstance(plan, Refusal):
        return plan
    plan.parts = GroupParts([cast_op], [res], [out])
    return plan, res, out


def plan_ffn(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> FfnPlan | Refusal:
    roots = [op for op in parts.ops if isinstance(op, graph.FfnOp)]
    if not roots:
        return NotApplicable("no graph.ffn in the group")
    root = roots[0]
    if len(parts.ops) > 1:
        others = next(op for op in parts.ops if op is not root)
        return Refusal(f"graph.ffn is a kernel of its own ({others.name} cannot join it)")
    if chip.mode != "split":
        return Refusal(
            f"the ffn kernel needs a split chip (SyncAll<false> and the L0C -> GM atomic add "
            f"of Atlas A2/A3); on {chip.name} graph.ffn stays a library op"
        )
    t = dtypes.type_name(elt(root.input))
    if t not in ("f32", "f16", "bf16"):
        return Refusal(f"graph.ffn on {t}: the cube takes floats")
    if t == "bf16" and not chip.bf16:
        return Refusal(f"{chip.name} has no bf16 cube")
    k1, f = shape(root.input)[-1], shape(root.weight2)[0]
    n2 = shape(root.output)[-1]
    if DYN in (k1, f, n2):
        return Refusal("graph.ffn with a dynamic K1, F or N2 (the weights fix them)")
    lead = shape(root.output)[:-1]
    m = DYN if DYN in lead else (si.num_elements(lead) or 1)
    w = width(elt(root.input))
    plain = root.gated and not root.bias1
    gu_elt = elt(root.input) if plain else f32
    # UB: half for the activation, a quarter for each of the first and the final pass
    # (the zeros a first pass without a residual writes come out of its quarter); queue
    # buffers per position likewise
    quarter = chip.ub_bytes // 4
    slots = queue_slots(chip) // 4
    act = _activation_plan(root, m, f, gu_elt, 2 * quarter, 2 * slots)
    if isinstance(act, Refusal):
        return Refusal(f"the activation does not fit UB: {act.reason}")
    out = _output_plan(root, m, n2, quarter, slots)
    if isinstance(out, Refusal):
        return Refusal(f"the output pass does not fit UB: {out.reason}")
    init: tuple[RowPlan, SSAValue, SSAValue] | None = None
    if root.residual is not None:
        planned = _init_plan(root, m, n2, quarter, slots)
        if isinstance(planned, Refusal):
            return Refusal(f"the residual pass does not fit UB: {planned.reason}")
        init = planned
    act_rows, raws, mms, biases, g = act
    if max_epilogue_cols(act_rows) < FRACTAL:
        return Refusal("the activation's buffers do not fit UB for even 16 columns")
    out_rows, acc, down, b2, y = out
    parts_count = 2 if root.gated else 1
    if tiling is None:
        tiles = choose_ffn_tiles(chip, w, parts_count)
    else:
        row_plans = {ACT_TILE: act_rows, OUT_TILE: out_rows}
        if init is not None:
            row_plans[INIT_TILE] = init[0]
        tiles = _recorded_ffn_tiles(tiling, row_plans, chip, w, parts_count)
    if isinstance(tiles, Refusal):
        return tiles
    if max_epilogue_cols(act_rows) < FRACTAL:  # a recorded activation tile
        return Refusal("the tiling's activation tile holds not even 16 columns")
    return FfnPlan(
        parts,
        root,
        tiles,
        gu_elt,
        act_rows,
        out_rows,
        init[0] if init is not None else None,
        raws[0],
        raws[1] if len(raws) > 1 else None,
        mms[0],
        mms[1] if len(mms) > 1 else None,
        biases,
        g,
        acc,
        down,
        b2,
        y,
        init[1] if init is not None else None,
        init[2] if init is not None else None,
    )


# ---- the template ----------------------------------------------------------------------------


class FfnTemplate(KernelTemplate):
    name = "ffn"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> FfnPlan | Refusal:
        return plan_ffn(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> FfnPlan | Refusal:
        return plan_ffn(parts, chip, tiling)

    def tiling(self, plan: Plan) -> dict[str, TilingValue]:
        p = cast(FfnPlan, plan)
        rows = {ACT_TILE: p.act_rows, OUT_TILE: p.out_rows, INIT_TILE: p.init_rows}
        tiles = {k: r.max_tile_elems for k, r in rows.items() if r is not None}
        return {**asdict(p.tiles), **tiles}

    def footprint(self, plan: Plan, chip: ChipSpec) -> dict[str, int]:
        p = cast(FfnPlan, plan)
        cube = ffn_footprint(p.tiles, width(p.in_elt), p.parts_count)
        return {**cube, "ub": self.cost(p, chip).ub_bytes}

    def cost(self, plan: Plan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        p = cast(FfnPlan, plan)
        m, k1, f, n2 = p.sizes(dims)
        tiling = ffn_tiling(IntOps(), m, k1, f, n2, p, chip)
        t, blocks = tiling.values, tiling.blocks
        w, parts = width(p.in_elt), p.parts_count
        w_gu = width(p.gu_elt)
        x_once, w1_once, w2_once = m * k1 * w, parts * k1 * f * w, f * n2 * w
        y_bytes = m * n2 * w
        acc = m * n2 * 4
        # logical: x once per band sub-tile of tn columns (gate and up share it), each
        # band of W1/W2 once per M tile, the gate/up and g round trips, the accumulator
        # zeroed, read-modify-written once per band and read by the final pass
        x_read = x_once * -(-f // t["tn"])
        w_read = (w1_once + w2_once) * t["mt"]
        gu = m * f * parts * w_gu
        g = m * f * w
        rmw = acc * t["ft"]
        side = sum(
            (si.num_elements(concrete(shape(v), dims)) or 0) * width(elt(v))
            for v in (*p.root.bias1, *(x for x in (p.root.bias2,) if x is not None))
        )
        res = y_bytes if p.root.residual is not None else 0
        read = x_read + w_read + gu + g + rmw + acc + res + side * t["mt"]
        write = gu + g + acc + rmw + y_bytes
        # HBM: x, the weights and the residual once (round-robin items keep the bands of
        # one or two bands in L2, x is re-read by every band); the accumulator and the
        # workspace slots stay in L2 while they fit beside x and the bands in flight
        resident = acc + x_once + t["gu_bytes"] + t["g_bytes"]
        spill = 0 if resident <= chip.l2_bytes // 2 else 2 * rmw
        transfer = blended_transfer(
            [
                (x_read, min(t["tm"], m) * t["kl1"] * w),
                (w_read, t["kl1"] * t["tn"] * w),
                (gu + g + 2 * rmw, min(t["tm"], m) * t["tn"] * 4),
                (acc + res + y_bytes, min(t["fr"], m) * t["fc"] * 4),
            ]
        )
        flops = 2.0 * m * k1 * f * parts + 2.0 * m * f * n2
        work = epilogue_work(p.act_rows, p.gate_mm, m * f) + epilogue_work(
            p.out_rows, p.down_mm, m * n2
        )
        work += m * n2  # zeroing the accumulator
        return KernelCost(
            gm_read_bytes=read,
            gm_write_bytes=write,
            hbm_read_bytes=x_once + w1_once + w2_once + res + side + spill // 2,
            hbm_write_bytes=y_bytes + spill // 2,
            vector_work=work,
            cube_flops=flops,
            transfer_bytes=transfer,
            ub_bytes=sum(epilogue_ub(r) for r in p.row_plans) + ZERO_ELEMS * 4,
            cube_cores_used=blocks,
            vector_cores_used=2 * blocks,
            notes=[
                f"{t['ft']} bands of {t['bf']}: accumulator read-modify-write {2 * rmw} bytes",
                f"gate/up and g round trips {2 * (gu + g)} bytes",
            ],
        )

    def read_first(self, plan: Plan) -> list[SSAValue]:
        """The residual: the first pass reads it into the accumulator."""
        residual = cast(FfnPlan, plan).root.residual
        return [residual] if residual is not None else []

    def scratch(self, plan: Plan, chip: ChipSpec, dims: Sequence[int] | None = None) -> int:
        """GM bytes of the kernel's own tensors that live through the whole kernel: the
        accumulator and the workspace slots (the traffic model's scratch)."""
        p = cast(FfnPlan, plan)
        t = ffn_tiling(IntOps(), *p.sizes(dims), p, chip).values
        return t["acc_bytes"] + t["gu_bytes"] + t["g_bytes"]

    def lower(self, plan: Plan, name: str, chip: ChipSpec) -> Lowered:
        p = cast(FfnPlan, plan)
        emitters: list[FfnKernel] = []
        for _ in range(6):
            emitters.append(FfnKernel(p, name, chip))
            kernel = emitters[-1].build()
            need = footprint(kernel)
            for space in ("l1", "l0a", "l0b", "l0c"):
                have = chip.capacity(space)
                assert have is None or need.get(space, 0) <= have, (name, space, need)
            used = need.get("ub", 0)
            if used <= chip.ub_bytes:
                kernel.attributes["afc.ub_bytes"] = graph.int_attr(used)
                break
            for rows in p.row_plans:  # the row kernels' working buffers
                scaled = rows.max_tile_elems * chip.ub_bytes // used
                rows.max_tile_elems = max(rows.align_elems * FRACTAL, scaled // 64 * 64 - 64)
        else:
            raise UserError(f"kernel {name} does not fit the {chip.name} UB with any tile")
        emitter = emitters[-1]

        def body(kb: KernelBuilder) -> list[SSAValue]:
            m, k1, f, n2 = kb.entry.args
            t = ffn_tiling(kb.idx, m, k1, f, n2, p, chip)
            return [*t.values.values(), t.blocks]

        tiling = tiling_function(name, ["M", "K1", "F", "N2"], body)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: Plan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        p = cast(FfnPlan, plan)
        x = outside.get(p.root.input)
        xs = shape(p.root.input)
        lead: list[SSAValue] = []
        for d, size in enumerate(xs[:-1]):
            v = runtime_dim(b, [(x, d)], size)
            lead.append(idx.const(v) if isinstance(v, int) else v)
        m = idx.product(lead)
        k1, f = xs[-1], shape(p.root.weight2)[0]
        n2 = shape(p.root.output)[-1]
        dims = [m, idx.const(k1), idx.const(f), idx.const(n2)]
        out_dims = [v for v, d in zip(lead, shape(p.root.output)[:-1]) if d == DYN]
        return HostLaunch(dims, [], out_dims)


# ---- emission ------------------------------------------------------------------------------


class FfnKernel(CubeKernel):
    """Builds the buffer.kernel of an FfnPlan."""

    template = "ffn"

    def __init__(self, plan: FfnPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        r = plan.root
        act = r.activation.data
        gate_act = (None, None, None) if r.gated else (act, None, None)
        biases = plan.bias_ps
        emitters = {
            plan.gate_mm: root_emitter(
                plan.gate_raw, biases[0] if biases else None, 1.0, 1.0, gate_act
            )
        }
        if plan.up_mm is not None:
            assert plan.up_raw is not None
            up_bias = biases[1] if biases else None
            emitters[plan.up_mm] = root_emitter(plan.up_raw, up_bias, 1.0, 1.0, (None,) * 3)
        sources = [v for v in (plan.gate_raw, plan.up_raw) if v is not None]
        self.act = RowKernel(
            plan.act_rows, name, chip.name, chip.cube_cores, sources=sources, emitters=emitters
        )
        self.out = RowKernel(
            plan.out_rows,
            name,
            chip.name,
            chip.cube_cores,
            sources=[plan.acc_ps],
            emitters={plan.down_mm: root_emitter(plan.acc_ps, plan.b2_ps, 1.0, 1.0, (None,) * 3)},
        )
        self.init = None
        if plan.init_rows is not None:
            self.init = RowKernel(plan.init_rows, name, chip.name, chip.cube_cores)
        inputs = [r.input, *r.weight1, r.weight2, *r.bias1]
        inputs += [v for v in (r.bias2, r.residual) if v is not None]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return [self.p.root.output]

    def params(self) -> Sequence[str]:
        return PARAMS

    # ---- the kernel ------------------------------------------------------------------

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        blocks = kb.insert(buffer.BlockNumOp(), "blocks").results[0]
        self.ws_gu = kb.insert(buffer.WorkspaceOp(t["gu_bytes"], p.gu_elt), "ws_gu").results[0]
        self.ws_g = kb.insert(buffer.WorkspaceOp(t["g_bytes"], p.in_elt), "ws_g").results[0]
        self.acc = kb.insert(buffer.WorkspaceOp(t["acc_bytes"], f32), "acc").results[0]
        self._queues()
        zeros = None
        if self.init is None:
            zeros = kb.tbuf(idx.const(ZERO_ELEMS * 4), ZERO_ELEMS * 4, f32, "zeros")
        self._attach_row_kernels()
        sub = kb.insert(buffer.SubBlockIdxOp(), "sub").results[0]
        aiv = idx.add(idx.mul(bid, idx.const(2)), sub)
        aivs = idx.mul(blocks, idx.const(2))
        if self.init is not None:  # acc = float32(residual): the residual is read first
            names = ("ir", "ic", "i_col_tiles", "i_row_blocks")
            self._pass(self.init, [t[n] for n in names], aiv, aivs)
        else:
            self._clear_accumulator(cast(SSAValue, zeros), aiv, aivs)
        kb.insert(buffer.SyncAllOp())
        mine = idx.ceildiv(idx.sub(t["items"], bid), blocks)
        with kb.loop(idx.const(0), idx.add(mine, idx.const(1)), "step") as s:
            self.act.start_pool(cast(Operation, kb.entry.last_op))
            with kb.when(kb.less(s, mine)):
                item = idx.add(bid, idx.mul(s, blocks))
                self._gate_up(item, bid, s)
                self._activation(item, bid, s)
            with kb.when(kb.less(idx.const(0), s)):
                prev = idx.sub(s, idx.const(1))
                self._down(idx.add(bid, idx.mul(prev, blocks)), bid, prev)
        kb.insert(buffer.SyncAllOp())
        names = ("fr", "fc", "f_col_tiles", "f_row_blocks")
        self._pass(self.out, [t[n] for n in names], aiv, aivs)

    def _queues(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tl, w, e = p.tiles, width(p.in_elt), p.in_elt

        def nbytes(*factors: SSAValue) -> SSAValue:
            return idx.mul(idx.product(list(factors)), idx.const(w))

        self.qa1 = kb.queue("a1", 2, nbytes(t["tm"], t["kl1"]), tl.tm * tl.kl1 * w, e, "q_x1")
        self.qg = kb.queue("a1", 1, nbytes(t["tm"], t["bf"]), tl.tm * tl.bf * w, e, "q_g1")
        self.qb1 = [
            kb.queue("b1", 2, nbytes(t["kl1"], t["tn"]), tl.kl1 * tl.tn * w, e, f"q_w{i}")
            for i in range(p.parts_count)
        ]
        self.qa2 = kb.queue("a2", 2, nbytes(t["tm"], t["tk"]), tl.tm * tl.tk * w, e, "q_a2")
        self.qb2 = kb.queue("b2", 2, nbytes(t["tk"], t["tn"]), tl.tk * tl.tn * w, e, "q_b2")
        c_bytes = idx.mul(idx.mul(t["tm"], t["tn"]), idx.const(4))
        self.qc = kb.queue("co1", 2, c_bytes, tl.tm * tl.tn * 4, f32, "q_c")

    def _attach_row_kernels(self) -> None:
        """Queues and residents of the vector passes (at the kernel's top)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        r = p.root
        gm: dict[SSAValue, SSAValue] = {p.g_ps: self.ws_g}
        if p.merged and r.bias1:  # one [2F] bias: the up half at column F
            gm[p.bias_ps[0]] = self.gm[r.bias1[0]]
            gm[p.bias_ps[1]] = kb.view(self.gm[r.bias1[0]], t["F"])
        else:
            gm |= {ps: self.gm[v] for ps, v in zip(p.bias_ps, r.bias1)}
        rt = {"tile_rows": t["er"], "tile_stride": t["a_stride"], "cols": t["bf"]}
        self.act.attach(kb, gm, rt)
        if self.init is not None:
            gm = {
                cast(SSAValue, p.res_ps): self.gm[cast(SSAValue, r.residual)],
                cast(SSAValue, p.init_ps): self.acc,
            }
            rt = {"tile_rows": t["ir"], "tile_stride": t["i_stride"], "cols": t["N2"]}
            self.init.attach(kb, gm, rt)
        gm = {p.y_ps: self.gm[r.output]}
        if p.b2_ps is not None:
            gm[p.b2_ps] = self.gm[cast(SSAValue, r.bias2)]
        self.out.attach(
            kb, gm, {"tile_rows": t["fr"], "tile_stride": t["f_stride"], "cols": t["N2"]}
        )
        del idx

    def _clear_accumulator(self, zeros: SSAValue, aiv: SSAValue, aivs: SSAValue) -> None:
        """Every AIV zeroes every aivs-th piece of ZERO_ELEMS accumulator elements."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        z = idx.const(ZERO_ELEMS)
        with kb.stage("compute"):
            kb.insert(buffer.VDupOp(zeros, kb.f32(0.0), z))
        total = idx.mul(t["M"], t["N2"])
        mine = idx.ceildiv(idx.sub(idx.max(t["z_pieces"], aiv), aiv), aivs)
        with kb.loop(idx.const(0), mine, "piece") as q:
            start = idx.mul(idx.add(aiv, idx.mul(q, aivs)), z)
            with kb.stage("copy_out"):
                kb.copy_1d(zeros, kb.view(self.acc, start), idx.min(z, idx.sub(total, start)))

    def _item(self, item: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
        """(m0, rows, f0, band columns) of a work item (band-major numbering)."""
        idx, t = self.kb.idx, self.t
        mi = idx.rem(item, t["mt"])
        band = idx.floordiv(item, t["mt"])
        m0 = idx.mul(mi, t["tm"])
        f0 = idx.mul(band, t["bf"])
        nrows = idx.min(t["tm"], idx.sub(t["M"], m0))
        nband = idx.min(t["bf"], idx.sub(t["F"], f0))
        nrows.name_hint, nband.name_hint = "m", "nband"
        return m0, nrows, f0, nband

    def _slot(self, bid: SSAValue, step: SSAValue, part: int, parts: int) -> SSAValue:
        """Element offset of this block's slot for `step` (part `part` of `parts`)."""
        idx, t = self.kb.idx, self.t
        slot = idx.rem(step, idx.const(SLOTS))
        index = idx.add(
            idx.mul(idx.add(idx.mul(bid, idx.const(SLOTS)), slot), idx.const(parts)),
            idx.const(part),
        )
        return idx.mul(index, idx.mul(t["tm"], t["bf"]))

    def _gate_up(self, item: SSAValue, bid: SSAValue, step: SSAValue) -> None:
        """AIC: the band's gate/up (or plain) products into this step's slot; READY."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        m0, nrows, f0, nband = self._item(item)
        r = p.root
        w1 = [self.gm[v] for v in r.weight1]
        f = t["F"]
        row = idx.mul(f, idx.const(2)) if p.merged else f
        bases: list[tuple[SSAValue, SSAValue]] = [(w1[0], idx.const(0))]
        if p.gated:
            bases.append((w1[0], f) if p.merged else (w1[1], idx.const(0)))
        with kb.stage("cube"):
            with kb.loop(idx.const(0), idx.ceildiv(nband, t["tn"]), "sub") as sub:
                c_off = idx.mul(sub, t["tn"])
                c0 = idx.add(f0, c_off)
                ncols = idx.min(t["tn"], idx.sub(nband, c_off))
                ncols.name_hint = "ncols"
                cs: list[SSAValue] = [
                    kb.insert(buffer.QueueAllocOp(self.qc, f32), "c").results[0] for _ in bases
                ]
                self._k_loop(cs, m0, nrows, ncols, [(w, idx.add(b, c0), row) for w, b in bases])
                for part, c in enumerate(cs):
                    dst = idx.add(self._slot(bid, step, part, p.parts_count), c_off)
                    kb.insert(
                        buffer.CopyOp(c, kb.view(self.ws_gu, dst), nrows, ncols, ncols, t["bf"])
                    )
                    free(kb, self.qc, c)
            kb.insert(buffer.CrossCoreSetOp(READY, "aic", "fix"))

    def _k_loop(
        self,
        cs: list[SSAValue],
        m0: SSAValue,
        nrows: SSAValue,
        ncols: SSAValue,
        weights: list[tuple[SSAValue, SSAValue, SSAValue]],
    ) -> None:
        """cs[i] = x[m0.., :] @ W_i[:, col_i..] over K1: each x stage and L0A step serve
        every projection (weights: (GM memref, column, row stride))."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        e = p.in_elt
        x = self.gm[p.root.input]
        with kb.loop(idx.const(0), t["k_stages"], "ks") as s:
            k0 = idx.mul(s, t["kl1"])
            klen1 = idx.min(t["kl1"], idx.sub(t["K1"], k0))

            def fill_x(slot: SSAValue) -> None:
                src = kb.view(x, idx.add(idx.mul(m0, t["K1"]), k0))
                kb.copy(src, slot, nrows, klen1, t["K1"], t["kl1"])

            a1 = load(kb, self.qa1, e, fill_x, "x1")
            b1s = []
            for (w, col, row), q in zip(weights, self.qb1):

                def fill_w(
                    slot: SSAValue, w: SSAValue = w, col: SSAValue = col, row: SSAValue = row
                ) -> None:
                    src = kb.view(w, idx.add(idx.mul(k0, row), col))
                    kb.copy(src, slot, klen1, ncols, row, t["tn"])

                b1s.append(load(kb, q, e, fill_w, "w1"))
            with kb.loop(idx.const(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                k1 = idx.mul(kk, t["tk"])
                klen = idx.min(t["tk"], idx.sub(klen1, k1))
                a2 = load(
                    kb,
                    self.qa2,
                    e,
                    lambda slot: kb.copy(kb.view(a1, k1), slot, nrows, klen, t["kl1"], klen),
                    "a2",
                )
                first = nonzero(kb, idx.add(s, kk))
                for c, b1 in zip(cs, b1s):

                    def fill_b2(slot: SSAValue, b1: SSAValue = b1) -> None:
                        kb.copy(
                            kb.view(b1, idx.mul(k1, t["tn"])), slot, klen, ncols, t["tn"], ncols
                        )

                    b2 = load(kb, self.qb2, e, fill_b2, "b2")
                    mmad(kb, (c, a2, b2), (nrows, ncols, klen), first)
                    free(kb, self.qb2, b2)
                free(kb, self.qa2, a2)
            free(kb, self.qa1, a1)
            for b1, q in zip(b1s, self.qb1):
                free(kb, q, b1)

    def _activation(self, item: SSAValue, bid: SSAValue, step: SSAValue) -> None:
        """AIVs: g = act(gate/up) of the step's slot, chunk by chunk, into its g slot."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        m0, nrows, f0, nband = self._item(item)
        kb.insert(buffer.CrossCoreWaitOp(READY, "aiv"))
        col_chunks = idx.ceildiv(nband, t["ec"])
        chunks = idx.mul(idx.ceildiv(nrows, t["er"]), col_chunks)
        with chunk_loop(kb, chunks, sub_blocks(self.chip, True)) as e:
            r_off = idx.mul(idx.floordiv(e, col_chunks), t["er"])
            c_off = idx.mul(idx.rem(e, col_chunks), t["ec"])
            ner = idx.min(t["er"], idx.sub(nrows, r_off))
            nec = idx.min(t["ec"], idx.sub(nband, c_off))
            at = idx.add(idx.mul(r_off, t["bf"]), c_off)
            raws = [v for v in (p.gate_raw, p.up_raw) if v is not None]
            for part, raw in enumerate(raws):
                base = self._slot(bid, step, part, p.parts_count)
                self.act.source_views[raw] = (kb.view(self.ws_gu, idx.add(base, at)), t["bf"])
            # g's GM rows are the slot's; b1's columns are the band's (c0 = f0 + c_off)
            g_base = idx.add(self._slot(bid, step, 0, 1), idx.mul(r_off, t["bf"]))
            self.act.emit_tile(
                idx.add(m0, r_off),
                idx.add(f0, c_off),
                ner,
                nec,
                row_base=idx.sub(g_base, f0),
                row_stride=t["bf"],
            )
        kb.insert(buffer.CrossCoreSetOp(G_READY, "aiv", "mte3"))

    def _down(self, item: SSAValue, bid: SSAValue, step: SSAValue) -> None:
        """AIC: acc[tile, :] += g @ W2[band, :], chunk by chunk (atomic Fixpipe)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        m0, nrows, f0, nband = self._item(item)
        e = p.in_elt
        w2 = self.gm[p.root.weight2]
        with kb.stage("cube"):
            kb.insert(buffer.CrossCoreWaitOp(G_READY, "aic"))

            def fill_g(slot: SSAValue) -> None:
                src = kb.view(self.ws_g, self._slot(bid, step, 0, 1))
                kb.copy(src, slot, nrows, nband, t["bf"], t["bf"])

            g1 = load(kb, self.qg, e, fill_g, "g1")
            with kb.loop(idx.const(0), t["nt"], "nc") as nc:
                n0 = idx.mul(nc, t["tn"])
                ncols = idx.min(t["tn"], idx.sub(t["N2"], n0))
                ncols.name_hint = "ncols"
                c = kb.insert(buffer.QueueAllocOp(self.qc, f32), "c").results[0]
                stages = idx.ceildiv(nband, t["kl1"])
                with kb.loop(idx.const(0), stages, "ks") as s:
                    k0 = idx.mul(s, t["kl1"])
                    klen1 = idx.min(t["kl1"], idx.sub(nband, k0))

                    def fill_w(slot: SSAValue) -> None:
                        row = idx.add(f0, k0)
                        src = kb.view(w2, idx.add(idx.mul(row, t["N2"]), n0))
                        kb.copy(src, slot, klen1, ncols, t["N2"], t["tn"])

                    b1 = load(kb, self.qb1[0], e, fill_w, "w2")
                    with kb.loop(idx.const(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                        k1 = idx.mul(kk, t["tk"])
                        klen = idx.min(t["tk"], idx.sub(klen1, k1))
                        kg = idx.add(k0, k1)
                        a2 = load(
                            kb,
                            self.qa2,
                            e,
                            lambda slot: kb.copy(kb.view(g1, kg), slot, nrows, klen, t["bf"], klen),
                            "a2",
                        )
                        b2 = load(
                            kb,
                            self.qb2,
                            e,
                            lambda slot: kb.copy(
                                kb.view(b1, idx.mul(k1, t["tn"])), slot, klen, ncols, t["tn"], ncols
                            ),
                            "b2",
                        )
                        first = nonzero(kb, idx.add(s, kk))
                        mmad(kb, (c, a2, b2), (nrows, ncols, klen), first)
                        free(kb, self.qa2, a2)
                        free(kb, self.qb2, b2)
                    free(kb, self.qb1[0], b1)
                dst = kb.view(self.acc, idx.add(idx.mul(m0, t["N2"]), n0))
                kb.insert(buffer.CopyOp(c, dst, nrows, ncols, ncols, t["N2"], atomic=True))
                free(kb, self.qc, c)
            free(kb, self.qg, g1)

    def _pass(self, row: RowKernel, tiling: list[SSAValue], aiv: SSAValue, aivs: SSAValue) -> None:
        """AIVs: a row kernel over [M x N2] (the residual into the accumulator, or the
        accumulator + b2 into y), its row blocks dealt round-robin over the launch's
        AIVs, each with all its column tiles (`_pass_tiling`)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tile_rows, tile_cols, col_tiles, row_blocks = tiling
        mine = idx.ceildiv(idx.sub(idx.max(row_blocks, aiv), aiv), aivs)
        with kb.loop(idx.const(0), mine, "rb") as q:
            row.start_pool(cast(Operation, kb.entry.last_op))
            r0 = idx.mul(idx.add(aiv, idx.mul(q, aivs)), tile_rows)
            nr = idx.min(tile_rows, idx.sub(t["M"], r0))
            with kb.loop(idx.const(0), col_tiles, "ct") as ci:
                c0 = idx.mul(ci, tile_cols)
                nc = idx.min(tile_cols, idx.sub(t["N2"], c0))
                if row is self.out:
                    src = kb.view(self.acc, idx.add(idx.mul(r0, t["N2"]), c0))
                    row.source_views[p.acc_ps] = (src, t["N2"])
                row.emit_tile(r0, c0, nr, nc)


__all__ = ["FfnPlan", "FfnTemplate", "choose_ffn_tiles", "ffn_tiling"]
