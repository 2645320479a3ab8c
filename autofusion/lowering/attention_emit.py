"""The attention kernel's IR: the buffer.kernel of an AttentionPlan (the online softmax
over key/value blocks and the epilogue; attention_kernel.py docstring).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import f16, f32, i1
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects.buffer_verifier import footprint
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_mask_emit import AttentionMasking
from autofusion.lowering.attention_plan import AttentionPlan, co2_stage_elems, mask_depth
from autofusion.lowering.attention_tiling import CMP_ELEMS, PARAMS
from autofusion.lowering.cube_common import (
    FRACTAL,
    alloc_co2_stage,
    copy_l0c_rows_to_co2,
    emit_mmad,
    fill_queue_slot,
    free_queue_slot,
    round_up,
)
from autofusion.lowering.cube_epilogue import root_emitter
from autofusion.lowering.row_kernel import HostFeeds, RowKernel
from autofusion.lowering.row_vector_math import Loc
from autofusion.lowering.value_types import element_type

# a finite "minus infinity" for the running max: exp(S - m) stays 0, never NaN, when a
# row's first key blocks are all masked. float32's lowest value, so that a row whose
# scores an additive mask sets to it (transformers' torch.finfo(float32).min) stays a
# softmax over those scores, as graph.flash_attention defines it, instead of 0
M_INIT = -3.4028234663852886e38


# the running sum's floor before the division: a fully masked row has l = 0 and O = 0,
# and gives 0 (as torch SDPA does); any other row has l >= 1 (its largest score adds
# exp(0) = 1), so l = 0 marks a fully masked row (masked_row "nan" selects NaN there)
L_FLOOR = 1.0e-30


# cross-core flags of one key/value block on split chips (CrossCoreSetFlag mode 2)
S_READY, P_READY, PV_READY = 0, 1, 2


@dataclass(frozen=True)
class CubeResult:
    """Where an f32 cube result waits for the vector side: its GM workspace and row
    stride (split chips; `ws` None on coupled chips), and its L0C queue (coupled chips)."""

    ws: SSAValue | None
    ws_stride: SSAValue
    l0c_queue: SSAValue


class AttentionKernel(AttentionMasking):
    """Builds the buffer.kernel of an AttentionPlan."""

    template = "attention"

    def __init__(self, plan: AttentionPlan, name: str, chip: ChipSpec) -> None:
        self.p = plan
        self.name = name
        self.chip = chip
        self.row = RowKernel(
            plan.rows,
            name,
            chip.name,
            chip.cube_cores,
            HostFeeds(
                preset=[plan.raw],
                emitters={plan.root: root_emitter(plan.raw, None, 1.0, 1.0, (None, None, None))},
            ),
        )
        sources = [plan.source(i) for i in range(len(plan.root.operands))]
        inputs = [*sources, *self.row.gm_inputs]
        self.kernel_inputs: list[SSAValue] = list(dict.fromkeys(inputs))

    def outputs(self) -> list[SSAValue]:
        return list(self.p.parts.outputs)

    def params(self) -> Sequence[str]:
        return PARAMS

    # ---- setup: queues and state buffers ------------------------------------------------

    def _body(self) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        tiles, w, in_elt = p.tiles, byte_width(p.in_elt), p.in_elt
        tq, tkv, ts, dv = tiles.tq, tiles.tkv, tiles.ts, p.value_dim
        dvs = p.dv_stride
        # L1/L0 rows of the head dims padded to whole fractal columns (ascend.md 1.5)
        d, dvp = round_up(p.head_dim, FRACTAL), round_up(p.value_dim, FRACTAL)
        self.dp, self.dvp = d, dvp

        def nbytes(elems: SSAValue, wd: int) -> SSAValue:
            return idx.round_up(idx.mul(elems, c(wd)), 32)

        bid = kb.insert(buffer.BlockIdxOp(), "bid").results[0]
        self.bid = bid
        self.split = not p.l0c_to_ub
        # on split chips the two AIVs of a block share each query block's rows
        self.sb = kb.insert(buffer.SubBlockIdxOp(), "sub").results[0] if self.split else None
        first = idx.mul(bid, t["per_core"])
        last = idx.min(idx.add(first, t["per_core"]), t["steps"])
        self.ws = self.wsp = None
        if not p.l0c_to_ub:
            self.ws = kb.insert(buffer.WorkspaceOp(t["ws_bytes"], f32), "ws").results[0]
            self.wsp = kb.insert(buffer.WorkspaceOp(t["wsp_bytes"], in_elt), "ws_p").results[0]
        tq_tkv = idx.mul(t["tq"], t["tkv"])
        tile_s = idx.mul(t["tq"], t["ts"])
        # cube side
        self.q_l1 = kb.queue("a1", 1, idx.mul(t["tq"], c(d * w)), tq * d * w, in_elt, "q_q1")
        self.k_l1 = kb.queue("b1", 2, idx.mul(t["tkv"], c(d * w)), tkv * d * w, in_elt, "q_k1")
        self.v_l1 = kb.queue("b1", 2, idx.mul(t["tkv"], c(dvp * w)), tkv * dvp * w, in_elt, "q_v1")
        self.p_l1 = kb.queue("a1", 2, idx.mul(tq_tkv, c(w)), tq * tkv * w, in_elt, "q_p1")
        # the query block stays in L0A for a whole step: a TBuf, not a queue
        q_bytes = idx.mul(t["tq"], c(d * w))
        self.q_l0 = kb.insert(
            buffer.AllocBufOp("a2", q_bytes, tq * d * w, in_elt), "q_l0a"
        ).results[0]
        self.p_l0 = kb.queue("a2", 2, idx.mul(tq_tkv, c(w)), tq * tkv * w, in_elt, "q_p2")
        self.c_ub: SSAValue | None = None
        if p.l0c_to_ub:  # S and P@V leave L0C as Nz fractals (cube_common.alloc_co2_stage)
            stage = co2_stage_elems(p, tiles) * 4
            self.c_ub = alloc_co2_stage(kb, c(stage), stage)
            self.c_ub_stride = max(round_up(tkv, FRACTAL), dvp)
        self.k_l0 = kb.queue("b2", 2, idx.mul(t["tkv"], c(d * w)), tkv * d * w, in_elt, "q_k2")
        self.v_l0 = kb.queue("b2", 2, idx.mul(t["tkv"], c(dvp * w)), tkv * dvp * w, in_elt, "q_v2")
        self.s_l0c = kb.queue("co1", 1, idx.mul(tq_tkv, c(4)), tq * tkv * 4, f32, "q_s")
        self.pv_l0c = kb.queue("co1", 1, idx.mul(t["tq"], c(dvp * 4)), tq * dvp * 4, f32, "q_pv")
        # vector side
        self.s_in = kb.queue("vecin", 1, nbytes(tile_s, 4), tq * ts * 4, f32, "q_s_in")
        self.pv_in = kb.queue(
            "vecin", 1, nbytes(idx.mul(t["tq"], c(dvs)), 4), tq * dvs * 4, f32, "q_pv_in"
        )
        self.p_out = kb.queue("vecout", 2, nbytes(tile_s, w), tq * ts * w, in_elt, "q_p_out")
        self.mask_in = None
        if p.mask is not None:
            me = element_type(p.mask)
            mw = byte_width(me)
            depth = mask_depth(self.chip)
            self.mask_in = kb.queue("vecin", depth, nbytes(tile_s, mw), tq * ts * mw, me, "q_mask")
        col_n = nbytes(idx.round_up(t["tq"], 8), 4)
        col_max = round_up(round_up(tq, 8) * 4, 32)
        self.pos_in = None
        if p.positions is not None:  # the query block's ids, then each key block's
            pe = element_type(p.positions)
            pw = byte_width(pe)
            most = max(tq, ts)
            span = idx.max(t["tq"], t["ts"])
            self.pos_in = kb.queue(
                "vecin", 1, nbytes(span, pw), round_up(most * pw, 32), pe, "q_pos"
            )

        def buf(
            name: str, elems: SSAValue, max_elems: int, wd: int = 4, e: Attribute = f32
        ) -> SSAValue:
            return kb.tbuf(nbytes(elems, wd), round_up(max_elems * wd, 32), e, name)

        self.o_acc = buf("o_acc", idx.mul(t["tq"], c(dvs)), tq * dvs)
        self.m_run = kb.tbuf(col_n, col_max, f32, "m_run")
        self.l_run = kb.tbuf(col_n, col_max, f32, "l_run")
        self.m_new = kb.tbuf(col_n, col_max, f32, "m_new")
        self.alpha = kb.tbuf(col_n, col_max, f32, "alpha")
        self.row_max = kb.tbuf(col_n, col_max, f32, "row_max")
        self.row_sum = kb.tbuf(col_n, col_max, f32, "row_sum")
        self.red_dst = kb.tbuf(c(32), 32, f32, "red_dst")
        self.red_tmp = buf("red_tmp", t["ts"], ts)
        self.mask_f32 = None
        if p.mask is not None and not p.mask_bool and byte_width(element_type(p.mask)) != 4:
            self.mask_f32 = buf("mask_f32", tile_s, tq * ts)
        self.neg_inf = None
        # Compare covers whole 256-byte repeats (ascend.md 2.8): its operands and its
        # mask (one byte per element in the IR, a bitmask in Ascend C) are padded
        cmp_s = idx.round_up(tile_s, CMP_ELEMS)
        cmp_max = round_up(tq * ts, CMP_ELEMS)
        self.cmp = self.mask_h = self.zeros_h = None
        # 910 has only Select mode VSEL_CMPMASK_SPR (ascend.md 2.8): it masks with Min
        # against a bound of +/-inf built by arithmetic instead of Compare + Select
        self.by_min = self.chip.arch == 1001
        by_ramp = p.causal or p.positions is not None
        if by_ramp or p.mask_bool:
            self.neg_inf = buf("neg_inf", tile_s, tq * ts)
            if not self.by_min:
                self.cmp = buf("cmp", cmp_s, cmp_max, 1, i1)
        if by_ramp:
            self.ramp = buf("ramp", cmp_s, cmp_max)
            self.threshold = buf("threshold", cmp_s, cmp_max)
        if p.positions is not None:
            self.key_ids = buf("key_ids", t["ts"], ts)
            self.query_ids = kb.tbuf(col_n, col_max, f32, "query_ids")
        if p.mask_bool:  # the GM mask's bytes become a bitmask: cast, compare with zero
            self.mask_h = buf("mask_h", cmp_s, cmp_max, 2, f16)
            if not self.by_min:
                self.zeros_h = buf("zeros_h", cmp_s, cmp_max, 2, f16)
        if self.neg_inf is not None:
            with kb.stage("compute"):
                if not self.by_min:
                    kb.insert(buffer.VDupOp(self.neg_inf, kb.f32(float("-inf")), tile_s))
                if self.zeros_h is not None:
                    kb.insert(buffer.VDupOp(self.zeros_h, kb.f16(0.0), cmp_s))
                if p.causal:
                    self._fill_ramp()
        row = self.row
        rt = {"tile_rows": t["tq"], "tile_stride": t["tile_stride"], "cols": c(dv)}
        out_logical = [t["B"], t["Hq"], t["Sq"]]
        if p.bsnd:
            out_logical = [t["B"], t["Sq"], t["Hq"]]
        rt |= {f"outer{i}": v for i, v in enumerate(out_logical)}
        row.attach(kb, {v: self.gm[v] for v in (*row.gm_inputs, *p.parts.outputs)}, rt)
        with kb.loop(first, last, "step") as step:
            row.start_pool(cast(Operation, kb.entry.last_op))
            self._step(step)

    # ---- one step: (batch, head, query block) ---------------------------------------------

    def _step(self, step: SSAValue) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        d, dv = p.head_dim, p.value_dim
        qi = idx.rem(step, t["qt"])
        bh = idx.floordiv(step, t["qt"])
        h = idx.rem(bh, t["Hq"])
        b = idx.floordiv(bh, t["Hq"])
        hk = idx.floordiv(h, t["group"])
        q0 = idx.mul(qi, t["tq"])
        nq = idx.min(t["tq"], idx.sub(t["Sq"], q0))
        nq.name_hint = "nq"
        self.b, self.h, self.hk, self.q0, self.nq_block = b, h, hk, q0, nq
        # the rows of the block this vector core takes: all on coupled chips; on split
        # chips sub-block sb takes rows [sb * half, ...) (the second may have none)
        self.r_lo, self.nq, self.has_rows = c(0), nq, None
        if self.sb is not None:
            half = idx.ceildiv(nq, c(2))
            self.r_lo = idx.min(idx.mul(self.sb, half), nq)
            self.nq = idx.min(half, idx.sub(nq, self.r_lo))
            self.nq.name_hint = "nq_mine"
            self.has_rows = kb.less(c(0), self.nq)
        q_row, q_stride = self._row_of(0, b, h, q0)
        with kb.stage("cube"):

            def fill_q1(slot: SSAValue) -> None:
                kb.copy(kb.view(self.gm[p.source(0)], q_row), slot, nq, c(d), q_stride, c(self.dp))

            q1 = fill_queue_slot(kb, self.q_l1, p.in_elt, fill_q1, "q1")
            kb.copy(q1, self.q_l0, nq, c(d), c(self.dp), c(d))
            free_queue_slot(kb, self.q_l1, q1)
        with self._mine(), kb.stage("compute"):
            count = idx.round_up(self.nq, 8)
            kb.insert(buffer.VDupOp(self.m_run, kb.f32(M_INIT), count))
            kb.insert(buffer.VDupOp(self.l_run, kb.f32(0.0), count))
            kb.insert(buffer.VDupOp(self.o_acc, kb.f32(0.0), idx.mul(self.nq, t["tile_stride"])))
        if p.positions is not None:
            with self._mine():
                self._load_ids(idx.add(q0, self.r_lo), self.nq, self.query_ids)
        if p.causal:
            end = idx.min(t["Skv"], idx.add(q0, nq))
            blocks = idx.ceildiv(end, t["tkv"])
            unmasked = idx.min(blocks, idx.floordiv(idx.add(q0, c(1)), t["tkv"]))
            with kb.loop(c(0), unmasked, "kv") as kv:
                self._kv_block(kv, masked=False)
            with kb.loop(unmasked, blocks, "kv") as kv:
                self._kv_block(kv, masked=True)
        else:
            with kb.loop(c(0), idx.ceildiv(t["Skv"], t["tkv"]), "kv") as kv:
                self._kv_block(kv, masked=False)
        # out = O / l (0 for a fully masked row), then the epilogue on the [nq x Dv] block
        with self._mine():
            with kb.stage("compute"):
                self._divide_by_sum()
            row = self.row
            row.preset_locs[p.raw] = Loc("tile", buf=self.o_acc)
            q_first = idx.add(q0, self.r_lo)
            if p.bsnd:
                r0 = idx.add(idx.mul(idx.add(idx.mul(b, t["Sq"]), q_first), t["Hq"]), h)
                row.emit_tile(r0, c(0), self.nq, c(dv), idx.mul(r0, c(dv)), idx.mul(t["Hq"], c(dv)))
            else:
                r0 = idx.add(idx.mul(idx.add(idx.mul(b, t["Hq"]), h), t["Sq"]), q_first)
                row.emit_tile(r0, c(0), self.nq, c(dv))

    def _divide_by_sum(self) -> None:
        """O = O / l over this core's rows (0 for a fully masked row: l is floored; NaN
        with masked_row "nan": one select on the row's factor where l = 0)."""
        kb, idx, c = self.kb, self.kb.idx, self.kb.idx.const
        count = idx.round_up(self.nq, 8)
        # 1 / l in place, or, where l is tested after, into row_sum (free after the last
        # key block, and after a combine's splits)
        inv = self.row_sum if self.p.nan_rows else self.l_run
        kb.scalar("maxs", inv, self.l_run, kb.f32(L_FLOOR), count)
        kb.unary("reciprocal", inv, inv, count)
        nan = kb.f32(math.nan) if self.p.nan_rows else None
        with kb.loop(c(0), self.nq, "r") as r:
            o_row = kb.view(self.o_acc, idx.mul(r, self.t["tile_stride"]))
            factor = kb.get(inv, r)
            if nan is not None:
                masked = arith.CmpfOp(kb.get(self.l_run, r), kb.f32(0.0), "oeq")
                kb.insert(masked)
                factor = kb.insert(arith.SelectOp(masked.result, nan, factor)).results[0]
            kb.scalar("muls", o_row, o_row, factor, c(self.p.value_dim))

    def _mine(self) -> AbstractContextManager[None]:
        """The vector work of this core's rows: skipped by an AIV that has none."""
        if self.has_rows is None:
            return contextlib.nullcontext()
        return self.kb.when(self.has_rows)

    def _row_of(
        self, operand: int, b: SSAValue, head: SSAValue, s0: SSAValue
    ) -> tuple[SSAValue, SSAValue]:
        """(element offset, row stride) of row s0 of head `head` of query (operand 0), key
        (1) or value (2): a BNSD/BSND tensor, or a view of one (attention_views.py)."""
        idx, c, t, p = self.kb.idx, self.kb.idx.const, self.t, self.p
        heads, seq = (t["Hq"], t["Sq"]) if operand == 0 else (t["Hkv"], t["Skv"])
        dim = p.value_dim if operand == 2 else p.head_dim
        view = p.views.get(operand)
        if view is not None:
            return view.row_of(idx, idx.add(idx.mul(b, seq), s0), head)
        if self.p.bsnd:
            at = idx.mul(idx.add(idx.mul(idx.add(idx.mul(b, seq), s0), heads), head), c(dim))
            return at, idx.mul(heads, c(dim))
        at = idx.mul(idx.add(idx.mul(idx.add(idx.mul(b, heads), head), seq), s0), c(dim))
        return at, c(dim)

    # ---- one key/value block ---------------------------------------------------------------

    def _kv_block(self, kv: SSAValue, masked: bool) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        d, dv = p.head_dim, p.value_dim
        nq, nq_v = self.nq_block, self.nq
        k0 = idx.mul(kv, t["tkv"])
        nkv = idx.min(t["tkv"], idx.sub(t["Skv"], k0))
        nkv.name_hint = "nkv"
        k_row, k_stride = self._row_of(1, self.b, self.hk, k0)
        v_row, v_stride = self._row_of(2, self.b, self.hk, k0)
        ws_s = ws_pv = ws_p = None
        if self.ws is not None and self.wsp is not None:
            per_core = idx.add(idx.mul(t["tq"], t["tkv"]), idx.mul(t["tq"], c(dv)))
            ws_s = kb.view(self.ws, idx.mul(self.bid, per_core))
            ws_pv = kb.view(ws_s, idx.mul(t["tq"], t["tkv"]))
            ws_p = kb.view(self.wsp, idx.mul(self.bid, idx.mul(t["tq"], t["tkv"])))
        # S = Q K^T on the cube
        with kb.stage("cube"):

            def fill_k1(slot: SSAValue) -> None:
                kb.copy(kb.view(self.gm[p.source(1)], k_row), slot, nkv, c(d), k_stride, c(self.dp))

            k1 = fill_queue_slot(kb, self.k_l1, p.in_elt, fill_k1, "k1")

            def fill_k2(slot: SSAValue) -> None:  # K^T: [D x nkv]
                kb.insert(buffer.CopyOp(k1, slot, nkv, c(d), c(self.dp), nkv, transpose=True))

            k2 = fill_queue_slot(kb, self.k_l0, p.in_elt, fill_k2, "k2")
            free_queue_slot(kb, self.k_l1, k1)
            s = kb.insert(buffer.QueueAllocOp(self.s_l0c, f32), "s").results[0]
            emit_mmad(kb, (s, self.q_l0, k2), (nq, nkv, c(d)), kb.i1(False))
            free_queue_slot(kb, self.k_l0, k2)
            if ws_s is not None:
                kb.copy(s, ws_s, nq, nkv, nkv, t["tkv"])
                free_queue_slot(kb, self.s_l0c, s)
                kb.insert(buffer.CrossCoreSetOp(S_READY, "aic", "fix"))
            else:
                kb.insert(buffer.EnqueOp(self.s_l0c, s))
        # this core's rows of the S tile in UB, scaled and masked; P = softmax block
        if ws_s is not None:
            kb.insert(buffer.CrossCoreWaitOp(S_READY, "aiv"))
        with self._mine():
            with kb.stage("copy_in"):
                self._rows_in(self.s_in, CubeResult(ws_s, t["tkv"], self.s_l0c), nkv, t["ts"], "s")
                if self.mask_in is not None:
                    self._load_mask(k0, nkv)
            if p.positions is not None:
                self._load_ids(k0, nkv, self.key_ids)
            with kb.stage("compute"):
                self._softmax_block(k0, nkv, masked)
        if self.wsp is not None:
            kb.insert(buffer.CrossCoreSetOp(P_READY, "aiv", "mte3"))
        # P @ V on the cube
        with kb.stage("cube"):

            def fill_v1(slot: SSAValue) -> None:
                kb.copy(
                    kb.view(self.gm[p.source(2)], v_row), slot, nkv, c(dv), v_stride, c(self.dvp)
                )

            p_l1 = kb.insert(buffer.QueueAllocOp(self.p_l1, p.in_elt), "p1").results[0]
            if ws_p is not None:
                kb.insert(buffer.CrossCoreWaitOp(P_READY, "aic"))
                kb.copy(ws_p, p_l1, nq, nkv, t["tkv"], t["tkv"])
            else:
                pd = kb.insert(buffer.DequeOp(self.p_out, p.in_elt), "p_ub").results[0]
                kb.copy(pd, p_l1, nq, nkv, t["ts"], t["tkv"])
                free_queue_slot(kb, self.p_out, pd)
            kb.insert(buffer.EnqueOp(self.p_l1, p_l1))
            p1 = kb.insert(buffer.DequeOp(self.p_l1, p.in_elt), "p1").results[0]

            def fill_p2(slot: SSAValue) -> None:
                kb.copy(p1, slot, nq, nkv, t["tkv"], nkv)

            v1 = fill_queue_slot(kb, self.v_l1, p.in_elt, fill_v1, "v1")

            def fill_v2(slot: SSAValue) -> None:
                kb.copy(v1, slot, nkv, c(dv), c(self.dvp), c(dv))

            p2 = fill_queue_slot(kb, self.p_l0, p.in_elt, fill_p2, "p2")
            v2 = fill_queue_slot(kb, self.v_l0, p.in_elt, fill_v2, "v2")
            free_queue_slot(kb, self.p_l1, p1)
            free_queue_slot(kb, self.v_l1, v1)
            pv = kb.insert(buffer.QueueAllocOp(self.pv_l0c, f32), "pv").results[0]
            emit_mmad(kb, (pv, p2, v2), (nq, c(dv), nkv), kb.i1(False))
            free_queue_slot(kb, self.p_l0, p2)
            free_queue_slot(kb, self.v_l0, v2)
            if ws_pv is not None:
                kb.copy(pv, ws_pv, nq, c(dv), c(dv), c(dv))
                free_queue_slot(kb, self.pv_l0c, pv)
                kb.insert(buffer.CrossCoreSetOp(PV_READY, "aic", "fix"))
            else:
                kb.insert(buffer.EnqueOp(self.pv_l0c, pv))
        # O = alpha * O + P V
        if ws_pv is not None:
            kb.insert(buffer.CrossCoreWaitOp(PV_READY, "aiv"))
        with self._mine():
            with kb.stage("copy_in"):
                pv_result = CubeResult(ws_pv, c(dv), self.pv_l0c)
                self._rows_in(self.pv_in, pv_result, c(dv), t["tile_stride"], "pv")
            with kb.stage("compute"):
                pvd = kb.insert(buffer.DequeOp(self.pv_in, f32), "pv_ub").results[0]
                with kb.loop(c(0), nq_v, "r") as r:
                    o_row = kb.view(self.o_acc, idx.mul(r, t["tile_stride"]))
                    kb.scalar("muls", o_row, o_row, kb.get(self.alpha, r), c(dv))
                kb.binary("add", self.o_acc, self.o_acc, pvd, idx.mul(nq_v, t["tile_stride"]))
                free_queue_slot(kb, self.pv_in, pvd)

    def _rows_in(
        self, queue: SSAValue, result: CubeResult, cols: SSAValue, ub_stride: SSAValue, name: str
    ) -> None:
        """This core's rows of an f32 cube result into a VECIN slot (row stride
        `ub_stride`): from the workspace (split chips, rows `ws_stride` apart), else the
        whole block from its L0C slot (coupled chips, rows `cols` apart)."""
        ws, ws_stride, l0c_queue = result.ws, result.ws_stride, result.l0c_queue
        kb, idx = self.kb, self.kb.idx
        slot = kb.insert(buffer.QueueAllocOp(queue, f32), f"{name}_ub").results[0]
        if ws is not None:
            src = kb.view(ws, idx.mul(self.r_lo, ws_stride))
            kb.copy(src, slot, self.nq, cols, ws_stride, ub_stride)
        else:  # CO1 -> CO2 of the whole block, then its rows out of the Nz fractals
            assert self.c_ub is not None
            c_slot = kb.insert(buffer.DequeOp(l0c_queue, f32), f"{name}_c").results[0]
            stride = kb.idx.const(self.c_ub_stride)
            copy_l0c_rows_to_co2(kb, c_slot, self.c_ub, self.nq_block, cols, stride)
            free_queue_slot(kb, l0c_queue, c_slot)
            kb.copy(self.c_ub, slot, self.nq_block, cols, stride, ub_stride)
        kb.insert(buffer.EnqueOp(queue, slot))

    def _softmax_block(self, k0: SSAValue, nkv: SSAValue, masked: bool) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        nq = self.nq
        ts = t["ts"]
        tile = idx.mul(nq, ts)
        s = kb.insert(buffer.DequeOp(self.s_in, f32), "s_ub").results[0]
        kb.scalar("muls", s, s, kb.f32(p.scale), tile)
        if self.mask_in is not None and p.mask is not None:
            me = element_type(p.mask)
            m = kb.insert(buffer.DequeOp(self.mask_in, me), "mask").results[0]
            per_row = not p.mask_pattern[2]
            rows = c(1) if per_row else nq
            if not p.mask_bool and self.mask_f32 is not None:
                kb.cast(self.mask_f32, m, idx.mul(rows, ts), "none")
                mf = self.mask_f32
            elif p.mask_bool and self.by_min:
                # the bound: (m - 0.5) * inf, +inf where the mask keeps a key, -inf
                # where it drops one (+/- the largest float under 910's saturation);
                # (m - 0.5) * -inf where a true mask hides the key
                assert self.mask_h is not None and self.neg_inf is not None
                count = idx.mul(rows, ts)
                kb.cast(self.mask_h, m, count, "none")
                kb.cast(self.neg_inf, self.mask_h, count, "none")
                kb.scalar("adds", self.neg_inf, self.neg_inf, kb.f32(-0.5), count)
                inf = float("-inf") if p.mask_hides else float("inf")
                kb.scalar("muls", self.neg_inf, self.neg_inf, kb.f32(inf), count)
                mf = self.neg_inf
            elif p.mask_bool:
                # keep where the mask is true (!= 0), or false (== 0) where true hides
                assert self.mask_h is not None and self.zeros_h is not None and self.cmp
                count = idx.mul(rows, ts)
                kb.cast(self.mask_h, m, count, "none")
                keep = "eq" if p.mask_hides else "ne"
                padded = idx.round_up(count, CMP_ELEMS)
                kb.insert(buffer.VCompareOp(keep, self.cmp, self.mask_h, self.zeros_h, padded))
                mf = self.cmp
            else:
                mf = m

            def apply(dst: SSAValue, mrow: SSAValue, count: SSAValue) -> None:
                if p.mask_bool and self.by_min:
                    kb.binary("min", dst, dst, mrow, count)
                elif p.mask_bool:
                    assert self.neg_inf is not None
                    kb.insert(buffer.VSelectOp(dst, mrow, dst, self.neg_inf, count))
                else:
                    kb.binary("add", dst, dst, mrow, count)

            if per_row:  # one mask row for every query row
                with kb.loop(c(0), nq, "r") as r:
                    apply(kb.view(s, idx.mul(r, ts)), mf, ts)
            else:
                apply(s, mf, tile)
            free_queue_slot(kb, self.mask_in, m)
        if masked:  # causal: key k0 + j is hidden from query q0 + r when j - r > q0 - k0
            q_first = idx.add(self.q0, self.r_lo)
            diff = arith.SubfOp(kb.index_to_f32(q_first), kb.index_to_f32(k0))
            kb.insert(buffer.VDupOp(self.threshold, kb.insert(diff).results[0], tile))
            self._hide_past_threshold(s, tile)
        if p.positions is not None:  # key j is hidden from query r when id_j - id_r > 0
            with kb.loop(c(0), nq, "r") as r:
                row = kb.view(self.ramp, idx.mul(r, ts))
                kb.scalar("adds", row, self.key_ids, kb.fneg(kb.get(self.query_ids, r)), ts)
            kb.insert(buffer.VDupOp(self.threshold, kb.f32(0.0), tile))
            self._hide_past_threshold(s, tile)
        # running max, rescaling factor, probabilities, running sum
        with kb.loop(c(0), nq, "r") as r:
            src = kb.view(s, idx.mul(r, ts))
            kb.insert(buffer.VReduceOp("max", self.red_dst, src, self.red_tmp, nkv))
            kb.set(self.row_max, r, kb.get(self.red_dst, c(0)))
        count = idx.round_up(nq, 8)
        kb.binary("max", self.m_new, self.m_run, self.row_max, count)
        kb.binary("sub", self.alpha, self.m_run, self.m_new, count)
        kb.unary("exp", self.alpha, self.alpha, count)
        kb.copy_1d(self.m_new, self.m_run, count)
        # P = exp(S - m') in place of S, then to the input type for the cube
        with kb.loop(c(0), nq, "r") as r:
            row = kb.view(s, idx.mul(r, ts))
            kb.scalar("adds", row, row, kb.fneg(kb.get(self.m_new, r)), ts)
        kb.unary("exp", s, s, tile)
        with kb.loop(c(0), nq, "r") as r:
            src = kb.view(s, idx.mul(r, ts))
            kb.insert(buffer.VReduceOp("sum", self.red_dst, src, self.red_tmp, nkv))
            kb.set(self.row_sum, r, kb.get(self.red_dst, c(0)))
        kb.binary("mul", self.l_run, self.l_run, self.alpha, count)
        kb.binary("add", self.l_run, self.l_run, self.row_sum, count)
        p_slot = kb.insert(buffer.QueueAllocOp(self.p_out, p.in_elt), "p").results[0]
        if p.in_elt == f32:
            kb.copy_1d(s, p_slot, tile)
        else:
            kb.cast(p_slot, s, tile, "rint")
        free_queue_slot(kb, self.s_in, s)
        kb.insert(buffer.EnqueOp(self.p_out, p_slot))
        if self.wsp is not None:
            # split chips: P to the workspace, where the cube stage reads it into L1
            pd = kb.insert(buffer.DequeOp(self.p_out, p.in_elt), "p_ub").results[0]
            per_core = idx.mul(t["tq"], t["tkv"])
            at = idx.add(idx.mul(self.bid, per_core), idx.mul(self.r_lo, t["tkv"]))
            dst = kb.view(self.wsp, at)
            kb.copy(pd, dst, nq, nkv, ts, t["tkv"])
            free_queue_slot(kb, self.p_out, pd)


def emit_attention_kernel(
    p: AttentionPlan, name: str, chip: ChipSpec, kind: type[AttentionKernel] = AttentionKernel
) -> tuple[buffer.KernelOp, AttentionKernel]:
    """The plan's kernel and its emitter (of class `kind`), at the first tile candidate
    whose kernel fits UB (the epilogue may need more working buffers than planned)."""
    while True:
        emitter = kind(p, name, chip)
        kernel = emitter.build()
        used = footprint(kernel).get("ub", 0)
        if used <= chip.ub_bytes or len(p.candidates) == 1:
            break
        p.candidates.pop(0)  # the epilogue needed more working buffers: smaller tiles
    for space, need in footprint(kernel).items():
        cap = chip.capacity(space)
        if cap is not None and need > cap:
            raise UserError(f"kernel {name} needs {need} bytes of {space}, {chip.name} has {cap}")
    kernel.attributes["afc.ub_bytes"] = graph.int_attr(footprint(kernel).get("ub", 0))
    return kernel, emitter
