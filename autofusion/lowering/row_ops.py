"""The row kernel's per-op emitters: how each graph op of a rows group becomes vector
arithmetic (row_vector_math.py) on its operands' UB locations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

from xdsl.ir import Operation, SSAValue

from autofusion.dialects import graph
from autofusion.lowering.row_rope import rope
from autofusion.lowering.row_trig import sine_loc
from autofusion.lowering.row_vector_math import Loc, RowVectorMath
from autofusion.lowering.value_types import element_type

Emitter = Callable[[RowVectorMath, Operation], None]


def _set(k: RowVectorMath, op: Operation, loc: Loc, index: int = 0) -> None:
    """Bind op's result to `loc`, rounded to the result's element type (f16/bf16 ops)."""
    k.locs[op.results[index]] = k.round_to(loc, element_type(op.results[index]))


def _binary(kind: str) -> Emitter:
    def emit(k: RowVectorMath, op: Operation) -> None:
        _set(k, op, k.binary(kind, k.locs[op.operands[0]], k.locs[op.operands[1]]))

    return emit


def _unary(kind: str) -> Emitter:
    def emit(k: RowVectorMath, op: Operation) -> None:
        _set(k, op, k.unary(kind, k.locs[op.operands[0]]))

    return emit


def _neg(k: RowVectorMath, op: Operation) -> None:
    _set(k, op, k.scale_shift(k.locs[op.operands[0]], -1.0, None))


def clip_loc(k: RowVectorMath, x: Loc, lo: float | None, hi: float | None) -> Loc:
    """max(min(x, hi), lo) into a fresh buffer (Maxs, Mins)."""
    out = x
    for kind, bound in (("maxs", lo), ("mins", hi)):
        if bound is not None:
            nxt = k.pool.get(out.kind)
            k.kb.scalar(kind, nxt, cast(SSAValue, out.buf), k.kb.f32(bound), k._count(out.kind))
            if out is not x:
                k.pool.release(out.buf)
            out = Loc(out.kind, buf=nxt)
    return out if out is not x else k.scale_shift(x, None, None)


def _clip(k: RowVectorMath, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    _set(k, op, clip_loc(k, k.locs[op.operands[0]], p.opt_real("min"), p.opt_real("max")))


def _pow(k: RowVectorMath, op: Operation) -> None:
    from autofusion.passes.matching import splat_value

    e = splat_value(op.operands[1])
    x = k.locs[op.operands[0]]
    if e == 2.0:
        out = k.binary("mul", x, x)
    elif e == 3.0:
        sq = k.binary("mul", x, x)
        out = k.binary("mul", sq, x)
        k.pool.release(sq.buf)
    elif e == 0.5:
        out = k.unary("sqrt", x)
    elif e == -0.5:
        out = k.unary("rsqrt", x)
    elif e == -1.0:
        out = k.unary("reciprocal", x)
    else:
        out = k.scale_shift(x, None, None)
    _set(k, op, out)


def _sigmoid(k: RowVectorMath, op: Operation) -> None:
    _set(k, op, k.sigmoid(k.locs[op.operands[0]]))


def _tanh(k: RowVectorMath, op: Operation) -> None:
    _set(k, op, k.tanh(k.locs[op.operands[0]]))


def _erf(k: RowVectorMath, op: Operation) -> None:
    _set(k, op, k.erf(k.locs[op.operands[0]]))


def silu_loc(k: RowVectorMath, x: Loc) -> Loc:
    s = k.sigmoid(x)
    out = k.binary("mul", x, s)
    k.pool.release(s.buf)
    return out


def _silu(k: RowVectorMath, op: Operation) -> None:
    _set(k, op, silu_loc(k, k.locs[op.operands[0]]))


def _swiglu(k: RowVectorMath, op: Operation) -> None:
    gate, up = k.locs[op.operands[0]], k.locs[op.operands[1]]
    s = k.sigmoid(gate)
    g = k.binary("mul", gate, s)
    k.pool.release(s.buf)
    _set(k, op, k.binary("mul", g, up))
    k.pool.release(g.buf)


def _gelu(k: RowVectorMath, op: Operation) -> None:
    tanh = graph.Props(op.properties, op.name).text("approximate") == "tanh"
    _set(k, op, gelu_loc(k, k.locs[op.operands[0]], tanh))


def gelu_loc(k: RowVectorMath, x: Loc, tanh: bool) -> Loc:
    """GELU, exact (erf) or with the tanh approximation, into a fresh buffer."""
    if tanh:
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        sq = k.binary("mul", x, x)
        cube = k.binary("mul", sq, x)
        k.pool.release(sq.buf)
        inner = k.scale_shift(cube, 0.044715, None)
        k.pool.release(cube.buf)
        s = k.binary("add", inner, x)
        k.pool.release(inner.buf)
        scaled = k.scale_shift(s, math.sqrt(2 / math.pi), None)
        k.pool.release(s.buf)
        th = k.tanh(scaled)
        k.pool.release(scaled.buf)
    else:
        # 0.5 x (1 + erf(x / sqrt 2))
        z = k.scale_shift(x, 1 / math.sqrt(2), None)
        th = k.erf(z)
        k.pool.release(z.buf)
    half = k.scale_shift(th, 0.5, 0.5)
    k.pool.release(th.buf)
    out = k.binary("mul", x, half)
    k.pool.release(half.buf)
    return out


def activation_loc(
    k: RowVectorMath, act: str, x: Loc, lo: float | None = None, hi: float | None = None
) -> Loc:
    """A cube op's activation epilogue (graph.ACTIVATIONS) on a float32 location."""
    if act == "relu":
        return k.unary("relu", x)
    if act == "clip":
        return clip_loc(k, x, lo, hi)
    if act in ("gelu", "gelu_tanh"):
        return gelu_loc(k, x, act == "gelu_tanh")
    if act == "silu":
        return silu_loc(k, x)
    if act == "sigmoid":
        return k.sigmoid(x)
    raise ValueError(f"unknown activation {act!r}")


def _sine(cosine: bool) -> Emitter:
    def emit(k: RowVectorMath, op: Operation) -> None:
        _set(k, op, sine_loc(k, k.locs[op.operands[0]], cosine))

    return emit


def _cast(k: RowVectorMath, op: Operation) -> None:
    # values are float32 in UB: casting is rounding to the target type
    _set(k, op, k.scale_shift(k.locs[op.operands[0]], None, None))


def _reduce(kind: str) -> Emitter:
    def emit(k: RowVectorMath, op: Operation) -> None:
        x = k.locs[op.operands[0]]
        _set(k, op, k.row_mean(x) if kind == "mean" else k.row_reduce(kind, x))

    return emit


def _softmax(k: RowVectorMath, op: Operation) -> None:
    x = k.locs[op.operands[0]]
    m = k.row_reduce("max", x)
    shifted = k.binary("sub", x, m)
    k.pool.release(m.buf)
    k.kb.unary("exp", cast(SSAValue, shifted.buf), cast(SSAValue, shifted.buf), k._count("tile"))
    s = k.row_reduce("sum", shifted)
    _set(k, op, k.binary("div", shifted, s))
    k.pool.release(shifted.buf)
    k.pool.release(s.buf)


def _norm(k: RowVectorMath, x: Loc, epsilon: float, center: bool) -> tuple[Loc, Loc | None, Loc]:
    """(normalized, mean or None, rstd) of a tile, row by row."""
    mean = None
    if center:
        mean = k.row_mean(x)
        d = k.binary("sub", x, mean)
    else:
        d = x
    sq = k.binary("mul", d, d)
    ms = k.row_mean(sq)
    k.pool.release(sq.buf)
    rstd = k.rstd(ms, epsilon)
    normalized = k.binary("mul", d, rstd)
    if center:
        k.pool.release(d.buf)
    return normalized, mean, rstd


def _affine(k: RowVectorMath, y: Loc, scale: SSAValue, bias: SSAValue | None) -> Loc:
    out = k.binary("mul", y, k.locs[scale])
    k.pool.release(y.buf)
    if bias is not None:
        shifted = k.binary("add", out, k.locs[bias])
        k.pool.release(out.buf)
        out = shifted
    return out


def _layer_norm(k: RowVectorMath, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    y, mean, rstd = _norm(k, k.locs[op.operands[0]], p.real("epsilon"), center=True)
    k.pool.release(cast(Loc, mean).buf)
    k.pool.release(rstd.buf)
    _set(k, op, _affine(k, y, op.operands[1], op.operands[2] if len(op.operands) == 3 else None))


def _rms_norm(k: RowVectorMath, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    y, _, rstd = _norm(k, k.locs[op.operands[0]], p.real("epsilon"), center=False)
    k.pool.release(rstd.buf)
    _set(k, op, _affine(k, y, op.operands[1], None))


def _add_norm(center: bool) -> Emitter:
    def emit(k: RowVectorMath, op: Operation) -> None:
        p = graph.Props(op.properties, op.name)
        total = k.round_to(
            k.binary("add", k.locs[op.operands[0]], k.locs[op.operands[1]]),
            element_type(op.results[1]),
        )
        k.release_dying(op.operands[:2])
        y, mean, rstd = _norm(k, total, p.real("epsilon"), center)
        if mean is not None:
            k.pool.release(mean.buf)
        k.pool.release(rstd.buf)
        bias = op.operands[3] if len(op.operands) == 4 else None
        _set(k, op, _affine(k, y, op.operands[2], bias), 0)
        k.locs[op.results[1]] = total

    return emit


def _layer_norm_stats(k: RowVectorMath, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    x = k.locs[op.operands[0]]
    mean = k.row_mean(x)
    d = k.binary("sub", x, mean)
    sq = k.binary("mul", d, d)
    k.pool.release(d.buf)
    ms = k.row_mean(sq)
    k.pool.release(sq.buf)
    _set(k, op, mean, 0)
    _set(k, op, k.rstd(ms, p.real("epsilon")), 1)
    k.pool.release(ms.buf)


def _rms_norm_stats(k: RowVectorMath, op: Operation) -> None:
    p = graph.Props(op.properties, op.name)
    x = k.locs[op.operands[0]]
    sq = k.binary("mul", x, x)
    ms = k.row_mean(sq)
    k.pool.release(sq.buf)
    _set(k, op, k.rstd(ms, p.real("epsilon")))
    k.pool.release(ms.buf)


def _layer_norm_apply(k: RowVectorMath, op: Operation) -> None:
    x, mean, rstd = (k.locs[v] for v in op.operands[:3])
    d = k.binary("sub", x, mean)
    y = k.binary("mul", d, rstd)
    k.pool.release(d.buf)
    _set(k, op, _affine(k, y, op.operands[3], op.operands[4] if len(op.operands) == 5 else None))


def _rms_norm_apply(k: RowVectorMath, op: Operation) -> None:
    x, rstd = k.locs[op.operands[0]], k.locs[op.operands[1]]
    _set(k, op, _affine(k, k.binary("mul", x, rstd), op.operands[2], None))


OP_EMITTERS: dict[type[Operation], Emitter] = {
    graph.AddOp: _binary("add"),
    graph.SubOp: _binary("sub"),
    graph.MulOp: _binary("mul"),
    graph.DivOp: _binary("div"),
    graph.MaxOp: _binary("max"),
    graph.MinOp: _binary("min"),
    graph.PowOp: _pow,
    graph.NegOp: _neg,
    graph.AbsOp: _unary("abs"),
    graph.ExpOp: _unary("exp"),
    graph.LogOp: _unary("ln"),
    graph.SqrtOp: _unary("sqrt"),
    graph.RsqrtOp: _unary("rsqrt"),
    graph.ReciprocalOp: _unary("reciprocal"),
    graph.ReluOp: _unary("relu"),
    graph.ClipOp: _clip,
    graph.SigmoidOp: _sigmoid,
    graph.TanhOp: _tanh,
    graph.ErfOp: _erf,
    graph.SinOp: _sine(cosine=False),
    graph.CosOp: _sine(cosine=True),
    graph.GeluOp: _gelu,
    graph.SiluOp: _silu,
    graph.SwigluOp: _swiglu,
    graph.CastOp: _cast,
    graph.RopeOp: rope,
    graph.ReduceSumOp: _reduce("sum"),
    graph.ReduceMeanOp: _reduce("mean"),
    graph.ReduceMaxOp: _reduce("max"),
    graph.ReduceMinOp: _reduce("min"),
    graph.GlobalAvgPoolOp: _reduce("mean"),
    graph.SoftmaxOp: _softmax,
    graph.LayerNormOp: _layer_norm,
    graph.RmsNormOp: _rms_norm,
    graph.AddLayerNormOp: _add_norm(center=True),
    graph.AddRmsNormOp: _add_norm(center=False),
    graph.LayerNormStatsOp: _layer_norm_stats,
    graph.RmsNormStatsOp: _rms_norm_stats,
    graph.LayerNormApplyOp: _layer_norm_apply,
    graph.RmsNormApplyOp: _rms_norm_apply,
}
