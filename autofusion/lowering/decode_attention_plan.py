"""The decode-attention template's plan: which groups it takes (a graph.flash_attention
with few query rows per key/value head, no causal flag, a mask that is the same for every
head) and its tiles: one query tile holds all Hq/Hkv * Sq query rows of a KV head (GQA:
they share every K/V block), so the attention template's analysis and buffers serve with
tq = round16(Hq/Hkv * Sq).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import ClassVar

from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_plan import (
    Q_CANDIDATES,
    AttentionPlan,
    add_key_blocks,
    plan_attention,
)
from autofusion.lowering.cube_common import FRACTAL, round_up
from autofusion.lowering.cube_epilogue import CubeEpilogue
from autofusion.lowering.template import GroupParts, NotApplicable
from autofusion.lowering.value_types import tensor_shape
from autofusion.passes.fusion_rule import Refusal


@dataclass
class DecodeAttentionPlan(AttentionPlan):
    """An attention plan whose query tile is a KV head's Hq/Hkv * Sq rows; `attention`
    is the attention template's plan of the same group (what the cost model weighs it
    against), None at a recorded tiling."""

    template: ClassVar[str] = "decode_attention"
    q_rows: int = 1  # Hq / Hkv * Sq
    attention: AttentionPlan | None = None


def decode_refusal(base: AttentionPlan, chip: ChipSpec) -> NotApplicable | None:
    """Why the group is not a decode attention (falsy: the attention template takes it)."""
    if base.l0c_to_ub:
        return NotApplicable(
            f"decode attention needs a split chip (SyncAll<false> between the KV splits and "
            f"their combine), {chip.name} is coupled"
        )
    _, hq, sq, _ = base.logical(base.q)
    hkv = base.logical(base.k)[1]
    if DYN in (hq, hkv, sq):
        return NotApplicable("decode attention needs static head counts and query length")
    if base.causal:
        return NotApplicable("causal attention (top-left aligned: the query blocks' own ranges)")
    if base.mask_pattern[1]:
        return NotApplicable("a mask that varies over the heads")
    if base.bsnd and sq != 1:
        return NotApplicable("BSND with Sq > 1 (a KV head's query rows are strided)")
    rows = hq // hkv * sq
    if rows > Q_CANDIDATES[0]:
        return NotApplicable(
            f"{rows} query rows per KV head, more than one {Q_CANDIDATES[0]}-row query tile"
        )
    return None


def plan_decode_attention(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> DecodeAttentionPlan | Refusal:
    """The group's decode plan: the attention analysis (at `tiling` when given), then the
    key blocks that fit with the one query tile of a KV head."""
    base = plan_attention(parts, chip, tiling)
    if isinstance(base, Refusal):
        return base
    why = decode_refusal(base, chip)
    if why is not None:
        return why
    _, hq, sq, _ = base.logical(base.q)
    rows = hq // base.logical(base.k)[1] * sq
    tq = round_up(rows, FRACTAL)
    copied = {f.name: getattr(base, f.name) for f in fields(AttentionPlan)}
    plan = DecodeAttentionPlan(**copied, q_rows=rows, attention=None if tiling else base)
    if tiling is not None:
        if plan.tiles.tq != tq:
            return Refusal(f"decode attention needs tq = {tq} (the query rows of a KV head)")
        return plan
    plan.candidates = []
    skv = base.logical(base.k)[2]
    vector_side = CubeEpilogue(
        base.root, base.raw, [], base.epilogue, parts, len(tensor_shape(base.root.results[0])) - 1
    )
    last = Refusal(f"L0/L1 of {chip.name} cannot hold {tq} query rows and 32 keys")
    last = add_key_blocks(plan, tq, skv, chip, vector_side, last)
    return plan if plan.candidates else last
