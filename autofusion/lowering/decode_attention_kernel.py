"""The `decode_attention` template (flash-decoding): a FlashAttentionOp with few query
rows per key/value head and a long key range, plus an elementwise epilogue, as one cube +
vector kernel that splits the keys over the cores.

A query tile (an *item*) is the Hq/Hkv heads of one KV head, Sq rows each (GQA: they
share every K/V block, read once), at most 128 rows. With B * Hkv items on C cores, each
item's keys are cut into `splits` chunks of whole key blocks (splits ~ C / (B * Hkv)),
and one step is one (item, split). The two phases meet at a SyncAll<false> (ascend.md:
the hard all-core sync of Atlas A2/A3; so split chips only, blocks <= cube cores):

    steps:    the attention template's online softmax over the chunk's key blocks
              (attention_emit.AttentionKernel._kv_block), leaving the unnormalised
              O_i [rows x Dv], the row max m_i and the row sum l_i in a GM workspace
    SyncAll
    combine:  per item, over its splits: m' = max(m, m_i), a = exp(m - m'),
              b = exp(m_i - m'), l = a l + b l_i, O = a O + b O_i;  out = O / l,
              then the epilogue (the two AIVs of a block take half the rows each)

Not taken (the attention template is): coupled chips, causal attention (top-left
aligned, a query block's own key range), masks that vary over the heads, BSND with
Sq > 1, more than 128 query rows per KV head, dynamic head counts or Sq. The cost model
chooses: the template plans a group only when its keys split at least two ways and its
estimated time beats the attention template's (decode_attention_cost; long Skv with few
B * Hkv items wins).

Tiling (`decode_tiling`): tq = round16(Hq/Hkv * Sq), tkv as the attention template's,
items = B * Hkv, chunk = ceil(kv_blocks / min(kv_blocks, C // items)) * tkv,
splits = ceil(Skv / chunk), steps = items * splits, blocks = min(steps, C).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autofusion.dialects.group_plan import TilingValue
from autofusion.fusion.cost import kernel_time
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_cost import attention_cost
from autofusion.lowering.attention_emit import emit_attention_kernel
from autofusion.lowering.attention_kernel import AttentionTemplate
from autofusion.lowering.attention_plan import AttentionPlan
from autofusion.lowering.decode_attention_cost import decode_attention_cost, decode_sizes
from autofusion.lowering.decode_attention_emit import DecodeAttentionKernel
from autofusion.lowering.decode_attention_host import decode_tiling_function
from autofusion.lowering.decode_attention_plan import DecodeAttentionPlan, plan_decode_attention
from autofusion.lowering.template import GroupParts, KernelCost, Lowered, NotApplicable
from autofusion.passes.fusion_rule import Refusal


class DecodeAttentionTemplate(AttentionTemplate):
    """Flash-decoding; the attention template's footprint, tiling record and launch
    values, with its own plan, cost and kernel (decode_attention_plan, _cost, _emit)."""

    name = "decode_attention"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> DecodeAttentionPlan | Refusal:
        plan = plan_decode_attention(parts, chip)
        if isinstance(plan, Refusal) or plan.attention is None:
            return plan
        if decode_sizes(plan, chip).values["splits"] < 2:  # attention with a SyncAll more
            return NotApplicable(
                "the keys make one split (one key block, or B * Hkv fills the cores)"
            )
        mine = kernel_time(decode_attention_cost(plan, chip), chip).total_us
        theirs = kernel_time(attention_cost(plan.attention, chip), chip).total_us
        if mine >= theirs:
            return NotApplicable(
                f"the attention template is estimated faster ({theirs:.2f} us, splitting "
                f"the keys {mine:.2f} us)"
            )
        return plan

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> DecodeAttentionPlan | Refusal:
        return plan_decode_attention(parts, chip, tiling)

    def cost(
        self, plan: AttentionPlan, chip: ChipSpec, dims: Sequence[int] | None = None
    ) -> KernelCost:
        assert isinstance(plan, DecodeAttentionPlan)
        return decode_attention_cost(plan, chip, dims)

    def lower(self, plan: AttentionPlan, name: str, chip: ChipSpec) -> Lowered:
        assert isinstance(plan, DecodeAttentionPlan)
        kernel, emitter = emit_attention_kernel(plan, name, chip, DecodeAttentionKernel)
        return Lowered(
            kernel, decode_tiling_function(plan, name, chip), emitter.kernel_inputs, emitter
        )
