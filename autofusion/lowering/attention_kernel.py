"""The `attention` template: a FlashAttentionOp (BNSD or BSND, GQA, bool/float mask or
position ids, causal, scale) plus an elementwise epilogue, as one cube + vector kernel.

One step is one (batch b, query head h, query block of tq rows). The query block stays
in L0A for the whole step; key/value blocks of tkv rows stream through L1 and the online
softmax (running max m and sum l, rescaling by alpha = exp(m_old - m_new)) runs in
float32 on the vector unit:

    S   = Q_blk @ K_blk^T                      cube: K block loaded to L0B transposed
    S   = scale * S (+ mask | where(mask, S, -inf)) (causal: -inf where key > query)
    m'  = max(m, rowmax S);  alpha = exp(m - m');  P = exp(S - m')
    l   = alpha * l + rowsum P;  O = alpha * O + P @ V     cube: P (input type) in L0A
    out = O / l  -> epilogue -> GM

S and P@V leave L0C for UB directly on coupled chips (CO2 is UB, ascend.md 1.7: whole Nz
fractals into a stage, then laid out as rows UB -> UB) and P goes UB -> L1 (fractal
strips, docs/codegen.md); 910, which has no Select with a tensor mask, masks with Min
against +-inf bounds; on split chips (2201) all three cross through per-core GM workspaces (AIC
and AIV exchange data only through GM, ascend.md 1.1, 4), each hand-over a cross-core
flag (S ready, P ready, P@V ready), and the two AIVs of a block take half of each query
block's rows each (`buffer.sub_block_idx`; the second may have none). A fully masked
query row keeps l = 0 and O = 0 and gives 0 (l is floored before the division). GQA: query head h reads
key/value head h // (Hq / Hkv). The mask broadcasts to [B, Hq, Sq, Skv]: any of its
batch, head and query dims may be 1, its key dim must be Skv. Causal attention is
top-left aligned: key blocks past the query block's last row are skipped, blocks that
straddle the diagonal are masked with a (key - query) ramp built once per core. A
causal mask by position (integer mask: the position ids) loads the query block's ids
once per step and each key block's ids with it, as float32 (exact below 2^24), and
hides the keys whose id minus the query's is > 0, through the same ramp (needs
DataCopyPad: the ids' runs are not 32-byte multiples).

Tiling (static bounds `choose_attention_tiles`, runtime values `attention_tiling`):

    tq  = min(baseQ, round16(Sq)); qt = ceil(Sq / tq); tkv = min(baseKV, round16(Skv))
    ts  = round_up(tkv, 32)  UB row stride of S/P/mask tiles (32 B for an i1 mask row)
    with  tq*D*w + 2*tq*tkv*w <= L0A;  2*tkv*(D + Dv)*w <= L0B;  tq*(tkv + Dv)*4 <= L0C;
          tq*D*w + 2*tkv*(D + Dv)*w + 2*tq*tkv*w <= L1;  the softmax buffers and the
          epilogue's [tq x Dv] tile fit UB
    steps = B * Hq * qt (query blocks fastest); blocks = min(steps, cores)
    kv blocks of step (q0 = qi*tq, nq rows): ceil(min(Skv, q0+nq) / tkv) when causal,
    of which the first min(that, (q0+1) // tkv) need no mask; else ceil(Skv / tkv)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from xdsl.builder import Builder
from xdsl.ir import SSAValue

from autofusion.dialects.group_plan import TilingValue
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_cost import attention_cost
from autofusion.lowering.attention_emit import emit_attention_kernel
from autofusion.lowering.attention_host import attention_launch, attention_tiling_function
from autofusion.lowering.attention_plan import AttentionPlan, cube_bytes, plan_attention
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.recorded_tiling import EPILOGUE_TILE
from autofusion.lowering.template import GroupParts, HostLaunch, KernelCost, KernelTemplate, Lowered
from autofusion.passes.fusion_rule import Refusal


class AttentionTemplate(KernelTemplate[AttentionPlan]):
    """A graph.flash_attention and its elementwise epilogue as one cube kernel; the
    concerns live in attention_plan, attention_tiling, attention_cost, attention_emit
    and attention_host."""

    name = "attention"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> AttentionPlan | Refusal:
        return plan_attention(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> AttentionPlan | Refusal:
        return plan_attention(parts, chip, tiling)

    def tiling(self, plan: AttentionPlan) -> dict[str, TilingValue]:
        return {**asdict(plan.tiles), EPILOGUE_TILE: plan.rows.max_tile_elems}

    def footprint(self, plan: AttentionPlan, chip: ChipSpec) -> dict[str, int]:
        return {**cube_bytes(plan, plan.tiles, chip), "ub": self.cost(plan, chip).ub_bytes}

    def cost(
        self, plan: AttentionPlan, chip: ChipSpec, dims: Sequence[int] | None = None
    ) -> KernelCost:
        return attention_cost(plan, chip, dims)

    def lower(self, plan: AttentionPlan, name: str, chip: ChipSpec) -> Lowered:
        kernel, emitter = emit_attention_kernel(plan, name, chip)
        tiling = attention_tiling_function(plan, name, chip)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: AttentionPlan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        return attention_launch(plan, b, idx, outside)
