"""`graph-fusion`: every graph-fusion rule, applied to a fixpoint.

    afc-opt model.mlir -p 'graph-fusion{switch-file="switch.cfg" only=ConvBatchnormFusionPass}'

The rules are math-preserving rewrites (Conv+BN folding, bias and activation epilogues,
norm/GELU/SiLU recognition, attention -> flash attention, QKV merge, ...); see
autofusion/passes/rules/. Options: `switch-file` (CANN fusion_switch.cfg), `only`
(names of the rules to run), `stats-file` (write fusion_result.json), `log` (print
CANN-style statistics lines to stderr). With a module target (set-target), the rules
whose fused op that chip does not run are skipped; without one every rule runs, as on
the default chip (every rule's op runs there).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)

from autofusion.dialects.target import ReadsTarget, module_target
from autofusion.passes.fusion_rule import FusionRule
from autofusion.passes.fusion_statistics import FusionStatistics
from autofusion.passes.rule_registry import graph_fusion_rules, select_rules


def run_rules(
    module: ModuleOp, rules: Sequence[type[FusionRule]], statistics: FusionStatistics
) -> None:
    """Apply `rules` to a fixpoint; dead ops left behind by rewrites are erased."""
    patterns: list[RewritePattern] = [rule(statistics) for rule in rules]
    if patterns:
        walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns), apply_recursively=True)
        walker.rewrite_module(module)
    # every enabled rule appears in the statistics, matched or not
    for rule in rules:
        statistics.rule(rule.kind, rule.rule_name, rule.pattern)


def report(statistics: FusionStatistics, stats_file: str | None, log: bool) -> None:
    if stats_file is not None:
        statistics.write_json(stats_file)
    if log:
        for line in statistics.log_lines():
            print(line, file=sys.stderr)


@dataclass(frozen=True)
class GraphFusionPass(ReadsTarget, ModulePass):
    """Math-preserving graph fusion rewrites, to a fixpoint."""

    name = "graph-fusion"

    switch_file: str | None = None
    """CANN fusion switch file (JSON or `Name:off` lines); its GraphFusion section applies."""
    only: tuple[str, ...] = ()
    """Run just these rules (by name), e.g. only=LayerNormFusionPass,GeluFusionPass."""
    stats_file: str | None = None
    """Write the statistics as fusion_result.json here."""
    log: bool = False
    """Print CANN-format statistics lines (and refusal reasons) to stderr."""

    def run(self, module: ModuleOp) -> FusionStatistics:
        """Apply the pass and return its statistics (for drivers that embed it)."""
        statistics = FusionStatistics()
        target = module_target(module)
        rules = select_rules(graph_fusion_rules(), self.switch_file, self.only, target)
        for phase in sorted({r.phase for r in rules}):
            run_rules(module, [r for r in rules if r.phase == phase], statistics)
        return statistics

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        report(self.run(op), self.stats_file, self.log)
