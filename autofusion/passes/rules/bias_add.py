"""Bias adds folded into the cube op before them (the bias is accumulated in L0C).

ConvBiasAddFusionPass: conv(x, W[, b]) + c, c per output channel ([M], [M,1,1] or
[1,M,1,1]) and constant -> conv(x, W, b + c).
MatMulBiasAddFusionPass: matmul(a, B) + c, c broadcasting along the last output axis
only ([N] or [1,...,1,N]) -> matmul(a, B, bias=c); gemm(A, B) + c likewise -> gemm with C.
CANN's MatMulBiasAddFusionPass has the same preconditions (bias 1-D over the last dim,
no broadcast over other dims).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects.shape_inference import fmt
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


@dataclass
class BiasAdd:
    cube: graph.Conv2dOp | graph.MatmulOp | graph.GemmOp
    bias: SSAValue


def _cube_operand(
    add: graph.AddOp, kinds: tuple[type[Operation], ...]
) -> tuple[Operation, SSAValue] | None:
    """(cube op, other addend) if one addend of `add` is produced by one of `kinds`."""
    for this, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        if isinstance(this.owner, kinds):
            return this.owner, other
    return None


def _only_last_axis(bias_shape: tuple[int, ...], n: int) -> bool:
    return len(bias_shape) >= 1 and bias_shape[-1] == n and all(d == 1 for d in bias_shape[:-1])


class FoldBiasAddIntoConv(FusionRule[BiasAdd]):
    rule_name = "ConvBiasAddFusionPass"
    pattern = "Conv2D->Add(per-channel constant)"
    anchors = (graph.AddOp,)

    def match(self, op: Operation) -> BiasAdd | Refusal | None:
        assert isinstance(op, graph.AddOp)
        found = _cube_operand(op, (graph.Conv2dOp,))
        if found is None:
            return None
        conv, c = found
        assert isinstance(conv, graph.Conv2dOp)
        out_channels = m.shape(conv.output)[1]
        cs = m.shape(c)
        # per channel: broadcasts as [1, M, 1, 1] against the NCHW output
        if len(cs) > 4 or (1,) * (4 - len(cs)) + cs != (1, out_channels, 1, 1):
            return Refusal(f"the addend of shape {fmt(cs)} is not one value per output channel")
        if m.shape(op.output) != m.shape(conv.output):
            return Refusal("the add broadcasts the convolution's output")
        if conv.activation is not None:
            return Refusal("the convolution already applies an activation")
        if not m.single_use(conv.output):
            return Refusal("the convolution's output has other users than the add")
        if m.constant_op(c) is None or (conv.bias is not None and m.constant_op(conv.bias) is None):
            return Refusal("the per-channel addend (and an existing bias) must be constants")
        return BiasAdd(conv, c)

    def rewrite(self, op: Operation, match: BiasAdd, rewriter: PatternRewriter) -> None:
        conv = match.cube
        assert isinstance(conv, graph.Conv2dOp)
        out_channels = m.shape(conv.output)[1]
        bias_t = graph.tensor([out_channels], m.tensor_type(conv.output).element_type)
        add_values = m.constant_array(match.bias)
        old = m.constant_array(conv.bias) if conv.bias is not None else np.zeros(out_channels)
        total = None
        if add_values is not None and old is not None:
            total = np.asarray(old, np.float64).reshape(-1) + np.asarray(
                add_values, np.float64
            ).reshape(-1)
        name = m.constant_name(match.bias, "conv.bias")
        new_b = m.make_constant(total, bias_t, name)
        new_conv = graph.Conv2dOp.make(
            [conv.input, conv.weight, new_b.result], dict(conv.properties)
        )
        new_conv.location = m.fused_location([conv, op])
        rewriter.replace(op, [new_b, new_conv])


class FoldBiasAddIntoMatMul(FusionRule[BiasAdd]):
    rule_name = "MatMulBiasAddFusionPass"
    pattern = "MatMul|Gemm->Add(bias over the last axis)"
    anchors = (graph.AddOp,)

    def match(self, op: Operation) -> BiasAdd | Refusal | None:
        assert isinstance(op, graph.AddOp)
        found = _cube_operand(op, (graph.MatmulOp, graph.GemmOp))
        if found is None:
            return None
        cube, c = found
        assert isinstance(cube, graph.MatmulOp | graph.GemmOp)
        out = m.shape(cube.output)
        if not _only_last_axis(m.shape(c), out[-1]):
            return Refusal(
                f"the addend of shape {fmt(m.shape(c))} is not a bias over the last axis"
            )
        if m.shape(op.output) != out:
            return Refusal("the add broadcasts the matmul's output")
        existing = cube.bias if isinstance(cube, graph.MatmulOp) else cube.c
        if existing is not None:
            return Refusal("the matmul already adds a bias")
        if cube.activation is not None:
            return Refusal("the matmul already applies an activation")
        if not m.single_use(cube.output):
            return Refusal("the matmul's output has other users than the add")
        return BiasAdd(cube, c)

    def rewrite(self, op: Operation, match: BiasAdd, rewriter: PatternRewriter) -> None:
        cube = match.cube
        bias = match.bias
        new_ops: list[Operation] = []
        if len(m.shape(bias)) != 1:
            reshape = graph.ReshapeOp.make([bias], {"shape": [m.shape(bias)[-1]]})
            new_ops.append(reshape)
            bias = reshape.results[0]
        if isinstance(cube, graph.MatmulOp):
            new = graph.MatmulOp.make([cube.lhs, cube.rhs, bias], dict(cube.properties))
        else:
            assert isinstance(cube, graph.GemmOp)
            props = dict(cube.properties)
            props["beta"] = graph.float_attr(1.0)
            new = graph.GemmOp.make([cube.a, cube.b, bias], props)
        new.location = m.fused_location([cube, op])
        rewriter.replace(op, [*new_ops, new])
