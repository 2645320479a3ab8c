"""SplitSliceFusionPass: a split whose parts are read by different kernels, as slices.

    a, b, c = split(x, axis, sizes)   ->   a = slice(x, [0, s0)), b = slice(x, [s0, s0 + s1)),
                                           c = slice(x, [s0 + s1, s0 + s1 + s2))   (on axis)

ub-fusion puts an op in one kernel, so a graph.split whose parts go to different kernels
is a library op that copies all of x into its parts in GM. A slice per part can join its
reader's kernel instead, as a strided input view (row_plan.py, "Input views": the kernel
reads the part's columns straight from x with DataCopyPad source strides), and the part
is never materialized: the q and k columns of a merged QKV projection read by the rope
kernels, the v columns read by a BSND attention kernel (attention_views.py), the gate
and up halves of a merged gate-up projection read by the SwiGLU kernel. A part whose
reader cannot take a view (a matmul reads its operands from GM contiguously) becomes a
copy kernel of its own that moves that part only.

Preconditions: a static size along the split axis; parts without users get no slice. The
cost gate (split_cost.py) applies the rewrite where ub-fusion's estimate says it pays.

Name: afc's, in CANN's style. CANN reads such parts in place with StridedRead (FE's
StridedReadFusion); afc's views are the same strided reads inside the reader's kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, OpResult
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.rules.split_cost import (
    SplitFusionRule,
    is_compute_op,
    user_ops,
    users_in_order,
)


@dataclass(frozen=True)
class SplitParts:
    split: graph.SplitOp
    users: tuple[Operation, ...]


class SplitIntoSlices(SplitFusionRule[SplitParts]):
    rule_name = "SplitSliceFusionPass"
    pattern = "Split->Slice per part"
    anchors = (graph.SplitOp,)

    def structure(self, op: Operation) -> SplitParts | Refusal | None:
        if not isinstance(op, graph.SplitOp) or not is_compute_op(op):
            return None
        rank = len(m.shape(op.input))
        axis = si.normalize_axis(graph.Props(op.properties, op.name).integer("axis"), rank)
        if m.shape(op.input)[axis] == si.DYN:
            return Refusal("the split axis is dynamic")
        users: set[Operation] = set()
        for r in op.results:
            users |= user_ops(r)
        if not users:
            return None
        ordered = users_in_order(op, users)
        if isinstance(ordered, Refusal):
            return ordered
        return SplitParts(op, tuple(ordered))

    def core(self, op: Operation, match: SplitParts) -> list[Operation]:
        return [match.split, *match.users]

    def describe(self, match: SplitParts) -> str:
        return "as one slice per part"

    def rewrite(self, op: Operation, match: SplitParts, rewriter: PatternRewriter) -> None:
        split = match.split
        p = graph.Props(split.properties, split.name)
        rank = len(m.shape(split.input))
        axis = si.normalize_axis(p.integer("axis"), rank)
        start = 0
        slices: list[Operation] = []
        replaced: list[tuple[OpResult, Operation]] = []
        for r, size in zip(split.results, p.integers("sizes")):
            if r.uses:
                part = graph.SliceOp.make(
                    [split.input],
                    {"starts": [start], "ends": [start + size], "axes": [axis], "steps": [1]},
                )
                part.location = split.location
                part.results[0].name_hint = r.name_hint
                slices.append(part)
                replaced.append((r, part))
            start += size
        rewriter.insert(slices, InsertPoint.before(split))
        for r, new in replaced:
            rewriter.replace_all_uses_with(r, new.results[0])
        rewriter.erase(split)
