"""The conv kernel's host side: its tiling function and the launch's runtime values."""

from __future__ import annotations

from typing import TypeVar

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.ir import SSAValue

from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.conv_plan import ConvPlan
from autofusion.lowering.conv_tiling import ConvTiling, conv_tiling
from autofusion.lowering.cube_common import launch_dim_size, output_dynamic_dims, tiling_bounds
from autofusion.lowering.index_expr import IndexOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.template import HostLaunch
from autofusion.lowering.value_types import tensor_shape

V = TypeVar("V")


def plan_tiling(ops: IndexOps[V], p: ConvPlan, chip: ChipSpec, n: V) -> ConvTiling[V]:
    """The plan's runtime tiling over n images: integers for the cost, IR in the tiling
    function."""
    ws_width = byte_width(p.ws_elt) if p.ws_elt is not None and not p.l0c_to_ub else 0
    bounds = tiling_bounds(p.rows, chip, p.tiles.tm * p.tiles.tn, ws_width)
    col_width = byte_width(p.in_elt) if p.explicit else 0
    return conv_tiling(ops, n, p.geometry, p.tiles, bounds, col_width)


def conv_launch(
    p: ConvPlan, b: Builder, idx: IrOps, outside: dict[SSAValue, SSAValue]
) -> HostLaunch:
    """The launch's runtime values: the batch N and the outputs' dynamic dims."""
    g = p.geometry
    n = launch_dim_size(b, [(outside.get(p.x), 0)], tensor_shape(p.x)[0])
    n_value = idx.const(n) if isinstance(n, int) else n
    anchor = [n_value, idx.const(g.co), idx.const(g.oh), idx.const(g.ow)]
    return HostLaunch([n_value], [], output_dynamic_dims(p.parts.outputs, anchor, 4))


def conv_tiling_function(p: ConvPlan, name: str, chip: ChipSpec) -> func.FuncOp:
    """The host tiling function: the runtime tiling over the batch N."""

    def body(kb: KernelBuilder) -> list[SSAValue]:
        t = plan_tiling(kb.idx, p, chip, kb.entry.args[0])
        return [*t.values.values(), t.blocks]

    return tiling_function(name, ["N"], body)
