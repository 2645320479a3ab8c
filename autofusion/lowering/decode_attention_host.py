"""The decode-attention kernel's host side: its tiling function (the launch's runtime
values are the attention template's: attention_host.attention_launch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from xdsl.dialects import func
from xdsl.ir import SSAValue

from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_host import tiling_layout
from autofusion.lowering.attention_tiling import AttentionTiling
from autofusion.lowering.decode_attention_plan import DecodeAttentionPlan
from autofusion.lowering.decode_attention_tiling import decode_tiling
from autofusion.lowering.index_expr import IndexOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function

V = TypeVar("V")


def decode_plan_tiling(
    ops: IndexOps[V], p: DecodeAttentionPlan, chip: ChipSpec, dims: Sequence[V]
) -> AttentionTiling[V]:
    """The plan's runtime tiling: integers for the cost, IR in the tiling function."""
    return decode_tiling(ops, dims, p.tiles, chip.cube_cores, tiling_layout(p))


def decode_tiling_function(p: DecodeAttentionPlan, name: str, chip: ChipSpec) -> func.FuncOp:
    """The host tiling function over B, Hq, Hkv, Sq and Skv."""

    def body(kb: KernelBuilder) -> list[SSAValue]:
        t = decode_plan_tiling(kb.idx, p, chip, list(kb.entry.args))
        return [*t.values.values(), t.blocks]

    return tiling_function(name, ["B", "Hq", "Hkv", "Sq", "Skv"], body)
