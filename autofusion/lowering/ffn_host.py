"""The ffn kernel's host side: the runtime tiling rule, its tiling function and the
launch's runtime values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.ir import SSAValue

from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import FRACTAL, launch_dim_size
from autofusion.lowering.cube_epilogue import max_epilogue_cols
from autofusion.lowering.ffn_plan import FfnPlan
from autofusion.lowering.ffn_tiles import SLOTS, ZERO_ELEMS
from autofusion.lowering.index_expr import IndexOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.norm_prologue import RSTD_BYTES, rstd_bytes
from autofusion.lowering.row_plan import RowPlan
from autofusion.lowering.template import HostLaunch
from autofusion.lowering.value_types import tensor_shape

V = TypeVar("V")


PARAMS = (
    "M",
    "K1",
    "F",
    "N2",
    "tm",
    "tn",
    "tk",
    "kl1",
    "bf",
    "mt",
    "ft",
    "nt",
    "items",
    "k_stages",
    "er",
    "ec",
    "a_stride",
    "fr",
    "fc",
    "f_stride",
    "f_col_tiles",
    "f_row_blocks",
    "ir",
    "ic",
    "i_stride",
    "i_col_tiles",
    "i_row_blocks",
    "z_pieces",
    "gu_bytes",
    "g_bytes",
    "acc_bytes",
)


def ffn_params(p: FfnPlan) -> tuple[str, ...]:
    """The tiling's values in order: PARAMS, then the rstd workspace of a norm prologue."""
    return PARAMS + ((RSTD_BYTES,) if p.prologue is not None else ())


@dataclass
class FfnTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


def pass_tiling(
    ops: IndexOps[V], rows: RowPlan, m: V, n2: V, aivs: V, n2_static: int
) -> tuple[V, V, V, V, V]:
    """(rows, cols, UB row stride, column tiles, row blocks) of a pass over [M x N2]
    whose row blocks are dealt round-robin over `aivs` vector cores, each with all its
    column tiles (row_tiling's rule otherwise). A row block's rows are a multiple of
    q = 8 / gcd(N2, 8), so every block starts 32-byte aligned in the float32
    accumulator: no 32-byte granule is written by two cores."""
    c = ops.const
    q = 8 // math.gcd(n2_static, 8)
    cols = ops.min(n2, c(max(rows.align_elems, rows.max_tile_elems // q)))
    stride = ops.round_up(cols, rows.align_elems)
    fit = ops.floordiv(c(rows.max_tile_elems), stride)
    balanced = ops.ceildiv(m, aivs)
    tile_rows = ops.max(c(q), ops.round_down(ops.min(fit, balanced), q))
    return tile_rows, cols, stride, ops.ceildiv(n2, cols), ops.ceildiv(m, tile_rows)


def ffn_tiling(
    ops: IndexOps[V], sizes: tuple[V, V, V, V], p: FfnPlan, chip: ChipSpec
) -> FfnTiling[V]:
    """The runtime tiling of the sizes (M, K1, F, N2) (module docstring)."""
    m, k1, f, n2 = sizes
    c = ops.const
    t = p.tiles
    tm = ops.min(c(t.tm), ops.round_up(m, FRACTAL))
    tn = c(t.tn)
    mt = ops.ceildiv(m, tm)
    bf = ops.min(c(t.bf), ops.round_up(f, t.tn))
    ft = ops.ceildiv(f, bf)
    nt = ops.ceildiv(n2, tn)
    items = ops.mul(mt, ft)
    blocks = ops.max(c(1), ops.min(items, c(chip.cube_cores)))
    tk = ops.min(c(t.tk), ops.round_up(k1, FRACTAL))
    kl1 = ops.min(c(t.kl1), ops.mul(ops.ceildiv(k1, tk), tk))
    k_stages = ops.ceildiv(k1, kl1)
    a = p.act_rows
    ec = ops.min(bf, c(max_epilogue_cols(a)))
    a_stride = ops.round_up(ec, a.align_elems)
    er = ops.min(
        tm,
        ops.max(c(FRACTAL), ops.round_down(ops.floordiv(c(a.max_tile_elems), a_stride), FRACTAL)),
    )
    aivs = ops.mul(blocks, c(2))
    n2_static = tensor_shape(p.root.output)[-1]
    fr, fc, f_stride, f_col_tiles, f_tiles = pass_tiling(ops, p.out_rows, m, n2, aivs, n2_static)
    first = pass_tiling(ops, p.init_rows or p.out_rows, m, n2, aivs, n2_static)
    z_pieces = ops.ceildiv(ops.mul(m, n2), c(ZERO_ELEMS))
    slot = ops.mul(tm, bf)
    gu = ops.mul(ops.mul(blocks, c(SLOTS * p.parts_count * byte_width(p.gu_elt))), slot)
    g = ops.mul(ops.mul(blocks, c(SLOTS * byte_width(p.in_elt))), slot)
    acc = ops.mul(ops.mul(m, n2), c(4))
    ordered = [m, k1, f, n2, tm, tn, tk, kl1, bf, mt, ft, nt, items, k_stages, er, ec]
    ordered += [a_stride, fr, fc, f_stride, f_col_tiles, f_tiles, *first, z_pieces, gu, g, acc]
    if p.prologue is not None:
        ordered.append(rstd_bytes(ops, m))
    values = dict(zip(ffn_params(p), ordered))
    return FfnTiling(values, blocks)


def ffn_launch(p: FfnPlan, b: Builder, idx: IrOps, outside: dict[SSAValue, SSAValue]) -> HostLaunch:
    """The launch's runtime values: the sizes M (the input's leading dims), K1, F, N2 and
    the output's dynamic dims."""
    x = outside.get(p.root.input)
    xs = tensor_shape(p.root.input)
    lead: list[SSAValue] = []
    for d, size in enumerate(xs[:-1]):
        v = launch_dim_size(b, [(x, d)], size)
        lead.append(idx.const(v) if isinstance(v, int) else v)
    m = idx.product(lead)
    k1, f = xs[-1], tensor_shape(p.root.weight2)[0]
    n2 = tensor_shape(p.root.output)[-1]
    dims = [m, idx.const(k1), idx.const(f), idx.const(n2)]
    out_dims = [v for v, d in zip(lead, tensor_shape(p.root.output)[:-1]) if d == DYN]
    return HostLaunch(dims, [], out_dims)


def ffn_tiling_function(p: FfnPlan, name: str, chip: ChipSpec) -> func.FuncOp:
    """The host tiling function over the sizes M, K1, F and N2."""

    def body(kb: KernelBuilder) -> list[SSAValue]:
        m, k1, f, n2 = kb.entry.args
        t = ffn_tiling(kb.idx, (m, k1, f, n2), p, chip)
        return [*t.values.values(), t.blocks]

    return tiling_function(name, ["M", "K1", "F", "N2"], body)
