"""A row kernel's vector arithmetic: float32 UB locations (Loc), the pool of working
buffers, and the elementwise ops, composite functions (sigmoid from Exp and Reciprocal,
tanh from sigmoid, erf with Abramowitz & Stegun 7.1.26, |error| < 1.5e-7) and row
reductions the per-op emitters build on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Block, Operation, SSAValue

from autofusion.codegen.ascendc_api import CAST_PAIRS, cast_modes
from autofusion.dialects import buffer
from autofusion.dtypes import byte_width, type_name
from autofusion.lowering.kernel_builder import KernelBuilder, mapped_index
from autofusion.lowering.row_plan import F32, WIDENED_INTEGERS, RowPlan
from autofusion.lowering.value_types import element_type

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - (a1 t + ... + a5 t^5) e^{-z^2}, t = 1/(1 + p z)
ERF_P = 0.3275911


ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


TINY = 1e-30


def widened_integers(arch: int) -> tuple[str, ...]:
    """The integer input types the chip's Cast turns into float32 (row_plan `widens`)."""
    return tuple(t for t in WIDENED_INTEGERS if cast_modes(t, "f32", arch))


def widening_round(v: SSAValue) -> str:
    """Cast's round mode to widen v's elements to float32: none where the pair has it;
    int64 -> float32 has no CAST_NONE (asc-devkit Cast.md), so rint, numpy's rounding."""
    pair = (type_name(element_type(v)), "f32")
    return "none" if "none" in CAST_PAIRS.get(pair, frozenset({"none"})) else "rint"


@dataclass
class Loc:
    """Where a value lives during Compute: a float32 UB buffer in some layout, or a scalar.

    tile: rows x tile_stride; row: one row (columns); col: one value per row;
    mcol: a resident per-row operand read through a row map; scalar: an f32 SSA value;
    narrow: rows x narrow_stride (a partial rope's cos/sin table, row_plan.ValueInfo).
    """

    kind: str
    buf: SSAValue | None = None
    value: SSAValue | None = None
    operand_outer: tuple[int, ...] = ()


@dataclass
class Pool:
    """Float32 working buffers, reused once their value is dead.

    Buffers are allocated right before the tile loop (`before`), sized by the runtime
    tile and bounded by the plan's largest tile.
    """

    before: Operation
    sizes: dict[str, tuple[SSAValue, int]]
    free: dict[str, list[SSAValue]] = field(
        default_factory=lambda: {"tile": [], "row": [], "col": [], "narrow": []}
    )
    kind_of: dict[SSAValue, str] = field(default_factory=dict)

    def get(self, kind: str) -> SSAValue:
        if self.free[kind]:
            return self.free[kind].pop()
        nbytes, max_bytes = self.sizes[kind]
        op = buffer.AllocBufOp("veccalc", nbytes, max_bytes, f32)
        op.results[0].name_hint = f"work{len(self.kind_of)}"
        Block.insert_op_before(cast(Block, self.before.parent), op, self.before)
        self.kind_of[op.results[0]] = kind
        return op.results[0]

    def release(self, buf: SSAValue | None) -> None:
        if buf is not None and buf in self.kind_of:
            free = self.free[self.kind_of[buf]]
            if buf not in free:
                free.append(buf)


class RowVectorMath:
    """The vector arithmetic of a row kernel's Compute stage on float32 UB locations (Loc):
    layouts, elementwise ops, the composite functions and row reductions. RowKernel sets
    the state it reads: the builder, the tiling values, the tile's rows, the buffer pool."""

    kb: KernelBuilder
    chip_name: str
    t: dict[str, SSAValue]
    plan: RowPlan
    pool: Pool
    locs: dict[SSAValue, Loc]
    _narrow: dict[tuple[str, str], SSAValue]
    r0: SSAValue
    nrows: SSAValue
    ncols: SSAValue
    red_dst: SSAValue | None
    red_tmp: SSAValue | None
    # operands the op being emitted reads for the last time (not kernel outputs)
    dying: frozenset[SSAValue] = frozenset()

    def release_dying(self, values: Sequence[SSAValue]) -> None:
        """Free the buffers of those of `values` the op being emitted reads for the last
        time, once it has read them: its later working buffers may take their place
        (a fused op's intermediates would otherwise sit beside its dead inputs)."""
        for v in values:
            if v in self.dying and v in self.locs:
                self.pool.release(self.locs.pop(v).buf)

    def _widen(self, v: SSAValue, slot: SSAValue) -> Loc:
        """A dequeued input as a float32 location (cast unless it is float32 already)."""
        info = self.plan.values[v]
        kind = {"full": "tile", "mapped_rows": "tile", "rowvec": "row", "column": "col"}[info.kind]
        kind = "narrow" if info.narrow else kind
        if element_type(v) == f32:
            return Loc(kind, buf=slot)
        buf = self.pool.get(kind)
        self.kb.cast(buf, slot, self._count(kind), widening_round(v))
        return Loc(kind, buf=buf)

    def _count(self, kind: str) -> SSAValue:
        """Elements a whole-buffer vector op covers in this layout (padding included)."""
        idx, t = self.kb.idx, self.t
        if kind == "tile":
            return idx.mul(self.nrows, t["tile_stride"])
        if kind == "row":
            return t["tile_stride"]
        if kind == "narrow":
            return idx.mul(self.nrows, idx.const(self.plan.narrow_stride))
        return self.nrows

    def _row_value(self, loc: Loc, r: SSAValue) -> SSAValue:
        """The per-row scalar of a col/mcol/scalar location at tile row r."""
        kb, idx = self.kb, self.kb.idx
        if loc.kind == "scalar":
            return cast(SSAValue, loc.value)
        if loc.kind == "col":
            return kb.get(cast(SSAValue, loc.buf), r)
        outer = [self.t[f"outer{d}"] for d in range(self.plan.split)]
        row = mapped_index(kb, idx.add(self.r0, r), outer, loc.operand_outer)
        return kb.get(cast(SSAValue, loc.buf), row)

    def _as_layout(self, loc: Loc, kind: str) -> Loc:
        """`loc` materialized in layout `kind` (tile or col), e.g. to be stored."""
        if loc.kind == kind:
            return loc
        kb, idx = self.kb, self.kb.idx
        out = self.pool.get(kind)
        if kind == "col":
            with kb.loop(idx.const(0), self.nrows, "r") as r:
                kb.set(out, r, self._row_value(loc, r))
            return Loc("col", buf=out)
        # tile from a row vector or a per-row value: fill each row
        with kb.loop(idx.const(0), self.nrows, "r") as r:
            dst = kb.view(out, idx.mul(r, self.t["tile_stride"]))
            if loc.kind == "row":
                kb.copy_1d(cast(SSAValue, loc.buf), dst, self.t["tile_stride"])
            else:
                kb.insert(buffer.VDupOp(dst, self._row_value(loc, r), self.t["tile_stride"]))
        return Loc("tile", buf=out)

    def result_layout(self, locs: Sequence[Loc]) -> str:
        kinds = {loc.kind for loc in locs}
        if "tile" in kinds or ("row" in kinds and kinds & {"col", "mcol"}):
            return "tile"
        if "row" in kinds:
            return "row"
        if kinds & {"col", "mcol"}:
            return "col"
        return "scalar"

    # ---- emission primitives ----------------------------------------------------------

    def binary(self, kind: str, a: Loc, b: Loc) -> Loc:
        """a <kind> b for add, sub, mul, div, max, min, in the result's layout."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        layout = self.result_layout([a, b])
        if layout == "scalar":
            return Loc(
                "scalar",
                value=scalar_op(kb, kind, cast(SSAValue, a.value), cast(SSAValue, b.value)),
            )
        if layout == "col" and (a.kind == "mcol" or b.kind == "mcol"):
            a, b = (self._as_layout(x, "col") if x.kind == "mcol" else x for x in (a, b))
        out = self.pool.get(layout)
        if a.kind == layout and b.kind == layout:
            kb.binary(kind, out, cast(SSAValue, a.buf), cast(SSAValue, b.buf), self._count(layout))
            return Loc(layout, buf=out)
        if layout in ("row", "col"):
            # one side is a scalar
            this, s, swapped = (a, b, False) if a.kind == layout else (b, a, True)
            self._scalar_form(
                kind,
                out,
                cast(SSAValue, this.buf),
                cast(SSAValue, s.value),
                swapped,
                self._count(layout),
            )
            return Loc(layout, buf=out)
        # a tile with a row vector or a per-row value: one row at a time
        with kb.loop(idx.const(0), self.nrows, "r") as r:
            off = idx.mul(r, t["tile_stride"])
            dst = kb.view(out, off)
            if a.kind != "tile" and b.kind != "tile":
                # a row vector against a per-row value
                row, other, swapped = (a, b, False) if a.kind == "row" else (b, a, True)
                value = self._row_value(other, r)
                self._scalar_form(
                    kind, dst, cast(SSAValue, row.buf), value, swapped, t["tile_stride"]
                )
            elif a.kind == "row" or b.kind == "row":
                lhs = (
                    kb.view(cast(SSAValue, a.buf), off)
                    if a.kind == "tile"
                    else cast(SSAValue, a.buf)
                )
                rhs = (
                    kb.view(cast(SSAValue, b.buf), off)
                    if b.kind == "tile"
                    else cast(SSAValue, b.buf)
                )
                kb.binary(kind, dst, lhs, rhs, self.ncols)
            else:
                tile, other, swapped = (a, b, False) if a.kind == "tile" else (b, a, True)
                src = kb.view(cast(SSAValue, tile.buf), off)
                self._scalar_form(kind, dst, src, self._row_value(other, r), swapped, self.ncols)
        return Loc("tile", buf=out)

    def _scalar_form(
        self, kind: str, dst: SSAValue, x: SSAValue, s: SSAValue, swapped: bool, n: SSAValue
    ) -> None:
        """dst = x <kind> s, or s <kind> x when swapped, with the Adds/Muls/Maxs/Mins APIs."""
        kb = self.kb
        if kind in ("add", "mul", "max", "min"):
            kb.scalar(
                {"add": "adds", "mul": "muls", "max": "maxs", "min": "mins"}[kind], dst, x, s, n
            )
        elif kind == "sub" and not swapped:
            kb.scalar("adds", dst, x, kb.fneg(s), n)
        elif kind == "sub":
            kb.scalar("muls", dst, x, kb.f32(-1.0), n)
            kb.scalar("adds", dst, dst, s, n)
        elif kind == "div" and not swapped:
            kb.scalar("muls", dst, x, kb.fdiv(kb.f32(1.0), s), n)
        else:
            kb.unary("reciprocal", dst, x, n)
            kb.scalar("muls", dst, dst, s, n)

    def unary(self, kind: str, a: Loc) -> Loc:
        if a.kind == "scalar":
            raise NotImplementedError  # constant-folded before lowering (graph-fusion)
        a = self._as_layout(a, "col") if a.kind == "mcol" else a
        out = self.pool.get(a.kind)
        self.kb.unary(kind, out, cast(SSAValue, a.buf), self._count(a.kind))
        return Loc(a.kind, buf=out)

    def scale_shift(self, a: Loc, mul: float | None, add: float | None) -> Loc:
        """a * mul + add with scalar constants."""
        a = self._as_layout(a, "col") if a.kind == "mcol" else a
        out = self.pool.get(a.kind)
        src = cast(SSAValue, a.buf)
        n = self._count(a.kind)
        if mul is not None or add is None:  # with neither, a copy (x * 1)
            self.kb.scalar("muls", out, src, self.kb.f32(1.0 if mul is None else mul), n)
            src = out
        if add is not None:
            self.kb.scalar("adds", out, src, self.kb.f32(add), n)
        return Loc(a.kind, buf=out)

    def sigmoid(self, x: Loc) -> Loc:
        e = self.scale_shift(x, -1.0, None)  # -x
        self.kb.unary("exp", cast(SSAValue, e.buf), cast(SSAValue, e.buf), self._count(e.kind))
        d = self.scale_shift(e, None, 1.0)  # 1 + e^-x
        self.pool.release(e.buf)
        self.kb.unary(
            "reciprocal", cast(SSAValue, d.buf), cast(SSAValue, d.buf), self._count(d.kind)
        )
        return d

    def tanh(self, x: Loc) -> Loc:
        double = self.scale_shift(x, 2.0, None)
        s = self.sigmoid(double)
        self.pool.release(double.buf)
        out = self.scale_shift(s, 2.0, -1.0)  # 2 sigmoid(2x) - 1
        self.pool.release(s.buf)
        return out

    def erf(self, z: Loc) -> Loc:
        a = self.unary("abs", z)
        t = self.scale_shift(a, ERF_P, 1.0)
        self.kb.unary(
            "reciprocal", cast(SSAValue, t.buf), cast(SSAValue, t.buf), self._count(t.kind)
        )
        poly = self.scale_shift(t, ERF_A[4], ERF_A[3])
        for coefficient in reversed(ERF_A[:3]):
            nxt = self.binary("mul", poly, t)
            self.pool.release(poly.buf)
            poly = self.scale_shift(nxt, None, coefficient)
            self.pool.release(nxt.buf)
        poly2 = self.binary("mul", poly, t)  # (a1 t + ... + a5 t^5)
        self.pool.release(poly.buf)
        self.pool.release(t.buf)
        sq = self.binary("mul", a, a)
        e = self.scale_shift(sq, -1.0, None)
        self.pool.release(sq.buf)
        self.kb.unary("exp", cast(SSAValue, e.buf), cast(SSAValue, e.buf), self._count(e.kind))
        pe = self.binary("mul", poly2, e)
        self.pool.release(poly2.buf)
        self.pool.release(e.buf)
        magnitude = self.scale_shift(pe, -1.0, 1.0)  # erf(|z|)
        self.pool.release(pe.buf)
        # sign(z) * erf(|z|) = z * erf(|z|) / max(|z|, tiny)
        guarded = Loc(a.kind, buf=self.pool.get(a.kind))
        self.kb.scalar(
            "maxs",
            cast(SSAValue, guarded.buf),
            cast(SSAValue, a.buf),
            self.kb.f32(TINY),
            self._count(a.kind),
        )
        self.pool.release(a.buf)
        ratio = self.binary("div", z, guarded)
        self.pool.release(guarded.buf)
        out = self.binary("mul", ratio, magnitude)
        self.pool.release(ratio.buf)
        self.pool.release(magnitude.buf)
        return out

    def round_to(self, loc: Loc, element_type: Attribute) -> Loc:
        """Round a float32 location to f16/bf16 values (as storing and reloading would).

        The location is rounded in place: it is the op's fresh result.
        """
        if element_type == f32 or loc.kind == "scalar":
            return loc
        if loc.kind == "mcol":
            loc = self._as_layout(loc, "col")
        n = self._count(loc.kind)
        narrow = self._narrow_buffer(loc.kind, element_type)
        self.kb.cast(narrow, cast(SSAValue, loc.buf), n, "rint")
        self.kb.cast(cast(SSAValue, loc.buf), narrow, n, "none")
        return loc

    def _narrow_buffer(self, kind: str, element_type: Attribute) -> SSAValue:
        key = (kind, str(element_type))
        if key not in self._narrow:
            nbytes, max_bytes = self.pool.sizes[kind]  # float32 bytes, rounded up to 32
            ratio = F32 // byte_width(element_type)
            with self.kb.before(self.pool.before):
                idx = self.kb.idx
                nbytes = idx.round_up(idx.floordiv(nbytes, idx.const(ratio)), 32)
            op = buffer.AllocBufOp("veccalc", nbytes, max_bytes // ratio, element_type)
            op.results[0].name_hint = "narrow"
            Block.insert_op_before(cast(Block, self.pool.before.parent), op, self.pool.before)
            self._narrow[key] = op.results[0]
        return self._narrow[key]

    def row_reduce(self, kind: str, x: Loc) -> Loc:
        """One value per row: sum/max/min over the row's columns."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        x = self._as_layout(x, "tile") if x.kind != "tile" else x
        out = self.pool.get("col")
        with kb.loop(idx.const(0), self.nrows, "r") as r:
            src = kb.view(cast(SSAValue, x.buf), idx.mul(r, t["tile_stride"]))
            kb.insert(
                buffer.VReduceOp(
                    kind,
                    cast(SSAValue, self.red_dst),
                    src,
                    cast(SSAValue, self.red_tmp),
                    self.ncols,
                )
            )
            kb.set(out, r, kb.get(cast(SSAValue, self.red_dst), idx.const(0)))
        return Loc("col", buf=out)

    def row_mean(self, x: Loc) -> Loc:
        s = self.row_reduce("sum", x)
        inv = self.kb.fdiv(self.kb.f32(1.0), self.kb.index_to_f32(self.t["cols"]))
        self.kb.scalar(
            "muls", cast(SSAValue, s.buf), cast(SSAValue, s.buf), inv, self._count("col")
        )
        return s

    def rstd(self, mean_square: Loc, epsilon: float) -> Loc:
        """1 / sqrt(mean_square + epsilon) on a column."""
        out = self.scale_shift(mean_square, None, epsilon)
        n = self._count("col")
        self.kb.unary("rsqrt", cast(SSAValue, out.buf), cast(SSAValue, out.buf), n)
        return out


def scalar_op(kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    op: Operation = {
        "add": arith.AddfOp,
        "sub": arith.SubfOp,
        "mul": arith.MulfOp,
        "div": arith.DivfOp,
        "max": arith.MaximumfOp,
        "min": arith.MinimumfOp,
    }[kind](a, b)
    return kb.insert(op).results[0]
