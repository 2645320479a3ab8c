"""The GEMM tiling shared by the matmul and conv templates: the static tiles that fit
L0A/L0B/L0C and L1, and the runtime tiling with its grouped tile order
(matmul_kernel.py docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import FRACTAL, TilingBounds, spread_tiles
from autofusion.lowering.index_expr import IndexOps
from autofusion.passes.fusion_rule import Refusal

V = TypeVar("V")


# (baseM, baseN) in order of preference: the largest output tile first (most reuse of
# each loaded A and B element), then squarer ones
MN_CANDIDATES = (
    (128, 256),
    (256, 128),
    (128, 128),
    (64, 256),
    (128, 64),
    (64, 128),
    (64, 64),
    (32, 64),
    (32, 32),
    (16, 32),
    (16, 16),
)


K_CANDIDATES = (128, 64, 32, 16)


STEP_K = (4, 2, 1)


@dataclass(frozen=True)
class CubeTiles:
    """Static tile bounds of a GEMM-shaped cube kernel."""

    tm: int
    tn: int
    tk: int
    step_k: int
    c_depth: int

    @property
    def kl1(self) -> int:
        return self.tk * self.step_k


def tiles_footprint(tiles: CubeTiles, w: int) -> dict[str, int]:
    """Bytes of L0A/L0B/L0C/L1 the tiles take (double-buffered A/B stages) for `w`-byte
    inputs: the bounds `choose_tiles` keeps within the chip."""
    return {
        "l0a": 2 * tiles.tm * tiles.tk * w,
        "l0b": 2 * tiles.tk * tiles.tn * w,
        "l0c": tiles.c_depth * tiles.tm * tiles.tn * 4,
        "l1": 2 * (tiles.tm + tiles.tn) * tiles.kl1 * w,
    }


def choose_tiles(chip: ChipSpec, w: int, max_cols: int | None) -> CubeTiles | Refusal:
    """The largest base tile that fits L0A/L0B/L0C/L1 (and the epilogue's UB columns)."""
    for tm, tn in MN_CANDIDATES:
        if max_cols is not None and tn > max_cols:
            continue
        if tm * tn * 4 > chip.l0c_bytes:
            continue
        for tk in K_CANDIDATES:
            if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                continue
            for step in STEP_K:
                if 2 * (tm + tn) * tk * step * w <= chip.l1_bytes:
                    c_depth = 2 if 2 * tm * tn * 4 <= chip.l0c_bytes else 1
                    return CubeTiles(tm, tn, tk, step, c_depth)
    if max_cols is not None and max_cols < FRACTAL:
        return Refusal("the epilogue's buffers do not fit UB for even 16 columns of output")
    return Refusal(f"L0A/L0B/L0C of {chip.name} cannot hold a 16x16 fractal tile of {w}-byte data")


PARAMS = (
    "M",
    "N",
    "K",
    "tm",
    "tn",
    "tk",
    "kl1",
    "mt",
    "nt",
    "k_stages",
    "tiles",
    "per_core",
    "tile_stride",
    "er",
    "ws_bytes",
    "group_m",
)


@dataclass
class GemmTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


@dataclass(frozen=True)
class GemmSizes(Generic[V]):
    """The runtime sizes of a GEMM: a [batch x M x N] output over K."""

    m: V
    n: V
    k: V
    batch: V


def gemm_tiling(
    ops: IndexOps[V],
    sizes: GemmSizes[V],
    t: CubeTiles,
    bounds: TilingBounds,
    a_row_bytes: int = 0,
    l2_budget: int = 0,
) -> GemmTiling[V]:
    """The runtime tiling of a [batch x M x N] output over K (module docstring)."""
    c = ops.const
    m, n, k, batch = sizes.m, sizes.n, sizes.k, sizes.batch
    cores = bounds.cores
    tm = ops.min(c(t.tm), ops.round_up(m, FRACTAL))
    mt = ops.ceildiv(m, tm)
    rows_of_tiles = ops.mul(batch, mt)
    n_split = ops.max(
        c(1), ops.min(ops.ceildiv(c(cores), rows_of_tiles), ops.ceildiv(n, c(FRACTAL)))
    )
    tn = ops.min(c(t.tn), ops.round_up(ops.ceildiv(n, n_split), bounds.col_step))
    nt = ops.ceildiv(n, tn)
    tk = ops.min(c(t.tk), ops.round_up(k, FRACTAL))
    kl1 = ops.min(c(t.kl1), ops.mul(ops.ceildiv(k, tk), tk))
    k_stages = ops.ceildiv(k, kl1)
    tiles = ops.mul(rows_of_tiles, nt)
    sp = spread_tiles(ops, tiles, (tm, tn), bounds)
    # tile order: groups of group_m M tiles, M fastest within a group (module docstring)
    band = ops.max(c(1), ops.mul(ops.mul(tm, k), c(a_row_bytes)))
    group_m = ops.max(c(1), ops.min(mt, ops.floordiv(c(l2_budget), band)))
    ordered = (m, n, k, tm, tn, tk, kl1, mt, nt, k_stages, tiles)
    values = dict(zip(PARAMS, (*ordered, sp.per_core, sp.stride, sp.er, sp.ws, group_m)))
    return GemmTiling(values, sp.blocks)


def l2_budget(chip: ChipSpec) -> int:
    """L2 bytes a matmul may keep its re-read A bands in (half: the rest holds the B
    bands in flight, the output and other kernels' data)."""
    return chip.l2_bytes // 2


def tile_coords(ops: IndexOps[V], tile: V, t: dict[str, V]) -> tuple[V, V, V]:
    """(batch, M tile, N tile) of output tile `tile` in the grouped order: per batch,
    groups of `group_m` M tiles; within a group M is fastest, then N."""
    per_batch = ops.mul(t["mt"], t["nt"])
    ob = ops.floordiv(tile, per_batch)
    tb = ops.rem(tile, per_batch)
    group = ops.mul(t["group_m"], t["nt"])
    first_m = ops.mul(ops.floordiv(tb, group), t["group_m"])
    rows = ops.min(t["group_m"], ops.sub(t["mt"], first_m))
    local = ops.rem(tb, group)
    return ob, ops.add(first_m, ops.rem(local, rows)), ops.floordiv(local, rows)
