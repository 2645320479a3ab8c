"""The `matmul` template: a MatmulOp or GemmOp (with its bias, alpha/beta, activation)
plus an elementwise/broadcast epilogue, as one cube kernel.

Data path (ascend.md 2.10): GM -> L1 (A1/B1, ND2NZ on real hardware) -> L0A/L0B
(LoadData, with transpose for a transposed operand) -> Mmad into a float32 L0C tile
(f16/bf16 inputs accumulate in f32). Then:

* no epilogue on a split chip (910B): Fixpipe L0C -> GM, converting to the output type
  and applying ReLU on the fly when that is the only activation (core type `aic`);
* coupled chips (910, 310P: CO2 is UB, ascend.md 1.7): L0C -> UB in chunks of rows (whole
  Nz fractals, CO1 -> CO2; the epilogue's copy-in lays them out as rows), the vector
  epilogue, UB -> GM (core type `mix`);
* split chips with an epilogue: Fixpipe L0C -> a per-core GM workspace (f16/bf16 when
  the graph rounds the product there anyway, else f32), the AIV reads it back in chunks
  (AIC and AIV exchange data only through GM, ascend.md 1.1 and 4).

Tiling (static bounds from the chip, `choose_tiles`; runtime values from `matmul_tiling`,
the same code evaluated on ints and emitted as the host tiling function):

    baseM, baseN, baseK: multiples of 16 (one fractal) with
        2 * baseM * baseK * w <= L0A,  2 * baseK * baseN * w <= L0B   (double buffered)
        baseM * baseN * 4 * c_depth <= L0C                           (f32 accumulator)
        2 * (baseM + baseN) * stepK * baseK * w <= L1                (A1/B1 stages)
        16 * round_up(baseN, 32 B) float32 epilogue rows fit UB (the row plan's budget)
    tm  = min(baseM, round16(M));  mt = ceil(M / tm)
    tn  = min(baseN, round16(ceil(N / clamp(ceil(cores / (batch * mt)), 1, ceil(N / 16)))))
    nt  = ceil(N / tn);  tk = min(baseK, round16(K));  kl1 = min(stepK * baseK, round_up(K, tk))
    tiles = batch * mt * nt;  blocks = min(tiles, cores);  per_core = ceil(tiles / blocks)
    group_m = clamp(floor(L2 / 2 / (tm * K * w)), 1, mt)
    er  = min(tm, round_down16(T_epilogue / round_up(tn, align)))   epilogue rows per chunk
    workspace = blocks * 2 * tm * tn * w_ws bytes (two slots per core: the AIC fills one
                while the AIV drains the other)

Each core takes `per_core` consecutive output tiles; each tile loops over ceil(K / kl1)
L1 stages of ceil(kl1 / tk) L0 steps. A is read once per N tile, B once per M tile.

Tile order (`tile_coords`): per batch item, groups of group_m M tiles; within a group M is
fastest, then N (group_m = 1: N fastest; group_m = mt: M fastest). Consecutive tiles of a
group share one band of B (K x tn), so each band comes from HBM once per group and its
other group_m - 1 reads hit L2; the group's group_m A bands (tm x K each) are re-read for
every N tile, and group_m is the largest count whose bands fit half the chip's L2 (all of
A, and B streams from HBM once, whenever A fits). HBM reads are then about
|A| + |B| * ceil(mt / group_m) instead of the logical nt * |A| + mt * |B|.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import ClassVar, Generic, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
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
from autofusion.lowering.kernel_builder import KernelBuilder, mapped_index, tiling_function
from autofusion.lowering.recorded_tiling import (
    EPILOGUE_TILE,
    fractal_refusal,
    overflow,
    take_row_tile,
    take_tiles,
)
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

# (baseM, baseN) in order of preference: the largest output tile first (most reuse of
# each loaded A and B element), then squarer ones
MN_CANDIDATES = (
    (128, 256),
    (256, 128),
    (128, 128),
    (64, 256),
    (128, 64),
    (64, 128),
    (64, 64),
    (32, 64),
    (32, 32),
    (16, 32),
    (16, 16),
)
K_CANDIDATES = (128, 64, 32, 16)
STEP_K = (4, 2, 1)


@dataclass(frozen=True)
class CubeTiles:
    """Static tile bounds of a GEMM-shaped cube kernel."""

    tm: int
    tn: int
    tk: int
    step_k: int
    c_depth: int

    @property
    def kl1(self) -> int:
        return self.tk * self.step_k


def tiles_footprint(tiles: CubeTiles, w: int) -> dict[str, int]:
    """Bytes of L0A/L0B/L0C/L1 the tiles take (double-buffered A/B stages) for `w`-byte
    inputs: the bounds `choose_tiles` keeps within the chip."""
    return {
        "l0a": 2 * tiles.tm * tiles.tk * w,
        "l0b": 2 * tiles.tk * tiles.tn * w,
        "l0c": tiles.c_depth * tiles.tm * tiles.tn * 4,
        "l1": 2 * (tiles.tm + tiles.tn) * tiles.kl1 * w,
    }


def choose_tiles(chip: ChipSpec, w: int, max_cols: int | None) -> CubeTiles | Refusal:
    """The largest base tile that fits L0A/L0B/L0C/L1 (and the epilogue's UB columns)."""
    for tm, tn in MN_CANDIDATES:
        if max_cols is not None and tn > max_cols:
            continue
        if tm * tn * 4 > chip.l0c_bytes:
            continue
        for tk in K_CANDIDATES:
            if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                continue
            for step in STEP_K:
                if 2 * (tm + tn) * tk * step * w <= chip.l1_bytes:
                    c_depth = 2 if 2 * tm * tn * 4 <= chip.l0c_bytes else 1
                    return CubeTiles(tm, tn, tk, step, c_depth)
    if max_cols is not None and max_cols < FRACTAL:
        return Refusal("the epilogue's buffers do not fit UB for even 16 columns of output")
    return Refusal(f"L0A/L0B/L0C of {chip.name} cannot hold a 16x16 fractal tile of {w}-byte data")


def recorded_cube_tiles(
    tiling: Mapping[str, TilingValue], rows: RowPlan | None, w: int, chip: ChipSpec
) -> CubeTiles | Refusal:
    """The cube tiles (and the epilogue's row tile) a recorded tiling gives, when they
    are fractals that fit L0A/L0B/L0C/L1 and the epilogue's UB columns."""
    tiles = take_tiles(CubeTiles, tiling, "matmul", [EPILOGUE_TILE] if rows is not None else [])
    if isinstance(tiles, Refusal):
        return tiles
    why = fractal_refusal("matmul", tm=tiles.tm, tn=tiles.tn, tk=tiles.tk)
    why = why or overflow(tiles_footprint(tiles, w), chip)
    if rows is not None:
        why = why or take_row_tile(rows, tiling, EPILOGUE_TILE)
        if why is None and tiles.tn > max_epilogue_cols(rows):
            why = Refusal(
                f"the tiling's tn = {tiles.tn} exceeds the {max_epilogue_cols(rows)} columns "
                "of the epilogue's UB tile"
            )
    return why or tiles


@dataclass
class MatmulPlan(Plan):
    template: ClassVar[str] = "matmul"
    parts: GroupParts
    root: Operation
    epilogue: list[Operation]
    a: SSAValue
    b: SSAValue
    bias: SSAValue | None
    alpha: float
    beta: float
    trans_a: bool
    trans_b: bool
    batch_shape: tuple[int, ...]  # output batch dims
    a_outer: tuple[int, ...]  # A's batch dims padded to batch_shape's rank (1: broadcast)
    b_outer: tuple[int, ...]
    tiles: CubeTiles
    direct: bool  # no vector side: Fixpipe L0C -> GM
    l0c_to_ub: bool
    ws_elt: Attribute | None  # workspace element type (split chips with an epilogue)
    rows: RowPlan | None
    raw: SSAValue | None

    @property
    def ops(self) -> list[Operation]:
        """The group's ops (root and epilogue), in program order."""
        return self.parts.ops

    @property
    def in_elt(self) -> Attribute:
        return elt(self.a)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return shape(self.root.results[0])

    def mnk(self) -> tuple[int, int, int]:
        a, b = shape(self.a), shape(self.b)
        m = a[-1] if self.trans_a else a[-2]
        k = a[-2] if self.trans_a else a[-1]
        n = b[-2] if self.trans_b else b[-1]
        return m, n, k


# ---- the tiling rule ---------------------------------------------------------------------

PARAMS = (
    "M",
    "N",
    "K",
    "tm",
    "tn",
    "tk",
    "kl1",
    "mt",
    "nt",
    "k_stages",
    "tiles",
    "per_core",
    "tile_stride",
    "er",
    "ws_bytes",
    "group_m",
)


@dataclass
class GemmTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


def gemm_tiling(
    ops: IndexOps[V],
    m: V,
    n: V,
    k: V,
    batch: V,
    t: CubeTiles,
    cores: int,
    align: int,
    max_tile_elems: int,
    ws_width: int,
    a_row_bytes: int = 0,
    l2_budget: int = 0,
) -> GemmTiling[V]:
    """The runtime tiling of a [batch x M x N] output over K (module docstring)."""
    c = ops.const
    tm = ops.min(c(t.tm), ops.round_up(m, FRACTAL))
    mt = ops.ceildiv(m, tm)
    rows_of_tiles = ops.mul(batch, mt)
    n_split = ops.max(
        c(1), ops.min(ops.ceildiv(c(cores), rows_of_tiles), ops.ceildiv(n, c(FRACTAL)))
    )
    tn = ops.min(c(t.tn), ops.round_up(ops.ceildiv(n, n_split), FRACTAL))
    nt = ops.ceildiv(n, tn)
    tk = ops.min(c(t.tk), ops.round_up(k, FRACTAL))
    kl1 = ops.min(c(t.kl1), ops.mul(ops.ceildiv(k, tk), tk))
    k_stages = ops.ceildiv(k, kl1)
    tiles = ops.mul(rows_of_tiles, nt)
    blocks = ops.max(c(1), ops.min(tiles, c(cores)))
    per_core = ops.ceildiv(tiles, blocks)
    stride = ops.round_up(tn, align)
    er = ops.min(
        tm, ops.max(c(FRACTAL), ops.round_down(ops.floordiv(c(max_tile_elems), stride), FRACTAL))
    )
    ws = ops.mul(ops.mul(blocks, c(2 * ws_width)), ops.mul(tm, tn))
    # tile order: groups of group_m M tiles, M fastest within a group (module docstring)
    band = ops.max(c(1), ops.mul(ops.mul(tm, k), c(a_row_bytes)))
    group_m = ops.max(c(1), ops.min(mt, ops.floordiv(c(l2_budget), band)))
    values = dict(
        zip(
            PARAMS,
            (m, n, k, tm, tn, tk, kl1, mt, nt, k_stages, tiles, per_core, stride, er, ws, group_m),
        )
    )
    return GemmTiling(values, blocks)


# ---- planning ------------------------------------------------------------------------------


def _batch_pattern(operand: tuple[int, ...], batch: tuple[int, ...]) -> tuple[int, ...] | None:
    """An operand's batch dims padded to the output's, 1 where it broadcasts."""
    own = (1,) * (len(batch) - len(operand)) + operand
    out = []
    for o, b in zip(own, batch):
        if o in (b, DYN):
            out.append(b if b != 1 else 1)
        elif o == 1:
            out.append(1)
        else:
            return None
    return tuple(out)


def plan_matmul(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> MatmulPlan | Refusal:
    found = split_group(parts, (graph.MatmulOp, graph.GemmOp), "matmul")
    if isinstance(found, Refusal):
        return found
    root, epilogue = found
    why = cube_dtype_refusal(root, chip)
    if why is not None:
        return why
    p = graph.Props(root.properties, root.name)
    a, b = root.operands[0], root.operands[1]
    bias = root.operands[2] if len(root.operands) == 3 else None
    if isinstance(root, graph.GemmOp):
        trans_a, trans_b = p.flag("trans_a"), p.flag("trans_b")
        alpha, beta = p.real("alpha"), p.real("beta")
        batch_shape: tuple[int, ...] = ()
        a_outer: tuple[int, ...] = ()
        b_outer: tuple[int, ...] = ()
    else:
        trans_a = trans_b = False
        alpha = beta = 1.0
        if len(shape(a)) < 2 or len(shape(b)) < 2:
            return Refusal("a 1-D matmul operand (matrix-vector product) has no cube kernel")
        batch_shape = shape(root.results[0])[:-2]
        pa = _batch_pattern(shape(a)[:-2], batch_shape)
        pb = _batch_pattern(shape(b)[:-2], batch_shape)
        if pa is None or pb is None:
            return Refusal("the operands' batch dims do not broadcast to the output's")
        a_outer, b_outer = pa, pb
    act = activation_of(root)
    w = width(elt(a))
    rank = len(shape(root.results[0]))
    direct = (
        not chip.l0c_to_ub
        and not epilogue
        and parts.outputs == [root.results[0]]
        and bias is None
        and alpha == 1.0
        and act[0] in (None, "relu")
    )
    rows: RowPlan | None = None
    raw: SSAValue | None = None
    ws_elt: Attribute | None = None
    max_cols = None
    out_elt = elt(root.results[0])
    if not direct:
        plain = bias is None and alpha == 1.0 and act[0] is None
        # the graph rounds a plain product to its type: Fixpipe can do that on the way out
        ws_elt = out_elt if (plain and not chip.l0c_to_ub) else f32
        raw = pseudo_value(ws_elt, shape(root.results[0]), "raw")
        extra = [bias] if bias is not None else []
        planned = plan_epilogue(root, raw, extra, epilogue, parts, rank - 1, chip.ub_bytes, chip)
        if isinstance(planned, Refusal):
            return planned
        rows = planned
        max_cols = max_epilogue_cols(rows)
    if not chip.data_copy_pad:
        why = _aligned_operands(root, a, b)
        if why is not None:
            return why
    if tiling is None:
        tiles = choose_tiles(chip, w, max_cols)
    else:
        tiles = recorded_cube_tiles(tiling, rows, w, chip)
    if isinstance(tiles, Refusal):
        return tiles
    return MatmulPlan(
        parts,
        root,
        epilogue,
        a,
        b,
        bias,
        alpha,
        beta,
        trans_a,
        trans_b,
        batch_shape,
        a_outer,
        b_outer,
        tiles,
        direct,
        chip.l0c_to_ub,
        ws_elt,
        rows,
        raw,
    )


def _aligned_operands(root: Operation, a: SSAValue, b: SSAValue) -> Refusal | None:
    """Without DataCopyPad every GM block is a 32-byte multiple (ascend.md 2.7, 4): the
    contiguous runs of A and B tiles (and output rows) must be, at every tile."""
    # a tile's contiguous runs are along each matrix's last dim, whatever the transposes
    for v in (a, b, root.results[0]):
        d = shape(v)[-1]
        if d == DYN or (d * width(elt(v))) % 32:
            return Refusal(
                f"rows of {'dynamic' if d == DYN else d} elements of {root.name}'s operands "
                "are not 32-byte multiples and the chip has no DataCopyPad"
            )
    return None


# ---- the template ----------------------------------------------------------------------------


class MatmulTemplate(KernelTemplate):
    name = "matmul"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> MatmulPlan | Refusal:
        return plan_matmul(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> MatmulPlan | Refusal:
        return plan_matmul(parts, chip, tiling)

    def tiling(self, plan: Plan) -> dict[str, TilingValue]:
        p = cast(MatmulPlan, plan)
        rows = {EPILOGUE_TILE: p.rows.max_tile_elems} if p.rows is not None else {}
        return {**asdict(p.tiles), **rows}

    def footprint(self, plan: Plan, chip: ChipSpec) -> dict[str, int]:
        p = cast(MatmulPlan, plan)
        return {**tiles_footprint(p.tiles, width(p.in_elt)), "ub": epilogue_ub(p.rows)}

    def cost(self, plan: Plan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        p = cast(MatmulPlan, plan)
        m, n, k, batch = _sizes(p, dims)
        tiling = _tiling(IntOps(), p, chip, m, n, k, batch)
        t, blocks = tiling.values, tiling.blocks
        w = width(p.in_elt)
        rows = batch * m
        chunks = batch * t["mt"] * -(-t["tm"] // t["er"]) * t["nt"]
        external = [p.raw] if p.raw is not None else []
        read, write = epilogue_io(p.rows, external, rows, n, chunks, t["tn"], t["nt"], blocks, dims)
        if p.direct:
            write += rows * n * width(elt(p.root.results[0]))
        ws = rows * n * width(p.ws_elt) if p.ws_elt is not None and not p.l0c_to_ub else 0
        # A once per N tile, B once per M tile; the workspace written and read back
        a_bytes = batch * m * k * w * t["nt"]
        b_bytes = batch * k * n * w * t["mt"]
        tm, tn, kl1 = min(t["tm"], m), min(t["tn"], n), min(t["kl1"], k)
        chunk = min(t["er"], m) * tn * 4
        transfer = blended_transfer(
            [(a_bytes, tm * kl1 * w), (b_bytes, kl1 * tn * w), (read + write + 2 * ws, chunk)]
        )
        # HBM (tile order, module docstring): the group's A bands stay in L2, each B band
        # comes once per group; a whole operand that fits the budget is read once; the
        # workspace slots are rewritten in place and never leave L2
        budget = l2_budget(chip)
        sweeps = -(-t["mt"] // t["group_m"])
        a_whole, b_whole = _operand_bytes(p.a, dims), _operand_bytes(p.b, dims)
        hbm_a = a_whole if a_whole <= budget else batch * m * k * w
        hbm_b = b_whole if b_whole <= budget else min(b_bytes, batch * k * n * w * sweeps)
        epilogue_in = epilogue_unique_read(p.rows, external, dims)
        return KernelCost(
            gm_read_bytes=a_bytes + b_bytes + read + ws,
            gm_write_bytes=write + ws,
            hbm_read_bytes=hbm_a + hbm_b + min(read, epilogue_in),
            hbm_write_bytes=write,
            vector_work=epilogue_work(p.rows, p.root, rows * n),
            cube_flops=2.0
            * batch
            * round_up(m, FRACTAL)
            * round_up(n, FRACTAL)
            * round_up(k, FRACTAL),
            transfer_bytes=transfer,
            ub_bytes=epilogue_ub(p.rows),
            cube_cores_used=blocks,
            vector_cores_used=0 if p.direct else blocks * sub_blocks(chip, bool(ws)),
            notes=[f"workspace round trip {2 * ws} bytes"] if ws else [],
        )

    def read_once(self, plan: Plan, chip: ChipSpec) -> list[SSAValue]:
        """B when M fits one tile, A when N does (each not broadcast over batch dims):
        the other operand's tiles then never re-read it (A is read once per N tile, B
        once per M tile); the epilogue's full inputs. Static shapes only."""
        from autofusion.lowering.l2_hint import full_row_inputs

        p = cast(MatmulPlan, plan)
        m, n, k = p.mnk()
        if DYN in (m, n, k, *p.batch_shape):
            return []
        batch = si.num_elements(p.batch_shape) or 1
        t = _tiling(IntOps(), p, chip, m, n, k, batch).values
        once: list[SSAValue] = []
        if t["mt"] == 1 and (si.num_elements(p.b_outer) or 1) == batch:
            once.append(p.b)
        if t["nt"] == 1 and (si.num_elements(p.a_outer) or 1) == batch:
            once.append(p.a)
        roles = [p.a, p.b]
        if p.rows is not None:
            once += full_row_inputs(p.rows)
            roles += p.rows.inputs
        # a value in two roles (x @ x, or B also read by the epilogue) is read twice
        return [v for v in dict.fromkeys(once) if roles.count(v) == 1]

    def lower(self, plan: Plan, name: str, chip: ChipSpec) -> Lowered:
        p = cast(MatmulPlan, plan)
        emitters: list[MatmulKernel] = []

        def build() -> buffer.KernelOp:
            emitters.append(MatmulKernel(p, name, chip))
            return emitters[-1].build()

        def shrink(max_cols: int) -> None:
            if p.tiles.tn > max_cols:
                p.tiles = replace(p.tiles, tn=max_cols // FRACTAL * FRACTAL)

        kernel = emit_fitting(build, p.rows, chip, shrink)
        emitter = emitters[-1]
        nb = len(p.batch_shape)
        arg_names = ["M", "N", "K", *(f"batch{d}" for d in range(nb))]

        def body(kb: KernelBuilder) -> list[SSAValue]:
            m, n, k = kb.entry.args[:3]
            batch = kb.idx.product(list(kb.entry.args[3:]))
            t = _tiling(kb.idx, p, chip, m, n, k, batch)
            return [*t.values.values(), *kb.entry.args[3:], t.blocks]

        tiling = tiling_function(name, arg_names, body)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: Plan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        p = cast(MatmulPlan, plan)
        a, bb = outside.get(p.a), outside.get(p.b)
        ra, rb = len(shape(p.a)), len(shape(p.b))
        m_axis, k_axis = (ra - 1, ra - 2) if p.trans_a else (ra - 2, ra - 1)
        n_axis = rb - 2 if p.trans_b else rb - 1
        kb_axis = rb - 1 if p.trans_b else rb - 2
        out = p.out_shape
        m_s, n_s, k_s = p.mnk()
        values: list[SSAValue | int] = [
            runtime_dim(b, [(a, m_axis)], m_s),
            runtime_dim(b, [(bb, n_axis)], n_s),
            runtime_dim(b, [(a, k_axis), (bb, kb_axis)], k_s),
        ]
        nb = len(p.batch_shape)
        for d in range(nb):
            cands = []
            for v, r in ((a, ra), (bb, rb)):
                pos = d - (nb - (r - 2))
                if v is not None and pos >= 0:
                    cands.append((v, pos))
            values.append(runtime_dim(b, cands, out[d]))
        dims = [idx.const(v) if isinstance(v, int) else v for v in values]
        anchor = [*dims[3:], dims[0], dims[1]]
        return HostLaunch(dims, [], output_dims(p.parts.outputs, anchor, len(out)))


def _operand_bytes(v: SSAValue, dims: Sequence[int] | None) -> int:
    """Bytes of a whole operand tensor (dynamic dims from `dims`, else 1)."""
    return (si.num_elements(concrete(shape(v), dims)) or 0) * width(elt(v))


def _sizes(p: MatmulPlan, dims: Sequence[int] | None) -> tuple[int, int, int, int]:
    """(M, N, K, batch) with dynamic dims taken from `dims` in order (output dims, then
    K), else 1."""
    out = p.out_shape
    k = p.mnk()[2]
    sized = concrete([*out, k], dims)
    return sized[-3], sized[-2], sized[-1], si.num_elements(sized[:-3]) or 1


def l2_budget(chip: ChipSpec) -> int:
    """L2 bytes a matmul may keep its re-read A bands in (half: the rest holds the B
    bands in flight, the output and other kernels' data)."""
    return chip.l2_bytes // 2


def tile_coords(ops: IndexOps[V], tile: V, t: dict[str, V]) -> tuple[V, V, V]:
    """(batch, M tile, N tile) of output tile `tile` in the grouped order: per batch,
    groups of `group_m` M tiles; within a group M is fastest, then N."""
    per_batch = ops.mul(t["mt"], t["nt"])
    ob = ops.floordiv(tile, per_batch)
    tb = ops.rem(tile, per_batch)
    group = ops.mul(t["group_m"], t["nt"])
    first_m = ops.mul(ops.floordiv(tb, group), t["group_m"])
    rows = ops.min(t["group_m"], ops.sub(t["mt"], first_m))
    local = ops.rem(tb, group)
    return ob, ops.add(first_m, ops.rem(local, rows)), ops.floordiv(local, rows)


def _tiling(
    ops: IndexOps[V], p: MatmulPlan, chip: ChipSpec, m: V, n: V, k: V, batch: V
) -> GemmTiling[V]:
    rows = p.rows
    return gemm_tiling(
        ops,
        m,
        n,
        k,
        batch,
        p.tiles,
        chip.cube_cores,
        rows.align_elems if rows is not None else 8,
        rows.max_tile_elems if rows is not None else p.tiles.tm * p.tiles.tn,
        width(p.ws_elt) if p.ws_elt is not None and not p.l0c_to_ub else 0,
        width(p.in_elt),
        l2_budget(chip),
    )


# ---- emission ------------------------------------------------------------------------------


class MatmulKernel(CubeKernel):
    """Builds the buffer.kernel of a MatmulPlan."""

    template = "matmul"

    def __init__(self, plan: MatmulPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        self.row: RowKernel | None = None
        if plan.rows is not None:
            assert plan.raw is not None
            act = activation_of(plan.root)
            self.row = RowKernel(
                plan.rows,
                name,
                chip.name,
                chip.cube_cores,
                sources=[plan.raw],
                emitters={plan.root: root_emitter(plan.raw, plan.bias, plan.alpha, plan.beta, act)},
            )
        inputs = [plan.a, plan.b, *(self.row.gm_inputs if self.row else [])]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return list(self.p.parts.outputs)

    def params(self) -> Sequence[str]:
        return [*PARAMS, *(f"batch{d}" for d in range(len(self.p.batch_shape)))]

    def core_type(self) -> str:
        return "aic" if self.p.direct else "mix"

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tiles, w, in_elt = p.tiles, width(p.in_elt), p.in_elt
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["tiles"])
        ws = None
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], p.ws_elt), "ws").results[0]
        tm_tn = idx.mul(t["tm"], t["tn"])
        qa1 = kb.queue(
            "a1",
            2,
            idx.mul(idx.mul(t["tm"], t["kl1"]), idx.const(w)),
            tiles.tm * tiles.kl1 * w,
            in_elt,
            "q_a1",
        )
        qb1 = kb.queue(
            "b1",
            2,
            idx.mul(idx.mul(t["kl1"], t["tn"]), idx.const(w)),
            tiles.kl1 * tiles.tn * w,
            in_elt,
            "q_b1",
        )
        qa2 = kb.queue(
            "a2",
            2,
            idx.mul(idx.mul(t["tm"], t["tk"]), idx.const(w)),
            tiles.tm * tiles.tk * w,
            in_elt,
            "q_a2",
        )
        qb2 = kb.queue(
            "b2",
            2,
            idx.mul(idx.mul(t["tk"], t["tn"]), idx.const(w)),
            tiles.tk * tiles.tn * w,
            in_elt,
            "q_b2",
        )
        qc = kb.queue(
            "co1", tiles.c_depth, idx.mul(tm_tn, idx.const(4)), tiles.tm * tiles.tn * 4, f32, "q_c"
        )
        row = self.row
        self.c_ub: SSAValue | None = None
        if row is not None and p.l0c_to_ub:
            nbytes = idx.mul(idx.mul(t["er"], t["tn"]), idx.const(4))
            self.c_ub = co2_stage(kb, nbytes, co2_stage_bytes(row.plan, tiles.tm, tiles.tn))
        if row is not None:
            rt = {"tile_rows": t["er"], "tile_stride": t["tile_stride"], "cols": t["N"]}
            outer = [t[f"batch{d}"] for d in range(len(p.batch_shape))] + [t["M"]]
            rt |= {f"outer{d}": v for d, v in enumerate(outer)}
            row.attach(kb, {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs)}, rt)
        with kb.loop(first, last, "tile") as tile:
            if row is not None:
                row.start_pool(cast(Operation, kb.entry.last_op))
            ob, mi, ni = tile_coords(idx, tile, t)
            m0 = idx.mul(mi, t["tm"])
            n0 = idx.mul(ni, t["tn"])
            nrows = idx.min(t["tm"], idx.sub(t["M"], m0))
            ncols = idx.min(t["tn"], idx.sub(t["N"], n0))
            nrows.name_hint, ncols.name_hint = "m", "ncols"
            with kb.stage("cube"):
                c = kb.insert(buffer.QueueAllocOp(qc, f32), "c").results[0]
                self._k_loop(c, ob, m0, n0, nrows, ncols, (qa1, qb1, qa2, qb2))
                if p.direct:
                    out = p.parts.outputs[0]
                    dst = kb.view(
                        self.gm[out], idx.add(idx.mul(idx.add(idx.mul(ob, t["M"]), m0), t["N"]), n0)
                    )
                    kb.insert(
                        buffer.CopyOp(
                            c,
                            dst,
                            nrows,
                            ncols,
                            ncols,
                            t["N"],
                            relu=activation_of(p.root)[0] == "relu",
                        )
                    )
                    free(kb, qc, c)
                elif ws is not None:
                    slot = idx.rem(idx.sub(tile, first), idx.const(2))
                    base = idx.mul(idx.add(idx.mul(bid, idx.const(2)), slot), tm_tn)
                    await_slot(kb, tile, first)
                    kb.insert(buffer.CopyOp(c, kb.view(ws, base), nrows, ncols, ncols, t["tn"]))
                    free(kb, qc, c)
                    tile_written(kb)
                else:
                    kb.insert(buffer.EnqueOp(qc, c))
            if row is not None:
                self._epilogue(row, tile, first, last, bid, ob, m0, n0, nrows, ncols, qc, ws)

    def _epilogue(
        self,
        row: RowKernel,
        tile: SSAValue,
        first: SSAValue,
        last: SSAValue,
        bid: SSAValue,
        ob: SSAValue,
        m0: SSAValue,
        n0: SSAValue,
        nrows: SSAValue,
        ncols: SSAValue,
        qc: SSAValue,
        ws: SSAValue | None,
    ) -> None:
        """The vector side of one output tile, in chunks of `er` rows: the raw product
        from L0C (coupled) or the workspace slot (split), then the row kernel's stages."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        assert p.raw is not None
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
                slot = idx.rem(idx.sub(tile, first), idx.const(2))
                base = idx.mul(idx.add(idx.mul(bid, idx.const(2)), slot), idx.mul(t["tm"], t["tn"]))
                src = kb.view(ws, idx.add(base, idx.mul(r_off, t["tn"])))
                row.source_views[p.raw] = (src, t["tn"])
            r0 = idx.add(idx.add(idx.mul(ob, t["M"]), m0), r_off)
            row.emit_tile(r0, n0, ner, ncols)
        if cd is not None:
            free(kb, qc, cd)
        else:
            slot_read(kb, tile, last)

    def _k_loop(
        self,
        c: SSAValue,
        ob: SSAValue,
        m0: SSAValue,
        n0: SSAValue,
        nrows: SSAValue,
        ncols: SSAValue,
        queues: tuple[SSAValue, SSAValue, SSAValue, SSAValue],
    ) -> None:
        """Accumulate op(A)[m0.., :] @ op(B)[:, n0..] over K into the L0C tile c."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        qa1, qb1, qa2, qb2 = queues
        in_elt = p.in_elt
        nb = len(p.batch_shape)
        outer = [t[f"batch{d}"] for d in range(nb)]
        a_base = b_base = idx.const(0)
        if nb:  # the operands' own batch (0 where they broadcast) times their matrix size
            a_batch = mapped_index(kb, ob, outer, p.a_outer)
            b_batch = mapped_index(kb, ob, outer, p.b_outer)
            a_base = idx.mul(a_batch, idx.mul(t["M"], t["K"]))
            b_base = idx.mul(b_batch, idx.mul(t["K"], t["N"]))
        a_gm, b_gm = self.gm[p.a], self.gm[p.b]
        with kb.loop(idx.const(0), t["k_stages"], "ks") as s:
            k0 = idx.mul(s, t["kl1"])
            klen1 = idx.min(t["kl1"], idx.sub(t["K"], k0))

            def fill_a1(slot: SSAValue) -> None:
                if p.trans_a:  # A is [K, M]: rows of the stage are K
                    src = kb.view(a_gm, idx.add(a_base, idx.add(idx.mul(k0, t["M"]), m0)))
                    kb.copy(src, slot, klen1, nrows, t["M"], t["tm"])
                else:
                    src = kb.view(a_gm, idx.add(a_base, idx.add(idx.mul(m0, t["K"]), k0)))
                    kb.copy(src, slot, nrows, klen1, t["K"], t["kl1"])

            def fill_b1(slot: SSAValue) -> None:
                if p.trans_b:  # B is [N, K]
                    src = kb.view(b_gm, idx.add(b_base, idx.add(idx.mul(n0, t["K"]), k0)))
                    kb.copy(src, slot, ncols, klen1, t["K"], t["kl1"])
                else:
                    src = kb.view(b_gm, idx.add(b_base, idx.add(idx.mul(k0, t["N"]), n0)))
                    kb.copy(src, slot, klen1, ncols, t["N"], t["tn"])

            a1 = load(kb, qa1, in_elt, fill_a1, "a1")
            b1 = load(kb, qb1, in_elt, fill_b1, "b1")
            with kb.loop(idx.const(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                k1 = idx.mul(kk, t["tk"])
                klen = idx.min(t["tk"], idx.sub(klen1, k1))

                def fill_a2(slot: SSAValue) -> None:
                    if p.trans_a:
                        src = kb.view(a1, idx.mul(k1, t["tm"]))
                        kb.insert(
                            buffer.CopyOp(src, slot, klen, nrows, t["tm"], klen, transpose=True)
                        )
                    else:
                        kb.copy(kb.view(a1, k1), slot, nrows, klen, t["kl1"], klen)

                def fill_b2(slot: SSAValue) -> None:
                    if p.trans_b:
                        src = kb.view(b1, k1)
                        kb.insert(
                            buffer.CopyOp(src, slot, ncols, klen, t["kl1"], ncols, transpose=True)
                        )
                    else:
                        kb.copy(
                            kb.view(b1, idx.mul(k1, t["tn"])), slot, klen, ncols, t["tn"], ncols
                        )

                mmad_step(
                    kb,
                    (qa2, qb2),
                    in_elt,
                    (fill_a2, fill_b2),
                    c,
                    (nrows, ncols, klen),
                    idx.add(s, kk),
                )
            free(kb, qa1, a1)
            free(kb, qb1, b1)


__all__ = ["MatmulPlan", "MatmulTemplate", "choose_tiles", "gemm_tiling"]
