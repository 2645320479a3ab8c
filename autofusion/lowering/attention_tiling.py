"""The attention template's tiles and its runtime tiling over (B, Hq, Hkv, Sq, Skv)
(attention_kernel.py docstring).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from autofusion.lowering.cube_common import FRACTAL, round_up
from autofusion.lowering.index_expr import IndexOps

V = TypeVar("V")


# Compare's element counts are whole 256-byte repeats of half (ascend.md 2.8)
CMP_ELEMS = 128


@dataclass(frozen=True)
class AttentionTiles:
    tq: int
    tkv: int

    @property
    def ts(self) -> int:
        return round_up(self.tkv, 32)


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


@dataclass(frozen=True)
class AttentionLayout:
    """The output side's layout: Dv, its UB row stride (elements), the bytes of an input
    element, and whether S and P@V go through GM workspaces (split chips)."""

    dv: int
    dv_stride: int
    in_width: int
    split: bool


def attention_tiling(
    ops: IndexOps[V],
    dims: Sequence[V],
    t: AttentionTiles,
    cores: int,
    layout: AttentionLayout,
) -> AttentionTiling[V]:
    """Runtime tiling from (B, Hq, Hkv, Sq, Skv) (module docstring)."""
    c = ops.const
    dv, dv_stride, in_width, split = layout.dv, layout.dv_stride, layout.in_width, layout.split
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
