"""The base of afc's fusion rewrites: a named rule that matches, checks, then rewrites.

A rule separates *matching* (does the IR have the pattern's shape?) from *legality*
(do its preconditions hold?) and *mechanics* (the rewrite), as MLIR's elementwise fusion
does. `match` returns None when the anchor op is not an instance of the pattern, a
`Refusal` with the reason when it is but a precondition fails, or a rule-specific match
object that `rewrite` consumes. Every match and application is counted in the pass's
`FusionStatistics` under the rule's CANN-style name, so that the switch file, the
statistics and the logs all speak of the same rules. `Refusal` is the fusion library's
(autofusion/fusion/cost.py), imported here for the rules and the kernel templates.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Generic, TypeVar

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from autofusion.fusion.cost import Refusal
from autofusion.passes.fusion_statistics import FusionStatistics, describe_op
from autofusion.passes.fusion_switch import GRAPH_FUSION

MatchT = TypeVar("MatchT")


class FusionRule(RewritePattern, ABC, Generic[MatchT]):
    """A named graph-level rewrite, counted in fusion statistics.

    Subclasses set `rule_name` (the identifier used by switch files and statistics,
    e.g. "ConvBatchnormFusionPass"), `pattern` (a short description for the logs),
    `anchors` (op types where a match is tried) and implement `match` and `rewrite`.
    """

    rule_name: ClassVar[str]
    pattern: ClassVar[str]
    anchors: ClassVar[tuple[type[Operation], ...]]
    kind: ClassVar[str] = GRAPH_FUSION
    # the core modes (ChipSpec.mode) whose chips run the op the rule makes; None: all.
    # A pass told its chip skips the rule elsewhere (its op would stay a library op
    # that chip does not have).
    chip_modes: ClassVar[tuple[str, ...] | None] = None
    # graph-fusion runs its rules phase by phase, each to a fixpoint: a rule of a later
    # phase sees only what the earlier phases' rules left (the FFN, the merged QKV)
    phase: ClassVar[int] = 0

    def __init__(self, statistics: FusionStatistics | None = None) -> None:
        self.statistics = statistics if statistics is not None else FusionStatistics()
        # a refused candidate is counted once, however often the walker revisits it
        self._refused: set[Operation] = set()

    @abstractmethod
    def match(self, op: Operation) -> MatchT | Refusal | None:
        """The match at anchor `op`, a Refusal with the failed precondition, or None."""

    @abstractmethod
    def rewrite(self, op: Operation, match: MatchT, rewriter: PatternRewriter) -> None:
        """Replace the matched ops; must make the match disappear (progress)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.anchors):
            return
        result = self.match(op)
        if result is None:
            return
        if isinstance(result, Refusal):
            if op not in self._refused:
                self._refused.add(op)
                self.statistics.refused(
                    self.kind, self.rule_name, self.pattern, describe_op(op), result.reason
                )
            return
        self.statistics.matched(self.kind, self.rule_name, self.pattern)
        # record what the rewrite creates and replaces (for `afc explain`)
        created: list[Operation] = []
        replaced: list[Operation] = []
        rewriter.operation_insertion_handler.append(created.append)
        rewriter.operation_removal_handler.append(replaced.append)
        try:
            self.rewrite(op, result, rewriter)
        finally:
            rewriter.operation_insertion_handler.remove(created.append)
            rewriter.operation_removal_handler.remove(replaced.append)
        self.statistics.effected(self.kind, self.rule_name, self.pattern)
        self.statistics.applied(self.rule_name, [op, *replaced], created)
