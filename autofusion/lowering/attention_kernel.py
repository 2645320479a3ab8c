"""The `attention` template: a FlashAttentionOp (BNSD or BSND, GQA, bool/float mask,
causal, scale) plus an elementwise epilogue, as one cube + vector kernel.

One step is one (batch b, query head h, query block of tq rows). The query block stays
in L0A for the whole step; key/value blocks of tkv rows stream through L1 and the online
softmax (running max m and sum l, rescaling by alpha = exp(m_old - m_new)) runs in
float32 on the vector unit:

    S   = Q_blk @ K_blk^T                      cube: K block loaded to L0B transposed
    S   = scale * S (+ mask | where(mask, S, -inf)) (causal: -inf where key > query)
    m'  = max(m, rowmax S);  alpha = exp(m - m');  P = exp(S - m')
    l   = alpha * l + rowsum P;  O = alpha * O + P @ V     cube: P (input type) in L0A
    out = O / l  -> epilogue -> GM

S and P@V leave L0C for UB directly on coupled chips (CO2 is UB, ascend.md 1.7: whole Nz
fractals into a stage, then laid out as rows UB -> UB) and P goes UB -> L1 (fractal
strips, docs/codegen.md); 910, which has no Select with a tensor mask, masks with Min
against +-inf bounds; on split chips (2201) all three cross through per-core GM workspaces (AIC
and AIV exchange data only through GM, ascend.md 1.1, 4), each hand-over a cross-core
flag (S ready, P ready, P@V ready), and the two AIVs of a block take half of each query
block's rows each (`buffer.sub_block_idx`; the second may have none). A fully masked
query row keeps l = 0 and O = 0 and gives 0 (l is floored before the division). GQA: query head h reads
key/value head h // (Hq / Hkv). The mask broadcasts to [B, Hq, Sq, Skv]: any of its
batch, head and query dims may be 1, its key dim must be Skv. Causal attention is
top-left aligned: key blocks past the query block's last row are skipped, blocks that
straddle the diagonal are masked with a (key - query) ramp built once per core.

Tiling (static bounds `choose_attention_tiles`, runtime values `attention_tiling`):

    tq  = min(baseQ, round16(Sq)); qt = ceil(Sq / tq); tkv = min(baseKV, round16(Skv))
    ts  = round_up(tkv, 32)  UB row stride of S/P/mask tiles (32 B for an i1 mask row)
    with  tq*D*w + 2*tq*tkv*w <= L0A;  2*tkv*(D + Dv)*w <= L0B;  tq*(tkv + Dv)*4 <= L0C;
          tq*D*w + 2*tkv*(D + Dv)*w + 2*tq*tkv*w <= L1;  the softmax buffers and the
          epilogue's [tq x Dv] tile fit UB
    steps = B * Hq * qt (query blocks fastest); blocks = min(steps, cores)
    kv blocks of step (q0 = qi*tq, nq rows): ceil(min(Skv, q0+nq) / tkv) when causal,
    of which the first min(that, (q0+1) // tkv) need no mask; else ceil(Skv / tkv)
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import ClassVar, Generic, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import f16, f32, i1
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.buffer_verifier import footprint
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import (
    FRACTAL,
    CubeKernel,
    blended_transfer,
    co2_copy,
    co2_stage,
    concrete,
    cube_dtype_refusal,
    elt,
    epilogue_io,
    epilogue_ub,
    epilogue_unique_read,
    epilogue_work,
    free,
    load,
    mmad,
    output_dims,
    plan_epilogue,
    pseudo_value,
    root_emitter,
    round_up,
    runtime_dim,
    shape,
    split_group,
    sub_blocks,
    width,
)
from autofusion.lowering.index_expr import IndexOps, IntOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.recorded_tiling import EPILOGUE_TILE, overflow, take_row_tile, take_tiles
from autofusion.lowering.row_kernel import Loc, RowKernel
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

Q_CANDIDATES = (128, 64, 32, 16)
KV_CANDIDATES = (256, 128, 64, 32)
# a finite "minus infinity" for the running max: exp(S - m) stays 0, never NaN, when a
# row's first key blocks are all masked. float32's lowest value, so that a row whose
# scores an additive mask sets to it (transformers' torch.finfo(float32).min) stays a
# softmax over those scores, as graph.flash_attention defines it, instead of 0
M_INIT = -3.4028234663852886e38
# the running sum's floor before the division: a fully masked row has l = 0 and O = 0,
# and gives 0 (as torch SDPA does); any other row has l >= 1
L_FLOOR = 1.0e-30
# cross-core flags of one key/value block on split chips (CrossCoreSetFlag mode 2)
S_READY, P_READY, PV_READY = 0, 1, 2
# Compare's element counts are whole 256-byte repeats of half (ascend.md 2.8)
CMP_ELEMS = 128
# vector instructions per S element: scale, rowmax, subtract, exp (2), rowsum, cast
SOFTMAX_WORK = 7.0


@dataclass(frozen=True)
class AttentionTiles:
    tq: int
    tkv: int

    @property
    def ts(self) -> int:
        return round_up(self.tkv, 32)


@dataclass
class AttentionPlan(Plan):
    template: ClassVar[str] = "attention"
    parts: GroupParts
    root: Operation
    epilogue: list[Operation]
    bsnd: bool
    head_dim: int  # D
    value_dim: int  # Dv
    mask: SSAValue | None
    mask_pattern: tuple[bool, bool, bool]  # mask varies over (batch, head, query)
    causal: bool
    scale: float
    candidates: list[AttentionTiles]  # fitting tiles, best first
    l0c_to_ub: bool
    rows: RowPlan
    raw: SSAValue
    dv_stride: int

    @property
    def ops(self) -> list[Operation]:
        """The group's ops (root and epilogue), in program order."""
        return self.parts.ops

    @property
    def tiles(self) -> AttentionTiles:
        return self.candidates[0]

    @property
    def q(self) -> SSAValue:
        return self.root.operands[0]

    @property
    def k(self) -> SSAValue:
        return self.root.operands[1]

    @property
    def v(self) -> SSAValue:
        return self.root.operands[2]

    @property
    def in_elt(self) -> Attribute:
        return elt(self.q)

    def logical(self, v: SSAValue) -> tuple[int, ...]:
        """[B, H, S, D] of a query/key/value/output."""
        s = shape(v)
        return (s[0], s[2], s[1], s[3]) if self.bsnd else s

    @property
    def mask_bool(self) -> bool:
        return self.mask is not None and elt(self.mask) == i1


def mask_depth(chip: ChipSpec) -> int:
    """Mask buffers: double-buffered where the chip has 8 queue buffers per position."""
    return 2 if queue_slots(chip) >= 8 else 1


def softmax_ub(p: AttentionPlan, t: AttentionTiles, chip: ChipSpec) -> int:
    """UB bytes of the softmax side (queues and state buffers) for tiles t, as emitted."""
    w, ts, tq = width(p.in_elt), t.ts, t.tq
    col = round_up(round_up(tq, 8) * 4, 32)
    tile4 = tq * ts * 4
    total = tile4 + tq * p.dv_stride * 4  # S in, P@V in
    total += 2 * tq * ts * w  # P out (double buffered)
    total += tq * p.dv_stride * 4  # O accumulator
    total += 6 * col + 32 + ts * 4  # m, l, m_new, alpha, rowmax, rowsum; ReduceSum scratch
    if p.mask is not None:
        mw = width(elt(p.mask))
        total += mask_depth(chip) * tq * ts * mw
        if not p.mask_bool and mw != 4:
            total += tile4
    padded = round_up(tq * ts, CMP_ELEMS)  # Compare's operands: whole repeats
    if p.causal:
        total += 2 * padded * 4  # ramp, threshold
    if p.mask_bool:
        total += 2 * padded * 2  # the mask as half, zeros
    if p.causal or p.mask_bool:
        total += tile4 + padded  # -inf, compare mask
    if p.l0c_to_ub:  # CO1 -> CO2 stage of S and P@V (coupled chips)
        total += co2_stage_elems(p, t) * 4
    return total


def co2_stage_elems(p: AttentionPlan, t: AttentionTiles) -> int:
    """Elements of the UB stage S and P@V leave L0C through on coupled chips: their Nz
    fractals, rows and columns rounded up to 16 (cube_common.co2_stage)."""
    cols = max(round_up(t.tkv, FRACTAL), round_up(p.value_dim, FRACTAL))
    return round_up(t.tq, FRACTAL) * cols


def cube_bytes(p: AttentionPlan, t: AttentionTiles, chip: ChipSpec) -> dict[str, int]:
    # L1/L0 hold fractals: head dims padded to 16 columns (ascend.md 1.5)
    w, d, dv = width(p.in_elt), round_up(p.head_dim, FRACTAL), round_up(p.value_dim, FRACTAL)
    return {
        "l0a": round_up(t.tq * d * w, 512) + 2 * round_up(t.tq * t.tkv * w, 512),
        "l0b": 2 * round_up(t.tkv * d * w, 512) + 2 * round_up(t.tkv * dv * w, 512),
        "l0c": round_up(t.tq * t.tkv * 4, 64) + round_up(t.tq * dv * 4, 64),
        "l1": t.tq * d * w + 2 * t.tkv * (d + dv) * w + 2 * t.tq * t.tkv * w,
    }


def plan_attention(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> AttentionPlan | Refusal:
    found = split_group(parts, graph.FlashAttentionOp, "flash attention")
    if isinstance(found, Refusal):
        return found
    root, epilogue = found
    why = cube_dtype_refusal(root, chip)
    if why is not None:
        return why
    props = graph.Props(root.properties, root.name)
    if props.has("softcap"):
        return Refusal("a softcap (the attention kernel has no tanh cap on its scores)")
    bsnd = props.text("layout") == "BSND"
    order = (0, 2, 1, 3) if bsnd else (0, 1, 2, 3)
    q, k, v = (tuple(shape(x)[i] for i in order) for x in root.operands[:3])
    d, dv = q[3], v[3]
    if DYN in (d, dv):
        return Refusal("flash attention with a dynamic head dim")
    mask = root.operands[3] if len(root.operands) == 4 else None
    pattern = (False, False, False)
    if mask is not None:
        ms = shape(mask)
        ms = (1,) * (4 - len(ms)) + ms
        if ms[3] != k[2] or (ms[3] == 1 and k[2] != 1):
            return Refusal("a mask that broadcasts over the keys (its last dim is 1)")
        pattern = (ms[0] != 1, ms[1] != 1, ms[2] != 1)
    raw = pseudo_value(f32, shape(root.results[0]), "raw")
    causal, scale = props.flag("causal"), props.real("scale")
    w = width(elt(root.operands[0]))
    if not chip.data_copy_pad:
        runs = [(d, w), (dv, w), (v[3], width(elt(root.results[0])))]
        if mask is not None:
            runs.append((k[2], width(elt(mask))))
        if any(n == DYN or (n * wd) % 32 for n, wd in runs):
            return Refusal(
                "attention rows (head dims, or Skv for the mask) are not 32-byte multiples "
                "and the chip has no DataCopyPad"
            )
    plan = AttentionPlan(
        parts,
        root,
        epilogue,
        bsnd,
        d,
        dv,
        mask,
        pattern,
        causal,
        scale,
        [],
        chip.l0c_to_ub,
        cast(RowPlan, None),  # set below with the first fitting tiles; never left unset
        raw,
        0,
    )
    sq, skv = q[2], k[2]
    last: Refusal = Refusal(
        f"L0A/L0B/L0C/L1 of {chip.name} cannot hold a 16-row query block with a 32-key block "
        f"of head dims {d}/{dv}"
    )
    if tiling is not None:
        return _at_recorded_tiles(plan, tiling, chip)
    for tq in Q_CANDIDATES:
        if sq != DYN and tq > max(FRACTAL, round_up(sq, FRACTAL)):
            continue
        for tkv in KV_CANDIDATES:
            if skv != DYN and tkv > max(32, round_up(skv, 32)):
                continue
            t = AttentionTiles(tq, tkv)
            need = cube_bytes(plan, t, chip)
            if any(need[s] > cast(int, chip.capacity(s)) for s in need):
                continue
            rows = _epilogue_for(plan, t, chip, root, raw, epilogue, parts, bsnd)
            if isinstance(rows, Refusal):
                last = rows
                continue
            if not plan.candidates:
                plan.rows = rows
                plan.dv_stride = round_up(dv, rows.align_elems)
            plan.candidates.append(t)
    if not plan.candidates:
        return last
    return plan


def _at_recorded_tiles(
    plan: AttentionPlan, tiling: Mapping[str, TilingValue], chip: ChipSpec
) -> AttentionPlan | Refusal:
    """The analysed plan (no tiles yet) with a recorded tiling's query/key blocks and
    epilogue tile, when they fit L0/L1 and leave the epilogue its UB."""
    t = take_tiles(AttentionTiles, tiling, "attention", [EPILOGUE_TILE])
    if isinstance(t, Refusal):
        return t
    if t.tq % FRACTAL or t.tkv % 32:
        return Refusal(f"attention tiles tq, tkv must be multiples of {FRACTAL} and 32")
    why = overflow(cube_bytes(plan, t, chip), chip)
    if why is not None:
        return why
    root, parts = plan.root, plan.parts
    rows = _epilogue_for(plan, t, chip, root, plan.raw, plan.epilogue, parts, plan.bsnd)
    if isinstance(rows, Refusal):
        return rows
    why = take_row_tile(rows, tiling, EPILOGUE_TILE)
    if why is not None:
        return why
    plan.rows = rows
    plan.dv_stride = round_up(plan.value_dim, rows.align_elems)
    plan.candidates = [t]
    return plan


def _epilogue_for(
    plan: AttentionPlan,
    t: AttentionTiles,
    chip: ChipSpec,
    root: Operation,
    raw: SSAValue,
    epilogue: Sequence[Operation],
    parts: GroupParts,
    bsnd: bool,
) -> RowPlan | Refusal:
    """The epilogue's row plan with the UB the softmax leaves (its tile: the query block)."""
    rank = len(shape(root.results[0]))
    # queue buffers per position the softmax takes: VECIN S, P@V and the mask, VECOUT P;
    # the row plan counts the (preset, queue-less) raw output as one streamed input
    slots = queue_slots(chip)
    taken_in = 2 + (mask_depth(chip) if plan.mask is not None else 0)
    left_slots = min(slots - taken_in + 1, slots - 2)
    probe = plan_epilogue(
        root, raw, [], epilogue, parts, rank - 1, chip.ub_bytes, chip, slots=left_slots, preset=True
    )
    if isinstance(probe, Refusal):
        return probe
    if bsnd:
        for info in probe.values.values():
            if info.kind not in ("full", "rowvec", "scalar") and info.constant is None:
                return Refusal(
                    f"a {info.kind} operand in a BSND attention epilogue (query rows of a "
                    "head are strided there)"
                )
    plan.dv_stride = round_up(plan.value_dim, probe.align_elems)
    left = chip.ub_bytes - softmax_ub(plan, t, chip)
    rows = plan_epilogue(
        root, raw, [], epilogue, parts, rank - 1, left, chip, slots=left_slots, preset=True
    )
    if isinstance(rows, Refusal):
        return rows
    if rows.max_tile_elems < t.tq * plan.dv_stride:
        return Refusal("the softmax buffers and the epilogue do not fit UB")
    return rows


# ---- the tiling rule -------------------------------------------------------------------------

PARAMS = (
    "B",
    "Hq",
    "Hkv",
    "Sq",
    "Skv",
    "tq",
    "tkv",
    "ts",
    "qt",
    "steps",
    "per_core",
    "group",
    "tile_stride",
    "ws_bytes",
    "wsp_bytes",
)


@dataclass
class AttentionTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


def attention_tiling(
    ops: IndexOps[V],
    dims: Sequence[V],
    t: AttentionTiles,
    cores: int,
    dv: int,
    dv_stride: int,
    in_width: int,
    split: bool,
) -> AttentionTiling[V]:
    """Runtime tiling from (B, Hq, Hkv, Sq, Skv) (module docstring)."""
    c = ops.const
    b, hq, hkv, sq, skv = dims
    tq = ops.min(c(t.tq), ops.round_up(sq, FRACTAL))
    qt = ops.ceildiv(sq, tq)
    tkv = ops.min(c(t.tkv), ops.round_up(skv, FRACTAL))
    ts = ops.round_up(tkv, 32)
    steps = ops.mul(ops.mul(b, hq), qt)
    blocks = ops.max(c(1), ops.min(steps, c(cores)))
    per_core = ops.ceildiv(steps, blocks)
    group = ops.floordiv(hq, hkv)
    f32_slot = ops.add(ops.mul(tq, tkv), ops.mul(tq, c(dv)))  # S and P@V of one core
    ws = ops.mul(blocks, ops.mul(f32_slot, c(4))) if split else c(0)
    wsp = ops.mul(blocks, ops.mul(ops.mul(tq, tkv), c(in_width))) if split else c(0)
    values = dict(
        zip(
            PARAMS,
            (b, hq, hkv, sq, skv, tq, tkv, ts, qt, steps, per_core, group, c(dv_stride), ws, wsp),
        )
    )
    return AttentionTiling(values, blocks)


def _tiling(
    ops: IndexOps[V], p: AttentionPlan, chip: ChipSpec, dims: Sequence[V]
) -> AttentionTiling[V]:
    return attention_tiling(
        ops,
        dims,
        p.tiles,
        chip.cube_cores,
        p.value_dim,
        p.dv_stride,
        width(p.in_elt),
        not p.l0c_to_ub,
    )


class AttentionTemplate(KernelTemplate):
    name = "attention"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> AttentionPlan | Refusal:
        return plan_attention(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> AttentionPlan | Refusal:
        return plan_attention(parts, chip, tiling)

    def tiling(self, plan: Plan) -> dict[str, TilingValue]:
        p = cast(AttentionPlan, plan)
        return {**asdict(p.tiles), EPILOGUE_TILE: p.rows.max_tile_elems}

    def footprint(self, plan: Plan, chip: ChipSpec) -> dict[str, int]:
        p = cast(AttentionPlan, plan)
        return {**cube_bytes(p, p.tiles, chip), "ub": self.cost(p, chip).ub_bytes}

    def cost(self, plan: Plan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        p = cast(AttentionPlan, plan)
        q = concrete(p.logical(p.q), dims)
        kdims = concrete(p.logical(p.k), dims)
        b, hq, sq, d = q
        hkv, skv = kdims[1], kdims[2]
        tiling = _tiling(IntOps(), p, chip, [b, hq, hkv, sq, skv])
        t, blocks = tiling.values, tiling.blocks
        tq, tkv = t["tq"], t["tkv"]
        w, dv = width(p.in_elt), p.value_dim
        # keys each query block visits (causal: up to its last row)
        visited = 0
        for qi in range(t["qt"]):
            end = min(skv, (qi + 1) * tq) if p.causal else skv
            visited += min(end, skv)
        heads = b * hq
        kv_read = heads * visited * (d + dv) * w
        q_read = heads * sq * d * w
        s_elems = heads * visited * min(tq, sq)
        mask_read = 0
        if p.mask is not None:
            mask_read = s_elems * width(elt(p.mask))
        ws = 0
        if not p.l0c_to_ub:  # S and P@V f32, P in the input type: written and read back
            pv_blocks = heads * sum(
                -(-(min(skv, (qi + 1) * tq) if p.causal else skv) // tkv) for qi in range(t["qt"])
            )
            ws = s_elems * (4 + w) + pv_blocks * min(tq, sq) * dv * 4
        rows = heads * sq
        read, write = epilogue_io(
            p.rows, [p.raw], rows, dv, rows // max(tq, 1), dv, 1, blocks, dims
        )
        flops = (
            2.0
            * heads
            * round_up(visited, FRACTAL)
            * round_up(min(tq, sq), FRACTAL)
            * (round_up(d, FRACTAL) + round_up(dv, FRACTAL))
        )
        work = SOFTMAX_WORK * s_elems + 3.0 * s_elems * (p.mask is not None or p.causal)
        work += 2.0 * s_elems / max(tkv, 1) * dv + epilogue_work(p.rows, p.root, rows * dv)
        nq, nkv = min(tq, sq), min(tkv, skv)
        transfer = blended_transfer(
            [
                (q_read, nq * d * w),
                (kv_read, nkv * max(d, dv) * w),
                (mask_read + 2 * ws, nq * nkv * 4),
                (read + write, nq * dv * w),
            ]
        )
        # HBM: q, k, v and the mask once (a head's K/V blocks, re-read per query block,
        # and the mask rows, re-read per head, are far smaller than L2); the per-core
        # workspace slots are rewritten in place and never leave L2
        k_whole = b * hkv * skv * d * w
        mask_whole = 0
        if p.mask is not None:
            mask_whole = (si.num_elements(concrete(shape(p.mask), dims)) or 0) * width(elt(p.mask))
        unique = q_read + k_whole + k_whole * dv // max(d, 1) + mask_whole
        return KernelCost(
            gm_read_bytes=q_read + kv_read + mask_read + read + ws,
            gm_write_bytes=write + ws,
            hbm_read_bytes=min(q_read + kv_read + mask_read, unique)
            + min(read, epilogue_unique_read(p.rows, [p.raw], dims)),
            hbm_write_bytes=write,
            vector_work=work,
            cube_flops=flops,
            transfer_bytes=transfer,
            ub_bytes=softmax_ub(p, p.tiles, chip) + epilogue_ub(p.rows),
            cube_cores_used=blocks,
            # split chips: both AIVs of a block work, each on half the query rows
            vector_cores_used=blocks * sub_blocks(chip, not p.l0c_to_ub),
            notes=[f"workspace round trips {2 * ws} bytes"] if ws else [],
        )

    def lower(self, plan: Plan, name: str, chip: ChipSpec) -> Lowered:
        p = cast(AttentionPlan, plan)
        while True:
            emitter = AttentionKernel(p, name, chip)
            kernel = emitter.build()
            used = footprint(kernel).get("ub", 0)
            if used <= chip.ub_bytes or len(p.candidates) == 1:
                break
            p.candidates.pop(0)  # the epilogue needed more working buffers: smaller tiles
        for space, need in footprint(kernel).items():
            cap = chip.capacity(space)
            if cap is not None and need > cap:
                raise UserError(
                    f"kernel {name} needs {need} bytes of {space}, {chip.name} has {cap}"
                )
        kernel.attributes["afc.ub_bytes"] = graph.int_attr(footprint(kernel).get("ub", 0))

        def body(kb: KernelBuilder) -> list[SSAValue]:
            t = _tiling(kb.idx, p, chip, list(kb.entry.args))
            return [*t.values.values(), t.blocks]

        tiling = tiling_function(name, ["B", "Hq", "Hkv", "Sq", "Skv"], body)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: Plan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        p = cast(AttentionPlan, plan)
        qo, ko = outside.get(p.q), outside.get(p.k)
        head, seq = (2, 1) if p.bsnd else (1, 2)
        q, k = shape(p.q), shape(p.k)
        vals = [
            runtime_dim(b, [(qo, 0), (ko, 0)], q[0]),
            runtime_dim(b, [(qo, head)], q[head]),
            runtime_dim(b, [(ko, head)], k[head]),
            runtime_dim(b, [(qo, seq)], q[seq]),
            runtime_dim(b, [(ko, seq)], k[seq]),
        ]
        dims = [idx.const(x) if isinstance(x, int) else x for x in vals]
        bb, hq, _, sq, _ = dims
        out = (
            [bb, sq, hq, idx.const(p.value_dim)] if p.bsnd else [bb, hq, sq, idx.const(p.value_dim)]
        )
        return HostLaunch(dims, [], output_dims(p.parts.outputs, out, 4))


class AttentionKernel(CubeKernel):
    """Builds the buffer.kernel of an AttentionPlan."""

    template = "attention"

    def __init__(self, plan: AttentionPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        self.row = RowKernel(
            plan.rows,
            name,
            chip.name,
            chip.cube_cores,
            preset=[plan.raw],
            emitters={plan.root: root_emitter(plan.raw, None, 1.0, 1.0, (None, None, None))},
        )
        inputs = [*plan.root.operands, *self.row.gm_inputs]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return list(self.p.parts.outputs)

    def params(self) -> Sequence[str]:
        return PARAMS

    # ---- setup: queues and state buffers ------------------------------------------------

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        tiles, w, in_elt = p.tiles, width(p.in_elt), p.in_elt
        tq, tkv, ts, dv = tiles.tq, tiles.tkv, tiles.ts, p.value_dim
        dvs = p.dv_stride
        # L1/L0 rows of the head dims padded to whole fractal columns (ascend.md 1.5)
        d, dvp = round_up(p.head_dim, FRACTAL), round_up(p.value_dim, FRACTAL)
        self.dp, self.dvp = d, dvp

        def nbytes(elems: SSAValue, wd: int) -> SSAValue:
            return idx.round_up(idx.mul(elems, c(wd)), 32)

        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        self.bid = bid
        self.split = not p.l0c_to_ub
        # on split chips the two AIVs of a block share each query block's rows
        self.sb = kb.insert(buffer.SubBlockIdxOp(), "sub").results[0] if self.split else None
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["steps"])
        self.ws = self.wsp = None
        if not p.l0c_to_ub:
            self.ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], f32), "ws").results[0]
            self.wsp = kb.insert(buffer.WorkspaceOp(t["wsp_bytes"], in_elt), "ws_p").results[0]
        tq_tkv = idx.mul(t["tq"], t["tkv"])
        tile_s = idx.mul(t["tq"], t["ts"])
        # cube side
        self.q_l1 = kb.queue("a1", 1, idx.mul(t["tq"], c(d * w)), tq * d * w, in_elt, "q_q1")
        self.k_l1 = kb.queue("b1", 2, idx.mul(t["tkv"], c(d * w)), tkv * d * w, in_elt, "q_k1")
        self.v_l1 = kb.queue("b1", 2, idx.mul(t["tkv"], c(dvp * w)), tkv * dvp * w, in_elt, "q_v1")
        self.p_l1 = kb.queue("a1", 2, idx.mul(tq_tkv, c(w)), tq * tkv * w, in_elt, "q_p1")
        # the query block stays in L0A for a whole step: a TBuf, not a queue
        q_bytes = idx.mul(t["tq"], c(d * w))
        self.q_l0 = kb.insert(
            buffer.AllocBufOp("a2", q_bytes, tq * d * w, in_elt), "q_l0a"
        ).results[0]
        self.p_l0 = kb.queue("a2", 2, idx.mul(tq_tkv, c(w)), tq * tkv * w, in_elt, "q_p2")
        self.c_ub: SSAValue | None = None
        if p.l0c_to_ub:  # S and P@V leave L0C as Nz fractals (cube_common.co2_stage)
            stage = co2_stage_elems(p, tiles) * 4
            self.c_ub = co2_stage(kb, c(stage), stage)
            self.c_ub_stride = max(round_up(tkv, FRACTAL), dvp)
        self.k_l0 = kb.queue("b2", 2, idx.mul(t["tkv"], c(d * w)), tkv * d * w, in_elt, "q_k2")
        self.v_l0 = kb.queue("b2", 2, idx.mul(t["tkv"], c(dvp * w)), tkv * dvp * w, in_elt, "q_v2")
        self.s_l0c = kb.queue("co1", 1, idx.mul(tq_tkv, c(4)), tq * tkv * 4, f32, "q_s")
        self.pv_l0c = kb.queue("co1", 1, idx.mul(t["tq"], c(dvp * 4)), tq * dvp * 4, f32, "q_pv")
        # vector side
        self.s_in = kb.queue("vecin", 1, nbytes(tile_s, 4), tq * ts * 4, f32, "q_s_in")
        self.pv_in = kb.queue(
            "vecin", 1, nbytes(idx.mul(t["tq"], c(dvs)), 4), tq * dvs * 4, f32, "q_pv_in"
        )
        self.p_out = kb.queue("vecout", 2, nbytes(tile_s, w), tq * ts * w, in_elt, "q_p_out")
        self.mask_in = None
        if p.mask is not None:
            me = elt(p.mask)
            mw = width(me)
            depth = mask_depth(self.chip)
            self.mask_in = kb.queue("vecin", depth, nbytes(tile_s, mw), tq * ts * mw, me, "q_mask")
        col_n = nbytes(idx.round_up(t["tq"], 8), 4)
        col_max = round_up(round_up(tq, 8) * 4, 32)

        def buf(
            name: str, elems: SSAValue, max_elems: int, wd: int = 4, e: Attribute = f32
        ) -> SSAValue:
            return kb.tbuf(nbytes(elems, wd), round_up(max_elems * wd, 32), e, name)

        self.o_acc = buf("o_acc", idx.mul(t["tq"], c(dvs)), tq * dvs)
        self.m_run = kb.tbuf(col_n, col_max, f32, "m_run")
        self.l_run = kb.tbuf(col_n, col_max, f32, "l_run")
        self.m_new = kb.tbuf(col_n, col_max, f32, "m_new")
        self.alpha = kb.tbuf(col_n, col_max, f32, "alpha")
        self.row_max = kb.tbuf(col_n, col_max, f32, "row_max")
        self.row_sum = kb.tbuf(col_n, col_max, f32, "row_sum")
        self.red_dst = kb.tbuf(c(32), 32, f32, "red_dst")
        self.red_tmp = buf("red_tmp", t["ts"], ts)
        self.mask_f32 = None
        if p.mask is not None and not p.mask_bool and width(elt(p.mask)) != 4:
            self.mask_f32 = buf("mask_f32", tile_s, tq * ts)
        self.neg_inf = None
        # Compare covers whole 256-byte repeats (ascend.md 2.8): its operands and its
        # mask (one byte per element in the IR, a bitmask in Ascend C) are padded
        cmp_s = idx.round_up(tile_s, CMP_ELEMS)
        cmp_max = round_up(tq * ts, CMP_ELEMS)
        self.cmp = self.mask_h = self.zeros_h = None
        # 910 has only Select mode VSEL_CMPMASK_SPR (ascend.md 2.8): it masks with Min
        # against a bound of +/-inf built by arithmetic instead of Compare + Select
        self.by_min = self.chip.arch == 1001
        if p.causal or p.mask_bool:
            self.neg_inf = buf("neg_inf", tile_s, tq * ts)
            if not self.by_min:
                self.cmp = buf("cmp", cmp_s, cmp_max, 1, i1)
        if p.causal:
            self.ramp = buf("ramp", cmp_s, cmp_max)
            self.threshold = buf("threshold", cmp_s, cmp_max)
        if p.mask_bool:  # the GM mask's bytes become a bitmask: cast, compare with zero
            self.mask_h = buf("mask_h", cmp_s, cmp_max, 2, f16)
            if not self.by_min:
                self.zeros_h = buf("zeros_h", cmp_s, cmp_max, 2, f16)
        if self.neg_inf is not None:
            with kb.stage("compute"):
                if not self.by_min:
                    kb.insert(buffer.VDupOp(self.neg_inf, kb.f32(float("-inf")), tile_s))
                if self.zeros_h is not None:
                    kb.insert(buffer.VDupOp(self.zeros_h, kb.f16(0.0), cmp_s))
                if p.causal:
                    self._fill_ramp()
        row = self.row
        rt = {"tile_rows": t["tq"], "tile_stride": t["tile_stride"], "cols": c(dv)}
        out_logical = [t["B"], t["Hq"], t["Sq"]]
        if p.bsnd:
            out_logical = [t["B"], t["Sq"], t["Hq"]]
        rt |= {f"outer{i}": v for i, v in enumerate(out_logical)}
        row.attach(kb, {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs)}, rt)
        with kb.loop(first, last, "step") as step:
            row.start_pool(cast(Operation, kb.entry.last_op))
            self._step(step)

    def _fill_ramp(self) -> None:
        """ramp[r, j] = j - r (float32) over the largest tile (causal diagonal blocks)."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        with kb.loop(idx.const(0), t["ts"], "j") as j:
            kb.set(self.ramp, j, kb.index_to_f32(j))
        with kb.loop(idx.const(1), t["tq"], "r") as r:
            row = kb.view(self.ramp, idx.mul(r, t["ts"]))
            kb.scalar("adds", row, self.ramp, kb.fneg(kb.index_to_f32(r)), t["ts"])

    # ---- one step: (batch, head, query block) ---------------------------------------------

    def _step(self, step: SSAValue) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        d, dv = p.head_dim, p.value_dim
        qi = idx.rem(step, t["qt"])
        bh = idx.floordiv(step, t["qt"])
        h = idx.rem(bh, t["Hq"])
        b = idx.floordiv(bh, t["Hq"])
        hk = idx.floordiv(h, t["group"])
        q0 = idx.mul(qi, t["tq"])
        nq = idx.min(t["tq"], idx.sub(t["Sq"], q0))
        nq.name_hint = "nq"
        self.b, self.h, self.hk, self.q0, self.nq_block = b, h, hk, q0, nq
        # the rows of the block this vector core takes: all on coupled chips; on split
        # chips sub-block sb takes rows [sb * half, ...) (the second may have none)
        self.r_lo, self.nq, self.has_rows = c(0), nq, None
        if self.sb is not None:
            half = idx.ceildiv(nq, c(2))
            self.r_lo = idx.min(idx.mul(self.sb, half), nq)
            self.nq = idx.min(half, idx.sub(nq, self.r_lo))
            self.nq.name_hint = "nq_mine"
            self.has_rows = kb.less(c(0), self.nq)
        q_row, q_stride = self._row_of(b, h, q0, t["Hq"], t["Sq"], d)
        with kb.stage("cube"):

            def fill_q1(slot: SSAValue) -> None:
                kb.copy(kb.view(self.gm[p.q], q_row), slot, nq, c(d), q_stride, c(self.dp))

            q1 = load(kb, self.q_l1, p.in_elt, fill_q1, "q1")
            kb.copy(q1, self.q_l0, nq, c(d), c(self.dp), c(d))
            free(kb, self.q_l1, q1)
        with self._mine(), kb.stage("compute"):
            count = idx.round_up(self.nq, 8)
            kb.insert(buffer.VDupOp(self.m_run, kb.f32(M_INIT), count))
            kb.insert(buffer.VDupOp(self.l_run, kb.f32(0.0), count))
            kb.insert(buffer.VDupOp(self.o_acc, kb.f32(0.0), idx.mul(self.nq, t["tile_stride"])))
        if p.causal:
            end = idx.min(t["Skv"], idx.add(q0, nq))
            blocks = idx.ceildiv(end, t["tkv"])
            unmasked = idx.min(blocks, idx.floordiv(idx.add(q0, c(1)), t["tkv"]))
            with kb.loop(c(0), unmasked, "kv") as kv:
                self._kv_block(kv, masked=False)
            with kb.loop(unmasked, blocks, "kv") as kv:
                self._kv_block(kv, masked=True)
        else:
            with kb.loop(c(0), idx.ceildiv(t["Skv"], t["tkv"]), "kv") as kv:
                self._kv_block(kv, masked=False)
        # out = O / l (0 for a fully masked row), then the epilogue on the [nq x Dv] block
        with self._mine():
            with kb.stage("compute"):
                count = idx.round_up(self.nq, 8)
                kb.scalar("maxs", self.l_run, self.l_run, kb.f32(L_FLOOR), count)
                kb.unary("reciprocal", self.l_run, self.l_run, count)
                with kb.loop(c(0), self.nq, "r") as r:
                    o_row = kb.view(self.o_acc, idx.mul(r, t["tile_stride"]))
                    kb.scalar("muls", o_row, o_row, kb.get(self.l_run, r), c(dv))
            row = self.row
            row.preset_locs[p.raw] = Loc("tile", buf=self.o_acc)
            q_first = idx.add(q0, self.r_lo)
            if p.bsnd:
                r0 = idx.add(idx.mul(idx.add(idx.mul(b, t["Sq"]), q_first), t["Hq"]), h)
                row.emit_tile(r0, c(0), self.nq, c(dv), idx.mul(r0, c(dv)), idx.mul(t["Hq"], c(dv)))
            else:
                r0 = idx.add(idx.mul(idx.add(idx.mul(b, t["Hq"]), h), t["Sq"]), q_first)
                row.emit_tile(r0, c(0), self.nq, c(dv))

    def _mine(self) -> AbstractContextManager[None]:
        """The vector work of this core's rows: skipped by an AIV that has none."""
        if self.has_rows is None:
            return contextlib.nullcontext()
        return self.kb.when(self.has_rows)

    def _row_of(
        self, b: SSAValue, head: SSAValue, s0: SSAValue, heads: SSAValue, seq: SSAValue, dim: int
    ) -> tuple[SSAValue, SSAValue]:
        """(element offset, row stride) of row s0 of head `head` in a BNSD/BSND tensor."""
        idx, c = self.kb.idx, self.kb.idx.const
        if self.p.bsnd:
            at = idx.mul(idx.add(idx.mul(idx.add(idx.mul(b, seq), s0), heads), head), c(dim))
            return at, idx.mul(heads, c(dim))
        at = idx.mul(idx.add(idx.mul(idx.add(idx.mul(b, heads), head), seq), s0), c(dim))
        return at, c(dim)

    # ---- one key/value block ---------------------------------------------------------------

    def _kv_block(self, kv: SSAValue, masked: bool) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        d, dv = p.head_dim, p.value_dim
        nq, nq_v = self.nq_block, self.nq
        k0 = idx.mul(kv, t["tkv"])
        nkv = idx.min(t["tkv"], idx.sub(t["Skv"], k0))
        nkv.name_hint = "nkv"
        k_row, k_stride = self._row_of(self.b, self.hk, k0, t["Hkv"], t["Skv"], d)
        v_row, v_stride = self._row_of(self.b, self.hk, k0, t["Hkv"], t["Skv"], dv)
        ws_s = ws_pv = ws_p = None
        if self.ws is not None and self.wsp is not None:
            per_core = idx.add(idx.mul(t["tq"], t["tkv"]), idx.mul(t["tq"], c(dv)))
            ws_s = kb.view(self.ws, idx.mul(self.bid, per_core))
            ws_pv = kb.view(ws_s, idx.mul(t["tq"], t["tkv"]))
            ws_p = kb.view(self.wsp, idx.mul(self.bid, idx.mul(t["tq"], t["tkv"])))
        # S = Q K^T on the cube
        with kb.stage("cube"):

            def fill_k1(slot: SSAValue) -> None:
                kb.copy(kb.view(self.gm[p.k], k_row), slot, nkv, c(d), k_stride, c(self.dp))

            k1 = load(kb, self.k_l1, p.in_elt, fill_k1, "k1")

            def fill_k2(slot: SSAValue) -> None:  # K^T: [D x nkv]
                kb.insert(buffer.CopyOp(k1, slot, nkv, c(d), c(self.dp), nkv, transpose=True))

            k2 = load(kb, self.k_l0, p.in_elt, fill_k2, "k2")
            free(kb, self.k_l1, k1)
            s = kb.insert(buffer.QueueAllocOp(self.s_l0c, f32), "s").results[0]
            mmad(kb, (s, self.q_l0, k2), (nq, nkv, c(d)), kb.i1(False))
            free(kb, self.k_l0, k2)
            if ws_s is not None:
                kb.copy(s, ws_s, nq, nkv, nkv, t["tkv"])
                free(kb, self.s_l0c, s)
                kb.insert(buffer.CrossCoreSetOp(S_READY, "aic", "fix"))
            else:
                kb.insert(buffer.EnqueOp(self.s_l0c, s))
        # this core's rows of the S tile in UB, scaled and masked; P = softmax block
        if ws_s is not None:
            kb.insert(buffer.CrossCoreWaitOp(S_READY, "aiv"))
        with self._mine():
            with kb.stage("copy_in"):
                self._rows_in(self.s_in, ws_s, t["tkv"], self.s_l0c, nkv, t["ts"], "s")
                if self.mask_in is not None:
                    self._load_mask(k0, nkv)
            with kb.stage("compute"):
                self._softmax_block(k0, nkv, masked)
        if self.wsp is not None:
            kb.insert(buffer.CrossCoreSetOp(P_READY, "aiv", "mte3"))
        # P @ V on the cube
        with kb.stage("cube"):

            def fill_v1(slot: SSAValue) -> None:
                kb.copy(kb.view(self.gm[p.v], v_row), slot, nkv, c(dv), v_stride, c(self.dvp))

            p_l1 = kb.insert(buffer.QueueAllocOp(self.p_l1, p.in_elt), "p1").results[0]
            if ws_p is not None:
                kb.insert(buffer.CrossCoreWaitOp(P_READY, "aic"))
                kb.copy(ws_p, p_l1, nq, nkv, t["tkv"], t["tkv"])
            else:
                pd = kb.insert(buffer.DequeOp(self.p_out, p.in_elt), "p_ub").results[0]
                kb.copy(pd, p_l1, nq, nkv, t["ts"], t["tkv"])
                free(kb, self.p_out, pd)
            kb.insert(buffer.EnqueOp(self.p_l1, p_l1))
            p1 = kb.insert(buffer.DequeOp(self.p_l1, p.in_elt), "p1").results[0]

            def fill_p2(slot: SSAValue) -> None:
                kb.copy(p1, slot, nq, nkv, t["tkv"], nkv)

            v1 = load(kb, self.v_l1, p.in_elt, fill_v1, "v1")

            def fill_v2(slot: SSAValue) -> None:
                kb.copy(v1, slot, nkv, c(dv), c(self.dvp), c(dv))

            p2 = load(kb, self.p_l0, p.in_elt, fill_p2, "p2")
            v2 = load(kb, self.v_l0, p.in_elt, fill_v2, "v2")
            free(kb, self.p_l1, p1)
            free(kb, self.v_l1, v1)
            pv = kb.insert(buffer.QueueAllocOp(self.pv_l0c, f32), "pv").results[0]
            mmad(kb, (pv, p2, v2), (nq, c(dv), nkv), kb.i1(False))
            free(kb, self.p_l0, p2)
            free(kb, self.v_l0, v2)
            if ws_pv is not None:
                kb.copy(pv, ws_pv, nq, c(dv), c(dv), c(dv))
                free(kb, self.pv_l0c, pv)
                kb.insert(buffer.CrossCoreSetOp(PV_READY, "aic", "fix"))
            else:
                kb.insert(buffer.EnqueOp(self.pv_l0c, pv))
        # O = alpha * O + P V
        if ws_pv is not None:
            kb.insert(buffer.CrossCoreWaitOp(PV_READY, "aiv"))
        with self._mine():
            with kb.stage("copy_in"):
                self._rows_in(self.pv_in, ws_pv, c(dv), self.pv_l0c, c(dv), t["tile_stride"], "pv")
            with kb.stage("compute"):
                pvd = kb.insert(buffer.DequeOp(self.pv_in, f32), "pv_ub").results[0]
                with kb.loop(c(0), nq_v, "r") as r:
                    o_row = kb.view(self.o_acc, idx.mul(r, t["tile_stride"]))
                    kb.scalar("muls", o_row, o_row, kb.get(self.alpha, r), c(dv))
                kb.binary("add", self.o_acc, self.o_acc, pvd, idx.mul(nq_v, t["tile_stride"]))
                free(kb, self.pv_in, pvd)

    def _rows_in(
        self,
        queue: SSAValue,
        ws: SSAValue | None,
        ws_stride: SSAValue,
        l0c_queue: SSAValue,
        cols: SSAValue,
        ub_stride: SSAValue,
        name: str,
    ) -> None:
        """This core's rows of an f32 cube result into a VECIN slot (row stride
        `ub_stride`): from the workspace (split chips, rows `ws_stride` apart), else the
        whole block from its L0C slot (coupled chips, rows `cols` apart)."""
        kb, idx = self.kb, self.kb.idx
        slot = kb.insert(buffer.QueueAllocOp(queue, f32), f"{name}_ub").results[0]
        if ws is not None:
            src = kb.view(ws, idx.mul(self.r_lo, ws_stride))
            kb.copy(src, slot, self.nq, cols, ws_stride, ub_stride)
        else:  # CO1 -> CO2 of the whole block, then its rows out of the Nz fractals
            assert self.c_ub is not None
            c_slot = kb.insert(buffer.DequeOp(l0c_queue, f32), f"{name}_c").results[0]
            stride = kb.idx.const(self.c_ub_stride)
            co2_copy(kb, c_slot, self.c_ub, self.nq_block, cols, stride)
            free(kb, l0c_queue, c_slot)
            kb.copy(self.c_ub, slot, self.nq_block, cols, stride, ub_stride)
        kb.insert(buffer.EnqueOp(queue, slot))

    def _load_mask(self, k0: SSAValue, nkv: SSAValue) -> None:
        """The mask block [nq (or 1) x nkv] in UB (row stride ts), by the broadcast pattern."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        assert p.mask is not None and self.mask_in is not None
        vb, vh, vq = p.mask_pattern
        at = self.b if vb else c(0)
        at = idx.add(idx.mul(at, t["Hq"] if vh else c(1)), self.h if vh else c(0))
        q_first = idx.add(self.q0, self.r_lo)
        at = idx.add(idx.mul(at, t["Sq"] if vq else c(1)), q_first if vq else c(0))
        at = idx.add(idx.mul(at, t["Skv"]), k0)
        me = elt(p.mask)
        slot = kb.insert(buffer.QueueAllocOp(self.mask_in, me), "mask").results[0]
        rows = self.nq if vq else c(1)
        kb.copy(kb.view(self.gm[p.mask], at), slot, rows, nkv, t["Skv"], t["ts"])
        kb.insert(buffer.EnqueOp(self.mask_in, slot))

    def _softmax_block(self, k0: SSAValue, nkv: SSAValue, masked: bool) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        nq = self.nq
        ts = t["ts"]
        tile = idx.mul(nq, ts)
        s = kb.insert(buffer.DequeOp(self.s_in, f32), "s_ub").results[0]
        kb.scalar("muls", s, s, kb.f32(p.scale), tile)
        if self.mask_in is not None and p.mask is not None:
            me = elt(p.mask)
            m = kb.insert(buffer.DequeOp(self.mask_in, me), "mask").results[0]
            per_row = not p.mask_pattern[2]
            rows = c(1) if per_row else nq
            if not p.mask_bool and self.mask_f32 is not None:
                kb.cast(self.mask_f32, m, idx.mul(rows, ts), "none")
                mf = self.mask_f32
            elif p.mask_bool and self.by_min:
                # the bound: (m - 0.5) * inf, +inf where the mask keeps a key, -inf
                # where it drops one (+/- the largest float under 910's saturation)
                assert self.mask_h is not None and self.neg_inf is not None
                count = idx.mul(rows, ts)
                kb.cast(self.mask_h, m, count, "none")
                kb.cast(self.neg_inf, self.mask_h, count, "none")
                kb.scalar("adds", self.neg_inf, self.neg_inf, kb.f32(-0.5), count)
                kb.scalar("muls", self.neg_inf, self.neg_inf, kb.f32(float("inf")), count)
                mf = self.neg_inf
            elif p.mask_bool:
                assert self.mask_h is not None and self.zeros_h is not None and self.cmp
                count = idx.mul(rows, ts)
                kb.cast(self.mask_h, m, count, "none")
                kb.insert(
                    buffer.VCompareOp(
                        "ne", self.cmp, self.mask_h, self.zeros_h, idx.round_up(count, CMP_ELEMS)
                    )
                )
                mf = self.cmp
            else:
                mf = m

            def apply(dst: SSAValue, mrow: SSAValue, count: SSAValue) -> None:
                if p.mask_bool and self.by_min:
                    kb.binary("min", dst, dst, mrow, count)
                elif p.mask_bool:
                    assert self.neg_inf is not None
                    kb.insert(buffer.VSelectOp(dst, mrow, dst, self.neg_inf, count))
                else:
                    kb.binary("add", dst, dst, mrow, count)

            if per_row:  # one mask row for every query row
                with kb.loop(c(0), nq, "r") as r:
                    apply(kb.view(s, idx.mul(r, ts)), mf, ts)
            else:
                apply(s, mf, tile)
            free(kb, self.mask_in, m)
        if masked:  # causal: key k0 + j is hidden from query q0 + r when j - r > q0 - k0
            assert self.neg_inf is not None
            q_first = idx.add(self.q0, self.r_lo)
            diff = arith.SubfOp(kb.index_to_f32(q_first), kb.index_to_f32(k0))
            kb.insert(buffer.VDupOp(self.threshold, kb.insert(diff).results[0], tile))
            if self.by_min:  # the bound (q0 - k0 - (j - r) + 0.5) * inf: -inf past the diagonal
                kb.binary("sub", self.threshold, self.threshold, self.ramp, tile)
                kb.scalar("adds", self.threshold, self.threshold, kb.f32(0.5), tile)
                kb.scalar("muls", self.threshold, self.threshold, kb.f32(float("inf")), tile)
                kb.binary("min", s, s, self.threshold, tile)
            else:
                assert self.cmp is not None
                compared = idx.round_up(tile, CMP_ELEMS)
                kb.insert(buffer.VCompareOp("gt", self.cmp, self.ramp, self.threshold, compared))
                kb.insert(buffer.VSelectOp(s, self.cmp, self.neg_inf, s, tile))
        # running max, rescaling factor, probabilities, running sum
        with kb.loop(c(0), nq, "r") as r:
            src = kb.view(s, idx.mul(r, ts))
            kb.insert(buffer.VReduceOp("max", self.red_dst, src, self.red_tmp, nkv))
            kb.set(self.row_max, r, kb.get(self.red_dst, c(0)))
        count = idx.round_up(nq, 8)
        kb.binary("max", self.m_new, self.m_run, self.row_max, count)
        kb.binary("sub", self.alpha, self.m_run, self.m_new, count)
        kb.unary("exp", self.alpha, self.alpha, count)
        kb.copy_1d(self.m_new, self.m_run, count)
        # P = exp(S - m') in place of S, then to the input type for the cube
        with kb.loop(c(0), nq, "r") as r:
            row = kb.view(s, idx.mul(r, ts))
            kb.scalar("adds", row, row, kb.fneg(kb.get(self.m_new, r)), ts)
        kb.unary("exp", s, s, tile)
        with kb.loop(c(0), nq, "r") as r:
            src = kb.view(s, idx.mul(r, ts))
            kb.insert(buffer.VReduceOp("sum", self.red_dst, src, self.red_tmp, nkv))
            kb.set(self.row_sum, r, kb.get(self.red_dst, c(0)))
        kb.binary("mul", self.l_run, self.l_run, self.alpha, count)
        kb.binary("add", self.l_run, self.l_run, self.row_sum, count)
        p_slot = kb.insert(buffer.QueueAllocOp(self.p_out, p.in_elt), "p").results[0]
        if p.in_elt == f32:
            kb.copy_1d(s, p_slot, tile)
        else:
            kb.cast(p_slot, s, tile, "rint")
        free(kb, self.s_in, s)
        kb.insert(buffer.EnqueOp(self.p_out, p_slot))
        if self.wsp is not None:
            # split chips: P to the workspace, where the cube stage reads it into L1
            pd = kb.insert(buffer.DequeOp(self.p_out, p.in_elt), "p_ub").results[0]
            per_core = idx.mul(t["tq"], t["tkv"])
            at = idx.add(idx.mul(self.bid, per_core), idx.mul(self.r_lo, t["tkv"]))
            dst = kb.view(self.wsp, at)
            kb.copy(pd, dst, nq, nkv, ts, t["tkv"])
            free(kb, self.p_out, pd)


__all__ = ["AttentionPlan", "AttentionTemplate", "attention_tiling"]
