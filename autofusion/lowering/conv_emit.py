"""The conv kernel's IR: the buffer.kernel of a ConvPlan (implicit GEMM, the explicit or
local im2col and the epilogue; conv_kernel.py's docstring).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, f32, i32
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.conv_plan import ConvPlan
from autofusion.lowering.conv_tiling import COL_FREE, COL_READY, COL_SLOTS, PARAMS
from autofusion.lowering.cube_common import (
    FRACTAL,
    CubeKernel,
    L0Feed,
    TileTurn,
    aivs_per_tile,
    alloc_co2_stage,
    copy_l0c_rows_to_co2,
    fill_queue_slot,
    free_queue_slot,
    mmad_k_step,
    signal_slot_read,
    signal_tile_written,
    sub_block_chunk_loop,
    wait_slot_read,
    wait_tile_written,
)
from autofusion.lowering.cube_epilogue import (
    activation_of,
    build_fitting_ub,
    co2_stage_bytes,
    root_emitter,
)
from autofusion.lowering.row_kernel import HostFeeds, RowKernel


@dataclass
class TileAt:
    """Index values of one output tile (ConvKernel._coords)."""

    n: SSAValue  # image
    chan: SSAValue  # its group's first input channel, over all images
    co0: SSAValue  # first output channel
    view_row: SSAValue  # first row of the epilogue's [N*Cout x OH*OW] view
    m0: SSAValue
    p0: SSAValue  # first output pixel
    nrows: SSAValue
    ncols: SSAValue
    a_row: SSAValue  # first staged input row
    h_rows: SSAValue  # staged input rows


class ConvKernel(CubeKernel):
    """Builds the buffer.kernel of a ConvPlan."""

    template = "conv"

    def __init__(self, plan: ConvPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        self.row: RowKernel | None = None
        gm_inputs: list[SSAValue] = []
        if plan.rows is not None:
            assert plan.raw is not None
            self.row = RowKernel(
                plan.rows,
                name,
                chip.name,
                chip.cube_cores,
                HostFeeds(
                    sources=[plan.raw],
                    emitters={
                        plan.root: root_emitter(
                            plan.raw, plan.bias_rows, 1.0, 1.0, activation_of(plan.root)
                        )
                    },
                ),
            )
            for v in self.row.gm_inputs:
                gm_inputs.append(plan.bias if v is plan.bias_rows and plan.bias else v)
        inputs = [plan.x, plan.weight, *gm_inputs]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return list(self.p.parts.outputs)

    def params(self) -> Sequence[str]:
        return PARAMS

    def core_type(self) -> str:
        return "aic" if self.p.direct and not self.p.explicit else "mix"

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        if p.bias_rows is not None and p.bias is not None:
            self.gm[p.bias_rows] = self.gm[p.bias]  # the epilogue's bias is the conv's
        g, tiles, w, in_elt = p.geometry, p.tiles, byte_width(p.in_elt), p.in_elt
        c = idx.const
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["tiles"])
        self.bid, self.first, self.last = bid, first, last
        ws = None
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], p.ws_elt), "ws").results[0]
        self.ws_col: SSAValue | None = None
        if p.explicit:
            self.ws_col = kb.insert(
                buffer.WorkspaceOp(t["ws_col_bytes"], in_elt), "ws_col"
            ).results[0]
        kst = tiles.kst(g)
        b1_elems = tiles.b1_elems(g)
        qa1 = kb.queue("a1", 2, c(tiles.tm * kst * w), tiles.tm * kst * w, in_elt, "q_a1")
        qb1 = kb.queue("b1", 2, c(b1_elems * w), b1_elems * w, in_elt, "q_b1")
        qa2 = kb.queue(
            "a2",
            2,
            idx.mul(idx.mul(t["tm"], t["tk"]), c(w)),
            tiles.tm * tiles.tk * w,
            in_elt,
            "q_a2",
        )
        qb2 = kb.queue(
            "b2",
            2,
            idx.mul(idx.mul(t["tk"], t["tn"]), c(w)),
            tiles.tk * tiles.tn * w,
            in_elt,
            "q_b2",
        )
        tm_tn = idx.mul(t["tm"], t["tn"])
        qc = kb.queue(
            "co1", tiles.c_depth, idx.mul(tm_tn, c(4)), tiles.tm * tiles.tn * 4, f32, "q_c"
        )
        if p.explicit:
            self._im2col_buffers()
        if p.local:
            self._local_buffers()
        row = self.row
        self.c_ub: SSAValue | None = None
        if row is not None and p.l0c_to_ub:
            nbytes = idx.mul(idx.mul(t["er"], t["tn"]), c(4))
            self.c_ub = alloc_co2_stage(kb, nbytes, co2_stage_bytes(row.plan, tiles.tm, tiles.tn))
        if row is not None:
            rt = {"tile_rows": t["er"], "tile_stride": t["tile_stride"], "cols": c(g.pixels)}
            rt |= {"outer0": t["N"], "outer1": c(g.co)}
            gm = {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs)}
            row.attach(kb, gm, rt)
        if not p.explicit:
            with kb.loop(first, last, "tile") as tile:
                if row is not None:
                    row.start_pool(cast(Operation, kb.entry.last_op))
                self._tile(tile, (qa1, qb1, qa2, qb2, qc), ws)
            return
        # explicit im2col: at step u the AIVs fill tile u's X_col slot while the AIC
        # computes tile u - 1 (the AIVs then run its epilogue): one step more than tiles
        with kb.loop(first, idx.add(last, c(1)), "step") as step:
            if row is not None:
                row.start_pool(cast(Operation, kb.entry.last_op))
            with kb.when(kb.less(step, last)):
                self._im2col(step)
            with kb.when(kb.less(first, step)):
                self._tile(idx.sub(step, c(1)), (qa1, qb1, qa2, qb2, qc), ws)

    def _tile(
        self,
        tile: SSAValue,
        queues: tuple[SSAValue, SSAValue, SSAValue, SSAValue, SSAValue],
        ws: SSAValue | None,
    ) -> None:
        """Output tile `tile`: the AIC's cube stage, then the AIVs' epilogue."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g = p.geometry
        c = idx.const
        bid, first, last, row = self.bid, self.first, self.last, self.row
        qa1, qb1, qa2, qb2, qc = queues
        tm_tn = idx.mul(t["tm"], t["tn"])
        tile.name_hint = tile.name_hint or "tile"
        at = self._coords(tile)
        if p.local:  # the tile's gather offsets, for every L1 stage's X_col
            with kb.stage("compute"):
                self._offset_table(at)
        with kb.stage("cube"):
            cbuf = kb.insert(buffer.QueueAllocOp(qc, f32), "c").results[0]
            if p.explicit:
                kb.insert(buffer.CrossCoreWaitOp(COL_READY, "aic"))
            self._k_loop(cbuf, tile, at, (qa1, qb1, qa2, qb2))
            if p.explicit:  # the AIVs may refill this slot for the tile two ahead
                with kb.when(kb.less(idx.add(tile, c(COL_SLOTS)), last)):
                    kb.insert(buffer.CrossCoreSetOp(COL_FREE, "aic", "mte2"))
            if p.direct:
                out = p.parts.outputs[0]
                dst = kb.view(self.gm[out], idx.add(idx.mul(at.view_row, c(g.pixels)), at.p0))
                relu = activation_of(p.root)[0] == "relu"
                kb.insert(
                    buffer.CopyOp(cbuf, dst, at.nrows, at.ncols, at.ncols, c(g.pixels), relu=relu)
                )
                free_queue_slot(kb, qc, cbuf)
            elif ws is not None:
                base = self._slot_base(bid, tile, first, tm_tn)
                wait_slot_read(kb, tile, first)
                kb.insert(
                    buffer.CopyOp(cbuf, kb.view(ws, base), at.nrows, at.ncols, at.ncols, t["tn"])
                )
                free_queue_slot(kb, qc, cbuf)
                signal_tile_written(kb)
            else:
                kb.insert(buffer.EnqueOp(qc, cbuf))
        if row is not None:
            self._epilogue(row, TileTurn(tile, first, last, bid), at, (qc, ws), tm_tn)

    def _coords(self, tile: SSAValue) -> TileAt:
        """Where output tile `tile` is: image, group, channels, pixels and input rows."""
        idx, t, g = self.kb.idx, self.t, self.p.geometry
        c = idx.const
        pi = idx.rem(tile, t["pt"])
        rest = idx.floordiv(tile, t["pt"])
        mi = idx.rem(rest, t["mt"])
        rest2 = idx.floordiv(rest, t["mt"])
        gi = idx.rem(rest2, c(g.group))
        n = idx.floordiv(rest2, c(g.group))
        m0 = idx.mul(mi, t["tm"])
        p0 = idx.mul(pi, t["tn"])
        nrows = idx.min(t["tm"], idx.sub(c(g.cog), m0))
        ncols = idx.min(t["tn"], idx.sub(c(g.pixels), p0))
        nrows.name_hint, ncols.name_hint = "m", "ncols"
        # output rows of the pixel tile and the input rows they need
        sh, dh, pt = g.strides[0], g.dilations[0], g.pads[0]
        oh0 = idx.floordiv(p0, c(g.ow))
        oh1 = idx.floordiv(idx.sub(idx.add(p0, ncols), c(1)), c(g.ow))
        top = idx.mul(oh0, c(sh))
        a_row = idx.sub(idx.max(top, c(pt)), c(pt))
        span_end = idx.add(idx.mul(oh1, c(sh)), c((g.kh - 1) * dh + 1))
        end = idx.sub(idx.min(c(g.h + pt), idx.max(span_end, idx.add(c(pt), a_row))), c(pt))
        h_rows = idx.sub(end, a_row)
        h_rows.name_hint = "h_rows"
        co0 = idx.add(idx.mul(gi, c(g.cog)), m0)  # first output channel of the tile
        view_row = idx.add(idx.mul(n, c(g.co)), co0)
        chan = idx.add(idx.mul(n, c(g.c)), idx.mul(gi, c(g.cg)))  # first input channel
        return TileAt(n, chan, co0, view_row, m0, p0, nrows, ncols, a_row, h_rows)

    def _col_slot(self, tile: SSAValue) -> SSAValue:
        """Element offset of tile `tile`'s X_col slot [K x tn] in the workspace."""
        idx = self.kb.idx
        slot = idx.rem(idx.sub(tile, self.first), idx.const(COL_SLOTS))
        block = idx.add(idx.mul(self.bid, idx.const(COL_SLOTS)), slot)
        return idx.mul(idx.mul(block, idx.const(self.p.geometry.k)), self.t["tn"])

    def _k_loop(
        self,
        cbuf: SSAValue,
        tile: SSAValue,
        at: TileAt,
        queues: tuple[SSAValue, SSAValue, SSAValue, SSAValue],
    ) -> None:
        """Accumulate W[co0.., :] @ X_col[:, p0..] into the L0C tile, in L1 stages of
        cstep input channels."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, in_elt = p.geometry, p.tiles, p.in_elt
        c = idx.const
        qa1, qb1, qa2, qb2 = queues
        kst = tiles.kst(g)
        nrows, ncols = at.nrows, at.ncols
        col_slot = self._col_slot(tile) if p.explicit else None
        with kb.loop(c(0), t["c_stages"], "cs") as s:
            ch0 = idx.mul(s, c(tiles.cstep))
            cs = idx.min(c(tiles.cstep), idx.sub(c(g.cg), ch0))
            klen1 = idx.mul(cs, c(g.taps))

            def fill_a1(slot: SSAValue) -> None:
                w_at = idx.add(idx.mul(at.co0, c(g.k)), idx.mul(ch0, c(g.taps)))
                src = kb.view(self.gm[p.weight], w_at)
                kb.copy(src, slot, nrows, klen1, c(g.k), c(kst))

            def fill_b1(slot: SSAValue) -> None:
                chan = idx.add(at.chan, ch0)
                if p.local:  # X_col of these channels, built in UB, then into L1
                    self._local_im2col(at, chan, cs)
                    kb.copy(self.xcol, slot, klen1, ncols, t["tn"], t["tn"])
                    return
                if col_slot is not None:  # the AIVs' X_col rows of these channels
                    assert self.ws_col is not None
                    rows_at = idx.mul(idx.mul(ch0, c(g.taps)), t["tn"])
                    src = kb.view(self.ws_col, idx.add(col_slot, rows_at))
                    kb.copy(src, slot, klen1, ncols, t["tn"], t["tn"])
                    return
                # pointwise: the [cs x ncols] pixel block, rows tn apart
                src = kb.view(self.gm[p.x], idx.add(idx.mul(chan, c(g.pixels)), at.p0))
                kb.copy(src, slot, cs, ncols, c(g.pixels), t["tn"])

            a1 = fill_queue_slot(kb, qa1, in_elt, fill_a1, "a1")
            b1 = fill_queue_slot(kb, qb1, in_elt, fill_b1, "b1")
            with kb.loop(c(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                k1 = idx.mul(kk, t["tk"])
                klen = idx.min(t["tk"], idx.sub(klen1, k1))

                def fill_a2(slot: SSAValue) -> None:
                    kb.copy(kb.view(a1, k1), slot, nrows, klen, c(kst), klen)

                def fill_b2(slot: SSAValue) -> None:  # X_col [K x tn] rows of L1
                    src = kb.view(b1, idx.mul(k1, t["tn"]))
                    kb.copy(src, slot, klen, ncols, t["tn"], ncols)

                feed = L0Feed((qa2, qb2), in_elt, (fill_a2, fill_b2))
                mmad_k_step(kb, feed, cbuf, (nrows, ncols, klen), idx.add(s, kk))
            free_queue_slot(kb, qa1, a1)
            free_queue_slot(kb, qb1, b1)

    # ---- the explicit im2col (split chips, module docstring) ------------------------------

    def _im2col_buffers(self) -> None:
        """The AIVs' buffers: a staged input channel (its rows, then a zero block), an
        X_col block [kh*kw x tn], and the i32 offset tables (rows, columns, taps)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, w, in_elt = p.geometry, p.tiles, byte_width(p.in_elt), p.in_elt
        c = idx.const
        self.zero_at = g.zero_at(tiles.h_stage, w)
        staged = (self.zero_at + 32 // w) * w
        self.q_fmap = kb.queue("vecin", 2, c(staged), staged, in_elt, "q_fmap")
        cols = g.taps * tiles.tn * w
        self.q_col = kb.queue("vecout", 2, idx.mul(t["tn"], c(g.taps * w)), cols, in_elt, "q_col")
        per_col = (g.kh + g.kw + g.taps) * 4
        self.offsets = kb.tbuf(idx.mul(t["tn"], c(per_col)), per_col * tiles.tn, i32, "offsets")

    # ---- the im2col of coupled chips (module docstring) ----------------------------------

    def _local_buffers(self) -> None:
        """A staged input channel (its rows, then a zero block), the X_col block of an
        L1 stage [cstep*kh*kw x tn] and the i32 offset tables, all in UB; the zero block
        is written once."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, tiles, w, in_elt = p.geometry, p.tiles, byte_width(p.in_elt), p.in_elt
        c = idx.const
        self.zero_at = g.zero_at(tiles.h_stage, w)
        staged = (self.zero_at + 32 // w) * w
        self.fmap = kb.tbuf(c(staged), staged, in_elt, "fmap")
        per_tn = tiles.cstep * g.taps * w
        self.xcol = kb.tbuf(idx.mul(t["tn"], c(per_tn)), per_tn * tiles.tn, in_elt, "xcol")
        per_col = (g.kh + g.kw + g.taps) * 4
        self.offsets = kb.tbuf(idx.mul(t["tn"], c(per_col)), per_col * tiles.tn, i32, "offsets")
        with kb.stage("compute"):
            kb.insert(buffer.VDupOp(kb.view(self.fmap, c(self.zero_at)), kb.f32(0.0), c(32 // w)))

    def _local_im2col(self, at: TileAt, chan: SSAValue, cs: SSAValue) -> None:
        """X_col rows of input channels chan.. (cs of them) for tile `at`: per channel
        its staged rows GM -> UB, then every tap's pixels gathered through the offset
        table: Gather on 310P (its AI Core has it, asc-devkit Gather.md); on 910, which
        has no Gather, the scalar unit does the same gather element by element."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g = p.geometry
        c = idx.const
        tn = t["tn"]
        count = idx.mul(tn, c(g.taps))
        table = kb.view(self.offsets, idx.mul(tn, c(g.kh + g.kw)))
        with kb.loop(c(0), cs, "ch") as ch:
            x_at = idx.mul(idx.add(idx.mul(idx.add(chan, ch), c(g.h)), at.a_row), c(g.w))
            with kb.when(kb.less(c(0), at.h_rows)):  # not all padding
                kb.copy_1d(kb.view(self.gm[p.x], x_at), self.fmap, idx.mul(at.h_rows, c(g.w)))
            cols = kb.view(self.xcol, idx.mul(ch, count))
            if self.chip.arch == 2002:
                kb.insert(buffer.VGatherOp(cols, self.fmap, table, count))
            else:
                self._scalar_gather(cols, table, count)

    def _scalar_gather(self, cols: SSAValue, table: SSAValue, count: SSAValue) -> None:
        """cols[e] = the staged channel's element at byte offset table[e], e < count, by
        the scalar unit (GetValue/SetValue)."""
        kb, c = self.kb, self.kb.idx.const
        w = byte_width(self.p.in_elt)
        with kb.loop(c(0), count, "e") as e:
            byte = kb.insert(arith.IndexCastOp(kb.get(table, e), IndexType())).results[0]
            at_e = kb.insert(arith.DivSIOp(byte, c(w))).results[0]
            kb.set(cols, e, kb.get(self.fmap, at_e))

    def _im2col(self, tile: SSAValue) -> None:
        """The AIVs' part of tile `tile`: its X_col [K x ncols] into the tile's slot, every
        other input channel each, then flag COL_READY for the AIC."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, w, in_elt = p.geometry, byte_width(p.in_elt), p.in_elt
        c = idx.const
        assert self.ws_col is not None
        at = self._coords(tile)
        col_slot = self._col_slot(tile)
        done = idx.sub(tile, self.first)
        with kb.when(kb.less(c(COL_SLOTS - 1), done)):  # the AIC has read the slot
            kb.insert(buffer.CrossCoreWaitOp(COL_FREE, "aiv"))
        tn = t["tn"]
        with kb.stage("compute"):
            self._offset_table(at)
        count = idx.mul(tn, c(g.taps))
        with sub_block_chunk_loop(kb, c(g.cg), aivs_per_tile(self.chip, True)) as ch:
            with kb.stage("copy_in"):
                fmap = kb.insert(buffer.QueueAllocOp(self.q_fmap, in_elt), "fmap").results[0]
                x_at = idx.mul(idx.add(idx.mul(idx.add(at.chan, ch), c(g.h)), at.a_row), c(g.w))
                with kb.when(kb.less(c(0), at.h_rows)):  # not all padding
                    kb.copy_1d(kb.view(self.gm[p.x], x_at), fmap, idx.mul(at.h_rows, c(g.w)))
                kb.insert(buffer.EnqueOp(self.q_fmap, fmap))
            with kb.stage("compute"):
                fmap = kb.insert(buffer.DequeOp(self.q_fmap, in_elt), "fmap").results[0]
                zero = kb.view(fmap, c(self.zero_at))
                kb.insert(buffer.VDupOp(zero, kb.f32(0.0), c(32 // w)))
                cols = kb.insert(buffer.QueueAllocOp(self.q_col, in_elt), "cols").results[0]
                table = kb.view(self.offsets, idx.mul(tn, c(g.kh + g.kw)))
                kb.insert(buffer.VGatherOp(cols, fmap, table, count))
                kb.insert(buffer.EnqueOp(self.q_col, cols))
                free_queue_slot(kb, self.q_fmap, fmap)
            with kb.stage("copy_out"):
                cols = kb.insert(buffer.DequeOp(self.q_col, in_elt), "cols").results[0]
                dst = kb.view(self.ws_col, idx.add(col_slot, idx.mul(idx.mul(ch, c(g.taps)), tn)))
                kb.copy(cols, dst, c(g.taps), at.ncols, tn, tn)
                free_queue_slot(kb, self.q_col, cols)
        kb.insert(buffer.CrossCoreSetOp(COL_READY, "aiv", "mte3"))

    def _offset_table(self, at: TileAt) -> None:
        """The tile's gather offsets [kh*kw x tn] (bytes into a staged channel; module
        docstring): kh + kw rows by the scalar unit, then one add per tap and a min."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        g, w = p.geometry, byte_width(p.in_elt)
        c = idx.const
        tn = t["tn"]
        cap = c(self.zero_at * w)  # the zero block
        sh, sw = g.strides
        dh, dw = g.dilations
        pt, pl = g.pads[0], g.pads[1]

        def outside(v: SSAValue, size: int, value: SSAValue) -> SSAValue:
            """value if 0 <= v < size, else the zero block's offset."""
            value = self._select(kb.less(v, c(size)), value, cap)
            return self._select(kb.less(v, c(0)), cap, value)

        with kb.loop(c(0), c(g.kh), "r") as r, kb.loop(c(0), tn, "j") as j:
            oh = idx.floordiv(idx.add(at.p0, j), c(g.ow))
            ih = idx.add(idx.mul(oh, c(sh)), idx.sub(idx.mul(r, c(dh)), c(pt)))
            v = outside(ih, g.h, idx.mul(idx.sub(ih, at.a_row), c(g.w * w)))
            v = self._select(kb.less(j, at.ncols), v, cap)
            kb.set(self.offsets, idx.add(idx.mul(r, tn), j), self._i32(v))
        cols_at = idx.mul(tn, c(g.kh))
        with kb.loop(c(0), c(g.kw), "s") as s_, kb.loop(c(0), tn, "j") as j:
            ow = idx.rem(idx.add(at.p0, j), c(g.ow))
            iw = idx.add(idx.mul(ow, c(sw)), idx.sub(idx.mul(s_, c(dw)), c(pl)))
            v = outside(iw, g.w, idx.mul(iw, c(w)))
            kb.set(self.offsets, idx.add(idx.add(cols_at, idx.mul(s_, tn)), j), self._i32(v))
        table = kb.view(self.offsets, idx.mul(tn, c(g.kh + g.kw)))
        with kb.loop(c(0), c(g.taps), "tap") as tap:
            row = kb.view(self.offsets, idx.mul(idx.floordiv(tap, c(g.kw)), tn))
            col = kb.view(self.offsets, idx.add(cols_at, idx.mul(idx.rem(tap, c(g.kw)), tn)))
            kb.binary("add", kb.view(table, idx.mul(tap, tn)), row, col, tn)
        cap32 = kb.insert(arith.ConstantOp(IntegerAttr(self.zero_at * w, i32))).results[0]
        kb.scalar("mins", table, table, cap32, idx.mul(tn, c(g.taps)))

    def _select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.insert(arith.SelectOp(cond, a, b)).results[0]

    def _i32(self, v: SSAValue) -> SSAValue:
        return self.kb.insert(arith.IndexCastOp(v, i32)).results[0]

    def _slot_base(
        self, bid: SSAValue, tile: SSAValue, first: SSAValue, tm_tn: SSAValue
    ) -> SSAValue:
        idx = self.kb.idx
        slot = idx.rem(idx.sub(tile, first), idx.const(2))
        return idx.mul(idx.add(idx.mul(bid, idx.const(2)), slot), tm_tn)

    def _epilogue(
        self,
        row: RowKernel,
        turn: TileTurn,
        at: TileAt,
        out: tuple[SSAValue, SSAValue | None],
        tm_tn: SSAValue,
    ) -> None:
        """The vector side of one output tile, in chunks of `er` rows: the raw product
        from L0C (coupled, queue `qc`) or the workspace slot (split, `ws`), then the row
        kernel's stages."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        assert p.raw is not None
        tile, first, last, bid = turn.tile, turn.first, turn.last, turn.bid
        view_row, p0, nrows, ncols = at.view_row, at.p0, at.nrows, at.ncols
        qc, ws = out
        cd = None
        if ws is None:
            cd = kb.insert(buffer.DequeOp(qc, f32), "c_out").results[0]
        else:
            wait_tile_written(kb)
        chunks = idx.ceildiv(nrows, t["er"])
        with sub_block_chunk_loop(kb, chunks, aivs_per_tile(self.chip, ws is not None)) as e:
            r_off = idx.mul(e, t["er"])
            ner = idx.min(t["er"], idx.sub(nrows, r_off))
            if cd is not None:  # CO1 -> CO2 lands Nz fractals: the row kernel lays them out
                assert self.c_ub is not None
                copy_l0c_rows_to_co2(
                    kb, kb.view(cd, idx.mul(r_off, ncols)), self.c_ub, ner, ncols, t["tn"]
                )
                row.source_views[p.raw] = (self.c_ub, t["tn"])
            else:
                assert ws is not None
                base = self._slot_base(bid, tile, first, tm_tn)
                src = kb.view(ws, idx.add(base, idx.mul(r_off, t["tn"])))
                row.source_views[p.raw] = (src, t["tn"])
            row.emit_tile(idx.add(view_row, r_off), p0, ner, ncols)
        if cd is not None:
            free_queue_slot(kb, qc, cd)
        else:
            signal_slot_read(kb, tile, last)


def emit_conv_kernel(p: ConvPlan, name: str, chip: ChipSpec) -> tuple[buffer.KernelOp, ConvKernel]:
    """The plan's kernel and its emitter, the pixel tile narrowed until the epilogue's
    buffers fit UB (the plan's tiles take the narrowed width)."""
    emitters: list[ConvKernel] = []

    def build() -> buffer.KernelOp:
        emitters.append(ConvKernel(p, name, chip))
        return emitters[-1].build()

    def shrink(max_cols: int) -> None:
        if p.tiles.tn > max_cols:
            tn = max_cols // FRACTAL * FRACTAL
            p.tiles = replace(p.tiles, tn=tn, h_stage=p.geometry.stage_rows(tn))

    kernel = build_fitting_ub(build, p.rows, chip, shrink)
    return kernel, emitters[-1]
