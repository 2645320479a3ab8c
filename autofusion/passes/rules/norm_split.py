"""LayerNormSplitFusionPass, RmsNormSplitFusionPass: a norm into statistics and apply.

    y = layer_norm(x, scale[, bias])  ->  mean, rstd = layer_norm_stats(x)
                                          y = layer_norm_apply(x, mean, rstd, scale[, bias])
    y = rms_norm(x, scale)            ->  rstd = rms_norm_stats(x)
                                          y = rms_norm_apply(x, rstd, scale)

Variants: one apply for every user of y, or one apply per user (2 to max-duplicates
users), which each user's kernel then computes from x and the per-row statistics.

Where it pays under ub-fusion's legality: the statistics are a reduction with a
per-row ([R, 1]) output, so they fuse into the producer's kernel when that is a vector
kernel over the same rows (a residual add writing x); the apply is a broadcast op with no
reduction, so it fuses into a consumer's vector kernel. Both halves of a whole norm could
also fuse there, so the split only gains where the whole norm cannot go where its halves
can: x is written to GM anyway (the residual stream, a graph output, a cube op's
result), and y feeds kernels that cannot all be the norm's kernel (a cube op's epilogue
reads y from GM; kernels beyond the input or queue caps; reductions over other rows).
Then the kernel that wrote y disappears: its apply is recomputed where y is read, at the
price of the per-row statistics' round trip. A cube op cannot take the apply as a
prologue (cube ops read their operands from GM, cube_epilogue.py), so a norm feeding only
matmuls is left whole. The cost gate (split_cost.py) decides each case.

Any float input: the statistics are float32 (the ops' result type), as the whole norm
keeps them, so an f16/bf16 norm splits without rounding its mean and rstd.

Names: afc's, in CANN's style. The split mirrors MindSpore's Ascend ir_fission pass
BnSplit (BatchNorm -> BNTrainingReduce + BNTrainingUpdate), whose halves CANN's UB fusion
then fuses into the neighbouring convolutions (ZBNupdateReluV2Conv2DBNreducePass).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from autofusion.dialects import graph
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.rules.split_cost import (
    SplitFusionRule,
    is_compute_op,
    user_ops,
    users_in_order,
    uses_in,
)


@dataclass(frozen=True)
class NormSplit:
    norm: graph.LayerNormOp | graph.RmsNormOp
    users: tuple[Operation, ...]
    per_user: bool = False


class SplitNorm(SplitFusionRule[NormSplit]):
    """Shared matching of the layer and RMS norm splits."""

    norm_type: type[graph.LayerNormOp] | type[graph.RmsNormOp]

    def structure(self, op: Operation) -> NormSplit | Refusal | None:
        if not isinstance(op, self.norm_type) or not is_compute_op(op):
            return None
        users = users_in_order(op, user_ops(op.output))
        if isinstance(users, Refusal):
            return users
        if not users:
            return None
        return NormSplit(op, tuple(users))

    def core(self, op: Operation, match: NormSplit) -> list[Operation]:
        return [match.norm, *match.users]

    def variants(self, op: Operation, match: NormSplit) -> list[NormSplit]:
        found = [match]
        if 2 <= len(match.users) <= self.settings.max_duplicates:
            found.append(replace(match, per_user=True))
        return found

    def describe(self, match: NormSplit) -> str:
        if match.per_user:
            return f"split with one apply per user ({len(match.users)})"
        return "split"

    def rewrite(self, op: Operation, match: NormSplit, rewriter: PatternRewriter) -> None:
        norm = match.norm
        x = norm.input
        props = {"axis": norm.axis, "epsilon": norm.epsilon}
        if isinstance(norm, graph.LayerNormOp):
            stats = graph.LayerNormStatsOp.make([x], props)
            params = [norm.scale, *([norm.bias] if norm.bias is not None else [])]
            apply_type: type[graph.GraphOp] = graph.LayerNormApplyOp
        else:
            stats = graph.RmsNormStatsOp.make([x], props)
            params = [norm.scale]
            apply_type = graph.RmsNormApplyOp
        hint = norm.output.name_hint
        for r, what in zip(stats.results, ("mean", "rstd")[-len(stats.results) :]):
            r.name_hint = f"{hint}_{what}" if hint else what
        count = len(match.users) if match.per_user else 1
        applies = [
            apply_type.make([x, *stats.results, *params], {"axis": norm.axis}) for _ in range(count)
        ]
        for new in (stats, *applies):
            new.location = norm.location
        for a in applies:
            a.results[0].name_hint = hint
        rewriter.insert([stats, *applies], InsertPoint.before(norm))
        if match.per_user:
            for user, a in zip(match.users, applies):
                rewriter.replace_uses_with_if(norm.output, a.results[0], uses_in(user))
        else:
            rewriter.replace_all_uses_with(norm.output, applies[0].results[0])
        rewriter.erase(norm)


class SplitLayerNorm(SplitNorm):
    rule_name = "LayerNormSplitFusionPass"
    pattern = "LayerNorm->LayerNormStats+LayerNormApply"
    anchors = (graph.LayerNormOp,)
    norm_type = graph.LayerNormOp


class SplitRmsNorm(SplitNorm):
    rule_name = "RmsNormSplitFusionPass"
    pattern = "RmsNorm->RmsNormStats+RmsNormApply"
    anchors = (graph.RmsNormOp,)
    norm_type = graph.RmsNormOp
