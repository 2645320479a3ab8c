"""The tiling rule of vector (rows x columns) kernels, for static and runtime shapes.

Given R rows and C columns, the largest tile T (elements, from the UB budget), the row
padding A (elements in 32 bytes of the narrowest type) and K cores:

    tc  = C                 if the kernel reduces rows (whole rows per tile)
        = min(C, T)         otherwise (long rows are split into column blocks)
    tcp = round_up(tc, A)   row stride in UB: every row starts 32-byte aligned
    tr  = max(1, min(T // tcp, ceil(R / K)))   rows per tile, spread over the cores
    tiles = ceil(R / tr) * ceil(C / tc);  blocks = min(tiles, K);  per_core = ceil(tiles / blocks)

Each core takes `per_core` consecutive tiles; the last row and column tiles are shorter
(tails). A kernel with channel-major values (row_transpose.py) tiles whole runs of P
rows (an image's pixels): tr becomes the largest divisor of P at most tr, or a multiple
of P, so no tile straddles two images. When a reduced row does not fit (T // tcp == 0), the buffers would exceed their
static bound and the kernel reports it when it starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, TypeVar

from autofusion.lowering.index_expr import IndexOps

V = TypeVar("V")

# tiling scalars passed to a vector kernel, in order
ROW_TILING_PARAMS = (
    "rows",
    "cols",
    "tile_rows",
    "tile_cols",
    "tile_stride",
    "col_tiles",
    "tiles",
    "per_core",
)


@dataclass
class RowTiling(Generic[V]):
    rows: V
    cols: V
    tile_rows: V
    tile_cols: V
    tile_stride: V
    col_tiles: V
    tiles: V
    per_core: V
    blocks: V

    def params(self) -> list[V]:
        return [getattr(self, name) for name in ROW_TILING_PARAMS]


@dataclass(frozen=True)
class TileBudget:
    """A row plan's bound on its tiles: the largest tile (elements), the UB row alignment
    (elements), and whether tiles hold whole rows (the plan reduces them)."""

    max_tile_elems: int
    align: int
    whole_rows: bool
    run: int = 0  # rows per image of a channel-major kernel (0: none)


def rows_tiling(ops: IndexOps[V], rows: V, cols: V, budget: TileBudget, cores: int) -> RowTiling[V]:
    """The runtime tiles of a rows x cols view on `cores` cores: as many rows as fit the
    largest tile, whole rows when the plan reduces them."""
    max_tile_elems, align, whole_rows = budget.max_tile_elems, budget.align, budget.whole_rows
    t = ops.const(max_tile_elems)
    tc = cols if whole_rows else ops.min(cols, t)
    tcp = ops.round_up(tc, align)
    fit = ops.floordiv(t, tcp)
    balanced = ops.ceildiv(rows, ops.const(cores))
    tr = ops.max(ops.const(1), ops.min(fit, balanced))
    if budget.run:
        tr = _whole_runs(ops, tr, budget.run)
    col_tiles = ops.ceildiv(cols, tc)
    tiles = ops.mul(ops.ceildiv(rows, tr), col_tiles)
    blocks = ops.max(ops.const(1), ops.min(tiles, ops.const(cores)))
    per_core = ops.ceildiv(tiles, blocks)
    return RowTiling(rows, cols, tr, tc, tcp, col_tiles, tiles, per_core, blocks)


def _whole_runs(ops: IndexOps[V], tr: V, run: int) -> V:
    """The most rows at most tr that divide `run` or are a multiple of it:
    max(run * (tr // run), max over divisors d of run of d * min(1, tr // d))."""
    best = ops.mul(ops.const(run), ops.floordiv(tr, ops.const(run)))
    for d in divisors(run)[:-1]:
        fits = ops.min(ops.const(1), ops.floordiv(tr, ops.const(d)))
        best = ops.max(best, ops.mul(ops.const(d), fits))
    return best


def divisors(n: int) -> list[int]:
    """The divisors of n > 0, ascending."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]
