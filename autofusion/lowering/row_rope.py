"""The rows kernel's rope (graph.rope): y = x * cos + rotate(x) * sin on a tile of whole
rows, rotating halves (Llama) or adjacent pairs (interleaved, GPT-J).

A partial rope (rotary_dim R < D, Phi/GPT-NeoX) rotates the first R columns of each row
with its narrow [rows, R] cos/sin tables (row_plan.ValueInfo.narrow, `narrow_stride`
apart in UB) and copies the other D - R columns.
"""

from __future__ import annotations

from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, i32
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import get_chip
from autofusion.lowering.row_plan import partial_rotary_dim
from autofusion.lowering.row_vector_math import Loc, RowVectorMath
from autofusion.lowering.value_types import element_type, tensor_shape

# the NPU arch without a vector Gather (Ascend910; buffer.VGatherOp)
GATHERLESS_ARCH = 1001


def rope(k: RowVectorMath, op: Operation) -> None:
    """graph.rope on a tile: whole rows, or the first rotary_dim columns of each."""
    rope_op = cast(graph.RopeOp, op)
    interleaved = graph.Props(op.properties, op.name).flag("interleaved")
    x = k._as_layout(k.locs[rope_op.input], "tile")
    cos, sin = k.locs[rope_op.cos], k.locs[rope_op.sin]
    r = partial_rotary_dim(rope_op)
    if r is not None:
        out = _partial_rope(k, (x, cos, sin), r, interleaved)
    else:
        stride = k.t["tile_stride"]
        rot = k.pool.get("tile")
        width = (k.t["cols"], tensor_shape(rope_op.input)[-1])
        rotate(k, (cast(SSAValue, x.buf), rot), width, (stride, stride), interleaved)
        a = k.binary("mul", x, cos)
        b = k.binary("mul", Loc("tile", buf=rot), sin)
        k.pool.release(rot)
        out = k.binary("add", a, b)
        k.pool.release(a.buf)
        k.pool.release(b.buf)
    k.locs[op.results[0]] = k.round_to(out, element_type(op.results[0]))


def _partial_rope(
    k: RowVectorMath, operands: tuple[Loc, Loc, Loc], r: int, interleaved: bool
) -> Loc:
    """y = x with its first r columns x * cos + rotate(x) * sin, cos and sin narrow."""
    kb, idx, t = k.kb, k.kb.idx, k.t
    x, cos, sin = operands
    stride, narrow = t["tile_stride"], idx.const(k.plan.narrow_stride)
    width = idx.const(r)
    xb = cast(SSAValue, x.buf)
    tables = [_as_narrow(k, loc) for loc in (cos, sin)]
    rot = k.pool.get("narrow")
    rotate(k, (xb, rot), (width, r), (stride, narrow), interleaved)
    kb.binary("mul", rot, rot, cast(SSAValue, tables[1].buf), k._count("narrow"))
    out = k.scale_shift(x, None, None)  # a copy: the pass-through columns
    ob, cb = cast(SSAValue, out.buf), cast(SSAValue, tables[0].buf)
    with kb.loop(idx.const(0), k.nrows, "r") as row:
        at, nat = idx.mul(row, stride), idx.mul(row, narrow)
        dst = kb.view(ob, at)
        kb.binary("mul", dst, kb.view(xb, at), kb.view(cb, nat), width)
        kb.binary("add", dst, dst, kb.view(rot, nat), width)
    k.pool.release(rot)
    for table, loc in zip(tables, (cos, sin)):
        if table is not loc:
            k.pool.release(table.buf)
    return out


def _as_narrow(k: RowVectorMath, loc: Loc) -> Loc:
    """A table location in the narrow layout (a splat constant table is a scalar)."""
    if loc.kind == "narrow":
        return loc
    if loc.kind != "scalar":
        raise ValueError(f"a partial rope's table in the {loc.kind} layout")
    buf = k.pool.get("narrow")
    k.kb.insert(buffer.VDupOp(buf, cast(SSAValue, loc.value), k._count("narrow")))
    return Loc("narrow", buf=buf)


def rotate(
    k: RowVectorMath,
    bufs: tuple[SSAValue, SSAValue],
    width: tuple[SSAValue, int],
    strides: tuple[SSAValue, SSAValue],
    interleaved: bool,
) -> None:
    """dst's rows = rotate(src's first `width` columns): concat(-x2, x1) of the halves,
    or (-x[2i+1], x[2i]) of the pairs when interleaved. `width` is the columns at run time
    and statically (DYN when unknown), `strides` the rows' strides in src and dst."""
    kb, idx = k.kb, k.kb.idx
    src, dst = bufs
    cols, static = width
    if interleaved:
        _rotate_pairs(k, bufs, cols, strides)
        return
    half = idx.floordiv(cols, idx.const(2))
    if aligned_halves(static):
        kb.copy(kb.view(src, half), dst, k.nrows, half, strides[0], strides[1])
        kb.copy(src, kb.view(dst, half), k.nrows, half, strides[0], strides[1])
    else:
        rotate_half_gathered(k, bufs, (cols, half), strides)
    with kb.loop(idx.const(0), k.nrows, "r") as r:
        row = kb.view(dst, idx.mul(r, strides[1]))
        kb.scalar("muls", row, row, kb.f32(-1.0), half)


def _rotate_pairs(
    k: RowVectorMath,
    bufs: tuple[SSAValue, SSAValue],
    cols: SSAValue,
    strides: tuple[SSAValue, SSAValue],
) -> None:
    """dst's rows = (-x[2i+1], x[2i]) of src's: a Gather of the swapped pairs, then the
    even columns negated by a row of signs (-1, 1, -1, ...)."""
    kb, idx = k.kb, k.kb.idx
    c0, two = idx.const(0), idx.const(2)
    table = k._narrow_buffer("row", i32)
    sign = k.pool.get("row")
    kb.insert(buffer.VDupOp(sign, kb.f32(1.0), cols))
    with kb.loop(c0, idx.floordiv(cols, two), "c") as c:
        even = idx.mul(c, two)
        odd = idx.add(even, idx.const(1))
        for at, source in ((even, odd), (odd, even)):
            byte = idx.mul(source, idx.const(4))
            kb.set(table, at, kb.insert(arith.IndexCastOp(byte, i32)).results[0])
        kb.set(sign, even, kb.f32(-1.0))
    gather_rows(k, *bufs, table, cols, strides)
    with kb.loop(c0, k.nrows, "r") as r:
        row = kb.view(bufs[1], idx.mul(r, strides[1]))
        kb.binary("mul", row, row, sign, cols)
    k.pool.release(sign)


def aligned_halves(cols: int) -> bool:
    """Whether the halves of a row of `cols` float32 start 32-byte aligned in UB, as
    DataCopy within UB needs (ascend.md 2.7); a dynamic width may not be."""
    return cols != DYN and (cols // 2 * 4) % 32 == 0


def rotate_half_gathered(
    k: RowVectorMath,
    bufs: tuple[SSAValue, SSAValue],
    width: tuple[SSAValue, SSAValue],
    strides: tuple[SSAValue, SSAValue],
) -> None:
    """dst's rows = src's rows (their first `cols` columns) with their halves swapped, for
    halves that are not 32-byte aligned: one Gather per row through a table of byte
    offsets (c + half) mod cols (asc-devkit Gather.md; the rows themselves start
    aligned), or on a chip without Gather (Ascend910) the same element moves by the
    scalar unit."""
    kb, idx = k.kb, k.kb.idx
    cols, half = width
    c0 = idx.const(0)
    table = k._narrow_buffer("row", i32)
    # table[c] = 4 * ((c + half) mod cols), in two runs
    for lo, hi, shift in ((c0, half, half), (half, cols, idx.sub(c0, half))):
        with kb.loop(lo, hi, "c") as c:
            at = idx.mul(idx.add(c, shift), idx.const(4))
            kb.set(table, c, kb.insert(arith.IndexCastOp(at, i32)).results[0])
    gather_rows(k, *bufs, table, cols, strides)


def gather_rows(
    k: RowVectorMath,
    x: SSAValue,
    rot: SSAValue,
    table: SSAValue,
    cols: SSAValue,
    strides: tuple[SSAValue, SSAValue] | None = None,
) -> None:
    """rot's rows = x's rows permuted by `table` (i32 byte offsets, `cols` of them): one
    Gather per row, or scalar moves on a chip without Gather (Ascend910). The rows are
    `strides` apart in (x, rot), tile_stride in both by default."""
    kb, idx, t = k.kb, k.kb.idx, k.t
    src_rows, dst_rows = x, rot
    c0 = idx.const(0)
    gather = get_chip(k.chip_name).arch != GATHERLESS_ARCH
    with kb.loop(c0, k.nrows, "r") as r:
        if strides is None or strides[0] is strides[1]:
            start = idx.mul(r, t["tile_stride"] if strides is None else strides[0])
            src, dst = kb.view(src_rows, start), kb.view(dst_rows, start)
        else:
            src = kb.view(src_rows, idx.mul(r, strides[0]))
            dst = kb.view(dst_rows, idx.mul(r, strides[1]))
        if gather:
            kb.insert(buffer.VGatherOp(dst, src, table, cols))
        else:
            with kb.loop(c0, cols, "c") as c:
                byte = kb.insert(arith.IndexCastOp(kb.get(table, c), IndexType())).results[0]
                kb.set(dst, c, kb.get(src, idx.floordiv(byte, idx.const(4))))
