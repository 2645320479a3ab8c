"""The decode-attention kernel's IR: the attention kernel's key/value block (S = Q K^T,
the online softmax, O += P V) over one split of the key range per step, the step's
partial (O, m, l) to a GM workspace, `buffer.sync_all`, then the combine of every
split's partial and the epilogue (decode_attention_kernel.py docstring).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer
from autofusion.lowering.attention_emit import M_INIT, AttentionKernel, CubeResult
from autofusion.lowering.cube_common import fill_queue_slot, free_queue_slot
from autofusion.lowering.decode_attention_plan import DecodeAttentionPlan
from autofusion.lowering.decode_attention_tiling import DECODE_PARAMS
from autofusion.lowering.row_vector_math import Loc
from autofusion.lowering.value_types import element_type


class DecodeAttentionKernel(AttentionKernel):
    """Builds the buffer.kernel of a DecodeAttentionPlan: the attention kernel's setup
    and key/value blocks, with its steps (item, split) and a combine after a SyncAll."""

    template = "decode_attention"
    p: DecodeAttentionPlan

    def params(self) -> Sequence[str]:
        return DECODE_PARAMS

    def _body(self) -> None:
        kb, t = self.kb, self.t
        self.part = kb.insert(buffer.WorkspaceOp(t["part_bytes"], f32), "ws_part").results[0]
        super()._body()  # queues, buffers, the epilogue's residents; the steps
        # every split's partial is in GM before any core combines (SyncAll drains the pipes)
        kb.insert(buffer.SyncAllOp())
        first = kb.idx.mul(self.bid, t["combine_per_core"])
        last = kb.idx.min(kb.idx.add(first, t["combine_per_core"]), t["items"])
        with kb.loop(first, last, "item") as item:
            self.row.start_pool(cast(Operation, kb.entry.last_op))
            self._combine(item)

    def _item(self, item: SSAValue) -> None:
        """Batch, KV head and query rows of query tile `item` (B * Hkv of them): the
        Hq/Hkv heads of KV head hk, Sq rows each, contiguous in BNSD (and in BSND, where
        Sq = 1); on split chips sub-block sb takes rows [sb * half, ...), half a multiple
        of 8 so that the two AIVs' m and l partials never share a 32-byte GM block."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        c = idx.const
        self.b = idx.floordiv(item, t["Hkv"])
        self.hk = idx.rem(item, t["Hkv"])
        self.h = idx.mul(self.hk, t["group"])
        self.q0 = c(0)
        nq = idx.mul(t["group"], t["Sq"])
        nq.name_hint = "nq"
        self.nq_block, self.r_lo, self.nq, self.has_rows = nq, c(0), nq, None
        if self.sb is not None:
            half = idx.round_up(idx.ceildiv(nq, c(2)), 8)
            self.r_lo = idx.min(idx.mul(self.sb, half), nq)
            self.nq = idx.min(half, idx.sub(nq, self.r_lo))
            self.nq.name_hint = "nq_mine"
            self.has_rows = kb.less(c(0), self.nq)

    def _reset(self) -> None:
        """m = lowest, l = 0, O = 0 over this core's rows."""
        kb, idx = self.kb, self.kb.idx
        count = idx.round_up(self.nq, 8)
        kb.insert(buffer.VDupOp(self.m_run, kb.f32(M_INIT), count))
        kb.insert(buffer.VDupOp(self.l_run, kb.f32(0.0), count))
        kb.insert(buffer.VDupOp(self.o_acc, kb.f32(0.0), idx.mul(self.nq, self.t["tile_stride"])))

    # ---- a step: one split of one query tile's keys -------------------------------------

    def _step(self, step: SSAValue) -> None:
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        d, dv = p.head_dim, p.value_dim
        split = idx.rem(step, t["splits"])
        self._item(idx.floordiv(step, t["splits"]))
        q_row = idx.mul(idx.add(idx.mul(self.b, t["Hq"]), self.h), idx.mul(t["Sq"], c(d)))
        with kb.stage("cube"):

            def fill_q1(slot: SSAValue) -> None:
                src = kb.view(self.gm[p.q], q_row)
                kb.copy(src, slot, self.nq_block, c(d), c(d), c(self.dp))

            q1 = fill_queue_slot(kb, self.q_l1, p.in_elt, fill_q1, "q1")
            kb.copy(q1, self.q_l0, self.nq_block, c(d), c(self.dp), c(d))
            free_queue_slot(kb, self.q_l1, q1)
        with self._mine(), kb.stage("compute"):
            self._reset()
        k_start = idx.mul(split, t["chunk"])
        k_end = idx.min(t["Skv"], idx.add(k_start, t["chunk"]))
        first = idx.floordiv(k_start, t["tkv"])
        with kb.loop(first, idx.ceildiv(k_end, t["tkv"]), "kv") as kv:
            self._kv_block(kv, masked=False)
        # the step's partial: O (unnormalised), m and l of this core's rows
        with self._mine(), kb.stage("copy_out"):
            at = idx.mul(step, t["slot"])
            acc = kb.view(self.part, idx.add(at, idx.mul(self.r_lo, c(dv))))
            kb.copy(self.o_acc, acc, self.nq, c(dv), t["tile_stride"], c(dv))
            for i, col in enumerate((self.m_run, self.l_run)):
                col_at = idx.add(idx.mul(t["tq"], c(dv + i)), self.r_lo)
                kb.copy_1d(col, kb.view(self.part, idx.add(at, col_at)), self.nq)

    def _load_mask(self, k0: SSAValue, nkv: SSAValue) -> None:
        """The mask block in UB (row stride ts): one row for every query row when the
        mask does not vary over the queries, else the row of each query row's position
        (tile row r is query (r_lo + r) mod Sq; the mask never varies over heads here)."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        assert p.mask is not None and self.mask_in is not None
        vb, _, vq = p.mask_pattern
        base = idx.mul(self.b, t["Sq"] if vq else c(1)) if vb else c(0)
        dst = kb.insert(buffer.QueueAllocOp(self.mask_in, element_type(p.mask)), "mask").results[0]
        if vq:
            with kb.loop(c(0), self.nq, "r") as r:
                s = idx.rem(idx.add(self.r_lo, r), t["Sq"])
                at = idx.add(idx.mul(idx.add(base, s), t["Skv"]), k0)
                src = kb.view(self.gm[p.mask], at)
                kb.copy(src, kb.view(dst, idx.mul(r, t["ts"])), c(1), nkv, t["Skv"], t["ts"])
        else:
            at = idx.add(idx.mul(base, t["Skv"]), k0)
            kb.copy(kb.view(self.gm[p.mask], at), dst, c(1), nkv, t["Skv"], t["ts"])
        kb.insert(buffer.EnqueOp(self.mask_in, dst))

    # ---- the combine: every split's partial of one query tile -----------------------------

    def _combine(self, item: SSAValue) -> None:
        """m = max_i m_i, l = sum_i exp(m_i - m) l_i, O = sum_i exp(m_i - m) O_i, as a
        running rescale over the splits; out = O / l, then the epilogue."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        dv = p.value_dim
        self._item(item)
        with self._mine():
            with kb.stage("compute"):
                self._reset()
            with kb.loop(c(0), t["splits"], "split") as split:
                at = idx.mul(idx.add(idx.mul(item, t["splits"]), split), t["slot"])
                with kb.stage("copy_in"):
                    for i, col in enumerate((self.row_max, self.row_sum)):
                        col_at = idx.add(idx.mul(t["tq"], c(dv + i)), self.r_lo)
                        kb.copy_1d(kb.view(self.part, idx.add(at, col_at)), col, self.nq)
                    part = CubeResult(kb.view(self.part, at), c(dv), self.pv_l0c)
                    self._rows_in(self.pv_in, part, c(dv), t["tile_stride"], "acc")
                with kb.stage("compute"):
                    self._rescale()
            with kb.stage("compute"):
                self._divide_by_sum()
            self.row.preset_locs[p.raw] = Loc("tile", buf=self.o_acc)
            # tile row r is output row (b * Hq + h) * Sq + r in BNSD and BSND (Sq = 1) alike
            head_row = idx.mul(idx.add(idx.mul(self.b, t["Hq"]), self.h), t["Sq"])
            self.row.emit_tile(idx.add(head_row, self.r_lo), c(0), self.nq, c(dv))

    def _rescale(self) -> None:
        """One split's partial (m_i in row_max, l_i in row_sum, O_i in the VECIN slot)
        into the running m, l and O."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        c, dv = idx.const, self.p.value_dim
        count = idx.round_up(self.nq, 8)
        kb.binary("max", self.m_new, self.m_run, self.row_max, count)
        kb.binary("sub", self.alpha, self.m_run, self.m_new, count)
        kb.unary("exp", self.alpha, self.alpha, count)
        kb.binary("sub", self.row_max, self.row_max, self.m_new, count)
        kb.unary("exp", self.row_max, self.row_max, count)  # beta = exp(m_i - m')
        kb.copy_1d(self.m_new, self.m_run, count)
        kb.binary("mul", self.l_run, self.l_run, self.alpha, count)
        kb.binary("mul", self.row_sum, self.row_sum, self.row_max, count)
        kb.binary("add", self.l_run, self.l_run, self.row_sum, count)
        acc = kb.insert(buffer.DequeOp(self.pv_in, f32), "acc_ub").results[0]
        with kb.loop(c(0), self.nq, "r") as r:
            o_row = kb.view(self.o_acc, idx.mul(r, t["tile_stride"]))
            kb.scalar("muls", o_row, o_row, kb.get(self.alpha, r), c(dv))
            a_row = kb.view(acc, idx.mul(r, t["tile_stride"]))
            kb.scalar("muls", a_row, a_row, kb.get(self.row_max, r), c(dv))
        kb.binary("add", self.o_acc, self.o_acc, acc, idx.mul(self.nq, t["tile_stride"]))
        free_queue_slot(kb, self.pv_in, acc)
