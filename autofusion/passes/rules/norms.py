"""Layer norm and RMS norm recognised in the decomposed forms exporters produce.

LayerNormFusionPass (CANN's name for the same rewrite, hiascend graph fusion reference):

    d = x - reduce_mean(x)                      over the last k axes, keepdims
    v = reduce_mean(d^2)                        d^2 is pow(d, 2) or d * d
    n = d / sqrt(v + eps)                       or d * rsqrt(v + eps),
                                                d * reciprocal(sqrt(v + eps)),
                                                d * (1 / sqrt(v + eps)), d * pow(v + eps, -0.5)
    y = n * scale + bias                        scale and bias optional, either order
    -> graph.layer_norm(x, scale, bias) {axis = -k, epsilon = eps}

RmsNormFusionPass: the same without centring (Llama/Qwen): n = x / sqrt(mean(x^2) + eps),
y = n * scale -> graph.rms_norm. CANN has no pass of its own for this (it fuses RmsNorm
only with the add before it, AddRmsNormFusionGraphPass); the name follows the CANN pattern
for the op it builds, as ONNX Runtime's SimplifiedLayerNormFusion does.

Both accept transformers' mixed-precision wrapper: x cast to f32, the norm in f32, the
result cast back to x's type before the scale; the fused op then takes x itself (the
interpreter and the kernel compute norms in f32 anyway).

Preconditions (a Refusal names the one that fails): the reductions are over a trailing
suffix of axes with keepdims and read the same x; epsilon is a constant splat > 0; the
exponent is exactly 2; scale and bias vary only along the normalized axes (leading size-1
dims are reshaped away); the intermediates have no users outside the pattern. Matching
starts at the pattern's last op and looks only at its bounded neighbourhood; an inner op
whose single user would extend the pattern leaves the match to that user.

ONNX's own LayerNormalization (opset 17, what the dynamo exporter emits) needs no rule:
the importer maps it to graph.layer_norm directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


@dataclass
class Norm:
    """A recognised norm: its input, statistics axes, epsilon and optional affine part."""

    x: SSAValue
    k: int
    epsilon: float
    # pattern ops from the root inwards (constants excluded: they may be shared)
    ops: list[Operation]
    # the failed precondition, if any (the pattern's shape is still known, so that the
    # refusal is reported once, at the op that ends the whole pattern)
    problem: str | None = None
    scale: SSAValue | None = None
    bias: SSAValue | None = None
    # ops that may become dead once the pattern is replaced (equivalent duplicates, the
    # cast of x), erased if they do
    extra: list[Operation] = field(default_factory=list)


def _op(value: SSAValue, *kinds: type[Operation]) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, kinds) else None


def _denominator(value: SSAValue) -> tuple[SSAValue, list[Operation], bool] | None:
    """(v + eps value, ops, inverted): `value` is sqrt(v+eps) (inverted False) or its
    reciprocal rsqrt / reciprocal(sqrt) / 1 / sqrt / pow(., -0.5) (inverted True)."""
    op = value.owner
    if isinstance(op, graph.SqrtOp):
        return op.input, [op], False
    if isinstance(op, graph.PowOp) and m.is_splat(op.rhs, 0.5, rtol=0):
        return op.lhs, [op], False
    if isinstance(op, graph.RsqrtOp):
        return op.input, [op], True
    if isinstance(op, graph.PowOp) and m.is_splat(op.rhs, -0.5, rtol=0):
        return op.lhs, [op], True
    inner: SSAValue | None = None
    if isinstance(op, graph.ReciprocalOp):
        inner = op.input
    elif isinstance(op, graph.DivOp) and m.is_splat(op.lhs, 1.0, rtol=0):
        inner = op.rhs
    if isinstance(op, Operation) and inner is not None:
        sq = inner.owner
        if isinstance(sq, graph.SqrtOp):
            return sq.input, [op, sq], True
    return None


def _square_base(value: SSAValue) -> tuple[SSAValue, Operation] | None:
    """(d, op) when `value` is pow(d, 2) or d * d."""
    op = value.owner
    if isinstance(op, graph.PowOp) and m.is_splat(op.rhs, 2.0, rtol=0):
        return op.lhs, op
    if isinstance(op, graph.MulOp) and m.same_value(op.lhs, op.rhs):
        return op.lhs, op
    return None


def _core(n: Operation, centered: bool) -> Norm | None:
    """The statistics chain ending in the normalized value `n` (before scale and bias)."""
    candidates: list[tuple[SSAValue, SSAValue, bool]] = []  # (numerator, denominator, div?)
    if isinstance(n, graph.DivOp):
        candidates.append((n.lhs, n.rhs, True))
    elif isinstance(n, graph.MulOp):
        candidates += [(a, b, False) for a, b in m.commuted(n)]
    for num, den_value, is_div in candidates:
        den = _denominator(den_value)
        if den is None or den[2] == is_div:
            continue
        found = _statistics(n, num, den[0], den[1], centered)
        if found is not None:
            return found
    return None


def _statistics(
    n: Operation, num: SSAValue, veps: SSAValue, den_ops: list[Operation], centered: bool
) -> Norm | None:
    """The norm whose numerator is `num` and whose denominator reads `veps` (v + eps)."""
    add = _op(veps, graph.AddOp)
    if add is None:
        return None
    for v, eps_value in m.commuted(add):
        var = _op(v, graph.ReduceMeanOp)
        square = _square_base(var.operands[0]) if var is not None else None
        if not isinstance(var, graph.ReduceMeanOp) or square is None:
            continue
        base, sq_op = square
        if not m.same_value(base, num):
            return None
        norm = Norm(num, len(var.reduced_axes()), 0.0, [n, *den_ops, add, var, sq_op])
        if base is not num and isinstance(base.owner, Operation):
            norm.extra.append(base.owner)
        mean = _centring(norm, num)
        if (mean is not None) != centered:
            return None
        norm.problem = _problem(norm, var, mean, add, eps_value)
        return norm
    return None


def _centring(norm: Norm, num: SSAValue) -> graph.ReduceMeanOp | None:
    """The mean when `num` is x - reduce_mean(x); it then becomes part of the pattern."""
    sub = _op(num, graph.SubOp)
    mean = _op(sub.operands[1], graph.ReduceMeanOp) if sub is not None else None
    if sub is None or not isinstance(mean, graph.ReduceMeanOp):
        return None
    norm.x = sub.operands[0]
    norm.ops += [sub, mean]
    if not m.same_value(mean.input, norm.x):
        norm.problem = "the mean and the subtraction read different inputs"
    elif mean.input is not norm.x and isinstance(mean.input.owner, Operation):
        norm.extra.append(mean.input.owner)
    return mean


def _problem(
    norm: Norm,
    var: graph.ReduceMeanOp,
    mean: graph.ReduceMeanOp | None,
    add: Operation,
    eps_value: SSAValue,
) -> str | None:
    """The first precondition of the statistics that fails (and sets epsilon)."""
    eps = m.splat_value(eps_value)
    norm.epsilon = eps if eps is not None else 0.0
    if norm.problem is not None:
        return norm.problem
    k = m.trailing_axes(var)
    if k is None:
        return "the variance is not a keepdims mean over the last axes"
    if mean is not None and m.trailing_axes(mean) != k:
        return "the mean and the variance reduce different axes"
    if not m.is_float(norm.x):
        return "the input is not floating point"
    if eps is None:
        return "epsilon is not a constant splat"
    if not eps > 0:
        return f"epsilon {eps} is not > 0"
    if m.shape(add.results[0]) != m.shape(var.output):
        return "adding epsilon broadcasts the variance"
    return None


def _cast_back(op: graph.CastOp, centered: bool) -> Norm | None:
    """A norm computed on cast(x) whose result `op` casts back to x's type."""
    inner = _op(op.input, graph.DivOp, graph.MulOp)
    core = _core(inner, centered) if inner is not None else None
    cast_in = _op(core.x, graph.CastOp) if core is not None else None
    if core is None or cast_in is None:
        return None
    x0 = cast_in.operands[0]
    if m.tensor_type(x0) != m.tensor_type(op.results[0]) or not m.is_float(x0):
        return None
    # the cast of x stays if something else reads it
    core.ops.insert(0, op)
    core.extra.append(cast_in)
    core.x = x0
    return core


def _normalized(op: Operation, centered: bool) -> Norm | None:
    """The norm whose normalized value (before scale and bias) `op` computes."""
    if isinstance(op, graph.CastOp):
        return _cast_back(op, centered)
    if isinstance(op, graph.DivOp | graph.MulOp):
        return _core(op, centered)
    return None


def _param_ok(param: SSAValue, x: SSAValue, k: int) -> bool:
    """Whether `param` varies only along the last k axes of x (leading 1s aside)."""
    ps, xs = m.shape(param), m.shape(x)
    if len(ps) > len(xs) or any(d != 1 for d in ps[: max(len(ps) - k, 0)]):
        return False
    return m.tensor_type(param).element_type == m.tensor_type(x).element_type and (
        si.broadcasts_to(ps[max(len(ps) - k, 0) :], xs[len(xs) - k :])
    )


def _affine(
    op: Operation, via: SSAValue | None, inner: Callable[[Operation], Norm | None]
) -> tuple[Norm, SSAValue] | None:
    """(norm, parameter) when `op` applies a scale or bias to the result of `inner`."""
    for main, param in m.commuted(op):
        producer = _op(main, graph.DivOp, graph.MulOp, graph.CastOp)
        if producer is None or (via is not None and main is not via):
            continue
        norm = inner(producer)
        if norm is not None and _param_ok(param, norm.x, norm.k):
            norm.ops.insert(0, op)
            return norm, param
    return None


def _scaled(op: Operation, centered: bool, via: SSAValue | None = None) -> Norm | None:
    """`op` is the normalized value, or the normalized value times a scale."""
    if via is None or (isinstance(op, graph.CastOp) and op.input is via):
        found = _normalized(op, centered)
        if found is not None:
            return found
    if not isinstance(op, graph.MulOp):
        return None
    scaled = _affine(op, via, lambda p: _normalized(p, centered))
    if scaled is None:
        return None
    scaled[0].scale = scaled[1]
    return scaled[0]


def parse_norm(op: Operation, centered: bool, via: SSAValue | None = None) -> Norm | None:
    """The norm (with its optional scale and, when centered, bias) that ends at `op`.

    With `via`, only a pattern that reads `via` as its normalized or scaled value counts:
    the question is whether `op` extends the pattern that ends at `via`.
    """
    if not (centered and isinstance(op, graph.AddOp)):
        return _scaled(op, centered, via)
    biased = _affine(op, via, lambda p: _scaled(p, centered))
    if biased is None:
        return None
    biased[0].bias = biased[1]
    return biased[0]


class NormFusion(FusionRule[Norm]):
    """Shared matching and rewriting of the layer norm and RMS norm recognisers."""

    centered: bool

    def match(self, op: Operation) -> Norm | Refusal | None:
        found = parse_norm(op, self.centered)
        if found is None:
            return None
        # an op whose only user extends the pattern (scale, bias, cast back) leaves the
        # match to that user, so that the whole pattern becomes one op
        user = m.sole_user(op.results[0])
        if user is not None and parse_norm(user, self.centered, op.results[0]):
            return None
        if found.problem is not None:
            return Refusal(found.problem)
        escaping = m.escaping_reason(found.ops, op)
        if escaping is not None:
            return Refusal(escaping)
        if m.tensor_type(op.results[0]) != m.tensor_type(found.x):
            return Refusal("the pattern's result type differs from its input's")
        if found.scale is None and si.num_elements(self._norm_shape(found)) is None:
            return Refusal("no scale and a dynamic normalized shape (needs a ones scale)")
        return found

    @staticmethod
    def _norm_shape(norm: Norm) -> tuple[int, ...]:
        xs = m.shape(norm.x)
        return xs[len(xs) - norm.k :]

    def _param(self, value: SSAValue, name: str, norm: Norm, new_ops: list[Operation]) -> SSAValue:
        """`value` with the leading size-1 dims beyond the normalized rank dropped."""
        ps = m.shape(value)
        if len(ps) <= norm.k:
            return value
        reshape = graph.ReshapeOp.make([value], {"shape": list(ps[len(ps) - norm.k :])})
        reshape.results[0].name_hint = name
        new_ops.append(reshape)
        return reshape.results[0]

    def rewrite(self, op: Operation, match: Norm, rewriter: PatternRewriter) -> None:
        new_ops: list[Operation] = []
        x_t = m.tensor_type(match.x)
        if match.scale is not None:
            scale = self._param(match.scale, "scale", match, new_ops)
        else:
            norm_t = TensorType(x_t.element_type, list(self._norm_shape(match)))
            ones = m.make_constant(np.ones(norm_t.get_shape()), norm_t, "ones")
            new_ops.append(ones)
            scale = ones.result
        operands = [match.x, scale]
        if match.bias is not None:
            operands.append(self._param(match.bias, "bias", match, new_ops))
        kind = graph.LayerNormOp if self.centered else graph.RmsNormOp
        norm = kind.make(operands, {"axis": -match.k, "epsilon": match.epsilon})
        m.replace_pattern(rewriter, match.ops, [*new_ops, norm], match.extra)


class FuseLayerNorm(NormFusion):
    rule_name = "LayerNormFusionPass"
    pattern = "ReduceMean->Sub->Pow|Mul->ReduceMean->Add->Sqrt|Rsqrt->Div|Mul[->Mul->Add]"
    anchors = (graph.AddOp, graph.MulOp, graph.DivOp, graph.CastOp)
    centered = True


class FuseRmsNorm(NormFusion):
    rule_name = "RmsNormFusionPass"
    pattern = "Pow|Mul->ReduceMean->Add->Sqrt|Rsqrt->Div|Mul[->Cast][->Mul]"
    anchors = (graph.MulOp, graph.DivOp, graph.CastOp)
    centered = False
