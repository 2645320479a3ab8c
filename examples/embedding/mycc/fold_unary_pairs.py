"""fold-unary-pairs: relu(relu(x)) -> relu(x), abs(abs(x)) -> abs(x), neg(neg(x)) -> x.

Exported models repeat activations (a framework's fused op followed by its unfused
spelling); each repeat would be one more vector instruction in the fused kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from autofusion import UserError
from autofusion.dialects import graph

# op -> what op(op(x)) is: the inner op's result (idempotent) or its operand (involution)
IDEMPOTENT = (graph.ReluOp, graph.AbsOp)
INVOLUTION = (graph.NegOp,)


class FoldUnaryPair(RewritePattern):
    """op(op(x)) for one of the ops above, by its value."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.UnaryOp, rewriter: PatternRewriter) -> None:
        inner = op.operands[0].owner
        if type(inner) is not type(op) or not isinstance(op, IDEMPOTENT + INVOLUTION):
            return
        assert isinstance(inner, graph.UnaryOp)
        value = inner.results[0] if isinstance(op, IDEMPOTENT) else inner.operands[0]
        rewriter.replace(op, [], [value])
        if not inner.results[0].uses:  # neg(neg(x)): the inner neg is dead now
            rewriter.erase(inner)


@dataclass(frozen=True)
class FoldUnaryPairsPass(ModulePass):
    """Fold repeated idempotent activations and double negations in the graph dialect."""

    name = "fold-unary-pairs"

    max_folds: int = 1000
    """Refuse modules with more pairs than this (a guard for the example's option)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_folds < 0:
            raise UserError("max-folds must be at least 0")
        pairs = [
            o
            for o in op.walk()
            if isinstance(o, IDEMPOTENT + INVOLUTION) and type(o.operands[0].owner) is type(o)
        ]
        if len(pairs) > self.max_folds:
            # located at the first pair: afc's errors name the op they are about
            raise UserError(
                f"{len(pairs)} unary pairs to fold, max-folds={self.max_folds}", pairs[0]
            )
        PatternRewriteWalker(FoldUnaryPair()).rewrite_module(op)
