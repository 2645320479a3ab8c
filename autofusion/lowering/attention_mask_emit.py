"""The attention kernel's masking (attention_emit.py's AttentionKernel builds on it): the
mask block's load by its broadcast pattern, the position ids of a causal mask by
position, and the causal ramp and threshold that hide a query's later keys.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from autofusion.dialects import buffer
from autofusion.lowering.attention_plan import AttentionPlan
from autofusion.lowering.attention_tiling import CMP_ELEMS
from autofusion.lowering.cube_common import CubeKernel, free_queue_slot
from autofusion.lowering.value_types import element_type


class AttentionMasking(CubeKernel):
    """The masking steps of the attention kernel; the state they read is set up by
    AttentionKernel._body (queues, UB buffers) and _step (the step's coordinates)."""

    p: AttentionPlan
    mask_in: SSAValue | None  # the mask block's queue (a mask operand)
    pos_in: SSAValue | None  # the position ids' queue (a causal mask by position)
    key_ids: SSAValue
    neg_inf: SSAValue | None
    by_min: bool  # 910: hide by Min with a scaled bound, not Compare + Select
    cmp: SSAValue | None
    ramp: SSAValue
    threshold: SSAValue
    b: SSAValue
    h: SSAValue
    q0: SSAValue
    r_lo: SSAValue
    nq: SSAValue

    def _fill_ramp(self) -> None:
        """ramp[r, j] = j - r (float32) over the largest tile (causal diagonal blocks)."""
        kb, idx, t = self.kb, self.kb.idx, self.t
        with kb.loop(idx.const(0), t["ts"], "j") as j:
            kb.set(self.ramp, j, kb.index_to_f32(j))
        with kb.loop(idx.const(1), t["tq"], "r") as r:
            row = kb.view(self.ramp, idx.mul(r, t["ts"]))
            kb.scalar("adds", row, self.ramp, kb.fneg(kb.index_to_f32(r)), t["ts"])

    def _load_mask(self, k0: SSAValue, nkv: SSAValue) -> None:
        """The mask block [nq (or 1) x nkv] in UB (row stride ts), by the broadcast pattern."""
        kb, idx, t, p = self.kb, self.kb.idx, self.t, self.p
        c = idx.const
        assert p.mask is not None and self.mask_in is not None
        vb, vh, vq = p.mask_pattern
        at = self.b if vb else c(0)
        at = idx.add(idx.mul(at, t["Hq"] if vh else c(1)), self.h if vh else c(0))
        q_first = idx.add(self.q0, self.r_lo)
        at = idx.add(idx.mul(at, t["Sq"] if vq else c(1)), q_first if vq else c(0))
        at = idx.add(idx.mul(at, t["Skv"]), k0)
        me = element_type(p.mask)
        slot = kb.insert(buffer.QueueAllocOp(self.mask_in, me), "mask").results[0]
        rows = self.nq if vq else c(1)
        kb.copy(kb.view(self.gm[p.mask], at), slot, rows, nkv, t["Skv"], t["ts"])
        kb.insert(buffer.EnqueOp(self.mask_in, slot))

    def _load_ids(self, first: SSAValue, n: SSAValue, dst: SSAValue) -> None:
        """Position ids [first, first + n) as float32 into `dst` (exact below 2^24), the
        rest of its `ts` columns 0 (a key block's padding is compared too)."""
        kb, c, p = self.kb, self.kb.idx.const, self.p
        assert p.positions is not None and self.pos_in is not None
        pe = element_type(p.positions)
        with kb.stage("copy_in"):
            slot = kb.insert(buffer.QueueAllocOp(self.pos_in, pe), "ids").results[0]
            kb.copy(kb.view(self.gm[p.positions], first), slot, c(1), n, n, n)
            kb.insert(buffer.EnqueOp(self.pos_in, slot))
        with kb.stage("compute"):
            ids = kb.insert(buffer.DequeOp(self.pos_in, pe), "ids").results[0]
            if dst is self.key_ids:
                kb.insert(buffer.VDupOp(dst, kb.f32(0.0), self.t["ts"]))
            with kb.loop(c(0), n, "i") as i:
                kb.set(dst, i, kb.insert(arith.SIToFPOp(kb.get(ids, i), f32)).results[0])
            free_queue_slot(kb, self.pos_in, ids)

    def _hide_past_threshold(self, s: SSAValue, tile: SSAValue) -> None:
        """S = -inf where ramp > threshold (by Compare + Select, or on 910 by Min with
        the bound (threshold - ramp + 0.5) * inf: the ramp and threshold are integers)."""
        kb, idx = self.kb, self.kb.idx
        assert self.neg_inf is not None
        if self.by_min:
            kb.binary("sub", self.threshold, self.threshold, self.ramp, tile)
            kb.scalar("adds", self.threshold, self.threshold, kb.f32(0.5), tile)
            kb.scalar("muls", self.threshold, self.threshold, kb.f32(float("inf")), tile)
            kb.binary("min", s, s, self.threshold, tile)
        else:
            assert self.cmp is not None
            compared = idx.round_up(tile, CMP_ELEMS)
            kb.insert(buffer.VCompareOp("gt", self.cmp, self.ramp, self.threshold, compared))
            kb.insert(buffer.VSelectOp(s, self.cmp, self.neg_inf, s, tile))
