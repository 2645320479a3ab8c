"""SiLU and SwiGLU recognised from their decomposed forms.

SiluFusionPass: x * sigmoid(x) (either order) -> graph.silu(x). CANN has no graph pass of
that name (its Swish/Silu ops are built by the framework adapters); the name follows the
CANN pattern for the op it builds, like OpenVINO's SwishFusionWithSigmoid.

SwiGluFusionPass: silu(gate) * up -> graph.swiglu(gate, up), the gated MLP of
Llama/Qwen (CANN's SwiGlu op). graph.swiglu broadcasts like numpy, but the fused kernel is
an elementwise one over two projections of the same activations, so the rule requires:
gate and up have the same shape as the product (no broadcasting either way), both are
outputs of matmul/gemm (through a reshape or a split of one merged projection), and
both projections read the same input. The rule anchors on graph.silu, so it runs before
MatMulActivationFusionPass would absorb that silu into the gate projection.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects.shape_inference import fmt
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal

CUBE_OPS = (graph.MatmulOp, graph.GemmOp)
# reshapes and splits between a projection and the gate/up value
MAX_VIEW_DEPTH = 2


@dataclass
class Silu:
    x: SSAValue
    sigmoid: graph.SigmoidOp


class FuseSilu(FusionRule[Silu]):
    rule_name = "SiluFusionPass"
    pattern = "Sigmoid->Mul(x)"
    anchors = (graph.MulOp,)

    def match(self, op: Operation) -> Silu | Refusal | None:
        assert isinstance(op, graph.MulOp)
        for x, s in m.commuted(op):
            sigmoid = s.owner
            if not isinstance(sigmoid, graph.SigmoidOp) or sigmoid.input is not x:
                continue
            if not s.has_one_use():
                return Refusal("the sigmoid is also used outside x * sigmoid(x)")
            return Silu(x, sigmoid)
        return None

    def rewrite(self, op: Operation, match: Silu, rewriter: PatternRewriter) -> None:
        m.replace_pattern(rewriter, [op, match.sigmoid], [graph.SiluOp.make([match.x])])


@dataclass
class SwiGlu:
    product: graph.MulOp
    up: SSAValue


def _projection(value: SSAValue) -> Operation | None:
    """The matmul/gemm that `value` is the output of, through reshapes and splits."""
    for _ in range(MAX_VIEW_DEPTH + 1):
        owner = value.owner
        if isinstance(owner, CUBE_OPS):
            return owner
        if not isinstance(owner, graph.ReshapeOp | graph.SplitOp):
            return None
        value = owner.operands[0]
    return None


def _source(value: SSAValue) -> SSAValue:
    """`value` without the reshapes in front of it (a projection's input is often
    flattened to 2-D first, by a reshape of its own)."""
    for _ in range(MAX_VIEW_DEPTH):
        owner = value.owner
        if not isinstance(owner, graph.ReshapeOp):
            break
        value = owner.input
    return value


class FuseSwiGlu(FusionRule[SwiGlu]):
    rule_name = "SwiGluFusionPass"
    pattern = "MatMul->Silu, MatMul->Mul"
    anchors = (graph.SiluOp,)

    def match(self, op: Operation) -> SwiGlu | Refusal | None:
        assert isinstance(op, graph.SiluOp)
        product = m.sole_user(op.output)
        if not isinstance(product, graph.MulOp):
            return None
        up = product.rhs if product.lhs is op.output else product.lhs
        if up is op.output:
            return None
        gate_shape = m.shape(op.output)
        if not (gate_shape == m.shape(up) == m.shape(product.output)):
            return Refusal(
                f"the gate {fmt(gate_shape)} and up {fmt(m.shape(up))} broadcast in the product"
            )
        gate_proj, up_proj = _projection(op.input), _projection(up)
        if gate_proj is None or up_proj is None:
            return Refusal("the gate and up values are not both matmul/gemm outputs")
        if gate_proj is not up_proj and _source(gate_proj.operands[0]) is not _source(
            up_proj.operands[0]
        ):
            return Refusal("the gate and up projections read different inputs")
        return SwiGlu(product, up)

    def rewrite(self, op: Operation, match: SwiGlu, rewriter: PatternRewriter) -> None:
        assert isinstance(op, graph.SiluOp)
        swiglu = graph.SwigluOp.make([op.input, match.up])
        swiglu.location = m.fused_location([op, match.product])
        rewriter.replace(match.product, [swiglu])
        rewriter.erase(op)
