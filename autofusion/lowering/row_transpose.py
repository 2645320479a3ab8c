"""Channel-major inputs and outputs of the rows kernel: the transposes around a
channels-last stretch of a CNN (ConvNeXt's NCHW -> NHWC after its depthwise conv and
NHWC -> NCHW before its residual add) folded into the kernel's addressing.

A group may read an input X through a transpose that moves one axis (the channels, C)
to the innermost place, perm [0..k-1, k+1..r-1, k], and may write a value through the
inverse transpose, perm [0..k-1, r-1, k..r-2]. Both see X as [images x C x pixels]
(`ChannelMajor`): view row r is pixel r % pixels of image r // pixels, and its C
columns are C runs `pixels` apart in GM. The kernel's tiles then never straddle an
image: tile_rows divides `pixels` or is a multiple of it (`rows_tiling`'s run), so a
tile is `runs` runs of L = min(tile_rows, pixels) rows of one image each.

Per run, copy-in moves the C runs of L pixels GM -> UB with one strided DataCopyPad
(blockCount C, srcStride pixels; ascend.md 2.7) into a [C x S] block (S = L rounded up
to 32 bytes), and Compute transposes it into the [L x tile_stride] rows with one Gather
through a byte-offset table (asc-devkit Gather.md; the table is built once per kernel,
as the conv template's im2col tables are). An output goes the other way: Gather into
[C x S] per run, then one strided DataCopyPad UB -> GM per run. Both need DataCopyPad
and Gather (Atlas A2/A3; not 910 or 310P, which lack DataCopyPad).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from autofusion.dialects import buffer
from autofusion.dialects import shape_inference as si
from autofusion.lowering.kernel_builder import KernelBuilder
from autofusion.lowering.row_layout import ChannelMajor
from autofusion.lowering.row_plan_model import RowPlan
from autofusion.lowering.row_tiling import divisors
from autofusion.lowering.row_vector_math import Loc, Pool
from autofusion.lowering.value_types import element_type


class RowKernel(Protocol):
    """What the channel-major copies use of row_kernel.py's RowKernel (a protocol:
    row_kernel.py builds a ChannelMajorIO, so this module does not import it)."""

    plan: RowPlan
    kb: KernelBuilder
    pool: Pool
    r0: SSAValue  # the current tile's first row and its row count
    nrows: SSAValue

    @property
    def t(self) -> Mapping[str, SSAValue]: ...
    @property
    def gm(self) -> Mapping[SSAValue, SSAValue]: ...


# the gathers move float32 (inputs are widened before, outputs narrowed after)
F32 = 4


class ChannelMajorIO:
    """A row kernel's channel-major copies and gathers (module docstring): the run
    length L, the [C x S] stride S, the gather tables and the float32 staging, set up
    once before the tile loop; the per-tile methods read the kernel's tile (r0, nrows)."""

    def __init__(self, k: RowKernel) -> None:
        plan, kb = k.plan, k.kb
        idx, t, c = kb.idx, k.t, kb.idx.const
        self.k = k
        layout = next(iter(plan.channel_major.values()))
        channels, pixels = layout.channels, layout.pixels
        ts = t["tile_stride"]
        self.len = idx.min(t["tile_rows"], c(pixels))
        self.stride = idx.round_up(self.len, plan.align_elems)
        for v, hint in ((self.len, "run_len"), (self.stride, "run_stride")):
            if idx.constant_value(v) is None:
                v.name_hint = hint
        runs = idx.floordiv(t["tile_rows"], self.len)
        self.bound = staged_bound(plan)
        max_len = min(max_rows(plan), pixels)
        self.staged_elems = idx.mul(idx.mul(runs, c(channels)), self.stride)
        self.staged = kb.tbuf(_bytes(kb, self.staged_elems, F32), self.bound * F32, f32, "cm")
        self.in_table: SSAValue | None = None
        self.out_table: SSAValue | None = None
        if plan.transposed_sources:
            # in[i * ts + j] = byte offset of staged[j][i]: row i, column j of a run
            size = idx.mul(self.len, ts)
            bound = max_len * _padded_cols(plan) * 4
            table = kb.tbuf(_bytes(kb, size, 4), bound, i32, "cm_in")
            with kb.loop(c(0), self.len, "i") as i, kb.loop(c(0), ts, "j") as j:
                col = idx.min(j, c(channels - 1))  # padding columns read the last channel
                at = idx.mul(idx.add(idx.mul(col, self.stride), i), c(F32))
                kb.set(table, idx.add(idx.mul(i, ts), j), _i32(kb, at))
            self.in_table = table
        if plan.transposed_outputs:
            # out[j * S + i] = byte offset of row i, column j of a run's rows (i < L)
            size = idx.mul(c(channels), self.stride)
            bound = channels * _round(max_len, plan.align_elems) * 4
            table = kb.tbuf(_bytes(kb, size, 4), bound, i32, "cm_out")
            with kb.loop(c(0), c(channels), "j") as j, kb.loop(c(0), self.stride, "i") as i:
                row = idx.min(i, idx.sub(self.len, c(1)))  # padding reads the last row
                at = idx.mul(idx.add(idx.mul(row, ts), j), c(F32))
                kb.set(table, idx.add(idx.mul(j, self.stride), i), _i32(kb, at))
            self.out_table = table

    def _runs(self) -> SSAValue:
        """Runs of the current tile (its rows are whole runs: row_tiling.py)."""
        return self.k.kb.idx.floordiv(self.k.nrows, self.len)

    def _block(self, layout: ChannelMajor) -> SSAValue:
        idx = self.k.kb.idx
        return idx.mul(idx.const(layout.channels), self.stride)

    def _gm_offset(self, run: SSAValue, layout: ChannelMajor) -> SSAValue:
        """GM element of channel 0 of a run's first pixel."""
        idx, c = self.k.kb.idx, self.k.kb.idx.const
        r = idx.add(self.k.r0, idx.mul(run, self.len))
        image = idx.floordiv(r, c(layout.pixels))
        pixel = idx.rem(r, c(layout.pixels))
        return idx.add(idx.mul(image, c(layout.channels * layout.pixels)), pixel)

    def copy_in(self, v: SSAValue, slot: SSAValue) -> None:
        """Each run's C runs of L pixels GM -> UB as a [C x S] block of `slot`."""
        k = self.k
        kb, idx, c = k.kb, k.kb.idx, k.kb.idx.const
        layout = k.plan.channel_major[v]
        gm = k.gm[k.plan.transposed_sources[v]]
        with kb.loop(c(0), self._runs(), "run") as h:
            src = kb.view(gm, self._gm_offset(h, layout))
            dst = kb.view(slot, idx.mul(h, self._block(layout)))
            kb.copy(src, dst, c(layout.channels), self.len, c(layout.pixels), self.stride)

    def widen(self, v: SSAValue, slot: SSAValue) -> Loc:
        """The dequeued runs of a channel-major input as a float32 rows tile."""
        k = self.k
        kb, idx, c = k.kb, k.kb.idx, k.kb.idx.const
        assert self.in_table is not None
        block = self._block(k.plan.channel_major[v])
        runs = self._runs()
        src = slot
        if element_type(v) != f32:
            kb.cast(self.staged, slot, idx.mul(runs, block), "none")
            src = self.staged
        rows = k.pool.get("tile")
        run_elems = idx.mul(self.len, k.t["tile_stride"])
        with kb.loop(c(0), runs, "run") as h:
            dst = kb.view(rows, idx.mul(h, run_elems))
            table = self.in_table
            kb.insert(buffer.VGatherOp(dst, kb.view(src, idx.mul(h, block)), table, run_elems))
        return Loc("tile", buf=rows)

    def store(self, v: SSAValue, rows: SSAValue, slot: SSAValue) -> None:
        """Gather the float32 rows tile into runs of [C x S] and narrow them into `slot`."""
        k = self.k
        kb, idx, c = k.kb, k.kb.idx, k.kb.idx.const
        assert self.out_table is not None
        block = self._block(k.plan.channel_major[v])
        runs = self._runs()
        run_elems = idx.mul(self.len, k.t["tile_stride"])
        with kb.loop(c(0), runs, "run") as h:
            src = kb.view(rows, idx.mul(h, run_elems))
            dst = kb.view(self.staged, idx.mul(h, block))
            kb.insert(buffer.VGatherOp(dst, src, self.out_table, block))
        count = idx.mul(runs, block)
        if element_type(v) == f32:
            kb.copy_1d(self.staged, slot, count)
        else:
            kb.cast(slot, self.staged, count, "rint")

    def copy_out(self, v: SSAValue, slot: SSAValue) -> None:
        """Each run's [C x S] block of `slot` UB -> GM as C runs of L pixels."""
        k = self.k
        kb, idx, c = k.kb, k.kb.idx, k.kb.idx.const
        layout = k.plan.channel_major[v]
        with kb.loop(c(0), self._runs(), "run") as h:
            src = kb.view(slot, idx.mul(h, self._block(layout)))
            dst = kb.view(k.gm[v], self._gm_offset(h, layout))
            kb.copy(src, dst, c(layout.channels), self.len, self.stride, c(layout.pixels))


def _round(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _padded_cols(plan: RowPlan) -> int:
    return _round(si.num_elements(plan.inner) or 1, plan.align_elems)


def max_rows(plan: RowPlan) -> int:
    """Rows of the plan's largest tile (at least one)."""
    return max(1, plan.max_tile_elems // _padded_cols(plan))


def staged_bound(plan: RowPlan) -> int:
    """The most elements `runs x [C x S]` can take at any tile the plan allows: L is a
    divisor of `pixels` (one run) or `pixels` itself (tile_rows // pixels runs)."""
    layout = next(iter(plan.channel_major.values()))
    rows, pixels = max_rows(plan), layout.pixels
    best = max(_round(d, plan.align_elems) for d in divisors(pixels) if d <= rows or d == 1)
    if rows >= pixels:
        best = max(best, rows // pixels * _round(pixels, plan.align_elems))
    return layout.channels * best


def _bytes(kb: KernelBuilder, elems: SSAValue, width: int) -> SSAValue:
    return kb.idx.round_up(kb.idx.mul(elems, kb.idx.const(width)), 32)


def _i32(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    return kb.insert(arith.IndexCastOp(v, i32)).results[0]


__all__ = ["ChannelMajorIO", "staged_bound"]
