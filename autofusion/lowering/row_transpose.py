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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.ir import Operation, SSAValue

from autofusion import dtypes
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN
from autofusion.lowering.row_tiling import divisors
from autofusion.lowering.value_types import element_type
from autofusion.passes.fusion_rule import Refusal

if TYPE_CHECKING:
    from autofusion.lowering.kernel_builder import KernelBuilder
    from autofusion.lowering.row_kernel import RowKernel
    from autofusion.lowering.row_plan import RowPlan
    from autofusion.lowering.row_vector_math import Loc

# the gathers move float32 (inputs are widened before, outputs narrowed after)
F32 = 4


@dataclass(frozen=True)
class ChannelMajor:
    """A GM tensor [images x channels x pixels] read or written as the rows x channels
    view: element (r, c) is at (r // pixels) * channels * pixels + c * pixels + r % pixels."""

    channels: int
    pixels: int


def _shape(v: SSAValue) -> tuple[int, ...]:
    return cast(TensorType, v.type).get_shape()


def _perm(op: graph.TransposeOp) -> tuple[int, ...]:
    return graph.Props(op.properties, op.name).integers("perm")


def _layout(channel_major: Sequence[int], axis: int) -> ChannelMajor | Refusal:
    """The layout of a channel-major shape whose channels are at `axis`."""
    pixels = si.num_elements(channel_major[axis + 1 :])
    channels = channel_major[axis]
    if pixels is None or channels == DYN:
        return Refusal("a channel-major transpose with dynamic channels or pixels")
    return ChannelMajor(channels, pixels)


def input_layout(op: graph.TransposeOp) -> ChannelMajor | Refusal | None:
    """The layout of a transpose that moves one axis to the innermost place, or None."""
    perm = _perm(op)
    r = len(perm)
    for k in range(r - 1):
        if perm == (*range(k), *range(k + 1, r), k):
            return _layout(_shape(op.input), k)
    return None


def output_layout(op: graph.TransposeOp) -> ChannelMajor | Refusal | None:
    """The layout of a transpose that moves the innermost axis to axis k, or None."""
    perm = _perm(op)
    r = len(perm)
    for k in range(r - 1):
        if perm == (*range(k), r - 1, *range(k, r - 1)):
            return _layout(_shape(op.output), k)
    return None


@dataclass
class LayoutTransposes:
    """A group's channel-major transposes: the input ones (their result -> the group
    input they read), the output ones (their result -> the value they transpose)."""

    inputs: dict[SSAValue, SSAValue] = field(default_factory=dict)
    outputs: dict[SSAValue, SSAValue] = field(default_factory=dict)
    layouts: dict[SSAValue, ChannelMajor] = field(default_factory=dict)
    ops: list[Operation] = field(default_factory=list)

    def body(
        self, ops: Sequence[Operation], inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
    ) -> tuple[list[Operation], list[SSAValue], list[SSAValue]]:
        """The group without its transposes: the transposed inputs are streamed inputs,
        and a transposed output is its source value's (written once per layout)."""
        rest = [op for op in ops if op not in self.ops]
        used = {v for op in rest for v in op.operands} | set(self.outputs.values())
        body_inputs = [v for v in inputs if v in used or v in outputs]
        body_inputs += [v for v in self.inputs if v in used or v in outputs]
        body_outputs = [self.outputs.get(v, v) for v in outputs]
        return rest, body_inputs, list(dict.fromkeys(body_outputs))

    def attach(self, plan: RowPlan, outputs: Sequence[SSAValue]) -> RowPlan | Refusal:
        """The plan of the body with the transposes folded in: the group's own outputs,
        channel-major ones included, and the view that tiles whole images' pixels."""
        from autofusion.lowering.row_plan import ValueInfo

        if plan.split != len(plan.anchor) - 1:
            return Refusal("a channel-major transpose needs the channels as the only columns")
        pixels = {lay.pixels for lay in self.layouts.values()}
        if len(pixels) > 1:
            return Refusal("channel-major transposes with different images in one kernel")
        for v in (*self.inputs, *self.outputs.values()):
            if plan.values[v].kind != "full":
                return Refusal(f"a transposed value of shape {si.fmt(_shape(v))} is not a tile")
        for v, source in self.outputs.items():
            info = plan.values[source]
            plan.values[v] = ValueInfo(v, "full", info.outer_shape, is_output=True)
            if source not in outputs:
                info.is_output = False
        plan.outputs = list(outputs)
        plan.channel_major = dict(self.layouts)
        plan.transposed_sources = dict(self.inputs)
        plan.transposed_outputs = dict(self.outputs)
        plan.image_rows = pixels.pop()
        return plan


def find_layout_transposes(
    ops: Sequence[Operation], inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
) -> LayoutTransposes | Refusal:
    """The group's transposes the rows kernel can fold (module docstring), or why one
    cannot be folded."""
    found = LayoutTransposes()
    inside = set(ops)
    if len(ops) > 1 and all(isinstance(op, graph.TransposeOp) for op in ops):
        return Refusal("a kernel of transposes alone")
    for op in ops:
        if not isinstance(op, graph.TransposeOp):
            continue
        elt = dtypes.type_name(cast(TensorType, op.input.type).element_type)
        if elt not in ("f32", "f16", "bf16"):
            return Refusal(f"{op.name} works on {elt}; vector kernels compute floats")
        layout = input_layout(op) if op.input in inputs else None
        if layout is not None:
            found.inputs[op.output] = op.input
        else:
            layout = output_layout(op)
            if layout is None:
                return Refusal(
                    f"transpose perm {list(_perm(op))} neither moves one axis innermost "
                    "(a kernel input) nor the innermost one back"
                )
            if op.output not in outputs or any(u.operation in inside for u in op.output.uses):
                return Refusal("a channel-major transpose inside a kernel must be its output")
            if op.input in found.inputs:
                return Refusal("a channel-major output transpose of a transposed input")
            found.outputs[op.output] = op.input
        if isinstance(layout, Refusal):
            return layout
        found.layouts[op.output] = layout
        found.ops.append(op)
    return found


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
        from autofusion.lowering.row_vector_math import Loc

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


__all__ = [
    "ChannelMajor",
    "ChannelMajorIO",
    "LayoutTransposes",
    "find_layout_transposes",
    "staged_bound",
]
