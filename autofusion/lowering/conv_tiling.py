"""The conv template's tiling: the convolution's geometry, the static tiles that fit
L0A/L0B/L0C/L1 and the im2col's UB, and the runtime tiling over N images (the formulas:
conv_kernel.py's docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from autofusion.hardware import ChipSpec
from autofusion.lowering import matmul_tiling
from autofusion.lowering.cube_common import FRACTAL, TilingBounds, round_up, spread_tiles
from autofusion.lowering.index_expr import IndexOps
from autofusion.passes.fusion_rule import Refusal

V = TypeVar("V")


# Cross-core flags of the explicit im2col (flags 0 and 1 hand output tiles to the
# epilogue, cube_common): the AIVs say a tile's X_col slot is written, the AIC that it
# has read one; two slots per block
COL_READY, COL_FREE = 2, 3


COL_SLOTS = 2


@dataclass(frozen=True)
class ConvGeometry:
    """The static shape of one convolution."""

    c: int  # input channels
    h: int
    w: int
    co: int  # output channels
    cg: int  # input channels per group
    kh: int
    kw: int
    group: int
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilations: tuple[int, int]
    oh: int
    ow: int

    @property
    def cog(self) -> int:
        return self.co // self.group

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def k(self) -> int:
        return self.cg * self.taps

    @property
    def pixels(self) -> int:
        return self.oh * self.ow

    @property
    def pointwise(self) -> bool:
        """A 1x1 conv with unit strides and no padding: per image the plain GEMM
        W [Cout x Cin] @ X [Cin x H*W], whose pixel tiles are contiguous in GM (no
        im2col: the input block is loaded into L0B like a matmul's B)."""
        return (self.kh, self.kw) == (1, 1) and self.strides == (1, 1) and not any(self.pads)

    def b1_elems(self, cstep: int, tn: int) -> int:
        """Elements of one L1 input stage: the [cstep*kh*kw x tn] block of X_col (the
        input's pixels when pointwise) with its rows padded to a fractal."""
        return round_up(cstep * self.taps, FRACTAL) * tn

    def stage_rows(self, tn: int) -> int:
        """Input rows an L1 stage holds for a pixel tile of at most tn pixels."""
        rows_out = min(self.oh, (tn - 1) // self.ow + 2)
        span = (rows_out - 1) * self.strides[0] + (self.kh - 1) * self.dilations[0] + 1
        return min(self.h, span)

    def zero_at(self, h_stage: int, w: int) -> int:
        """Element offset of the zero block after a staged input channel (explicit
        im2col): the staged rows rounded up to 32 bytes."""
        return round_up(h_stage * self.w, 32 // w)

    def local_ub(self, tn: int, cstep: int, w: int) -> int:
        """UB bytes of the coupled chips' im2col (module docstring): a staged input
        channel (rows and zero block), the X_col block [cstep*kh*kw x tn] of an L1 stage
        and the i32 offset tables."""
        h_stage = self.stage_rows(tn)
        staged = round_up((self.zero_at(h_stage, w) + 32 // w) * w, 32)
        cols = round_up(cstep * self.taps * tn * w, 32)
        tables = round_up((self.kh + self.kw + self.taps) * tn * 4, 32)
        return staged + cols + tables

    def im2col_ub(self, tn: int, w: int) -> int:
        """UB bytes of the explicit im2col: two staged channels (rows and zero block),
        two X_col blocks [kh*kw x tn] and the i32 offset tables."""
        h_stage = self.stage_rows(tn)
        staged = round_up((self.zero_at(h_stage, w) + 32 // w) * w, 32)
        cols = round_up(self.taps * tn * w, 32)
        tables = round_up((self.kh + self.kw + self.taps) * tn * 4, 32)
        return 2 * staged + 2 * cols + tables


@dataclass(frozen=True)
class ConvTiles:
    tm: int
    tn: int
    tk: int
    cstep: int  # channels per L1 stage
    h_stage: int  # input rows per L1 stage (bound)
    c_depth: int
    explicit: bool = False  # X_col built by the AIVs in a GM workspace
    local: bool = False  # X_col built in UB and copied into L1 on the same core (coupled)

    def b1_elems(self, g: ConvGeometry) -> int:
        return g.b1_elems(self.cstep, self.tn)

    def kst(self, g: ConvGeometry) -> int:
        """Row stride of the L1 weight stage (its K extent, padded to a fractal)."""
        return round_up(self.cstep * g.taps, FRACTAL)


@dataclass(frozen=True)
class StageRules:
    """How a conv stages its input (module docstring): `whole_k`, chips without
    DataCopyPad copy whole 32-byte weight rows, so a stage is all Cg channels or a number
    of them whose kh*kw taps are a 32-byte multiple; `explicit`, X_col comes from a GM
    workspace; `local`, X_col is built in UB, whose half it may take."""

    whole_k: bool
    explicit: bool = False
    local: bool = False


def conv_footprint(g: ConvGeometry, t: ConvTiles, w: int) -> dict[str, int]:
    """Bytes of L0A/L0B/L0C/L1 the tiles take (double-buffered stages): the bounds
    `choose_conv_tiles` keeps within the chip."""
    return {
        "l0a": 2 * t.tm * t.tk * w,
        "l0b": 2 * t.tk * t.tn * w,
        "l0c": t.c_depth * t.tm * t.tn * 4,
        "l1": 2 * t.tm * t.kst(g) * w + 2 * t.b1_elems(g) * w,
    }


def choose_conv_tiles(
    g: ConvGeometry, chip: ChipSpec, w: int, max_cols: int | None, rules: StageRules
) -> ConvTiles | Refusal:
    """The largest tiles that fit L0A/L0B/L0C and an L1 stage of at least one channel."""
    whole_k, explicit, local = rules.whole_k, rules.explicit, rules.local
    # no tile larger than the problem: a depthwise conv (Cog = 1) keeps wide pixel tiles
    max_m = round_up(g.cog, FRACTAL)
    max_n = round_up(g.pixels, FRACTAL)
    # the matmul template's candidates, read at call time (tests force small ones)
    candidates = matmul_tiling.MN_CANDIDATES
    clamped = dict.fromkeys((min(tm, max_m), min(tn, max_n)) for tm, tn in candidates)
    for tm, tn in clamped:
        if (max_cols is not None and tn > max_cols) or tm * tn * 4 > chip.l0c_bytes:
            continue
        for tk in matmul_tiling.K_CANDIDATES:
            if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                continue
            h_stage = g.stage_rows(tn)
            # weight [tm x channels*taps] and X_col [channels*taps x tn], K padded to 16
            per_channel = 2 * tn * g.taps * w + 2 * tm * g.taps * w
            reserve = 2 * tm * FRACTAL * w + 2 * (FRACTAL - 1) * tn * w
            fit = (chip.l1_bytes - reserve) // max(per_channel, 1)
            cstep = min(g.cg, fit)
            if local:  # the stage's X_col block in UB
                room = chip.ub_bytes // 2 - g.local_ub(tn, 0, w)
                cstep = min(cstep, room // (g.taps * tn * w))
            if whole_k and cstep < g.cg:
                unit = 32 // math.gcd(g.taps * w, 32)
                cstep = cstep // unit * unit
            if cstep < 1:
                continue
            depth = 2 if 2 * tm * tn * 4 <= chip.l0c_bytes else 1
            t = ConvTiles(tm, tn, tk, cstep, h_stage, depth, explicit, local)
            if 2 * tm * t.kst(g) * w + 2 * t.b1_elems(g) * w <= chip.l1_bytes:
                return t
    if max_cols is not None and max_cols < FRACTAL:
        return Refusal("the epilogue's buffers do not fit UB for even 16 output pixels")
    return Refusal(
        f"L1 of {chip.name} cannot stage one channel of {g.h}x{g.w} input rows with a "
        "16x16 fractal tile"
    )


PARAMS = (
    "N",
    "tm",
    "tn",
    "tk",
    "mt",
    "pt",
    "c_stages",
    "tiles",
    "per_core",
    "tile_stride",
    "er",
    "ws_bytes",
    "ws_col_bytes",
)


@dataclass
class ConvTiling(Generic[V]):
    values: dict[str, V]
    blocks: V


def conv_tiling(
    ops: IndexOps[V],
    n: V,
    g: ConvGeometry,
    t: ConvTiles,
    bounds: TilingBounds,
    col_width: int = 0,
) -> ConvTiling[V]:
    """The runtime tiling over N images (module docstring); `col_width`: bytes per X_col
    element of the explicit im2col's workspace (0: none)."""
    c = ops.const
    cores = bounds.cores
    tm = c(min(t.tm, round_up(g.cog, FRACTAL)))
    mt = ops.ceildiv(c(g.cog), tm)
    rows_of_tiles = ops.mul(ops.mul(n, c(g.group)), mt)
    n_split = ops.max(
        c(1), ops.min(ops.ceildiv(c(cores), rows_of_tiles), c(-(-g.pixels // FRACTAL)))
    )
    tn = ops.min(c(t.tn), ops.round_up(ops.ceildiv(c(g.pixels), n_split), FRACTAL))
    pt = ops.ceildiv(c(g.pixels), tn)
    tk = c(min(t.tk, round_up(g.k, FRACTAL)))
    c_stages = c(-(-g.cg // t.cstep))
    tiles = ops.mul(rows_of_tiles, pt)
    sp = spread_tiles(ops, tiles, (tm, tn), bounds)
    ws_col = ops.mul(ops.mul(sp.blocks, c(COL_SLOTS * col_width * g.k)), tn)
    values = dict(
        zip(
            PARAMS,
            (n, tm, tn, tk, mt, pt, c_stages, tiles, sp.per_core, sp.stride, sp.er, sp.ws, ws_col),
        )
    )
    return ConvTiling(values, sp.blocks)


def im2col_cols(
    g: ConvGeometry, chip: ChipSpec, w: int, ub: Callable[[int], int] | None = None
) -> int | Refusal:
    """The widest pixel tile whose im2col buffers (`ub`, default the explicit im2col's)
    take at most half the UB."""
    for base_n in (256, 128, 64, 32, 16):
        tn = min(base_n, round_up(g.pixels, FRACTAL))
        if (ub(tn) if ub is not None else g.im2col_ub(tn, w)) <= chip.ub_bytes // 2:
            return tn
    return Refusal(
        f"the im2col of {g.kh}x{g.kw} taps over {g.w}-wide input rows does not fit half of "
        f"the {chip.name} UB for 16 output pixels"
    )
