"""Rotary tables as one broadcast product: transformers' LlamaRotaryEmbedding without a
cube op or a concat.

    freqs = pos @ inv_freq                  pos [S, 1], inv_freq [1, D/2]
    emb = concat(freqs, freqs, axis=-1)     [S, D]; cos(emb) and sin(emb) are the tables

MatMulToMulFusionPass: a matmul whose reduced dim is 1 is an outer product,

    a[..., M, 1] @ b[..., 1, N] = a * b     (numpy broadcasting, batch dims included)

Each output element is one product, so the numbers are the same (an f16 product is exact
in the f32 accumulator and rounded once either way). On the cube the reduced dim is
padded to a 16-deep fractal and the product is a kernel of its own; as a broadcast mul it
joins its vector neighbours (the cos/sin of the tables).

ConcatMulFusionPass: parts that scale one value by constants, concatenated along an axis
where that value is broadcast (size 1), are that value times the concatenated constants,

    concat(x * c_1, ..., x * c_n, axis) = x * concat(c_1, ..., c_n, axis)   (x: 1 on axis)

so concat(freqs, freqs) becomes pos * concat(inv_freq, inv_freq), a constant folded at
compile time, and no concat moves the table. Preconditions: every part is a graph.mul of
the same x and a constant, used by nothing but the concat; x is 1 along the axis (padded
to the result's rank); the new product has the concat's type.

Names: afc's, in CANN's style (CANN's graph fusion has no pass for either form).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


class OuterProductMatMulToMul(FusionRule[graph.MatmulOp]):
    rule_name = "MatMulToMulFusionPass"
    pattern = "MatMul(reduced dim 1)->Mul"
    anchors = (graph.MatmulOp,)

    def match(self, op: Operation) -> graph.MatmulOp | Refusal | None:
        assert isinstance(op, graph.MatmulOp)
        a, b = m.shape(op.lhs), m.shape(op.rhs)
        if len(a) < 2 or len(b) < 2 or a[-1] != 1 or b[-2] != 1:
            return None
        if op.bias is not None or "activation" in op.properties:
            return Refusal("the matmul has a bias or an activation epilogue")
        if not m.is_float(op.output):
            return Refusal("the outer product is not of floating-point values")
        if si.broadcast(a, b) != m.shape(op.output):
            return Refusal("the broadcast product's shape is not the matmul's")
        return op

    def rewrite(self, op: Operation, match: graph.MatmulOp, rewriter: PatternRewriter) -> None:
        mul = graph.MulOp.make([match.lhs, match.rhs], {})
        mul.location = op.location
        mul.results[0].name_hint = match.output.name_hint
        rewriter.replace(op, [mul], [mul.results[0]])


@dataclass
class ScaledParts:
    x: SSAValue
    constants: list[SSAValue]
    muls: list[graph.MulOp]
    axis: int


def _scaled(part: SSAValue) -> tuple[SSAValue, SSAValue, graph.MulOp] | None:
    """(x, c, mul) when `part` is x * c (either order) with c a constant."""
    mul = m.producer(part, graph.MulOp)
    if mul is None:
        return None
    for x, c in m.commuted(mul):
        if m.constant_op(c) is not None and m.constant_op(x) is None:
            return x, c, mul
    return None


def _padded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + shape


class FoldConcatOfScaled(FusionRule[ScaledParts]):
    rule_name = "ConcatMulFusionPass"
    pattern = "Mul(x, const) x N->Concat(axis where x is 1)"
    anchors = (graph.ConcatOp,)

    def match(self, op: Operation) -> ScaledParts | Refusal | None:
        assert isinstance(op, graph.ConcatOp)
        parts = [_scaled(v) for v in op.inputs]
        if len(parts) < 2 or any(p is None for p in parts):
            return None
        found = [p for p in parts if p is not None]
        x = found[0][0]
        if any(p[0] is not x for p in found):
            return None
        rank = len(m.shape(op.output))
        axis = si.normalize_axis(graph.Props(op.properties, op.name).integer("axis"), rank)
        if len(m.shape(x)) > rank or _padded(m.shape(x), rank)[axis] != 1:
            return Refusal("x is not broadcast along the concat axis")
        muls = [p[2] for p in found]
        for mul in muls:
            if any(u.operation is not op for u in mul.output.uses):
                return Refusal("a scaled part has users besides the concat")
        constants = [p[1] for p in found]
        shapes = [_padded(m.shape(c), rank) for c in constants]
        for s, mul in zip(shapes, muls):
            if s[axis] != m.shape(mul.output)[axis]:
                return Refusal("a constant is broadcast along the concat axis")
        if len(set(s[:axis] + s[axis + 1 :] for s in shapes)) != 1:
            return Refusal("the constants differ off the concat axis")
        if m.tensor_type(constants[0]).element_type != m.tensor_type(op.output).element_type:
            return Refusal("the constants are not of the result's type")
        merged = list(shapes[0])
        merged[axis] = sum(s[axis] for s in shapes)
        if si.broadcast(m.shape(x), tuple(merged)) != m.shape(op.output):
            return Refusal("x times the concatenated constants is not the concat's shape")
        return ScaledParts(x, constants, muls, axis)

    def rewrite(self, op: Operation, match: ScaledParts, rewriter: PatternRewriter) -> None:
        rank = len(m.shape(op.results[0]))
        arrays = [m.constant_array(c) for c in match.constants]
        shapes = [_padded(m.shape(c), rank) for c in match.constants]
        dims = list(shapes[0])
        dims[match.axis] = sum(s[match.axis] for s in shapes)
        data = None
        if all(a is not None for a in arrays):
            data = np.concatenate(
                [np.asarray(a).reshape(s) for a, s in zip(arrays, shapes)], axis=match.axis
            )
        t = graph.tensor(dims, m.tensor_type(match.constants[0]).element_type)
        name = f"{m.constant_name(match.constants[0], 'scale')}.concat"
        table = m.make_constant(data, t, name)
        mul = graph.MulOp.make([match.x, table.result], {})
        location = m.fused_location([*match.muls, op])
        table.location = mul.location = location
        mul.results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, [table, mul], [mul.results[0]])
        for dead in dict.fromkeys(match.muls):
            rewriter.erase(dead)
