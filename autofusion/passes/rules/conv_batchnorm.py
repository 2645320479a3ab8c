"""ConvBatchnormFusionPass: fold an inference BatchNorm into the convolution before it.

    y = BN(conv(x, W) + b) = conv(x, W * a) + (b - mean) * a + beta,
    a = gamma / sqrt(var + epsilon), per output channel

Works for grouped and depthwise convolutions (the weight's first axis is the output
channel whatever the group) and convs without a bias. The folded weights are computed in
float64 and stored in the weight's type. Shape-only weights fold to shape-only weights, so
fusion can be planned for models without weights. CANN applies the same rule
(hiascend graph fusion reference, ConvBatchnormFusionPass; it requires constant filter,
bias and BN parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


@dataclass
class ConvBatchnorm:
    conv: graph.Conv2dOp
    bn: graph.BatchNormOp


class FoldBatchNormIntoConv(FusionRule[ConvBatchnorm]):
    rule_name = "ConvBatchnormFusionPass"
    pattern = "Conv2D->BatchNorm"
    anchors = (graph.BatchNormOp,)

    def match(self, op: Operation) -> ConvBatchnorm | Refusal | None:
        assert isinstance(op, graph.BatchNormOp)
        conv = m.producer(op.input, graph.Conv2dOp)
        if conv is None:
            return None
        if conv.activation is not None:
            return Refusal("the convolution already applies an activation")
        if not m.single_use(conv.output):
            return Refusal("the convolution's output has other users than the BatchNorm")
        params = [op.scale, op.bias, op.mean, op.var, conv.weight]
        if conv.bias is not None:
            params.append(conv.bias)
        if not m.all_constant(params):
            return Refusal("filter, bias and BatchNorm parameters must be constants")
        return ConvBatchnorm(conv, op)

    def rewrite(self, op: Operation, match: ConvBatchnorm, rewriter: PatternRewriter) -> None:
        conv, bn = match.conv, match.bn
        eps = graph.Props(bn.properties, bn.name).real("epsilon")
        w_t = m.tensor_type(conv.weight)
        out_channels = w_t.get_shape()[0]
        bias_t = graph.tensor([out_channels], w_t.element_type)
        folded = _fold(conv, bn, eps)
        w_name = m.constant_name(conv.weight, "conv.weight") + ".bn_folded"
        new_w = m.make_constant(folded[0] if folded else None, w_t, w_name)
        new_b = m.make_constant(folded[1] if folded else None, bias_t, w_name + ".bias")
        props = {k: v for k, v in conv.properties.items()}
        new_conv = graph.Conv2dOp.make([conv.input, new_w.result, new_b.result], props)
        new_conv.location = m.fused_location([conv, bn])
        rewriter.replace(bn, [new_w, new_b, new_conv])


def _values(v: SSAValue | None) -> np.ndarray | None:
    return None if v is None else m.constant_array(v)


def _fold(
    conv: graph.Conv2dOp, bn: graph.BatchNormOp, eps: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Folded (weight, bias) in float64, or None if any input is shape-only."""
    arrays = [_values(v) for v in (conv.weight, bn.scale, bn.bias, bn.mean, bn.var)]
    bias = _values(conv.bias) if conv.bias is not None else np.zeros(1)
    if any(a is None for a in arrays) or bias is None:
        return None
    w, gamma, beta, mean, var = (np.asarray(a, dtype=np.float64) for a in arrays)
    a = gamma / np.sqrt(var + eps)
    return w * a.reshape(-1, 1, 1, 1), (np.asarray(bias, np.float64) - mean) * a + beta
