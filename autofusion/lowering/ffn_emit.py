"""The ffn kernel's IR: the buffer.kernel of an FfnPlan (ffn_kernel.py's docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects.buffer_verifier import footprint
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import (
    FRACTAL,
    CubeKernel,
    aivs_per_tile,
    emit_mmad,
    fill_queue_slot,
    free_queue_slot,
    is_nonzero,
    sub_block_chunk_loop,
)
from autofusion.lowering.cube_epilogue import root_emitter
from autofusion.lowering.ffn_host import ffn_params
from autofusion.lowering.ffn_plan import FfnPlan
from autofusion.lowering.ffn_tiles import G_READY, READY, SLOTS, ZERO_ELEMS
from autofusion.lowering.norm_prologue import RSTD_BYTES, PrologueEmitter
from autofusion.lowering.row_kernel import HostFeeds, RowKernel


class FfnKernel(CubeKernel):
    """Builds the buffer.kernel of an FfnPlan."""

    template = "ffn"

    def __init__(self, plan: FfnPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        r = plan.root
        act = r.activation.data
        gate_act = (None, None, None) if r.gated else (act, None, None)
        biases = plan.bias_ps
        emitters = {
            plan.gate_mm: root_emitter(
                plan.gate_raw, biases[0] if biases else None, 1.0, 1.0, gate_act
            )
        }
        if plan.up_mm is not None:
            assert plan.up_raw is not None
            up_bias = biases[1] if biases else None
            emitters[plan.up_mm] = root_emitter(plan.up_raw, up_bias, 1.0, 1.0, (None,) * 3)
        sources = [v for v in (plan.gate_raw, plan.up_raw) if v is not None]
        self.act = RowKernel(
            plan.act_rows,
            name,
            chip.name,
            chip.cube_cores,
            HostFeeds(sources=sources, emitters=emitters),
        )
        self.out = RowKernel(
            plan.out_rows,
            name,
            chip.name,
            chip.cube_cores,
            HostFeeds(
                sources=[plan.acc_ps],
                emitters={
                    plan.down_mm: root_emitter(plan.acc_ps, plan.b2_ps, 1.0, 1.0, (None,) * 3)
                },
            ),
        )
        self.pro = None
        if plan.prologue is not None:
            self.pro = PrologueEmitter(plan.prologue, name, chip)
        self.init = None
        if plan.init_rows is not None:
            self.init = RowKernel(plan.init_rows, name, chip.name, chip.cube_cores)
        inputs = [r.input, *r.weight1, r.weight2, *r.bias1]
        inputs += [v for v in (r.bias2, r.residual) if v is not None]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return [self.p.root.output]

    def params(self) -> Sequence[str]:
        return ffn_params(self.p)

    # ---- the kernel ------------------------------------------------------------------

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        blocks = kb.insert(buffer.BlockNumOp(), "blocks").results[0]
        self.ws_gu = kb.insert(buffer.WorkspaceOp(t["gu_bytes"], p.gu_elt), "ws_gu").results[0]
        self.ws_g = kb.insert(buffer.WorkspaceOp(t["g_bytes"], p.in_elt), "ws_g").results[0]
        self.acc = kb.insert(buffer.WorkspaceOp(t["acc_bytes"], f32), "acc").results[0]
        if self.pro is not None:  # the x rows' RMS statistics (graph.ffn's norm_epsilon)
            self.pro.attach(kb, self.gm[self.p.root.input], t[RSTD_BYTES])
        self._queues()
        zeros = None
        if self.init is None:
            zeros = kb.tbuf(idx.const(ZERO_ELEMS * 4), ZERO_ELEMS * 4, f32, "zeros")
        self._attach_row_kernels()
        sub = kb.insert(buffer.SubBlockIdxOp(), "sub").results[0]
        aiv = idx.add(idx.mul(bid, idx.const(2)), sub)
        aivs = idx.mul(blocks, idx.const(2))
        if self.pro is not None:  # rstd: the SyncAll after the first pass publishes it
            self.pro.emit_pass(bid, t["M"], sync=False)
        if self.init is not None:  # acc = float32(residual): the residual is read first
            names = ("ir", "ic", "i_col_tiles", "i_row_blocks")
            self._pass(self.init, [t[n] for n in names], aiv, aivs)
        else:
            self._clear_accumulator(cast(SSAValue, zeros), aiv, aivs)
        kb.insert(buffer.SyncAllOp())
        mine = idx.ceildiv(idx.sub(t["items"], bid), blocks)
        with kb.loop(idx.const(0), idx.add(mine, idx.const(1)), "step") as s:
            self.act.start_pool(cast(Operation, kb.entry.last_op))
            with kb.when(kb.less(s, mine)):
                item = idx.add(bid, idx.mul(s, blocks))
                self._gate_up(item, bid, s)
                self._activation(item, bid, s)
            with kb.when(kb.less(idx.const(0), s)):
                prev = idx.sub(s, idx.const(1))
                self._down(idx.add(bid, idx.mul(prev, blocks)), bid, prev)
        kb.insert(buffer.SyncAllOp())
        names = ("fr", "fc", "f_col_tiles", "f_row_blocks")
        self._pass(self.out, [t[n] for n in names], aiv, aivs)

    def _queues(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tl, w, e = p.tiles, byte_width(p.in_elt), p.in_elt

        def nbytes(*factors: SSAValue) -> SSAValue:
            return idx.mul(idx.product(list(factors)), idx.const(w))

        self.qa1 = kb.queue("a1", 2, nbytes(t["tm"], t["kl1"]), tl.tm * tl.kl1 * w, e, "q_x1")
        self.qg = kb.queue("a1", 1, nbytes(t["tm"], t["bf"]), tl.tm * tl.bf * w, e, "q_g1")
        self.qb1 = [
            kb.queue("b1", 2, nbytes(t["kl1"], t["tn"]), tl.kl1 * tl.tn * w, e, f"q_w{i}")
            for i in range(p.parts_count)
        ]
        self.qa2 = kb.queue("a2", 2, nbytes(t["tm"], t["tk"]), tl.tm * tl.tk * w, e, "q_a2")
        self.qb2 = kb.queue("b2", 2, nbytes(t["tk"], t["tn"]), tl.tk * tl.tn * w, e, "q_b2")
        c_bytes = idx.mul(idx.mul(t["tm"], t["tn"]), idx.const(4))
        self.qc = kb.queue("co1", 2, c_bytes, tl.tm * tl.tn * 4, f32, "q_c")

    def _attach_row_kernels(self) -> None:
        """Queues and residents of the vector passes (at the kernel's top)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        r = p.root
        gm: dict[SSAValue, SSAValue] = {p.g_ps: self.ws_g}
        if self.pro is not None:
            gm[cast(SSAValue, p.rstd_ps)] = self.pro.ws
        if p.merged and r.bias1:  # one [2F] bias: the up half at column F
            gm[p.bias_ps[0]] = self.gm[r.bias1[0]]
            gm[p.bias_ps[1]] = kb.view(self.gm[r.bias1[0]], t["F"])
        else:
            gm |= {ps: self.gm[v] for ps, v in zip(p.bias_ps, r.bias1)}
        rt = {"tile_rows": t["er"], "tile_stride": t["a_stride"], "cols": t["bf"]}
        self.act.attach(kb, gm, rt)
        if self.init is not None:
            gm = {
                cast(SSAValue, p.res_ps): self.gm[cast(SSAValue, r.residual)],
                cast(SSAValue, p.init_ps): self.acc,
            }
            rt = {"tile_rows": t["ir"], "tile_stride": t["i_stride"], "cols": t["N2"]}
            self.init.attach(kb, gm, rt)
        gm = {p.y_ps: self.gm[r.output]}
        if p.b2_ps is not None:
            gm[p.b2_ps] = self.gm[cast(SSAValue, r.bias2)]
        self.out.attach(
            kb, gm, {"tile_rows": t["fr"], "tile_stride": t["f_stride"], "cols": t["N2"]}
        )
        del idx

    def _clear_accumulator(self, zeros: SSAValue, aiv: SSAValue, aivs: SSAValue) -> None:
        """Every AIV zeroes every aivs-th piece of ZERO_ELEMS accumulator elements."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        z = idx.const(ZERO_ELEMS)
        with kb.stage("compute"):
            kb.insert(buffer.VDupOp(zeros, kb.f32(0.0), z))
        total = idx.mul(t["M"], t["N2"])
        mine = idx.ceildiv(idx.sub(idx.max(t["z_pieces"], aiv), aiv), aivs)
        with kb.loop(idx.const(0), mine, "piece") as q:
            start = idx.mul(idx.add(aiv, idx.mul(q, aivs)), z)
            with kb.stage("copy_out"):
                kb.copy_1d(zeros, kb.view(self.acc, start), idx.min(z, idx.sub(total, start)))

    def _item(self, item: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
        """(m0, rows, f0, band columns) of a work item (band-major numbering)."""
        idx, t = self.kb.idx, self.t
        mi = idx.rem(item, t["mt"])
        band = idx.floordiv(item, t["mt"])
        m0 = idx.mul(mi, t["tm"])
        f0 = idx.mul(band, t["bf"])
        nrows = idx.min(t["tm"], idx.sub(t["M"], m0))
        nband = idx.min(t["bf"], idx.sub(t["F"], f0))
        nrows.name_hint, nband.name_hint = "m", "nband"
        return m0, nrows, f0, nband

    def _slot(self, bid: SSAValue, step: SSAValue, part: int, parts: int) -> SSAValue:
        """Element offset of this block's slot for `step` (part `part` of `parts`)."""
        idx, t = self.kb.idx, self.t
        slot = idx.rem(step, idx.const(SLOTS))
        index = idx.add(
            idx.mul(idx.add(idx.mul(bid, idx.const(SLOTS)), slot), idx.const(parts)),
            idx.const(part),
        )
        return idx.mul(index, idx.mul(t["tm"], t["bf"]))

    def _gate_up(self, item: SSAValue, bid: SSAValue, step: SSAValue) -> None:
        """AIC: the band's gate/up (or plain) products into this step's slot; READY."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        m0, nrows, f0, nband = self._item(item)
        r = p.root
        w1 = [self.gm[v] for v in r.weight1]
        f = t["F"]
        row = idx.mul(f, idx.const(2)) if p.merged else f
        bases: list[tuple[SSAValue, SSAValue]] = [(w1[0], idx.const(0))]
        if p.gated:
            bases.append((w1[0], f) if p.merged else (w1[1], idx.const(0)))
        with kb.stage("cube"):
            with kb.loop(idx.const(0), idx.ceildiv(nband, t["tn"]), "sub") as sub:
                c_off = idx.mul(sub, t["tn"])
                c0 = idx.add(f0, c_off)
                ncols = idx.min(t["tn"], idx.sub(nband, c_off))
                ncols.name_hint = "ncols"
                cs: list[SSAValue] = [
                    kb.insert(buffer.QueueAllocOp(self.qc, f32), "c").results[0] for _ in bases
                ]
                self._k_loop(cs, m0, nrows, ncols, [(w, idx.add(b, c0), row) for w, b in bases])
                for part, c in enumerate(cs):
                    dst = idx.add(self._slot(bid, step, part, p.parts_count), c_off)
                    kb.insert(
                        buffer.CopyOp(c, kb.view(self.ws_gu, dst), nrows, ncols, ncols, t["bf"])
                    )
                    free_queue_slot(kb, self.qc, c)
            kb.insert(buffer.CrossCoreSetOp(READY, "aic", "fix"))

    def _k_loop(
        self,
        cs: list[SSAValue],
        m0: SSAValue,
        nrows: SSAValue,
        ncols: SSAValue,
        weights: list[tuple[SSAValue, SSAValue, SSAValue]],
    ) -> None:
        """cs[i] = x[m0.., :] @ W_i[:, col_i..] over K1: each x stage and L0A step serve
        every projection (weights: (GM memref, column, row stride))."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        e = p.in_elt
        x = self.gm[p.root.input]
        with kb.loop(idx.const(0), t["k_stages"], "ks") as s:
            k0 = idx.mul(s, t["kl1"])
            klen1 = idx.min(t["kl1"], idx.sub(t["K1"], k0))

            def fill_x(slot: SSAValue) -> None:
                src = kb.view(x, idx.add(idx.mul(m0, t["K1"]), k0))
                kb.copy(src, slot, nrows, klen1, t["K1"], t["kl1"])

            a1 = fill_queue_slot(kb, self.qa1, e, fill_x, "x1")
            b1s = []
            for (w, col, row), q in zip(weights, self.qb1):

                def fill_w(
                    slot: SSAValue, w: SSAValue = w, col: SSAValue = col, row: SSAValue = row
                ) -> None:
                    src = kb.view(w, idx.add(idx.mul(k0, row), col))
                    kb.copy(src, slot, klen1, ncols, row, t["tn"])

                b1s.append(fill_queue_slot(kb, q, e, fill_w, "w1"))
            with kb.loop(idx.const(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                k1 = idx.mul(kk, t["tk"])
                klen = idx.min(t["tk"], idx.sub(klen1, k1))
                a2 = fill_queue_slot(
                    kb,
                    self.qa2,
                    e,
                    lambda slot: kb.copy(kb.view(a1, k1), slot, nrows, klen, t["kl1"], klen),
                    "a2",
                )
                first = is_nonzero(kb, idx.add(s, kk))
                for c, b1 in zip(cs, b1s):

                    def fill_b2(slot: SSAValue, b1: SSAValue = b1) -> None:
                        kb.copy(
                            kb.view(b1, idx.mul(k1, t["tn"])), slot, klen, ncols, t["tn"], ncols
                        )

                    b2 = fill_queue_slot(kb, self.qb2, e, fill_b2, "b2")
                    emit_mmad(kb, (c, a2, b2), (nrows, ncols, klen), first)
                    free_queue_slot(kb, self.qb2, b2)
                free_queue_slot(kb, self.qa2, a2)
            free_queue_slot(kb, self.qa1, a1)
            for b1, q in zip(b1s, self.qb1):
                free_queue_slot(kb, q, b1)

    def _activation(self, item: SSAValue, bid: SSAValue, step: SSAValue) -> None:
        """AIVs: g = act(gate/up) of the step's slot, chunk by chunk, into its g slot."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        m0, nrows, f0, nband = self._item(item)
        kb.insert(buffer.CrossCoreWaitOp(READY, "aiv"))
        col_chunks = idx.ceildiv(nband, t["ec"])
        chunks = idx.mul(idx.ceildiv(nrows, t["er"]), col_chunks)
        with sub_block_chunk_loop(kb, chunks, aivs_per_tile(self.chip, True)) as e:
            r_off = idx.mul(idx.floordiv(e, col_chunks), t["er"])
            c_off = idx.mul(idx.rem(e, col_chunks), t["ec"])
            ner = idx.min(t["er"], idx.sub(nrows, r_off))
            nec = idx.min(t["ec"], idx.sub(nband, c_off))
            at = idx.add(idx.mul(r_off, t["bf"]), c_off)
            raws = [v for v in (p.gate_raw, p.up_raw) if v is not None]
            for part, raw in enumerate(raws):
                base = self._slot(bid, step, part, p.parts_count)
                self.act.source_views[raw] = (kb.view(self.ws_gu, idx.add(base, at)), t["bf"])
            # g's GM rows are the slot's; b1's columns are the band's (c0 = f0 + c_off)
            g_base = idx.add(self._slot(bid, step, 0, 1), idx.mul(r_off, t["bf"]))
            self.act.emit_tile(
                idx.add(m0, r_off),
                idx.add(f0, c_off),
                ner,
                nec,
                row_base=idx.sub(g_base, f0),
                row_stride=t["bf"],
            )
        kb.insert(buffer.CrossCoreSetOp(G_READY, "aiv", "mte3"))

    def _down(self, item: SSAValue, bid: SSAValue, step: SSAValue) -> None:
        """AIC: acc[tile, :] += g @ W2[band, :], chunk by chunk (atomic Fixpipe)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        m0, nrows, f0, nband = self._item(item)
        e = p.in_elt
        w2 = self.gm[p.root.weight2]
        with kb.stage("cube"):
            kb.insert(buffer.CrossCoreWaitOp(G_READY, "aic"))

            def fill_g(slot: SSAValue) -> None:
                src = kb.view(self.ws_g, self._slot(bid, step, 0, 1))
                kb.copy(src, slot, nrows, nband, t["bf"], t["bf"])

            g1 = fill_queue_slot(kb, self.qg, e, fill_g, "g1")
            with kb.loop(idx.const(0), t["nt"], "nc") as nc:
                n0 = idx.mul(nc, t["tn"])
                ncols = idx.min(t["tn"], idx.sub(t["N2"], n0))
                ncols.name_hint = "ncols"
                c = kb.insert(buffer.QueueAllocOp(self.qc, f32), "c").results[0]
                stages = idx.ceildiv(nband, t["kl1"])
                with kb.loop(idx.const(0), stages, "ks") as s:
                    k0 = idx.mul(s, t["kl1"])
                    klen1 = idx.min(t["kl1"], idx.sub(nband, k0))

                    def fill_w(slot: SSAValue) -> None:
                        row = idx.add(f0, k0)
                        src = kb.view(w2, idx.add(idx.mul(row, t["N2"]), n0))
                        kb.copy(src, slot, klen1, ncols, t["N2"], t["tn"])

                    b1 = fill_queue_slot(kb, self.qb1[0], e, fill_w, "w2")
                    with kb.loop(idx.const(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                        k1 = idx.mul(kk, t["tk"])
                        klen = idx.min(t["tk"], idx.sub(klen1, k1))
                        kg = idx.add(k0, k1)
                        a2 = fill_queue_slot(
                            kb,
                            self.qa2,
                            e,
                            lambda slot: kb.copy(kb.view(g1, kg), slot, nrows, klen, t["bf"], klen),
                            "a2",
                        )
                        b2 = fill_queue_slot(
                            kb,
                            self.qb2,
                            e,
                            lambda slot: kb.copy(
                                kb.view(b1, idx.mul(k1, t["tn"])), slot, klen, ncols, t["tn"], ncols
                            ),
                            "b2",
                        )
                        first = is_nonzero(kb, idx.add(s, kk))
                        emit_mmad(kb, (c, a2, b2), (nrows, ncols, klen), first)
                        free_queue_slot(kb, self.qa2, a2)
                        free_queue_slot(kb, self.qb2, b2)
                    free_queue_slot(kb, self.qb1[0], b1)
                dst = kb.view(self.acc, idx.add(idx.mul(m0, t["N2"]), n0))
                kb.insert(buffer.CopyOp(c, dst, nrows, ncols, ncols, t["N2"], atomic=True))
                free_queue_slot(kb, self.qc, c)
            free_queue_slot(kb, self.qg, g1)

    def _pass(self, row: RowKernel, tiling: list[SSAValue], aiv: SSAValue, aivs: SSAValue) -> None:
        """AIVs: a row kernel over [M x N2] (the residual into the accumulator, or the
        accumulator + b2 into y), its row blocks dealt round-robin over the launch's
        AIVs, each with all its column tiles (`pass_tiling`)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tile_rows, tile_cols, col_tiles, row_blocks = tiling
        mine = idx.ceildiv(idx.sub(idx.max(row_blocks, aiv), aiv), aivs)
        with kb.loop(idx.const(0), mine, "rb") as q:
            row.start_pool(cast(Operation, kb.entry.last_op))
            r0 = idx.mul(idx.add(aiv, idx.mul(q, aivs)), tile_rows)
            nr = idx.min(tile_rows, idx.sub(t["M"], r0))
            with kb.loop(idx.const(0), col_tiles, "ct") as ci:
                c0 = idx.mul(ci, tile_cols)
                nc = idx.min(tile_cols, idx.sub(t["N2"], c0))
                if row is self.out:
                    src = kb.view(self.acc, idx.add(idx.mul(r0, t["N2"]), c0))
                    row.source_views[p.acc_ps] = (src, t["N2"])
                row.emit_tile(r0, c0, nr, nc)


def emit_ffn_kernel(p: FfnPlan, name: str, chip: ChipSpec) -> tuple[buffer.KernelOp, FfnKernel]:
    """The plan's kernel and its emitter, the row kernels' working buffers shrunk until
    the kernel fits UB."""
    emitters: list[FfnKernel] = []
    for _ in range(6):
        emitters.append(FfnKernel(p, name, chip))
        kernel = emitters[-1].build()
        need = footprint(kernel)
        for space in ("l1", "l0a", "l0b", "l0c"):
            have = chip.capacity(space)
            assert have is None or need.get(space, 0) <= have, (name, space, need)
        used = need.get("ub", 0)
        if used <= chip.ub_bytes:
            kernel.attributes["afc.ub_bytes"] = graph.int_attr(used)
            break
        for rows in p.row_plans:  # the row kernels' working buffers
            scaled = rows.max_tile_elems * chip.ub_bytes // used
            rows.max_tile_elems = max(rows.align_elems * FRACTAL, scaled // 64 * 64 - 64)
    else:
        raise UserError(f"kernel {name} does not fit the {chip.name} UB with any tile")
    return kernel, emitters[-1]
