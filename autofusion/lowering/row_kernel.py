"""The vector kernel template: a group of elementwise ops and row reductions as one
buffer.kernel over rows x columns tiles (see row_plan.py for the view and the budget).

Per tile: CopyIn moves the tile of every streamed input GM->UB through a double-buffered
VECIN queue; Compute widens to float32, runs the group's ops on UB, and narrows the
results into VECOUT queues; CopyOut writes them back. Ops between a tile and a row
vector or a per-row value loop over the tile's rows; reductions loop over rows too.
Functions without an Ascend C basic API are built from basic ones: sigmoid from Exp and
Reciprocal, tanh from sigmoid, erf with Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from autofusion import dtypes
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, mapped_index
from autofusion.lowering.row_plan import F32, InputView, RowPlan
from autofusion.lowering.row_tiling import ROW_TILING_PARAMS

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - (a1 t + ... + a5 t^5) e^{-z^2}, t = 1/(1 + p z)
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
TINY = 1e-30


@dataclass
class Loc:
    """Where a value lives during Compute: a float32 UB buffer in some layout, or a scalar.

    tile: rows x tile_stride; row: one row (columns); col: one value per row;
    mcol: a resident per-row operand read through a row map; scalar: an f32 SSA value.
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
        default_factory=lambda: {"tile": [], "row": [], "col": []}
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


def _elt(v: SSAValue) -> Attribute:
    return cast(TensorType, v.type).element_type


def _width(v: SSAValue) -> int:
    return dtypes.byte_width(_elt(v))


class RowKernel:
    """Emits one vector kernel for a planned group, or the vector part of another kernel.

    Standalone (`build`), it owns the kernel: the tile loop over rows x columns tiles and
    the three stages per tile. Embedded (`attach`, then `emit_tile` inside the host
    kernel's loops), it emits the stages of one tile whose place the host kernel decides:
    the cube templates run their epilogues this way on the [rows x N] view of a cube
    op's output. There some values come from the host kernel instead of GM inputs:

    * `sources`: streamed through a VECIN queue like a full input, but copied from a
      memref the host kernel gives per tile (`source_views`: L0C on coupled chips, a GM
      workspace on split chips);
    * `preset`: already in UB as a float32 tile (`preset_locs`, set per tile);

    and `emitters` replace the per-op emitter of some ops (a cube root's bias, scaling and
    activation applied to its raw product).
    """

    def __init__(
        self,
        plan: RowPlan,
        name: str,
        chip_name: str,
        cores: int,
        *,
        sources: Sequence[SSAValue] = (),
        preset: Sequence[SSAValue] = (),
        emitters: dict[Operation, Emitter] | None = None,
    ) -> None:
        self.plan = plan
        self.name = name
        self.chip_name = chip_name
        self.cores = cores
        self.locs: dict[SSAValue, Loc] = {}
        self._narrow: dict[tuple[str, str], SSAValue] = {}
        # group inputs that are splat constants become scalars, not kernel arguments
        self.kernel_inputs = plan.gm_inputs
        # the values streamed through VECIN queues: inputs, and views of inputs
        self.streamed = [v for v in plan.inputs if plan.values[v].constant is None]
        self.sources = list(sources)
        self.preset = list(preset)
        self.emitters: dict[Operation, Emitter] = dict(emitters or {})
        self.source_views: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}
        self.preset_locs: dict[SSAValue, Loc] = {}

    @property
    def gm_inputs(self) -> list[SSAValue]:
        """The kernel inputs read from GM (not provided by a host kernel)."""
        external = {*self.sources, *self.preset}
        return [v for v in self.kernel_inputs if v not in external]

    # ---- the kernel -------------------------------------------------------------

    def needs_outer_dims(self) -> bool:
        return any(i.kind in ("mapped_rows", "mapped_column") for i in self.plan.values.values())

    def tiling_names(self) -> list[str]:
        names = list(ROW_TILING_PARAMS)
        if self.needs_outer_dims():
            names += [f"outer{d}" for d in range(self.plan.split)]
        return names

    def build(self) -> buffer.KernelOp:
        plan = self.plan
        arg_types: list[Attribute] = [
            buffer.memref(_elt(v), "gm") for v in (*self.kernel_inputs, *plan.outputs)
        ]
        names = self.tiling_names()
        arg_types += [IndexType()] * len(names)
        entry = Block(arg_types=arg_types)
        n_gm = len(self.kernel_inputs) + len(plan.outputs)
        for i, arg in enumerate(entry.args):
            arg.name_hint = (
                f"in{i}"
                if i < len(self.kernel_inputs)
                else (f"out{i - len(self.kernel_inputs)}" if i < n_gm else names[i - n_gm])
            )
        self.gm = dict[SSAValue, SSAValue](
            zip((*self.kernel_inputs, *plan.outputs), entry.args[:n_gm])
        )
        self.t = dict[str, SSAValue](zip(names, entry.args[n_gm:]))
        kb = KernelBuilder(entry)
        self.kb = kb
        self._body()
        kb.insert(buffer.ReturnOp())
        kb.finish()
        return buffer.KernelOp(
            self.name,
            arg_types,
            Region(entry),
            self.chip_name,
            "rows",
            "aiv",
            len(self.kernel_inputs),
            len(plan.outputs),
        )

    def _body(self) -> None:
        kb, idx, t = self.kb, self.kb.idx, self.t
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["tiles"])
        self._setup()
        with kb.loop(first, last, "tile") as tile:
            self.pool = Pool(self._loop_op(), self.sizes)
            ri = idx.floordiv(tile, t["col_tiles"])
            ci = idx.rem(tile, t["col_tiles"])
            r0 = idx.mul(ri, t["tile_rows"])
            c0 = idx.mul(ci, t["tile_cols"])
            nrows = idx.min(t["tile_rows"], idx.sub(t["rows"], r0))
            ncols = idx.min(t["tile_cols"], idx.sub(t["cols"], c0))
            self.emit_tile(r0, c0, nrows, ncols)

    # ---- embedding into another kernel ----------------------------------------------

    def attach(
        self, kb: KernelBuilder, gm: dict[SSAValue, SSAValue], t: dict[str, SSAValue]
    ) -> None:
        """Emit into a host kernel at kb's insertion point: allocate the queues and load
        the residents. `gm` maps the plan's GM inputs and outputs to memrefs; `t` holds
        `tile_rows` (the largest tile's rows), `tile_stride` (UB row stride, elements),
        `cols` (GM row stride of full values) and `outer<d>` for mapped operands."""
        self.kb = kb
        self.gm = dict(gm)
        self.t = dict(t)
        self._setup(staged=True)

    def start_pool(self, before: Operation) -> None:
        """Working buffers are allocated before `before` (the host kernel's outer loop)."""
        self.pool = Pool(before, self.sizes)

    def emit_tile(
        self,
        r0: SSAValue,
        c0: SSAValue,
        nrows: SSAValue,
        ncols: SSAValue,
        row_base: SSAValue | None = None,
        row_stride: SSAValue | None = None,
    ) -> None:
        """The three stages for the tile of view rows r0.. (nrows) and columns c0..
        (ncols). Full values are at GM element `row_base + c0` with rows `row_stride`
        apart (default: r0 * cols and cols, the contiguous view)."""
        idx, t = self.kb.idx, self.t
        self.r0, self.c0, self.nrows, self.ncols = r0, c0, nrows, ncols
        for v, hint in ((nrows, "nrows"), (ncols, "ncols")):
            if v.name_hint is None and IrOps.constant_value(v) is None:
                v.name_hint = hint
        self.row_base = row_base if row_base is not None else idx.mul(r0, t["cols"])
        self.row_stride = row_stride if row_stride is not None else t["cols"]
        kb = self.kb
        with kb.stage("copy_in"):
            self._copy_in()
        with kb.stage("compute"):
            self._compute()
        with kb.stage("copy_out"):
            self._copy_out()

    def _setup(self, staged: bool = False) -> None:
        """Queues, residents and scratch buffers. `staged`: the residents load in a
        stage of their own (a host cube kernel's vector side: on split chips only the
        AIVs run it)."""
        kb, idx, t, plan = self.kb, self.kb.idx, self.t, self.plan
        tile_elems = idx.mul(t["tile_rows"], t["tile_stride"])
        col_elems = idx.round_up(t["tile_rows"], 8)
        max_tile = plan.max_tile_elems
        max_col = -(-max_tile // plan.align_elems // 8) * 8

        def nbytes(elems: SSAValue, width: int) -> SSAValue:
            return idx.round_up(idx.mul(elems, idx.const(width)), 32)

        # queues for GM traffic, sized by the runtime tile, bounded by the plan's tile
        self.in_queues: dict[SSAValue, SSAValue] = {}
        for v in self.streamed:
            if v in self.preset:
                continue
            info, w = plan.values[v], _width(v)
            if info.kind in ("full", "mapped_rows", "rowvec"):
                elems = tile_elems if info.kind != "rowvec" else t["tile_stride"]
                q = kb.queue(
                    "vecin",
                    plan.in_depth,
                    nbytes(elems, w),
                    max_tile * w,
                    _elt(v),
                    f"q_in{len(self.in_queues)}",
                )
                self.in_queues[v] = q
            elif info.kind == "column":
                q = kb.queue(
                    "vecin",
                    plan.in_depth,
                    nbytes(col_elems, w),
                    max_col * w,
                    _elt(v),
                    f"q_in{len(self.in_queues)}",
                )
                self.in_queues[v] = q
        self.out_queues: dict[SSAValue, SSAValue] = {}
        for i, v in enumerate(plan.outputs):
            w = _width(v)
            elems, bound = (
                (tile_elems, max_tile) if plan.values[v].kind == "full" else (col_elems, max_col)
            )
            self.out_queues[v] = kb.queue(
                "vecout", plan.out_depth, nbytes(elems, w), bound * w, _elt(v), f"q_out{i}"
            )
        self.residents = self._load_residents(staged)
        self.red_dst = kb.tbuf(idx.const(32), 32, f32, "red_dst") if plan.has_reduction else None
        self.red_tmp = (
            kb.tbuf(nbytes(t["tile_stride"], F32), max_tile * F32, f32, "red_tmp")
            if plan.has_reduction
            else None
        )
        self.sizes = {
            "tile": (nbytes(tile_elems, F32), max_tile * F32),
            "row": (nbytes(t["tile_stride"], F32), max_tile * F32),
            "col": (nbytes(col_elems, F32), max_col * F32),
        }

    def _loop_op(self) -> Operation:
        """The tile loop: working buffers are allocated right before it."""
        op = self.kb.entry.last_op
        assert op is not None
        return op

    # ---- residents: per-row operands kept whole in UB, runtime scalars -------------

    def _load_residents(self, staged: bool = False) -> dict[SSAValue, SSAValue]:
        kb, idx, plan = self.kb, self.kb.idx, self.plan
        residents: dict[SSAValue, SSAValue] = {}
        loads: list[tuple[SSAValue, SSAValue, SSAValue | None, int]] = []
        for v in self.gm_inputs:
            info = plan.values.get(v)  # None: an input read only through views
            if info is None or info.kind not in ("mapped_column", "scalar"):
                continue
            n = si.num_elements(info.outer_shape) if info.kind == "mapped_column" else 1
            assert n is not None
            w = _width(v)
            raw_bytes = -(-n * w // 32) * 32
            raw = kb.tbuf(idx.const(raw_bytes), raw_bytes, _elt(v), f"res{len(residents)}")
            wide = None
            if _elt(v) != f32:
                wide_bytes = -(-n * F32 // 32) * 32
                wide = kb.tbuf(idx.const(wide_bytes), wide_bytes, f32, f"res{len(residents)}_f32")
            residents[v] = wide if wide is not None else raw
            loads.append((v, raw, wide, n))
        if not loads:
            return residents
        stage = kb.stage("copy_in") if staged else contextlib.nullcontext()
        with stage:
            for v, raw, wide, n in loads:
                kb.copy_1d(self.gm[v], raw, idx.const(n))
                if wide is not None:
                    kb.cast(wide, raw, idx.const(n), "none")
        return residents

    # ---- the three stages ---------------------------------------------------------

    def _copy_in(self) -> None:
        kb, idx, t, plan = self.kb, self.kb.idx, self.t, self.plan
        for v, q in self.in_queues.items():
            info = plan.values[v]
            slot = kb.insert(buffer.QueueAllocOp(q, _elt(v)), "slot").results[0]
            if v in self.source_views:
                src, stride = self.source_views[v]
                kb.copy(src, slot, self.nrows, self.ncols, stride, t["tile_stride"])
            elif v in plan.views:
                self._copy_view(plan.views[v], slot)
            elif info.kind == "full":
                src = kb.view(self.gm[v], idx.add(self.row_base, self.c0))
                kb.copy(src, slot, self.nrows, self.ncols, self.row_stride, t["tile_stride"])
            elif info.kind == "rowvec":
                kb.copy_1d(kb.view(self.gm[v], self.c0), slot, self.ncols)
            elif info.kind == "column":
                kb.copy_1d(kb.view(self.gm[v], self.r0), slot, self.nrows)
            else:  # mapped rows: each row from its own source row
                outer = [t[f"outer{d}"] for d in range(plan.split)]
                with kb.loop(idx.const(0), self.nrows, "r") as r:
                    row = mapped_index(kb, idx.add(self.r0, r), outer, info.outer_shape)
                    src = kb.view(self.gm[v], idx.add(idx.mul(row, t["cols"]), self.c0))
                    dst = kb.view(slot, idx.mul(r, t["tile_stride"]))
                    kb.copy_1d(src, dst, self.ncols)
            kb.insert(buffer.EnqueOp(q, slot))

    def _compute(self) -> None:
        kb, plan = self.kb, self.plan
        dequeued: list[tuple[SSAValue, SSAValue]] = []
        for v, q in self.in_queues.items():
            slot = kb.insert(buffer.DequeOp(q, _elt(v)), "x").results[0]
            dequeued.append((q, slot))
            self.locs[v] = self._widen(v, slot)
        for v in plan.inputs:
            info = plan.values[v]
            if v in self.preset_locs:
                self.locs[v] = self.preset_locs[v]
                continue
            if v in self.locs:
                continue
            if info.constant is not None:
                self.locs[v] = Loc("scalar", value=kb.f32(info.constant))
            elif info.kind == "scalar":
                self.locs[v] = Loc("scalar", value=kb.get(self.residents[v], kb.idx.const(0)))
            elif info.kind == "mapped_column":
                self.locs[v] = Loc("mcol", buf=self.residents[v], operand_outer=info.outer_shape)
        last_use = self._last_uses()
        for i, op in enumerate(plan.ops):
            emit = self.emitters.get(op) or _EMITTERS.get(type(op))
            assert emit is not None, f"no vector emitter for {op.name}"
            with kb.origin_of(op):
                emit(self, op)
            for v in op.operands:
                if last_use.get(v) == i and v not in plan.outputs and v in self.locs:
                    self.pool.release(self.locs[v].buf)
        self.stored: list[tuple[SSAValue, SSAValue]] = []
        for v in plan.outputs:
            q = self.out_queues[v]
            slot = kb.insert(buffer.QueueAllocOp(q, _elt(v)), "y").results[0]
            loc = self._as_layout(self.locs[v], "tile" if plan.values[v].kind == "full" else "col")
            count = self._count(loc.kind)
            if _elt(v) == f32:
                kb.copy_1d(cast(SSAValue, loc.buf), slot, count)
            else:
                kb.cast(slot, cast(SSAValue, loc.buf), count, "rint")
            kb.insert(buffer.EnqueOp(q, slot))
        for q, held in dequeued:
            kb.insert(buffer.QueueFreeOp(q, held))

    def _copy_out(self) -> None:
        kb, idx, t, plan = self.kb, self.kb.idx, self.t, self.plan
        for v in plan.outputs:
            q = self.out_queues[v]
            slot = kb.insert(buffer.DequeOp(q, _elt(v)), "y").results[0]
            if plan.values[v].kind == "full":
                dst = kb.view(self.gm[v], idx.add(self.row_base, self.c0))
                kb.copy(slot, dst, self.nrows, self.ncols, t["tile_stride"], self.row_stride)
            else:
                kb.copy_1d(slot, kb.view(self.gm[v], self.r0), self.nrows)
            kb.insert(buffer.QueueFreeOp(q, slot))

    def _copy_view(self, view: InputView, slot: SSAValue) -> None:
        """The tile of a strided input view (row_plan.InputView): one strided copy, or
        one per run of rows that share the run stride."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        gm = self.gm[view.source]
        c = idx.const
        if view.run == 0:
            start = idx.add(c(view.offset), idx.add(idx.mul(self.r0, c(view.row_stride)), self.c0))
            kb.copy(
                kb.view(gm, start),
                slot,
                self.nrows,
                self.ncols,
                c(view.row_stride),
                t["tile_stride"],
            )
            return
        run = c(view.run)
        first = idx.floordiv(self.r0, run)
        end = idx.add(idx.floordiv(idx.sub(idx.add(self.r0, self.nrows), c(1)), run), c(1))
        with kb.loop(first, end, "run") as h:
            lo = idx.max(self.r0, idx.mul(h, run))
            hi = idx.min(idx.add(self.r0, self.nrows), idx.mul(idx.add(h, c(1)), run))
            within = idx.sub(lo, idx.mul(h, run))
            start = idx.add(
                idx.add(c(view.offset), idx.mul(h, c(view.run_stride))),
                idx.add(idx.mul(within, c(view.row_stride)), self.c0),
            )
            dst = kb.view(slot, idx.mul(idx.sub(lo, self.r0), t["tile_stride"]))
            kb.copy(
                kb.view(gm, start),
                dst,
                idx.sub(hi, lo),
                self.ncols,
                c(view.row_stride),
                t["tile_stride"],
            )

    # ---- helpers --------------------------------------------------------------------

    def _last_uses(self) -> dict[SSAValue, int]:
        last: dict[SSAValue, int] = {}
        for i, op in enumerate(self.plan.ops):
            for v in op.operands:
                last[v] = i
        return last

    def _widen(self, v: SSAValue, slot: SSAValue) -> Loc:
        """A dequeued input as a float32 location (cast unless it is float32 already)."""
        kind = {"full": "tile", "mapped_rows": "tile", "rowvec": "row", "column": "col"}[
            self.plan.values[v].kind
        ]
        if _elt(v) == f32:
            return Loc(kind, buf=slot)
        buf = self.pool.get(kind)
        self.kb.cast(buf, slot, self._count(kind), "none")
        return Loc(kind, buf=buf)

    def _count(self, kind: str) -> SSAValue:
        """Elements a whole-buffer vector op covers in this layout (padding included)."""
        idx, t = self.kb.idx, self.t
        if kind == "tile":
            return idx.mul(self.nrows, t["tile_stride"])
        if kind == "row":
            return t["tile_stride"]
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
                value=_scalar_op(kb, kind, cast(SSAValue, a.value), cast(SSAValue, b.value)),
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
            nbytes, max_bytes = self.pool.sizes[kind]
            op = buffer.AllocBufOp("veccalc", nbytes, max_bytes, element_type)
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


def _scalar_op(kb: KernelBuilder, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    op: Operation = {
        "add": arith.AddfOp,
        "sub": arith.SubfOp,
        "mul": arith.MulfOp,
        "div": arith.DivfOp,
        "max": arith.MaximumfOp,
        "min": arith.MinimumfOp,
    }[kind](a, b)
    return kb.insert(op).results[0]


# ---- per-op emitters -------------------------------------------------------------------

Emitter = Callable[[RowKernel, Operation], None]


def _set(k: RowKernel, op: Operation, loc: Loc, index: int = 0) -> None:
    """Bind op's result to `loc`, rounded to the result's element type (f16/bf16 ops)."""
    k.locs[op.results[index]] = k.round_to(loc, _elt(op.results[index]))


def _binary(kind: str) -> Emitter:
    def emit(k: RowKernel, op: Operation) -> None:
        _set(k, op, k.binary(kind, k.locs[op.operands[0]], k.locs[op.operands[1]]))

    return emit


def _unary(kind: str) -> Emitter:
    def emit(k: RowKernel, op: Operation) -> None:
        _set(k, op, k.unary(kind, k.locs[op.operands[0]]))

    return emit


def _neg(k: RowKernel, op: Operation) -> None:
    _set(k, op, k.scale_shift(k.locs[op.operands[0]], -1.0, None))


def clip_loc(k: RowKernel, x: Loc, lo: float | None, hi: float | None) -> Loc:
    """max(min(x, hi), lo) into a fresh buffer (Maxs, Mins)."""
    out = x
    for kind, bound in (("maxs", lo), ("mins", hi)):
        if bound is not None:
            nxt = k.pool.get(out.kind)
            k.kb.scalar(kind, nxt, cast(SSAValue, out.buf), k.kb.f32(bound), k._count(out.kind))
            if out is not x:
                k.pool.release(out.buf)
            out = Loc(out.kind, buf=nxt)
    return out if out is not x else k.scale_shift(x, None, None)


def _clip(k: RowKernel, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    _set(k, op, clip_loc(k, k.locs[op.operands[0]], p.opt_real("min"), p.opt_real("max")))


def _pow(k: RowKernel, op: Operation) -> None:
    from autofusion.passes.matching import splat_value

    e = splat_value(op.operands[1])
    x = k.locs[op.operands[0]]
    if e == 2.0:
        out = k.binary("mul", x, x)
    elif e == 3.0:
        sq = k.binary("mul", x, x)
        out = k.binary("mul", sq, x)
        k.pool.release(sq.buf)
    elif e == 0.5:
        out = k.unary("sqrt", x)
    elif e == -0.5:
        out = k.unary("rsqrt", x)
    elif e == -1.0:
        out = k.unary("reciprocal", x)
    else:
        out = k.scale_shift(x, None, None)
    _set(k, op, out)


def _sigmoid(k: RowKernel, op: Operation) -> None:
    _set(k, op, k.sigmoid(k.locs[op.operands[0]]))


def _tanh(k: RowKernel, op: Operation) -> None:
    _set(k, op, k.tanh(k.locs[op.operands[0]]))


def _erf(k: RowKernel, op: Operation) -> None:
    _set(k, op, k.erf(k.locs[op.operands[0]]))


def silu_loc(k: RowKernel, x: Loc) -> Loc:
    s = k.sigmoid(x)
    out = k.binary("mul", x, s)
    k.pool.release(s.buf)
    return out


def _silu(k: RowKernel, op: Operation) -> None:
    _set(k, op, silu_loc(k, k.locs[op.operands[0]]))


def _swiglu(k: RowKernel, op: Operation) -> None:
    gate, up = k.locs[op.operands[0]], k.locs[op.operands[1]]
    s = k.sigmoid(gate)
    g = k.binary("mul", gate, s)
    k.pool.release(s.buf)
    _set(k, op, k.binary("mul", g, up))
    k.pool.release(g.buf)


def _gelu(k: RowKernel, op: Operation) -> None:
    tanh = graph.Props(op.properties, op.name).text("approximate") == "tanh"
    _set(k, op, gelu_loc(k, k.locs[op.operands[0]], tanh))


def gelu_loc(k: RowKernel, x: Loc, tanh: bool) -> Loc:
    """GELU, exact (erf) or with the tanh approximation, into a fresh buffer."""
    if tanh:
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        sq = k.binary("mul", x, x)
        cube = k.binary("mul", sq, x)
        k.pool.release(sq.buf)
        inner = k.scale_shift(cube, 0.044715, None)
        k.pool.release(cube.buf)
        s = k.binary("add", inner, x)
        k.pool.release(inner.buf)
        scaled = k.scale_shift(s, math.sqrt(2 / math.pi), None)
        k.pool.release(s.buf)
        th = k.tanh(scaled)
        k.pool.release(scaled.buf)
    else:
        # 0.5 x (1 + erf(x / sqrt 2))
        z = k.scale_shift(x, 1 / math.sqrt(2), None)
        th = k.erf(z)
        k.pool.release(z.buf)
    half = k.scale_shift(th, 0.5, 0.5)
    k.pool.release(th.buf)
    out = k.binary("mul", x, half)
    k.pool.release(half.buf)
    return out


def activation_loc(
    k: RowKernel, act: str, x: Loc, lo: float | None = None, hi: float | None = None
) -> Loc:
    """A cube op's activation epilogue (graph.ACTIVATIONS) on a float32 location."""
    if act == "relu":
        return k.unary("relu", x)
    if act == "clip":
        return clip_loc(k, x, lo, hi)
    if act in ("gelu", "gelu_tanh"):
        return gelu_loc(k, x, act == "gelu_tanh")
    if act == "silu":
        return silu_loc(k, x)
    if act == "sigmoid":
        return k.sigmoid(x)
    raise ValueError(f"unknown activation {act!r}")


def _cast(k: RowKernel, op: Operation) -> None:
    # values are float32 in UB: casting is rounding to the target type
    _set(k, op, k.scale_shift(k.locs[op.operands[0]], None, None))


def _rope(k: RowKernel, op: Operation) -> None:
    kb, idx, t = k.kb, k.kb.idx, k.t
    x, cos, sin = (k.locs[v] for v in op.operands)
    x = k._as_layout(x, "tile")
    half = idx.floordiv(t["cols"], idx.const(2))
    rot = k.pool.get("tile")
    xb = cast(SSAValue, x.buf)
    # rotate(x) = concat(-x2, x1), row by row
    kb.copy(kb.view(xb, half), rot, k.nrows, half, t["tile_stride"], t["tile_stride"])
    kb.copy(xb, kb.view(rot, half), k.nrows, half, t["tile_stride"], t["tile_stride"])
    with kb.loop(idx.const(0), k.nrows, "r") as r:
        row = kb.view(rot, idx.mul(r, t["tile_stride"]))
        kb.scalar("muls", row, row, kb.f32(-1.0), half)
    a = k.binary("mul", x, cos)
    b = k.binary("mul", Loc("tile", buf=rot), sin)
    k.pool.release(rot)
    _set(k, op, k.binary("add", a, b))
    k.pool.release(a.buf)
    k.pool.release(b.buf)


def _reduce(kind: str) -> Emitter:
    def emit(k: RowKernel, op: Operation) -> None:
        x = k.locs[op.operands[0]]
        _set(k, op, k.row_mean(x) if kind == "mean" else k.row_reduce(kind, x))

    return emit


def _softmax(k: RowKernel, op: Operation) -> None:
    x = k.locs[op.operands[0]]
    m = k.row_reduce("max", x)
    shifted = k.binary("sub", x, m)
    k.pool.release(m.buf)
    k.kb.unary("exp", cast(SSAValue, shifted.buf), cast(SSAValue, shifted.buf), k._count("tile"))
    s = k.row_reduce("sum", shifted)
    _set(k, op, k.binary("div", shifted, s))
    k.pool.release(shifted.buf)
    k.pool.release(s.buf)


def _norm(k: RowKernel, x: Loc, epsilon: float, center: bool) -> tuple[Loc, Loc | None, Loc]:
    """(normalized, mean or None, rstd) of a tile, row by row."""
    mean = None
    if center:
        mean = k.row_mean(x)
        d = k.binary("sub", x, mean)
    else:
        d = x
    sq = k.binary("mul", d, d)
    ms = k.row_mean(sq)
    k.pool.release(sq.buf)
    rstd = k.rstd(ms, epsilon)
    normalized = k.binary("mul", d, rstd)
    if center:
        k.pool.release(d.buf)
    return normalized, mean, rstd


def _affine(k: RowKernel, y: Loc, scale: SSAValue, bias: SSAValue | None) -> Loc:
    out = k.binary("mul", y, k.locs[scale])
    k.pool.release(y.buf)
    if bias is not None:
        shifted = k.binary("add", out, k.locs[bias])
        k.pool.release(out.buf)
        out = shifted
    return out


def _layer_norm(k: RowKernel, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    y, mean, rstd = _norm(k, k.locs[op.operands[0]], p.real("epsilon"), center=True)
    k.pool.release(cast(Loc, mean).buf)
    k.pool.release(rstd.buf)
    _set(k, op, _affine(k, y, op.operands[1], op.operands[2] if len(op.operands) == 3 else None))


def _rms_norm(k: RowKernel, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    y, _, rstd = _norm(k, k.locs[op.operands[0]], p.real("epsilon"), center=False)
    k.pool.release(rstd.buf)
    _set(k, op, _affine(k, y, op.operands[1], None))


def _add_norm(center: bool) -> Emitter:
    def emit(k: RowKernel, op: Operation) -> None:
        p = graph.Props(op.properties, op.name)
        total = k.round_to(
            k.binary("add", k.locs[op.operands[0]], k.locs[op.operands[1]]), _elt(op.results[1])
        )
        y, mean, rstd = _norm(k, total, p.real("epsilon"), center)
        if mean is not None:
            k.pool.release(mean.buf)
        k.pool.release(rstd.buf)
        bias = op.operands[3] if len(op.operands) == 4 else None
        _set(k, op, _affine(k, y, op.operands[2], bias), 0)
        k.locs[op.results[1]] = total

    return emit


def _layer_norm_stats(k: RowKernel, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    x = k.locs[op.operands[0]]
    mean = k.row_mean(x)
    d = k.binary("sub", x, mean)
    sq = k.binary("mul", d, d)
    k.pool.release(d.buf)
    ms = k.row_mean(sq)
    k.pool.release(sq.buf)
    _set(k, op, mean, 0)
    _set(k, op, k.rstd(ms, p.real("epsilon")), 1)
    k.pool.release(ms.buf)


def _rms_norm_stats(k: RowKernel, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    x = k.locs[op.operands[0]]
    sq = k.binary("mul", x, x)
    ms = k.row_mean(sq)
    k.pool.release(sq.buf)
    _set(k, op, k.rstd(ms, p.real("epsilon")))
    k.pool.release(ms.buf)


def _layer_norm_apply(k: RowKernel, op: Operation) -> None:
    x, mean, rstd = (k.locs[v] for v in op.operands[:3])
    d = k.binary("sub", x, mean)
    y = k.binary("mul", d, rstd)
    k.pool.release(d.buf)
    _set(k, op, _affine(k, y, op.operands[3], op.operands[4] if len(op.operands) == 5 else None))


def _rms_norm_apply(k: RowKernel, op: Operation) -> None:
    x, rstd = k.locs[op.operands[0]], k.locs[op.operands[1]]
    _set(k, op, _affine(k, k.binary("mul", x, rstd), op.operands[2], None))


_EMITTERS: dict[type[Operation], Emitter] = {
    graph.AddOp: _binary("add"),
    graph.SubOp: _binary("sub"),
    graph.MulOp: _binary("mul"),
    graph.DivOp: _binary("div"),
    graph.MaxOp: _binary("max"),
    graph.MinOp: _binary("min"),
    graph.PowOp: _pow,
    graph.NegOp: _neg,
    graph.AbsOp: _unary("abs"),
    graph.ExpOp: _unary("exp"),
    graph.LogOp: _unary("ln"),
    graph.SqrtOp: _unary("sqrt"),
    graph.RsqrtOp: _unary("rsqrt"),
    graph.ReciprocalOp: _unary("reciprocal"),
    graph.ReluOp: _unary("relu"),
    graph.ClipOp: _clip,
    graph.SigmoidOp: _sigmoid,
    graph.TanhOp: _tanh,
    graph.ErfOp: _erf,
    graph.GeluOp: _gelu,
    graph.SiluOp: _silu,
    graph.SwigluOp: _swiglu,
    graph.CastOp: _cast,
    graph.RopeOp: _rope,
    graph.ReduceSumOp: _reduce("sum"),
    graph.ReduceMeanOp: _reduce("mean"),
    graph.ReduceMaxOp: _reduce("max"),
    graph.ReduceMinOp: _reduce("min"),
    graph.GlobalAvgPoolOp: _reduce("mean"),
    graph.SoftmaxOp: _softmax,
    graph.LayerNormOp: _layer_norm,
    graph.RmsNormOp: _rms_norm,
    graph.AddLayerNormOp: _add_norm(center=True),
    graph.AddRmsNormOp: _add_norm(center=False),
    graph.LayerNormStatsOp: _layer_norm_stats,
    graph.RmsNormStatsOp: _rms_norm_stats,
    graph.LayerNormApplyOp: _layer_norm_apply,
    graph.RmsNormApplyOp: _rms_norm_apply,
}
