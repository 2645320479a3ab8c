"""Which kernel inputs bypass the chip's L2 cache.

Every MTE transfer to and from GM goes through L2 by default (ascend.md 1.6). Ascend C's
`GlobalTensor::SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE)` (asc-devkit docs,
atlasascendc_api_07_00033; Atlas A2/A3 only) makes transfers through that GlobalTensor
skip it: "if an operator reads a GlobalTensor only once, bringing it into L2 brings no
benefit" (the same page). CANN's matmuls set it for an operand their tiling does not
re-read: B when M is not split across cores, A when N is not (hicann/ops-nn
matmul_v3_l2_cache.cpp; catlass kernels: `CeilDiv(m, L1_TILE_M) == 1` disables B's).

afc sets it for a kernel input when

1. the chip has the API (`ChipSpec.l2_cache_hint`);
2. the kernel's tiling reads each of its bytes exactly once, for the static shapes
   (`KernelTemplate.read_once`): kept in L2 it could only push out data that is read
   again, and read past L2 it costs no extra HBM traffic;
3. it is a weight (a `graph.constant`, possibly through reshapes) that no other kernel
   or op reads. On 2201 the hint is an address alias (asc-devkit `L2CacheAlter` adds the
   runtime's `l2Cacheoffset`) under which reads do not look in L2 at all, so it is only
   correct for bytes that no dirty L2 line can hold newer: never for a kernel's output
   read back, nor for a graph input (an earlier launch may have left it dirty in L2).

So an operand re-read within the kernel is never bypassed (a matmul's A for every N
tile, B for the M tiles of a tile group, attention's K and V for every query block),
whatever its size: its re-reads would all go to HBM. In a prefill-sized matmul (M split
into several tiles) no weight qualifies; in a decode-sized one (M within one tile) every
weight does.

The decision is made once, here; lower-to-buffer records it on the `buffer.kernel`
(`buffer.L2_BYPASS_ATTR`: the indices of the GM inputs) for codegen, and the fusion report gives
the same inputs to the L2 traffic model (`TrafficKernel.bypass`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64
from xdsl.ir import BlockArgument, Operation, SSAValue

from autofusion.dialects import graph
from autofusion.fusion.cost import is_view
from autofusion.hardware import ChipSpec

if TYPE_CHECKING:
    from autofusion.lowering.row_plan import RowPlan
    from autofusion.lowering.template import KernelTemplate, Plan


def l2_bypass(
    group: graph.FusionGroupOp, template: KernelTemplate, plan: Plan, chip: ChipSpec
) -> list[SSAValue]:
    """The group-body inputs (block arguments or in-group constants) whose reads bypass
    L2 in the group's kernel (module docstring)."""
    if not chip.l2_cache_hint:
        return []
    return [v for v in template.read_once(plan, chip) if _private_weight(v, group)]


def bypass_attribute(indices: list[int]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr([IntegerAttr(i, i64) for i in indices])


def _private_weight(v: SSAValue, group: graph.FusionGroupOp) -> bool:
    """Whether `v` is a weight that only `group` reads."""
    if isinstance(v.owner, graph.ConstantOp):
        return v.owner.parent_op() is group  # the group's own copy of the constant
    if not isinstance(v, BlockArgument) or v.owner is not group.block:
        return False
    source = group.inputs[v.index]
    while isinstance(source.owner, Operation) and is_view(source.owner):
        source = source.owner.operands[0]
    if not isinstance(source.owner, graph.ConstantOp):
        return False
    return _readers(source) == {group}


def _readers(v: SSAValue) -> set[Operation]:
    """The ops that read `v`, through views."""
    out: set[Operation] = set()
    for use in v.uses:
        op = use.operation
        if is_view(op):
            for r in op.results:
                out |= _readers(r)
        else:
            out.add(op)
    return out


def full_row_inputs(rows: RowPlan) -> list[SSAValue]:
    """The inputs a rows kernel (or a cube epilogue) streams once: those whose rows are
    the output's rows (`full`), read whole (not through a view)."""
    return [
        v
        for v in rows.inputs
        if rows.values[v].kind == "full"
        and v not in rows.views
        and v not in rows.transposed_sources
        and rows.values[v].constant is None
    ]
