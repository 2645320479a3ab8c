"""Skip (residual) norms: add(x, residual) feeding a norm becomes one op that also
returns the sum, which transformers need again as the next residual.

AddLayerNormFusionPass: add + graph.layer_norm -> graph.add_layer_norm (CANN's pass of
that name, building AddLayerNorm).
AddRmsNormFusionGraphPass: add + graph.rms_norm -> graph.add_rms_norm (CANN's name,
hiascend graph fusion reference, building AddRmsNorm).

Preconditions, as CANN states them: both addends have the sum's shape (the add does not
broadcast; dynamic dims cannot be proven equal, so they are refused) and the same float
element type. afc's own: no addend is the only use of a matmul or gemm result (a
residual add after o_proj, or after an FFN's down projection, which FFNFusionPass makes
graph.ffn's residual): that kernel adds the residual where its product is, and the norm reads the sum once, where AddRmsNorm would read the product
back and the residual besides (one tensor more through GM per layer). The sum may have other users: they read the fused op's second result. The
fused op is placed at the norm; when another user of the sum comes first, it is placed at
the add instead, which needs the norm's scale and bias to be available there (constants
are moved up). Finding that out walks the block from the add to the norm, at most
MAX_DISTANCE ops, so matching stays linear.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal

MAX_DISTANCE = 256
# ops whose kernel takes a residual add after them (the matmul template's epilogue)
RESIDUAL_TAKERS = (graph.MatmulOp, graph.GemmOp)


@dataclass
class AddNorm:
    add: graph.AddOp
    # place the fused op at the add (another user of the sum precedes the norm)
    at_add: bool
    # constants defined between the add and the norm that the fused op reads
    hoist: list[Operation]


def _between(add: Operation, norm: Operation) -> list[Operation] | None:
    """The ops strictly between `add` and `norm` in their block, None if too far."""
    ops: list[Operation] = []
    op = add.next_op
    while op is not None and op is not norm:
        if len(ops) == MAX_DISTANCE:
            return None
        ops.append(op)
        op = op.next_op
    return ops if op is norm else None


def _residual_taker(add: graph.AddOp) -> Operation | None:
    """The producer of an addend whose kernel can add the other addend: a matmul or gemm
    whose result only the add reads."""
    for v in (add.lhs, add.rhs):
        producer = v.owner
        if isinstance(producer, RESIDUAL_TAKERS) and m.single_use(v):
            return producer
    return None


class AddNormFusion(FusionRule[AddNorm]):
    """Shared matching of an add feeding a norm's input."""

    def match(self, op: Operation) -> AddNorm | Refusal | None:
        x = op.operands[0]
        add = x.owner
        if not isinstance(add, graph.AddOp):
            return None
        if add.parent is not op.parent:
            return Refusal("the add and the norm are in different blocks")
        shapes = [m.shape(v) for v in (add.lhs, add.rhs, add.output)]
        if shapes[0] != shapes[1] or shapes[0] != shapes[2]:
            return Refusal(f"the add broadcasts {si.fmt(shapes[0])} and {si.fmt(shapes[1])}")
        if si.DYN in shapes[0]:
            return Refusal("the add has dynamic dims that cannot be proven equal")
        if not m.is_float(x):
            return Refusal("the sum is not floating point")
        taker = _residual_taker(add)
        if taker is not None:
            return Refusal(
                f"the add is the residual of a single-use {taker.name}, whose kernel adds it"
            )
        if any(use.operation is op and use.index != 0 for use in x.uses):
            return Refusal("the sum is also the norm's scale or bias")
        if all(use.operation is op for use in x.uses):
            return AddNorm(add, False, [])
        between = _between(add, op)
        if between is None:
            return Refusal(f"the norm is more than {MAX_DISTANCE} ops after the add")
        inside = set(between)
        if not any(use.operation in inside for use in x.uses):
            return AddNorm(add, False, [])
        hoist: list[Operation] = []
        for param in op.operands[1:]:
            producer = param.owner
            if producer in inside:
                if not isinstance(producer, graph.ConstantOp):
                    return Refusal("the scale or bias is computed after the add, before the norm")
                hoist.append(producer)
        return AddNorm(add, True, hoist)

    def rewrite(self, op: Operation, match: AddNorm, rewriter: PatternRewriter) -> None:
        add = match.add
        kind = graph.AddLayerNormOp if isinstance(op, graph.LayerNormOp) else graph.AddRmsNormOp
        fused = kind.make([add.lhs, add.rhs, *op.operands[1:]], dict(op.properties))
        fused.location = m.fused_location([add, op])
        fused.results[0].name_hint = op.results[0].name_hint
        fused.results[1].name_hint = add.output.name_hint
        if not match.at_add:
            rewriter.replace(op, [fused], [fused.results[0]])
            rewriter.replace(add, [], [fused.results[1]])
            return
        for constant in match.hoist:
            constant.detach()
            rewriter.insert(constant, InsertPoint.before(add))
        rewriter.replace(add, [fused], [fused.results[1]])
        rewriter.replace(op, [], [fused.results[0]])


class FuseAddLayerNorm(AddNormFusion):
    rule_name = "AddLayerNormFusionPass"
    pattern = "Add->LayerNorm"
    anchors = (graph.LayerNormOp,)


class FuseAddRmsNorm(AddNormFusion):
    rule_name = "AddRmsNormFusionGraphPass"
    pattern = "Add->RmsNorm"
    anchors = (graph.RmsNormOp,)
