"""A matmul kernel's rope epilogue (issue 15, group 1; which ropes: rope_epilogue.py).

The epilogue's row plan is the plain one of the root's [rows, N] output view, plus the
rope: its cos/sin tables stream as per-row tiles (each row's table row, repeated over the
tile's heads), its result is the kernel's output. Per tile row the rope rotates each
head of D columns: one Gather per row through a table of byte offsets that swaps every
head's halves, the first halves negated, then x * cos + rotated * sin. The N tile holds
whole heads (a multiple of D), so every tile's columns start on a head.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import FRACTAL
from autofusion.lowering.cube_epilogue import CubeEpilogue, EpilogueRoom, plan_epilogue
from autofusion.lowering.kernel_builder import mapped_index
from autofusion.lowering.rope_epilogue import RopeEpilogue
from autofusion.lowering.row_kernel import RowKernel, TileCopy
from autofusion.lowering.row_ops import Emitter
from autofusion.lowering.row_plan import RowPlan, ValueInfo, size_tiles_to_ub
from autofusion.lowering.row_rope import gather_rows
from autofusion.lowering.row_vector_math import Loc, RowVectorMath
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.matching import splat_value

# the ops through which the ropes read the product's columns, and the ropes
VIEW_OR_ROPE = (graph.SliceOp, graph.SplitOp, graph.ReshapeOp, graph.RopeOp)


def plan_rope_epilogue(
    ep: CubeEpilogue, rope: RopeEpilogue, room: EpilogueRoom, chip: ChipSpec
) -> RowPlan | Refusal:
    """The root's row plan with the rope after it: its tables as per-row tiles, the
    group's outputs (ropes' results and column views of the product) full tiles of the
    view, each written from its own columns."""
    root, op = ep.root, rope.rope
    out = rope.source
    # the ops before the ropes' column views: the product chain (a norm prologue's row
    # scale, a bias add: rope_epilogue.product_chain) and the constants they read
    before = [o for o in ep.ops if not isinstance(o, VIEW_OR_ROPE)]
    for o in rope.outputs:
        for edge in (o.start, o.stop):
            if (edge * byte_width(element_type(o.value))) % 32:
                # an output's columns start 32-byte aligned in the UB tile and in GM
                return Refusal(
                    f"an output's columns [{o.start}, {o.stop}) of the rope epilogue do "
                    "not start and end on 32-byte boundaries"
                )
    body = GroupParts([root, *before], list(ep.parts.inputs), [out])
    plan = plan_epilogue(replace(ep, ops=before, parts=body), room, chip)
    if isinstance(plan, Refusal):
        return plan
    rank = len(tensor_shape(op.operands[0]))
    tables = list(dict.fromkeys(op.operands[1:]))
    for t in tables:
        if splat_value(t) is not None:
            return Refusal("a constant rope table: the rope epilogue streams its rows")
        if not chip.data_copy_pad and (rope.head_dim * byte_width(element_type(t))) % 32:
            # without DataCopyPad every GM block is a 32-byte multiple (ascend.md 2.7)
            return Refusal(
                f"rope table rows of {rope.head_dim} elements are not 32-byte multiples and "
                "the chip has no DataCopyPad"
            )
        padded = (1,) * (rank - len(tensor_shape(t))) + tensor_shape(t)
        plan.values[t] = ValueInfo(t, "mapped_rows", padded[:-2], is_input=True)
    plan.values[out].is_output = False
    for o in rope.outputs:
        plan.values[o.value] = ValueInfo(o.value, "full", plan.anchor[: plan.split], is_output=True)
    plan.ops, plan.outputs = [root, *before, op], [o.value for o in rope.outputs]
    plan.inputs = [*plan.inputs, *tables]
    streamed = [v for v in plan.inputs if plan.values[v].constant is None]
    slots = queue_slots(chip) if room.slots is None else room.slots
    if len(streamed) > slots:
        return Refusal(f"{len(streamed)} streamed inputs; the chip has {slots} queue buffers")
    plan.in_depth = 2 if 2 * len(streamed) <= slots else 1
    size_tiles_to_ub(plan, room.ub_bytes)
    if plan.max_tile_elems < plan.align_elems:
        return Refusal("not even one padded row segment of the rope epilogue's buffers fits UB")
    plan.parts = ep.parts
    return plan


def rope_overcount(
    rope: RopeEpilogue | None, rows: int, cols: int, col_tiles: int
) -> tuple[int, int]:
    """GM bytes (read, write) epilogue_io counts for a rope epilogue beyond what moves:
    it counts a per-row tile (rows x cols) for each table, the copy moves each row's D
    values once per column tile (table_copy); and a full tile for each output, which
    takes only its own columns."""
    if rope is None:
        return 0, 0
    read = sum(
        rows * (cols - col_tiles * rope.head_dim) * byte_width(element_type(t)) for t in rope.tables
    )
    write = sum(
        rows * (cols - (o.stop - o.start)) * byte_width(element_type(o.value)) for o in rope.outputs
    )
    return read, write


def ranged_outputs(rope: RopeEpilogue, cols: int) -> dict[SSAValue, tuple[int, int]]:
    """The outputs that take part of the view's `cols` columns: [start, stop) each."""
    return {o.value: (o.start, o.stop) for o in rope.outputs if (o.start, o.stop) != (0, cols)}


def head_step(rope: RopeEpilogue | None) -> int:
    """What the N tile is a multiple of: a fractal, and whole heads under a rope."""
    return FRACTAL if rope is None else math.lcm(FRACTAL, rope.head_dim)


def table_copy(head_dim: int) -> TileCopy:
    """Copy a rope table's rows for the tile's rows into the slot's first head (the
    rope's emitter repeats them over the other heads, in float32): the tile's rows are
    consecutive positions (a cube tile stays in one batch), so their table rows are one
    block of rows D apart."""

    def copy(k: RowKernel, v: SSAValue, slot: SSAValue) -> None:
        kb, idx, t = k.kb, k.kb.idx, k.t
        outer = [t[f"outer{d}"] for d in range(k.plan.split)]
        first = mapped_index(kb, k.r0, outer, k.plan.values[v].outer_shape)
        d = idx.const(head_dim)
        kb.copy(kb.view(k.gm[v], idx.mul(first, d)), slot, k.nrows, d, d, t["tile_stride"])

    return copy


def _repeat_heads(k: RowVectorMath, table: Loc, d: SSAValue) -> None:
    """Copy the first head's D columns of every row over the tile's other heads."""
    kb, idx, t = k.kb, k.kb.idx, k.t
    buf = cast(SSAValue, table.buf)
    stride = t["tile_stride"]
    with kb.loop(idx.const(1), idx.floordiv(k.ncols, d), "h") as h:
        kb.copy(buf, kb.view(buf, idx.mul(h, d)), k.nrows, d, stride, stride)


def rope_heads(source: SSAValue, rope: RopeEpilogue) -> Emitter:
    """The rope on the tile of `source` (the root's result, which the ropes read through
    their column views): x * cos + rotate_half(x) * sin per head, the result every
    rope's; the outputs that take the plain product keep `source`'s tile."""
    head_dim = rope.head_dim
    plain = [o.value for o in rope.outputs if not o.roped]

    def emit(k: RowVectorMath, op: Operation) -> None:
        kb, idx, t = k.kb, k.kb.idx, k.t
        x = k._as_layout(k.locs[source], "tile")
        for v in plain:
            k.locs[v] = x
        d, half = idx.const(head_dim), idx.const(head_dim // 2)
        # table[c] = 4 * (c - j + (j + D/2) mod D), j = c mod D: each head's halves swapped
        table = k._narrow_buffer("row", i32)
        with kb.loop(idx.const(0), k.ncols, "c") as c:
            j = idx.rem(c, d)
            at = idx.add(idx.sub(c, j), idx.rem(idx.add(j, half), d))
            kb.set(
                table, c, kb.insert(arith.IndexCastOp(idx.mul(at, idx.const(4)), i32)).results[0]
            )
        rot = k.pool.get("tile")
        gather_rows(k, cast(SSAValue, x.buf), rot, table, k.ncols)
        heads = idx.floordiv(k.ncols, d)
        with kb.loop(idx.const(0), k.nrows, "r") as r, kb.loop(idx.const(0), heads, "h") as h:
            head = kb.view(rot, idx.add(idx.mul(r, t["tile_stride"]), idx.mul(h, d)))
            kb.scalar("muls", head, head, kb.f32(-1.0), half)
        for table in dict.fromkeys(op.operands[1:]):
            _repeat_heads(k, k.locs[table], d)
        a = k.binary("mul", x, k.locs[op.operands[1]])
        b = k.binary("mul", Loc("tile", buf=rot), k.locs[op.operands[2]])
        k.pool.release(rot)
        if not plain:
            k.pool.release(x.buf)
        y = k.binary("add", a, b)
        k.pool.release(a.buf)
        k.pool.release(b.buf)
        rotated = k.round_to(y, element_type(op.results[0]))
        for taken in rope.ropes:
            k.locs[taken.rope.results[0]] = rotated

    return emit
