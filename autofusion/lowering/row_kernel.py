"""The vector kernel template: a group of elementwise ops and row reductions as one
buffer.kernel over rows x columns tiles (see row_plan.py for the view and the budget).

Per tile: CopyIn moves the tile of every streamed input GM->UB through a double-buffered
VECIN queue; Compute widens to float32, runs the group's ops on UB, and narrows the
results into VECOUT queues; CopyOut writes them back. Ops between a tile and a row
vector or a per-row value loop over the tile's rows; reductions loop over rows too.
The arithmetic is row_vector_math.py's, each op's emitter row_ops.py's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import IndexType, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from autofusion.dialects import buffer
from autofusion.dialects import shape_inference as si
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, mapped_index
from autofusion.lowering.row_ops import OP_EMITTERS, Emitter
from autofusion.lowering.row_plan import F32, RowPlan
from autofusion.lowering.row_tiling import ROW_TILING_PARAMS
from autofusion.lowering.row_transpose import ChannelMajorIO
from autofusion.lowering.row_vector_math import Loc, Pool, RowVectorMath, widening_round
from autofusion.lowering.row_views import InputView
from autofusion.lowering.value_types import element_bytes, element_type

# (kernel, input value, its queue slot): emits the copy of the input's tile into the slot
TileCopy = Callable[["RowKernel", SSAValue, SSAValue], None]


@dataclass(frozen=True)
class HostFeeds:
    """What a host kernel gives the row kernel it embeds (RowKernel's docstring): the
    values it streams from memrefs the host names per tile (`sources`), the values
    already in UB (`preset`), and emitters that replace some ops' own (`emitters`)."""

    sources: Sequence[SSAValue] = ()
    preset: Sequence[SSAValue] = ()
    emitters: dict[Operation, Emitter] | None = None
    # inputs whose tile the host copies in itself (a rope's [S, D] table per head)
    copy_ins: dict[SSAValue, TileCopy] | None = None
    # outputs that take only the columns [start, stop) of the view, their GM rows that
    # wide (a merged QKV's q, k and v: rope_epilogue.py)
    out_columns: dict[SSAValue, tuple[int, int]] | None = None


class RowKernel(RowVectorMath):
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
        feeds: HostFeeds | None = None,
    ) -> None:
        feeds = feeds or HostFeeds()
        sources, preset, emitters = feeds.sources, feeds.preset, feeds.emitters
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
        self.copy_ins: dict[SSAValue, TileCopy] = dict(feeds.copy_ins or {})
        self.out_columns: dict[SSAValue, tuple[int, int]] = dict(feeds.out_columns or {})
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
            buffer.memref(element_type(v), "gm") for v in (*self.kernel_inputs, *plan.outputs)
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
        # a partial rope's tables: tile_rows rows of narrow_stride elements
        narrow_elems = (
            idx.mul(t["tile_rows"], idx.const(plan.narrow_stride)) if plan.narrow_stride else None
        )
        max_narrow = plan.max_table_rows * plan.narrow_stride

        def nbytes(elems: SSAValue, width: int) -> SSAValue:
            return idx.round_up(idx.mul(elems, idx.const(width)), 32)

        # channel-major values (row_transpose.py) queue runs of [C x S] blocks
        self.cm = ChannelMajorIO(self) if plan.channel_major else None

        # queues for GM traffic, sized by the runtime tile, bounded by the plan's tile
        self.in_queues: dict[SSAValue, SSAValue] = {}
        for v in self.streamed:
            if v in self.preset:
                continue
            info, w = plan.values[v], element_bytes(v)
            if info.narrow:
                q = kb.queue(
                    "vecin",
                    plan.in_depth,
                    nbytes(cast(SSAValue, narrow_elems), w),
                    max_narrow * w,
                    element_type(v),
                    f"q_in{len(self.in_queues)}",
                )
                self.in_queues[v] = q
            elif info.kind in ("full", "mapped_rows", "rowvec"):
                elems = tile_elems if info.kind != "rowvec" else t["tile_stride"]
                bound = max_tile
                if self.cm is not None and v in plan.transposed_sources:
                    elems, bound = self.cm.staged_elems, self.cm.bound
                q = kb.queue(
                    "vecin",
                    plan.in_depth,
                    nbytes(elems, w),
                    bound * w,
                    element_type(v),
                    f"q_in{len(self.in_queues)}",
                )
                self.in_queues[v] = q
            elif info.kind == "column":
                q = kb.queue(
                    "vecin",
                    plan.in_depth,
                    nbytes(col_elems, w),
                    max_col * w,
                    element_type(v),
                    f"q_in{len(self.in_queues)}",
                )
                self.in_queues[v] = q
        self.out_queues: dict[SSAValue, SSAValue] = {}
        for i, v in enumerate(plan.outputs):
            w = element_bytes(v)
            elems, bound = (
                (tile_elems, max_tile) if plan.values[v].kind == "full" else (col_elems, max_col)
            )
            if self.cm is not None and v in plan.transposed_outputs:
                elems, bound = self.cm.staged_elems, self.cm.bound
            self.out_queues[v] = kb.queue(
                "vecout", plan.out_depth, nbytes(elems, w), bound * w, element_type(v), f"q_out{i}"
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
        if narrow_elems is not None:
            self.sizes["narrow"] = (nbytes(narrow_elems, F32), max_narrow * F32)

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
            w = element_bytes(v)
            raw_bytes = -(-n * w // 32) * 32
            raw = kb.tbuf(idx.const(raw_bytes), raw_bytes, element_type(v), f"res{len(residents)}")
            wide = None
            if element_type(v) != f32:
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
                    kb.cast(wide, raw, idx.const(n), widening_round(v))
        return residents

    # ---- the three stages ---------------------------------------------------------

    def _copy_in(self) -> None:
        kb, idx, t, plan = self.kb, self.kb.idx, self.t, self.plan
        for v, q in self.in_queues.items():
            info = plan.values[v]
            slot = kb.insert(buffer.QueueAllocOp(q, element_type(v)), "slot").results[0]
            if v in self.copy_ins:
                self.copy_ins[v](self, v, slot)
            elif info.narrow:
                self._copy_table(v, slot)
            elif v in self.source_views:
                src, stride = self.source_views[v]
                kb.copy(src, slot, self.nrows, self.ncols, stride, t["tile_stride"])
            elif v in plan.views:
                self._copy_view(plan.views[v], slot)
            elif self.cm is not None and v in plan.transposed_sources:
                self.cm.copy_in(v, slot)
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
            slot = kb.insert(buffer.DequeOp(q, element_type(v)), "x").results[0]
            dequeued.append((q, slot))
            if self.cm is not None and v in plan.transposed_sources:
                self.locs[v] = self.cm.widen(v, slot)
            else:
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
        kept = {*plan.outputs, *plan.transposed_outputs.values()}  # written at the end
        for i, op in enumerate(plan.ops):
            emit = self.emitters.get(op) or OP_EMITTERS.get(type(op))
            assert emit is not None, f"no vector emitter for {op.name}"
            self.dying = frozenset(v for v in op.operands if last_use.get(v) == i and v not in kept)
            with kb.origin_of(op):
                emit(self, op)
            self.dying = frozenset()
            for v in op.operands:
                if last_use.get(v) == i and v not in kept and v in self.locs:
                    self.pool.release(self.locs[v].buf)
        self.stored: list[tuple[SSAValue, SSAValue]] = []
        for v in plan.outputs:
            with self._when_written(v):
                q = self.out_queues[v]
                slot = kb.insert(buffer.QueueAllocOp(q, element_type(v)), "y").results[0]
                if self.cm is not None and v in plan.transposed_outputs:
                    rows = self._as_layout(self.locs[plan.transposed_outputs[v]], "tile")
                    self.cm.store(v, cast(SSAValue, rows.buf), slot)
                    kb.insert(buffer.EnqueOp(q, slot))
                    continue
                kind = "tile" if plan.values[v].kind == "full" else "col"
                loc = self._as_layout(self.locs[v], kind)
                count = self._count(loc.kind)
                if element_type(v) == f32:
                    kb.copy_1d(cast(SSAValue, loc.buf), slot, count)
                else:
                    kb.cast(slot, cast(SSAValue, loc.buf), count, "rint")
                kb.insert(buffer.EnqueOp(q, slot))
        for q, held in dequeued:
            kb.insert(buffer.QueueFreeOp(q, held))

    def _column_span(self, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The first and end column of the tile that output `v` (out_columns) takes."""
        idx = self.kb.idx
        start, stop = self.out_columns[v]
        lo = idx.max(self.c0, idx.const(start))
        return lo, idx.min(idx.add(self.c0, self.ncols), idx.const(stop))

    def _when_written(self, v: SSAValue) -> contextlib.AbstractContextManager[None]:
        """Output `v`'s stores run only for tiles that hold some of its columns."""
        if v not in self.out_columns:
            return contextlib.nullcontext()
        lo, hi = self._column_span(v)
        return self.kb.when(self.kb.less(lo, hi))

    def _copy_out(self) -> None:
        kb, idx, t, plan = self.kb, self.kb.idx, self.t, self.plan
        for v in plan.outputs:
            if v in self.out_columns:
                with self._when_written(v):
                    self._copy_out_columns(v)
                continue
            q = self.out_queues[v]
            slot = kb.insert(buffer.DequeOp(q, element_type(v)), "y").results[0]
            if self.cm is not None and v in plan.transposed_outputs:
                self.cm.copy_out(v, slot)
            elif plan.values[v].kind == "full":
                dst = kb.view(self.gm[v], idx.add(self.row_base, self.c0))
                kb.copy(slot, dst, self.nrows, self.ncols, t["tile_stride"], self.row_stride)
            else:
                kb.copy_1d(slot, kb.view(self.gm[v], self.r0), self.nrows)
            kb.insert(buffer.QueueFreeOp(q, slot))

    def _copy_table(self, v: SSAValue, slot: SSAValue) -> None:
        """The tile's rows of a partial rope's [..., R] table (`ValueInfo.narrow`), R
        columns each, `narrow_stride` apart in the slot (the tile holds whole rows)."""
        kb, idx, t, plan = self.kb, self.kb.idx, self.t, self.plan
        info = plan.values[v]
        width, stride = idx.const(info.narrow), idx.const(plan.narrow_stride)
        if info.kind == "full":
            src = kb.view(self.gm[v], idx.mul(self.r0, width))
            kb.copy(src, slot, self.nrows, width, width, stride)
            return
        # each row from the table row it broadcasts from (the one row of a row vector)
        outer = [t[f"outer{d}"] for d in range(plan.split)] if info.kind != "rowvec" else []
        with kb.loop(idx.const(0), self.nrows, "r") as r:
            src = self.gm[v]
            if outer:
                row = mapped_index(kb, idx.add(self.r0, r), outer, info.outer_shape)
                src = kb.view(src, idx.mul(row, width))
            kb.copy_1d(src, kb.view(slot, idx.mul(r, stride)), width)

    def _copy_out_columns(self, v: SSAValue) -> None:
        """Write the tile's columns of output `v`, whose GM rows hold its columns only."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        start, stop = self.out_columns[v]
        q = self.out_queues[v]
        slot = kb.insert(buffer.DequeOp(q, element_type(v)), "y").results[0]
        lo, hi = self._column_span(v)
        width = idx.const(stop - start)
        dst = kb.view(self.gm[v], idx.add(idx.mul(self.r0, width), idx.sub(lo, idx.const(start))))
        src = kb.view(slot, idx.sub(lo, self.c0))
        kb.copy(src, dst, self.nrows, idx.sub(hi, lo), t["tile_stride"], width)
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


# ---- per-op emitters -------------------------------------------------------------------
