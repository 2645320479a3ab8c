"""The decode-attention template's runtime tiling over (B, Hq, Hkv, Sq, Skv)
(decode_attention_kernel.py docstring): the attention template's parameters, with the
key range split over the cores, and the combine's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from autofusion.lowering.attention_tiling import (
    PARAMS,
    AttentionLayout,
    AttentionTiles,
    AttentionTiling,
)
from autofusion.lowering.cube_common import FRACTAL
from autofusion.lowering.index_expr import IndexOps

V = TypeVar("V")

DECODE_PARAMS = (*PARAMS, "splits", "chunk", "items", "combine_per_core", "slot", "part_bytes")


def decode_tiling(
    ops: IndexOps[V],
    dims: Sequence[V],
    t: AttentionTiles,
    cores: int,
    layout: AttentionLayout,
) -> AttentionTiling[V]:
    """Runtime tiling from (B, Hq, Hkv, Sq, Skv): items = B * Hkv query tiles, each
    key range cut into `splits` chunks of whole key blocks so that items * splits
    fills the cores; a step is (item, split)."""
    c = ops.const
    b, hq, hkv, sq, skv = dims
    group = ops.floordiv(hq, hkv)
    tq = ops.min(c(t.tq), ops.round_up(ops.mul(group, sq), FRACTAL))
    tkv = ops.min(c(t.tkv), ops.round_up(skv, FRACTAL))
    ts = ops.round_up(tkv, 32)
    items = ops.mul(b, hkv)
    kv_blocks = ops.max(c(1), ops.ceildiv(skv, tkv))
    want = ops.min(kv_blocks, ops.max(c(1), ops.floordiv(c(cores), items)))
    chunk = ops.mul(ops.ceildiv(kv_blocks, want), tkv)
    splits = ops.max(c(1), ops.ceildiv(skv, chunk))
    steps = ops.mul(items, splits)
    blocks = ops.max(c(1), ops.min(steps, c(cores)))
    per_core = ops.ceildiv(steps, blocks)
    combine_per_core = ops.ceildiv(items, blocks)
    # a step's partial result: acc rows [tq x Dv], then the row max m and the row sum l
    slot = ops.mul(tq, c(layout.dv + 2))
    part = ops.mul(ops.mul(steps, slot), c(4))
    f32_slot = ops.add(ops.mul(tq, tkv), ops.mul(tq, c(layout.dv)))  # S and P@V of one core
    ws = ops.mul(blocks, ops.mul(f32_slot, c(4))) if layout.split else c(0)
    wsp = ops.mul(blocks, ops.mul(ops.mul(tq, tkv), c(layout.in_width))) if layout.split else c(0)
    attention = [b, hq, hkv, sq, skv, tq, tkv, ts, c(1), steps, per_core, group]
    attention += [c(layout.dv_stride), ws, wsp]
    values = dict(
        zip(DECODE_PARAMS, (*attention, splits, chunk, items, combine_per_core, slot, part))
    )
    return AttentionTiling(values, blocks)
