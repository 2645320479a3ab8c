"""The attention kernel's host side: its tiling function and the launch's runtime values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.ir import SSAValue

from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_plan import AttentionPlan
from autofusion.lowering.attention_tiling import AttentionLayout, AttentionTiling, attention_tiling
from autofusion.lowering.cube_common import launch_dim_size, output_dynamic_dims
from autofusion.lowering.index_expr import IndexOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.template import HostLaunch
from autofusion.lowering.value_types import tensor_shape

V = TypeVar("V")


def plan_tiling(
    ops: IndexOps[V], p: AttentionPlan, chip: ChipSpec, dims: Sequence[V]
) -> AttentionTiling[V]:
    """The plan's runtime tiling: integers for the cost, IR in the tiling function."""
    return attention_tiling(ops, dims, p.tiles, chip.cube_cores, tiling_layout(p))


def tiling_layout(p: AttentionPlan) -> AttentionLayout:
    """What the runtime tiling needs of the plan's value rows and chip kind."""
    return AttentionLayout(p.value_dim, p.dv_stride, byte_width(p.in_elt), not p.l0c_to_ub)


def attention_launch(
    p: AttentionPlan, b: Builder, idx: IrOps, outside: dict[SSAValue, SSAValue]
) -> HostLaunch:
    """The launch's runtime values: B, Hq, Hkv, Sq, Skv and the outputs' dynamic dims."""
    # a view's source has the operand's B and S dims (attention_views.py); its heads are static
    qo, ko = outside.get(p.source(0)), outside.get(p.source(1))
    head, seq = (2, 1) if p.bsnd else (1, 2)
    q, k = tensor_shape(p.q), tensor_shape(p.k)
    vals = [
        launch_dim_size(b, [(qo, 0), (ko, 0)], q[0]),
        launch_dim_size(b, [(qo, head)], q[head]),
        launch_dim_size(b, [(ko, head)], k[head]),
        launch_dim_size(b, [(qo, seq)], q[seq]),
        launch_dim_size(b, [(ko, seq)], k[seq]),
    ]
    dims = [idx.const(x) if isinstance(x, int) else x for x in vals]
    bb, hq, _, sq, _ = dims
    out = [bb, sq, hq, idx.const(p.value_dim)] if p.bsnd else [bb, hq, sq, idx.const(p.value_dim)]
    return HostLaunch(dims, [], output_dynamic_dims(p.parts.outputs, out, 4))


def attention_tiling_function(p: AttentionPlan, name: str, chip: ChipSpec) -> func.FuncOp:
    """The host tiling function over B, Hq, Hkv, Sq and Skv."""

    def body(kb: KernelBuilder) -> list[SSAValue]:
        t = plan_tiling(kb.idx, p, chip, list(kb.entry.args))
        return [*t.values.values(), t.blocks]

    return tiling_function(name, ["B", "Hq", "Hkv", "Sq", "Skv"], body)
