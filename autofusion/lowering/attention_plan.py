"""The attention template's plan: which groups it takes (a graph.flash_attention root, an
elementwise epilogue, and slices and reshapes it reads q, k and v through:
attention_views.py) and its static decisions: the tile candidates that fit L0/L1
and the UB the softmax and the epilogue share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, cast

from xdsl.dialects.builtin import f32, i1
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dialects.graph_fused import is_position_mask
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_tiling import CMP_ELEMS, AttentionTiles
from autofusion.lowering.attention_views import TokenView, attention_operand_views
from autofusion.lowering.cube_common import FRACTAL, cube_dtype_refusal, detached_value, round_up
from autofusion.lowering.cube_epilogue import (
    CubeEpilogue,
    EpilogueRoom,
    plan_epilogue,
    split_cube_group,
)
from autofusion.lowering.recorded_tiling import EPILOGUE_TILE, overflow, take_row_tile, take_tiles
from autofusion.lowering.row_plan import RowPlan
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts, Plan
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal

Q_CANDIDATES = (128, 64, 32, 16)

# architectures whose vector unit computes in saturation mode only: NaN becomes 0, so a
# fully masked row cannot be NaN there (docs/codegen.md: aclrtFloatOverflowMode)
SATURATING_ARCHS = frozenset({1001, 2002})


KV_CANDIDATES = (256, 128, 64, 32)


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
    # a causal mask by position (graph.flash_attention's integer mask): the position
    # ids, compared in the kernel; `mask` is then None
    positions: SSAValue | None = None
    # q, k, v (by operand index) read in place through slices and reshapes in the group
    views: dict[int, TokenView] = field(default_factory=dict)
    # graph.flash_attention's mask forms: the i1 mask is true where a key is hidden
    # (mask_polarity "hide"); a fully masked row gives NaN, not 0 (masked_row "nan")
    mask_hides: bool = False
    nan_rows: bool = False

    def source(self, operand: int) -> SSAValue:
        """The GM tensor the kernel reads root operand `operand` from."""
        view = self.views.get(operand)
        return self.root.operands[operand] if view is None else view.source

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
        return element_type(self.q)

    def logical(self, v: SSAValue) -> tuple[int, ...]:
        """[B, H, S, D] of a query/key/value/output."""
        s = tensor_shape(v)
        return (s[0], s[2], s[1], s[3]) if self.bsnd else s

    @property
    def mask_bool(self) -> bool:
        return self.mask is not None and element_type(self.mask) == i1


def mask_depth(chip: ChipSpec) -> int:
    """Mask buffers: double-buffered where the chip has 8 queue buffers per position."""
    return 2 if queue_slots(chip) >= 8 else 1


def softmax_ub(p: AttentionPlan, t: AttentionTiles, chip: ChipSpec) -> int:
    """UB bytes of the softmax side (queues and state buffers) for tiles t, as emitted."""
    w, ts, tq = byte_width(p.in_elt), t.ts, t.tq
    col = round_up(round_up(tq, 8) * 4, 32)
    tile4 = tq * ts * 4
    total = tile4 + tq * p.dv_stride * 4  # S in, P@V in
    total += 2 * tq * ts * w  # P out (double buffered)
    total += tq * p.dv_stride * 4  # O accumulator
    total += 6 * col + 32 + ts * 4  # m, l, m_new, alpha, rowmax, rowsum; ReduceSum scratch
    if p.mask is not None:
        mw = byte_width(element_type(p.mask))
        total += mask_depth(chip) * tq * ts * mw
        if not p.mask_bool and mw != 4:
            total += tile4
    padded = round_up(tq * ts, CMP_ELEMS)  # Compare's operands: whole repeats
    if p.causal:
        total += 2 * padded * 4  # ramp, threshold
    if p.mask_bool:
        total += 2 * padded * 2  # the mask as half, zeros
    if p.positions is not None:  # the ids' queue slot, key ids and query ids as f32
        pw = byte_width(element_type(p.positions))
        total += round_up(max(tq, ts) * pw, 32) + ts * 4 + col + 2 * padded * 4
    if p.causal or p.mask_bool or p.positions is not None:
        total += tile4 + padded  # -inf, compare mask
    if p.l0c_to_ub:  # CO1 -> CO2 stage of S and P@V (coupled chips)
        total += co2_stage_elems(p, t) * 4
    return total


def co2_stage_elems(p: AttentionPlan, t: AttentionTiles) -> int:
    """Elements of the UB stage S and P@V leave L0C through on coupled chips: their Nz
    fractals, rows and columns rounded up to 16 (cube_common.alloc_co2_stage)."""
    cols = max(round_up(t.tkv, FRACTAL), round_up(p.value_dim, FRACTAL))
    return round_up(t.tq, FRACTAL) * cols


def cube_bytes(p: AttentionPlan, t: AttentionTiles, chip: ChipSpec) -> dict[str, int]:
    # L1/L0 hold fractals: head dims padded to 16 columns (ascend.md 1.5)
    w, d, dv = byte_width(p.in_elt), round_up(p.head_dim, FRACTAL), round_up(p.value_dim, FRACTAL)
    return {
        "l0a": round_up(t.tq * d * w, 512) + 2 * round_up(t.tq * t.tkv * w, 512),
        "l0b": 2 * round_up(t.tkv * d * w, 512) + 2 * round_up(t.tkv * dv * w, 512),
        "l0c": round_up(t.tq * t.tkv * 4, 64) + round_up(t.tq * dv * 4, 64),
        "l1": t.tq * d * w + 2 * t.tkv * (d + dv) * w + 2 * t.tq * t.tkv * w,
    }


def plan_attention(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> AttentionPlan | Refusal:
    views = attention_operand_views(parts, chip)
    if isinstance(views, Refusal):
        return views
    found = split_cube_group(views.parts, graph.FlashAttentionOp, "flash attention")
    if isinstance(found, Refusal):
        return found
    root, epilogue = found
    why = cube_dtype_refusal(root, chip)
    if why is not None:
        return why
    props = graph.Props(root.properties, root.name)
    if props.has("softcap"):
        return Refusal("a softcap (the attention kernel has no tanh cap on its scores)")
    if cast(graph.FlashAttentionOp, root).nan_rows and chip.arch in SATURATING_ARCHS:
        return Refusal(
            f'masked_row = "nan" on {chip.name}, whose vector unit computes in saturation '
            "mode (NaN becomes 0)"
        )
    bsnd = props.text("layout") == "BSND"
    order = (0, 2, 1, 3) if bsnd else (0, 1, 2, 3)
    q, k, v = (tuple(tensor_shape(x)[i] for i in order) for x in root.operands[:3])
    d, dv = q[3], v[3]
    if DYN in (d, dv):
        return Refusal("flash attention with a dynamic head dim")
    mask = root.operands[3] if len(root.operands) == 4 else None
    positions = None
    if mask is not None and is_position_mask(mask):
        positions, mask = mask, None
        if props.flag("causal"):
            return Refusal("a causal flag together with a causal mask by position")
        if not chip.data_copy_pad:
            return Refusal("a causal mask by position on a chip without DataCopyPad")
    pattern = (False, False, False)
    if mask is not None:
        ms = tensor_shape(mask)
        ms = (1,) * (4 - len(ms)) + ms
        if ms[3] != k[2] or (ms[3] == 1 and k[2] != 1):
            return Refusal("a mask that broadcasts over the keys (its last dim is 1)")
        pattern = (ms[0] != 1, ms[1] != 1, ms[2] != 1)
    raw = detached_value(f32, tensor_shape(root.results[0]), "raw")
    causal, scale = props.flag("causal"), props.real("scale")
    w = byte_width(element_type(root.operands[0]))
    if not chip.data_copy_pad:
        runs = [(d, w), (dv, w), (v[3], byte_width(element_type(root.results[0])))]
        if mask is not None:
            runs.append((k[2], byte_width(element_type(mask))))
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
        positions,
        views.views,
        cast(graph.FlashAttentionOp, root).mask_hides,
        cast(graph.FlashAttentionOp, root).nan_rows,
    )
    sq, skv = q[2], k[2]
    last: Refusal = Refusal(
        f"L0A/L0B/L0C/L1 of {chip.name} cannot hold a 16-row query block with a 32-key block "
        f"of head dims {d}/{dv}"
    )
    vector_side = CubeEpilogue(
        root, raw, [], epilogue, views.parts, len(tensor_shape(root.results[0])) - 1
    )
    if tiling is not None:
        return _at_recorded_tiles(plan, tiling, chip, vector_side)
    for tq in Q_CANDIDATES:
        if sq != DYN and tq > max(FRACTAL, round_up(sq, FRACTAL)):
            continue
        last = add_key_blocks(plan, tq, skv, chip, vector_side, last)
    if not plan.candidates:
        return last
    return plan


def add_key_blocks(
    plan: AttentionPlan, tq: int, skv: int, chip: ChipSpec, ep: CubeEpilogue, last: Refusal
) -> Refusal:
    """Append to the plan's candidates each key block that fits L0/L1 and UB with a `tq`-row
    query block (the first one found sets the epilogue's row plan); returns the last
    refusal met, else `last`."""
    for tkv in KV_CANDIDATES:
        if skv != DYN and tkv > max(32, round_up(skv, 32)):
            continue
        t = AttentionTiles(tq, tkv)
        need = cube_bytes(plan, t, chip)
        if any(need[s] > cast(int, chip.capacity(s)) for s in need):
            continue
        rows = epilogue_rows(plan, t, chip, ep, plan.bsnd)
        if isinstance(rows, Refusal):
            last = rows
            continue
        if not plan.candidates:
            plan.rows = rows
            plan.dv_stride = round_up(plan.value_dim, rows.align_elems)
        plan.candidates.append(t)
    return last


def _at_recorded_tiles(
    plan: AttentionPlan, tiling: Mapping[str, TilingValue], chip: ChipSpec, ep: CubeEpilogue
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
    rows = epilogue_rows(plan, t, chip, ep, plan.bsnd)
    if isinstance(rows, Refusal):
        return rows
    why = take_row_tile(rows, tiling, EPILOGUE_TILE)
    if why is not None:
        return why
    plan.rows = rows
    plan.dv_stride = round_up(plan.value_dim, rows.align_elems)
    plan.candidates = [t]
    return plan


def epilogue_rows(
    plan: AttentionPlan, t: AttentionTiles, chip: ChipSpec, ep: CubeEpilogue, bsnd: bool
) -> RowPlan | Refusal:
    """The epilogue's row plan with the UB the softmax leaves (its tile: the query block)."""
    # queue buffers per position the softmax takes: VECIN S, P@V and the mask, VECOUT P;
    # the row plan counts the (preset, queue-less) raw output as one streamed input
    slots = queue_slots(chip)
    taken_in = 2 + (mask_depth(chip) if plan.mask is not None else 0)
    taken_in += plan.positions is not None
    left_slots = min(slots - taken_in + 1, slots - 2)
    probe = plan_epilogue(ep, EpilogueRoom(chip.ub_bytes, left_slots, preset=True), chip)
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
    rows = plan_epilogue(ep, EpilogueRoom(left, left_slots, preset=True), chip)
    if isinstance(rows, Refusal):
        return rows
    if rows.max_tile_elems < t.tq * plan.dv_stride:
        return Refusal("the softmax buffers and the epilogue do not fit UB")
    return rows
