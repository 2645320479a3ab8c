"""GeluFusionPass: GELU recognised in its decomposed forms (CANN's GeluFusionPass, hiascend
graph fusion reference, fuses the same Pow/Mul/Add/Tanh and Erf subgraphs into Gelu).

    0.5 * x * (1 + erf(x / sqrt(2)))                          -> graph.gelu "none"
    0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))    -> graph.gelu "tanh"

The product of x, 0.5 and the (1 + ...) term may be associated and commuted in any way;
x / 1.4142 and x * 0.7071 are both accepted, x^3 is pow(x, 3), x * x * x or x * pow(x, 2).
Constants are compared with a relative tolerance of 1e-3 (an f16 sqrt(2) is 1.4140625),
which still tells the erf form from the tanh form and from other activations. The tanh
form becomes the tanh approximation, never the exact GELU: the rewrite keeps the numbers.
Intermediates with users outside the pattern are a refusal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal

SQRT2 = math.sqrt(2)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
TANH_CUBIC = 0.044715
RTOL = 1e-3


@dataclass
class Gelu:
    x: SSAValue
    approximate: str
    # pattern ops, the root first (constants excluded: they may be shared)
    ops: list[Operation] = field(default_factory=list)


def _close(value: SSAValue, expected: float) -> bool:
    return m.is_splat(value, expected, rtol=RTOL)


def _scaled_by(value: SSAValue, factor: float) -> tuple[SSAValue, Operation] | None:
    """(v, op) when `value` is v * factor (either order) or v / (1 / factor)."""
    op = value.owner
    if isinstance(op, graph.MulOp):
        for v, c in m.commuted(op):
            if _close(c, factor):
                return v, op
    if isinstance(op, graph.DivOp) and _close(op.rhs, 1 / factor):
        return op.lhs, op
    return None


def _cube_of(value: SSAValue, x: SSAValue) -> list[Operation] | None:
    """The ops computing x^3 as pow(x, 3), x * x * x or x * pow(x, 2), or None."""
    op = value.owner
    if isinstance(op, graph.PowOp) and op.lhs is x and m.is_splat(op.rhs, 3.0, rtol=0):
        return [op]
    if not isinstance(op, graph.MulOp):
        return None
    for a, b in m.commuted(op):
        sq = b.owner
        if a is not x:
            continue
        if isinstance(sq, graph.MulOp) and sq.lhs is x and sq.rhs is x:
            return [op, sq]
        if isinstance(sq, graph.PowOp) and sq.lhs is x and m.is_splat(sq.rhs, 2.0, rtol=0):
            return [op, sq]
    return None


def _erf_argument(arg: SSAValue) -> Gelu | None:
    """erf's argument x / sqrt(2): the GELU of x."""
    found = _scaled_by(arg, 1 / SQRT2)
    return Gelu(found[0], "none", [found[1]]) if found is not None else None


def _tanh_argument(arg: SSAValue) -> Gelu | None:
    """tanh's argument sqrt(2/pi) * (x + 0.044715 * x^3): the tanh GELU of x."""
    outer = _scaled_by(arg, SQRT_2_OVER_PI)
    inner = m.producer(outer[0], graph.AddOp) if outer is not None else None
    if outer is None or inner is None:
        return None
    for x, term in m.commuted(inner):
        cubic = _scaled_by(term, TANH_CUBIC)
        cube = _cube_of(cubic[0], x) if cubic is not None else None
        if cubic is not None and cube is not None:
            return Gelu(x, "tanh", [outer[1], inner, cubic[1], *cube])
    return None


def _one_plus(value: SSAValue) -> Gelu | None:
    """`value` is 1 + erf(x / sqrt 2) or 1 + tanh(...) (either order)."""
    add = m.producer(value, graph.AddOp)
    if add is None:
        return None
    for f, one in m.commuted(add):
        fn = f.owner
        if not m.is_splat(one, 1.0, rtol=0):
            continue
        if not isinstance(fn, graph.ErfOp | graph.TanhOp):
            continue
        parse = _erf_argument if isinstance(fn, graph.ErfOp) else _tanh_argument
        found = parse(fn.input)
        if found is not None:
            found.ops[:0] = [add, fn]
            return found
    return None


def _factors(
    root: graph.MulOp, expand: tuple[bool, bool]
) -> tuple[list[SSAValue], list[Operation]]:
    """The leaves of the product at `root`, expanding the operands that `expand` says are
    products themselves, and the mul ops expanded."""
    leaves: list[SSAValue] = []
    muls: list[Operation] = []
    for operand, deeper in zip(root.operands, expand):
        inner = operand.owner
        if deeper and isinstance(inner, graph.MulOp):
            leaves += [inner.lhs, inner.rhs]
            muls.append(inner)
        else:
            leaves.append(operand)
    return leaves, muls


def parse_gelu(root: graph.MulOp) -> Gelu | None:
    """The GELU whose last multiplication is `root`: leaves x, 0.5 and (1 + f(x))."""
    # fewer expansions first: x may itself be a product
    for expand in ((False, False), (True, False), (False, True)):
        leaves, muls = _factors(root, expand)
        if len(leaves) != 3:
            continue
        for i, term in enumerate(leaves):
            found = _one_plus(term)
            if found is None:
                continue
            rest = [v for j, v in enumerate(leaves) if j != i]
            if any(v is found.x for v in rest) and any(_close(v, 0.5) for v in rest):
                found.ops[:0] = [root, *muls]
                return found
    return None


class FuseGelu(FusionRule[Gelu]):
    rule_name = "GeluFusionPass"
    pattern = "Div|Mul->Erf|Tanh->Add(1)->Mul(x)->Mul(0.5)"
    anchors = (graph.MulOp,)

    def match(self, op: Operation) -> Gelu | Refusal | None:
        assert isinstance(op, graph.MulOp)
        found = parse_gelu(op)
        if found is None:
            return None
        if not m.is_float(found.x):
            return Refusal("the input is not floating point")
        if m.tensor_type(op.output) != m.tensor_type(found.x):
            return Refusal("the constants broadcast the input to another shape")
        escaping = m.escaping_reason(found.ops, op)
        return Refusal(escaping) if escaping is not None else found

    def rewrite(self, op: Operation, match: Gelu, rewriter: PatternRewriter) -> None:
        gelu = graph.GeluOp.make([match.x], {"approximate": match.approximate})
        m.replace_pattern(rewriter, match.ops, [gelu])
