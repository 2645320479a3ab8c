"""ProducerDuplicateFusionPass: a cheap producer with several users, copied into each.

    p = f(a, ...)                 p1 = f(a, ...);  u1(p1)
    u1(p);  u2(p)        ->       p2 = f(a, ...);  u2(p2)

Producers: elementwise and broadcast ops (a cast, an add of a constant, an activation,
an expand, a norm's apply) and reshapes, with 2 to max-duplicates users; the first user
keeps the original, every other user gets a copy placed right after it.

Why: ub-fusion fuses a producer into one kernel; with users in several kernels its
result must be written to GM and read back by the others. A copy per user lets each
user's kernel recompute it from its inputs instead, which pays when those inputs are
smaller than the result (a cast from f16, a broadcast of a row or a scalar) or the
producer's own kernel disappears (its launch and its write). It costs the recomputed
vector work and the inputs read once per copy. The cost gate (split_cost.py) weighs
both; reshapes, which have no vector kernel, only pay where a copy lets each user be
planned without the other.

Name: afc's, in CANN's style. MindSpore's graph-kernel split stage does the same for
shape ops (ShapeOpsSplitter duplicates Reshape, ExpandDims and Cast with several users
"to avoid unnecessary input-output"), and XLA's priority fusion fuses a producer into
all of its users, duplicating it.
"""

from __future__ import annotations

from dataclasses import dataclass

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

CHEAP_KINDS = (graph.FusionKind.ELEMENTWISE, graph.FusionKind.BROADCAST)


@dataclass(frozen=True)
class Duplicate:
    producer: Operation
    users: tuple[Operation, ...]


def is_cheap(op: Operation) -> bool:
    """Recomputing it per element costs no more than reading its result would."""
    return graph.fusion_kind(op) in CHEAP_KINDS or isinstance(op, graph.ReshapeOp)


class DuplicateProducer(SplitFusionRule[Duplicate]):
    rule_name = "ProducerDuplicateFusionPass"
    pattern = "Elemwise|Broadcast|Reshape->(users in several kernels)"
    anchors = (graph.GraphOp,)

    def structure(self, op: Operation) -> Duplicate | Refusal | None:
        if not is_compute_op(op) or len(op.results) != 1 or not is_cheap(op):
            return None
        users = user_ops(op.results[0])
        if len(users) < 2:
            return None
        if len(users) > self.settings.max_duplicates:
            return Refusal(
                f"{len(users)} users, more than max-duplicates={self.settings.max_duplicates}"
            )
        ordered = users_in_order(op, users)
        if isinstance(ordered, Refusal):
            return ordered
        return Duplicate(op, tuple(ordered))

    def core(self, op: Operation, match: Duplicate) -> list[Operation]:
        return [match.producer, *match.users]

    def describe(self, match: Duplicate) -> str:
        return f"copied into each of its {len(match.users)} users"

    def rewrite(self, op: Operation, match: Duplicate, rewriter: PatternRewriter) -> None:
        producer = match.producer
        copies = [producer.clone() for _ in match.users[1:]]
        rewriter.insert(copies, InsertPoint.after(producer))
        for user, copy in zip(match.users[1:], copies):
            rewriter.replace_uses_with_if(producer.results[0], copy.results[0], uses_in(user))
