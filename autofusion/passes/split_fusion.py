"""`split-fusion`: split ops so that each part can fuse with a different neighbour.

    afc-opt model.mlir -p 'set-target{chip=Ascend910B1},graph-fusion,split-fusion,ub-fusion'

The rewrites (autofusion/passes/rules/norm_split.py, concat_split.py,
producer_duplicate.py) are math preserving. Each is applied only where the cost model
says it pays: the kernels ub-fusion would likely form around the candidate are
estimated with and without the rewrite (rules/split_cost.py) by the fusion library's
Partitioner under the policy ub-fusion's options make, so run it before ub-fusion
with the same `max-ops`, `max-inputs`, `dynamic-size` and `switch-file` (the chip is
the module's target, which both read; `afc compile -O N` passes both the same).
docs/split-fusion.md describes the rules and the criterion.

Options: ub-fusion's policy options (fusion_policy_options.py; the switch file's
GraphFusion section also switches these rules); as graph-fusion's, `only`,
`stats-file`, `log`; and `max-duplicates` (the most copies a split may make of one op).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)

from autofusion.diagnostics import UserError
from autofusion.dialects.target import ReadsTarget, resolve_target
from autofusion.passes.fusion_policy_options import FusionPolicyOptions
from autofusion.passes.fusion_statistics import FusionStatistics
from autofusion.passes.graph_fusion import report
from autofusion.passes.rule_registry import select_rules, split_fusion_rules


@dataclass(frozen=True)
class SplitFusionPass(ReadsTarget, FusionPolicyOptions, ModulePass):
    """Cost-gated splits: norm statistics/apply, concat before a cube op, cheap producers."""

    name = "split-fusion"

    only: tuple[str, ...] = ()
    """Run just these rules (by name), e.g. only=LayerNormSplitFusionPass."""
    stats_file: str | None = None
    """Write the statistics as fusion_result.json here."""
    log: bool = False
    """Print CANN-format statistics lines (and refusal reasons) to stderr."""
    max_duplicates: int = 4
    """At most this many users per split op: one copy (of a producer or a norm's apply)
    is made per user, so this bounds the code a split duplicates."""

    def run(self, module: ModuleOp) -> FusionStatistics:
        """Apply the pass and return its statistics (for drivers that embed it)."""
        from autofusion.lowering.fitted_tiling import fits_remembered
        from autofusion.passes.rules.split_cost import CostSettings, SplitFusionRule

        if self.max_duplicates < 2:
            raise UserError("max-duplicates must be at least 2")
        policy = self.fusion_policy()
        rules = select_rules(split_fusion_rules(), self.switch_file, self.only)
        settings = CostSettings(
            chip=resolve_target(module, self.name),  # after the options: one line on bad input
            policy=policy,
            max_duplicates=self.max_duplicates,
        )
        statistics = FusionStatistics()
        patterns: list[RewritePattern] = [
            rule(statistics, settings) if issubclass(rule, SplitFusionRule) else rule(statistics)
            for rule in rules
        ]
        if patterns:
            walker = PatternRewriteWalker(
                GreedyRewritePatternApplier(patterns), apply_recursively=True
            )
            with fits_remembered():  # the cost gate plans like neighbourhoods again and again
                walker.rewrite_module(module)
        # every enabled rule appears in the statistics, matched or not
        for rule in rules:
            statistics.rule(rule.kind, rule.rule_name, rule.pattern)
        return statistics

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        report(self.run(op), self.stats_file, self.log)
