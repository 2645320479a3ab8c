"""ConstantFuseSamePass: a graph.constant identical to an earlier one of its block (the
same result type, value, name and attributes) is replaced by that one.

Folding makes such twins: a constant read by two reshapes (a rotary table, one reshape
per attention layer and per rope) folds into one reshaped constant per reshape, each
named `<constant>.reshaped` with the same values. As two SSA values they are two
tensors to every later rule and kernel: the q and k ropes of one layer then "read
different cos/sin tables", so only one of them joins the QKV matmul's rope epilogue.
One constant is one tensor again. Constants that differ in anything (a shape-only weight
is identified by its name) stay apart. Named after GE's ConstantFuseSamePass
(hicann/ge compiler/graph/passes/standard_optimize/constant_fuse_same_pass.cc), which
fuses a graph's identical constants the same way.
"""

from __future__ import annotations

from xdsl.ir import Attribute, Block, Operation
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.passes.fusion_rule import FusionRule, Refusal
from autofusion.passes.fusion_statistics import FusionStatistics

Key = tuple[int, Attribute, tuple[tuple[str, Attribute], ...], tuple[tuple[str, Attribute], ...]]


def _key(op: graph.ConstantOp, block: Block) -> Key:
    return (
        id(block),
        op.result.type,
        tuple(sorted(op.properties.items())),
        tuple(sorted(op.attributes.items())),
    )


class FuseSameConstants(FusionRule[graph.ConstantOp]):
    rule_name = "ConstantFuseSamePass"
    pattern = "Constant == an earlier Constant"
    anchors = (graph.ConstantOp,)

    def __init__(self, statistics: FusionStatistics | None = None) -> None:
        super().__init__(statistics)
        # the first constant of each kind met in each block (the walk goes in op order)
        self._first: dict[Key, graph.ConstantOp] = {}

    def match(self, op: Operation) -> graph.ConstantOp | Refusal | None:
        assert isinstance(op, graph.ConstantOp)
        block = op.parent_block()
        if block is None:
            return None
        key = _key(op, block)
        first = self._first.get(key)
        if first is None or first is op or first.parent_block() is not block:
            self._first[key] = op
            return None
        if not first.is_before_in_block(op):
            # a twin inserted above the first (a later fold): it becomes the first
            self._first[key] = op
            return first
        return first

    def rewrite(self, op: Operation, match: graph.ConstantOp, rewriter: PatternRewriter) -> None:
        assert isinstance(op, graph.ConstantOp)
        if match.is_before_in_block(op):
            rewriter.replace_op(op, [], [match.result])
        else:  # `op` is the earlier one: the later twin goes
            rewriter.replace_op(match, [], [op.result])
