"""The matmul kernel's IR: the buffer.kernel of a MatmulPlan (matmul_kernel.py docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import (
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
    fit_chunk_rows,
    max_epilogue_cols,
    root_emitter,
)
from autofusion.lowering.kernel_builder import mapped_index
from autofusion.lowering.matmul_plan import MatmulPlan
from autofusion.lowering.matmul_tiling import PARAMS, tile_coords
from autofusion.lowering.norm_prologue import RSTD_BYTES, PrologueEmitter
from autofusion.lowering.rope_epilogue_emit import head_step, ranged_outputs, rope_heads, table_copy
from autofusion.lowering.row_kernel import HostFeeds, RowKernel, TileCopy


@dataclass(frozen=True)
class GemmTileAt:
    """Index values of one output tile: its batch, first row and column, rows and columns."""

    batch: SSAValue
    m0: SSAValue
    n0: SSAValue
    nrows: SSAValue
    ncols: SSAValue


class MatmulKernel(CubeKernel):
    """Builds the buffer.kernel of a MatmulPlan."""

    template = "matmul"

    def __init__(self, plan: MatmulPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        self.row: RowKernel | None = None
        self.prologue: PrologueEmitter | None = None
        if plan.rows is not None:
            assert plan.raw is not None
            act = activation_of(plan.root)
            emitters = {plan.root: root_emitter(plan.raw, plan.bias, plan.alpha, plan.beta, act)}
            copy_ins: dict[SSAValue, TileCopy] = {}
            if plan.prologue is not None:
                self.prologue = PrologueEmitter(plan.prologue, name, chip)
            out_columns: dict[SSAValue, tuple[int, int]] = {}
            if plan.rope is not None:
                d = plan.rope.head_dim
                emitters[plan.rope.rope] = rope_heads(plan.rope.source, plan.rope)
                copy_ins = {t: table_copy(d) for t in plan.rope.tables}
                out_columns = ranged_outputs(plan.rope, plan.out_shape[-1])
            feeds = HostFeeds([plan.raw], (), emitters, copy_ins, out_columns)
            self.row = RowKernel(plan.rows, name, chip.name, chip.cube_cores, feeds)
        inputs = [plan.a, plan.b, *(self.row.gm_inputs if self.row else [])]
        if plan.prologue is not None:  # rstd: the kernel's own workspace
            inputs.remove(plan.prologue.rstd)
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return list(self.p.parts.outputs)

    def params(self) -> Sequence[str]:
        names = [*PARAMS, *(f"batch{d}" for d in range(len(self.p.batch_shape)))]
        return names + ([RSTD_BYTES] if self.p.prologue is not None else [])

    def core_type(self) -> str:
        return "aic" if self.p.direct else "mix"

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tiles, w, in_elt = p.tiles, byte_width(p.in_elt), p.in_elt
        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["tiles"])
        ws = None
        if p.ws_elt is not None and not p.l0c_to_ub:
            ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], p.ws_elt), "ws").results[0]
        tm_tn = idx.mul(t["tm"], t["tn"])
        qa1 = kb.queue(
            "a1",
            2,
            idx.mul(idx.mul(t["tm"], t["kl1"]), idx.const(w)),
            tiles.tm * tiles.kl1 * w,
            in_elt,
            "q_a1",
        )
        qb1 = kb.queue(
            "b1",
            2,
            idx.mul(idx.mul(t["kl1"], t["tn"]), idx.const(w)),
            tiles.kl1 * tiles.tn * w,
            in_elt,
            "q_b1",
        )
        qa2 = kb.queue(
            "a2",
            2,
            idx.mul(idx.mul(t["tm"], t["tk"]), idx.const(w)),
            tiles.tm * tiles.tk * w,
            in_elt,
            "q_a2",
        )
        qb2 = kb.queue(
            "b2",
            2,
            idx.mul(idx.mul(t["tk"], t["tn"]), idx.const(w)),
            tiles.tk * tiles.tn * w,
            in_elt,
            "q_b2",
        )
        qc = kb.queue(
            "co1", tiles.c_depth, idx.mul(tm_tn, idx.const(4)), tiles.tm * tiles.tn * 4, f32, "q_c"
        )
        row = self.row
        self.c_ub: SSAValue | None = None
        if row is not None and p.l0c_to_ub:
            nbytes = idx.mul(idx.mul(t["er"], t["tn"]), idx.const(4))
            self.c_ub = alloc_co2_stage(kb, nbytes, co2_stage_bytes(row.plan, tiles.tm, tiles.tn))
        if row is not None:
            rt = {"tile_rows": t["er"], "tile_stride": t["tile_stride"], "cols": t["N"]}
            outer = [t[f"batch{d}"] for d in range(len(p.batch_shape))] + [t["M"]]
            rt |= {f"outer{d}": v for d, v in enumerate(outer)}
            own = self.prologue.p.rstd if self.prologue is not None else None
            gm = {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs) if v is not own}
            if self.prologue is not None:  # rstd: the prologue's workspace
                self.prologue.attach(kb, self.gm[p.a], t[RSTD_BYTES])
                gm[self.prologue.p.rstd] = self.prologue.ws
            row.attach(kb, gm, rt)
        if self.prologue is not None:  # rstd of every row of A, then SyncAll
            rows = idx.product([t[f"batch{d}"] for d in range(len(p.batch_shape))] + [t["M"]])
            self.prologue.emit_pass(bid, rows)
        with kb.loop(first, last, "tile") as tile:
            if row is not None:
                row.start_pool(cast(Operation, kb.entry.last_op))
            ob, mi, ni = tile_coords(idx, tile, t)
            m0 = idx.mul(mi, t["tm"])
            n0 = idx.mul(ni, t["tn"])
            nrows = idx.min(t["tm"], idx.sub(t["M"], m0))
            ncols = idx.min(t["tn"], idx.sub(t["N"], n0))
            nrows.name_hint, ncols.name_hint = "m", "ncols"
            at = GemmTileAt(ob, m0, n0, nrows, ncols)
            with kb.stage("cube"):
                c = kb.insert(buffer.QueueAllocOp(qc, f32), "c").results[0]
                self._k_loop(c, at, (qa1, qb1, qa2, qb2))
                if p.direct:
                    out = p.parts.outputs[0]
                    dst = kb.view(
                        self.gm[out], idx.add(idx.mul(idx.add(idx.mul(ob, t["M"]), m0), t["N"]), n0)
                    )
                    kb.insert(
                        buffer.CopyOp(
                            c,
                            dst,
                            nrows,
                            ncols,
                            ncols,
                            t["N"],
                            relu=activation_of(p.root)[0] == "relu",
                        )
                    )
                    free_queue_slot(kb, qc, c)
                elif ws is not None:
                    slot = idx.rem(idx.sub(tile, first), idx.const(2))
                    base = idx.mul(idx.add(idx.mul(bid, idx.const(2)), slot), tm_tn)
                    wait_slot_read(kb, tile, first)
                    kb.insert(buffer.CopyOp(c, kb.view(ws, base), nrows, ncols, ncols, t["tn"]))
                    free_queue_slot(kb, qc, c)
                    signal_tile_written(kb)
                else:
                    kb.insert(buffer.EnqueOp(qc, c))
            if row is not None:
                self._epilogue(row, TileTurn(tile, first, last, bid), at, qc, ws)

    def _epilogue(
        self, row: RowKernel, turn: TileTurn, at: GemmTileAt, qc: SSAValue, ws: SSAValue | None
    ) -> None:
        """The vector side of one output tile, in chunks of `er` rows: the raw product
        from L0C (coupled) or the workspace slot (split), then the row kernel's stages."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        tile, first, last, bid = turn.tile, turn.first, turn.last, turn.bid
        ob, m0, n0, nrows, ncols = at.batch, at.m0, at.n0, at.nrows, at.ncols
        assert p.raw is not None
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
                slot = idx.rem(idx.sub(tile, first), idx.const(2))
                base = idx.mul(idx.add(idx.mul(bid, idx.const(2)), slot), idx.mul(t["tm"], t["tn"]))
                src = kb.view(ws, idx.add(base, idx.mul(r_off, t["tn"])))
                row.source_views[p.raw] = (src, t["tn"])
            r0 = idx.add(idx.add(idx.mul(ob, t["M"]), m0), r_off)
            row.emit_tile(r0, n0, ner, ncols)
        if cd is not None:
            free_queue_slot(kb, qc, cd)
        else:
            signal_slot_read(kb, tile, last)

    def _k_loop(
        self, c: SSAValue, at: GemmTileAt, queues: tuple[SSAValue, SSAValue, SSAValue, SSAValue]
    ) -> None:
        """Accumulate op(A)[m0.., :] @ op(B)[:, n0..] over K into the L0C tile c."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        ob, m0, n0, nrows, ncols = at.batch, at.m0, at.n0, at.nrows, at.ncols
        qa1, qb1, qa2, qb2 = queues
        in_elt = p.in_elt
        nb = len(p.batch_shape)
        outer = [t[f"batch{d}"] for d in range(nb)]
        a_base = b_base = idx.const(0)
        if nb:  # the operands' own batch (0 where they broadcast) times their matrix size
            a_batch = mapped_index(kb, ob, outer, p.a_outer)
            b_batch = mapped_index(kb, ob, outer, p.b_outer)
            a_base = idx.mul(a_batch, idx.mul(t["M"], t["K"]))
            b_base = idx.mul(b_batch, idx.mul(t["K"], t["N"]))
        a_gm, b_gm = self.gm[p.a], self.gm[p.b]
        with kb.loop(idx.const(0), t["k_stages"], "ks") as s:
            k0 = idx.mul(s, t["kl1"])
            klen1 = idx.min(t["kl1"], idx.sub(t["K"], k0))

            def fill_a1(slot: SSAValue) -> None:
                if p.trans_a:  # A is [K, M]: rows of the stage are K
                    src = kb.view(a_gm, idx.add(a_base, idx.add(idx.mul(k0, t["M"]), m0)))
                    kb.copy(src, slot, klen1, nrows, t["M"], t["tm"])
                else:
                    src = kb.view(a_gm, idx.add(a_base, idx.add(idx.mul(m0, t["K"]), k0)))
                    kb.copy(src, slot, nrows, klen1, t["K"], t["kl1"])

            def fill_b1(slot: SSAValue) -> None:
                if p.trans_b:  # B is [N, K]
                    src = kb.view(b_gm, idx.add(b_base, idx.add(idx.mul(n0, t["K"]), k0)))
                    kb.copy(src, slot, ncols, klen1, t["K"], t["kl1"])
                else:
                    src = kb.view(b_gm, idx.add(b_base, idx.add(idx.mul(k0, t["N"]), n0)))
                    kb.copy(src, slot, klen1, ncols, t["N"], t["tn"])

            a1 = fill_queue_slot(kb, qa1, in_elt, fill_a1, "a1")
            b1 = fill_queue_slot(kb, qb1, in_elt, fill_b1, "b1")
            with kb.loop(idx.const(0), idx.ceildiv(klen1, t["tk"]), "kk") as kk:
                k1 = idx.mul(kk, t["tk"])
                klen = idx.min(t["tk"], idx.sub(klen1, k1))

                def fill_a2(slot: SSAValue) -> None:
                    if p.trans_a:
                        src = kb.view(a1, idx.mul(k1, t["tm"]))
                        kb.insert(
                            buffer.CopyOp(src, slot, klen, nrows, t["tm"], klen, transpose=True)
                        )
                    else:
                        kb.copy(kb.view(a1, k1), slot, nrows, klen, t["kl1"], klen)

                def fill_b2(slot: SSAValue) -> None:
                    if p.trans_b:
                        src = kb.view(b1, k1)
                        kb.insert(
                            buffer.CopyOp(src, slot, ncols, klen, t["kl1"], ncols, transpose=True)
                        )
                    else:
                        kb.copy(
                            kb.view(b1, idx.mul(k1, t["tn"])), slot, klen, ncols, t["tn"], ncols
                        )

                feed = L0Feed((qa2, qb2), in_elt, (fill_a2, fill_b2))
                mmad_k_step(kb, feed, c, (nrows, ncols, klen), idx.add(s, kk))
            free_queue_slot(kb, qa1, a1)
            free_queue_slot(kb, qb1, b1)


def emit_matmul_kernel(
    p: MatmulPlan, name: str, chip: ChipSpec
) -> tuple[buffer.KernelOp, MatmulKernel]:
    """The plan's kernel and its emitter, the N tile narrowed until the epilogue's
    buffers fit UB (the plan's tiles take the narrowed width)."""
    emitters: list[MatmulKernel] = []

    def build() -> buffer.KernelOp:
        emitters.append(MatmulKernel(p, name, chip))
        return emitters[-1].build()

    def shrink(max_cols: int) -> None:
        step = head_step(p.rope)
        if p.rows is not None:  # the shrunk tile may take 8-row chunks to hold a head
            fit_chunk_rows(p.rows, step, not p.l0c_to_ub)
            max_cols = max_epilogue_cols(p.rows)
        if p.tiles.tn > max_cols:
            if max_cols < step:  # a rope epilogue's N tile holds whole heads
                raise UserError(
                    f"kernel {name}: no N tile of whole {step}-wide heads fits the "
                    f"{chip.name} UB beside the epilogue's buffers"
                )
            p.tiles = replace(p.tiles, tn=max_cols // step * step)

    kernel = build_fitting_ub(build, p.rows, chip, shrink)
    return kernel, emitters[-1]
