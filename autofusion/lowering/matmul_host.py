"""The matmul kernel's host side: the plan's runtime tiling, its tiling function and the
launch's runtime values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.ir import SSAValue

from autofusion.dialects import shape_inference as si
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import launch_dim_size, output_dynamic_dims, tiling_bounds
from autofusion.lowering.index_expr import IndexOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.matmul_plan import MatmulPlan
from autofusion.lowering.matmul_tiling import GemmSizes, GemmTiling, gemm_tiling, l2_budget
from autofusion.lowering.norm_prologue import rstd_bytes
from autofusion.lowering.rope_epilogue_emit import head_step
from autofusion.lowering.template import HostLaunch
from autofusion.lowering.value_types import resolve_dynamic_dims, tensor_shape

V = TypeVar("V")


def matmul_sizes(p: MatmulPlan, dims: Sequence[int] | None) -> tuple[int, int, int, int]:
    """(M, N, K, batch) with dynamic dims taken from `dims` in order (output dims, then
    K), else 1."""
    out = p.out_shape
    k = p.mnk()[2]
    sized = resolve_dynamic_dims([*out, k], dims)
    return sized[-3], sized[-2], sized[-1], si.num_elements(sized[:-3]) or 1


def plan_tiling(
    ops: IndexOps[V], p: MatmulPlan, chip: ChipSpec, sizes: GemmSizes[V]
) -> GemmTiling[V]:
    """The plan's runtime tiling: integers for the cost, IR in the tiling function."""
    ws_width = byte_width(p.ws_elt) if p.ws_elt is not None and not p.l0c_to_ub else 0
    bounds = tiling_bounds(p.rows, chip, p.tiles.tm * p.tiles.tn, ws_width)
    bounds = replace(bounds, col_step=head_step(p.rope))
    return gemm_tiling(ops, sizes, p.tiles, bounds, byte_width(p.in_elt), l2_budget(chip))


def matmul_launch(
    p: MatmulPlan, b: Builder, idx: IrOps, outside: dict[SSAValue, SSAValue]
) -> HostLaunch:
    """The launch's runtime values: M, N, K, the batch dims and the output's dynamic dims."""
    a, bb = outside.get(p.a), outside.get(p.b)
    ra, rb = len(tensor_shape(p.a)), len(tensor_shape(p.b))
    m_axis, k_axis = (ra - 1, ra - 2) if p.trans_a else (ra - 2, ra - 1)
    n_axis = rb - 2 if p.trans_b else rb - 1
    kb_axis = rb - 1 if p.trans_b else rb - 2
    out = p.out_shape
    m_s, n_s, k_s = p.mnk()
    values: list[SSAValue | int] = [
        launch_dim_size(b, [(a, m_axis)], m_s),
        launch_dim_size(b, [(bb, n_axis)], n_s),
        launch_dim_size(b, [(a, k_axis), (bb, kb_axis)], k_s),
    ]
    nb = len(p.batch_shape)
    for d in range(nb):
        cands = []
        for v, r in ((a, ra), (bb, rb)):
            pos = d - (nb - (r - 2))
            if v is not None and pos >= 0:
                cands.append((v, pos))
        values.append(launch_dim_size(b, cands, out[d]))
    dims = [idx.const(v) if isinstance(v, int) else v for v in values]
    anchor = [*dims[3:], dims[0], dims[1]]
    # a rope's output is the product's rows split into static heads: the product's dims
    # (all of them: the ropes' results and the column views of the product)
    outputs = p.parts.outputs if p.rope is None else [p.root.results[0]] * len(p.parts.outputs)
    return HostLaunch(dims, [], output_dynamic_dims(outputs, anchor, len(out)))


def matmul_tiling_function(p: MatmulPlan, name: str, chip: ChipSpec) -> func.FuncOp:
    """The host tiling function over M, N, K and the batch dims."""
    nb = len(p.batch_shape)
    arg_names = ["M", "N", "K", *(f"batch{d}" for d in range(nb))]

    def body(kb: KernelBuilder) -> list[SSAValue]:
        m, n, k = kb.entry.args[:3]
        batch = kb.idx.product(list(kb.entry.args[3:]))
        t = plan_tiling(kb.idx, p, chip, GemmSizes(m, n, k, batch))
        rstd = [] if p.prologue is None else [rstd_bytes(kb.idx, kb.idx.mul(batch, m))]
        return [*t.values.values(), *kb.entry.args[3:], *rstd, t.blocks]

    return tiling_function(name, arg_names, body)
