"""Graph ops as HFusion steps (autofusion/codegen/hfusion_ir.py): named linalg/hfusion ops
on static tensors with explicit broadcasts, never linalg.generic (HFusion's
convert-linalg-to-hfusion marks it illegal; shared/reference/bishengir.md).

Each graph op computes in float32 and rounds its result to its element type, which is
afc's interpreter's rule (autofusion/dtypes.py), so an export runs to the same numbers;
a matmul reads f16 operands directly and accumulates in f32 (the cube's L0C).
`LOWERINGS` maps an op class to its decomposition; an op outside it is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from autofusion import dtypes
from autofusion.codegen.hfusion_ir import NUMPY_TYPES as NUMPY_DTYPES
from autofusion.codegen.hfusion_ir import Step, Value
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Props

COMPUTE = "f32"
FLOATS = ("f32", "f16")


class Refusal(UserError):
    """A group or op that cannot be expressed for HFusion: the op and the reason."""


def element_name(t: TensorType) -> str:
    return dtypes.type_name(t.element_type)


class FunctionBuilder:
    """Appends steps to one function body, naming every value uniquely in it."""

    def __init__(self, prefix: str = "v") -> None:
        self.steps: list[Step] = []
        self.prefix = prefix
        self.count = 0
        self.narrowed: dict[str, Value] = {}

    def fresh(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count}"

    def emit(
        self,
        kind: str,
        operands: Sequence[Value],
        dtype: str,
        shape: tuple[int, ...] | None,
        **attrs: object,
    ) -> Value:
        result = Value(self.fresh(), dtype, shape)
        self.steps.append(Step(kind, tuple(operands), result, tuple(sorted(attrs.items()))))
        return result

    # ---- building blocks ------------------------------------------------------------

    def scalar(self, value: float, dtype: str = COMPUTE) -> Value:
        return self.emit("arith.constant", (), dtype, None, value=value)

    def fill(self, value: float, dtype: str, shape: tuple[int, ...]) -> Value:
        return self.emit("linalg.fill", (self.scalar(value, dtype),), dtype, shape)

    def cast(self, x: Value, dtype: str) -> Value:
        """`x` as `dtype`. Widening a value this builder narrowed from float32 takes the
        float32 value back: a fused kernel keeps its intermediates in float32, and the
        f32 -> f16 -> f32 round trip costs HFusion two UB buffers per tile, enough to
        overflow UB at plan-memory (measured: a matmul + residual-add epilogue)."""
        if x.dtype == dtype:
            return x
        source = self.narrowed.get(x.name)
        if source is not None and source.dtype == dtype:
            return source
        y = self.emit("hfusion.cast", (x,), dtype, x.shape)
        if dtype in FLOATS and x.dtype == COMPUTE:
            self.narrowed[y.name] = x
        return y

    def widen(self, x: Value) -> Value:
        """The float32 compute form of a float operand (integers are cast too)."""
        return self.cast(x, COMPUTE)

    def reshape(self, x: Value, shape: tuple[int, ...]) -> Value:
        """Any static reshape as collapse_shape/expand_shape (through 1-D when neither
        side groups the other's dimensions)."""
        old = x.shape or ()
        if old == shape:
            return x
        if math.prod(old) != math.prod(shape):
            raise ValueError(f"cannot reshape {old} to {shape}")
        groups = _grouping(old, shape)
        if groups is not None:
            return self.emit("tensor.collapse_shape", (x,), x.dtype, shape, groups=groups)
        groups = _grouping(shape, old)
        if groups is not None:
            return self.emit("tensor.expand_shape", (x,), x.dtype, shape, groups=groups)
        flat = self.reshape(x, (math.prod(old),))
        return self.reshape(flat, shape)

    def broadcast_to(self, x: Value, shape: tuple[int, ...]) -> Value:
        """numpy broadcasting made explicit: drop the stretched unit dims, then
        linalg.broadcast along every output dim the input lacks."""
        src = x.shape or ()
        if src == shape:
            return x
        offset = len(shape) - len(src)
        kept = [j for j in range(len(shape)) if j >= offset and src[j - offset] == shape[j]]
        core = self.reshape(x, tuple(shape[j] for j in kept))
        dims = [j for j in range(len(shape)) if j not in kept]
        return self.emit("linalg.broadcast", (core,), x.dtype, shape, dims=dims)

    def columns(self, x: Value, half: int) -> Value:
        """The first (`half` 0) or second half of `x`'s last dimension."""
        shape = x.shape or ()
        part = (*shape[:-1], shape[-1] // 2)
        offsets = [0] * (len(shape) - 1) + [half * part[-1]]
        return self.emit("tensor.extract_slice", (x,), x.dtype, part, offsets=offsets)

    def unary(self, fun: str, x: Value) -> Value:
        kind = "linalg.elemwise_unary" if fun in LINALG_UNARY else "hfusion.elemwise_unary"
        return self.emit(kind, (x,), x.dtype, x.shape, fun=fun)

    def binary(self, fun: str, a: Value, b: Value | float) -> Value:
        """An elementwise binary op; a Python number becomes a scalar operand."""
        if not isinstance(b, Value):
            b = self.scalar(b, a.dtype)
        shape = a.shape if b.is_scalar else si_broadcast(a.shape or (), b.shape or ())
        assert shape is not None
        lhs = self.broadcast_to(a, shape)
        rhs = b if b.is_scalar else self.broadcast_to(b, shape)
        kind = "hfusion.elemwise_binary" if fun in HFUSION_BINARY else "linalg.elemwise_binary"
        return self.emit(kind, (lhs, rhs), a.dtype, shape, fun=fun)

    def compare(self, fun: str, a: Value, b: Value) -> Value:
        shape = si_broadcast(a.shape or (), b.shape or ())
        ops = (self.broadcast_to(a, shape), self.broadcast_to(b, shape))
        return self.emit("hfusion.compare", ops, "i1", shape, fun=fun)

    def reduce(self, x: Value, dims: Sequence[int], combiner: str, init: float) -> Value:
        shape = tuple(d for i, d in enumerate(x.shape or ()) if i not in dims)
        start = self.fill(init, x.dtype, shape)
        return self.emit(
            "linalg.reduce", (x, start), x.dtype, shape, dims=list(dims), combiner=combiner
        )

    def keep(self, reduced: Value, dims: Sequence[int], shape: tuple[int, ...]) -> Value:
        """A reduction broadcast back along its reduced `dims` to `shape`."""
        return self.emit("linalg.broadcast", (reduced,), reduced.dtype, shape, dims=list(dims))

    def matmul(self, a: Value, b: Value) -> Value:
        """[..., M, K] x [K, N] or batched [B..., M, K] x [B..., K, N], f32 accumulation."""
        sa, sb = a.shape or (), b.shape or ()
        if len(sb) == 2:
            rows = math.prod(sa[:-1])
            flat = self.reshape(a, (rows, sa[-1]))
            acc = self.fill(0.0, COMPUTE, (rows, sb[1]))
            mm = self.emit("linalg.matmul", (flat, b, acc), COMPUTE, (rows, sb[1]))
            return self.reshape(mm, (*sa[:-1], sb[1]))
        batch = si_broadcast(sa[:-2], sb[:-2])
        a = self.broadcast_to(a, (*batch, *sa[-2:]))
        b = self.broadcast_to(b, (*batch, *sb[-2:]))
        n = math.prod(batch)
        a3 = self.reshape(a, (n, *sa[-2:]))
        b3 = self.reshape(b, (n, *sb[-2:]))
        out = (n, sa[-2], sb[-1])
        mm = self.emit("linalg.batch_matmul", (a3, b3, self.fill(0.0, COMPUTE, out)), COMPUTE, out)
        return self.reshape(mm, (*batch, sa[-2], sb[-1]))


LINALG_UNARY = {"exp", "log", "abs", "negf", "ceil", "floor"}
HFUSION_BINARY = {"vand", "vor", "powf"}


def si_broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    shape = si.broadcast(a, b)
    return tuple(shape)


def _grouping(big: tuple[int, ...], small: tuple[int, ...]) -> list[list[int]] | None:
    """The reassociation that collapses `big` into `small` (runs of consecutive dims whose
    product is each small dim; trailing unit dims join the last run), or None."""
    if not small:
        return [] if math.prod(big) == 1 else None
    groups: list[list[int]] = []
    i = 0
    for want in small:
        group: list[int] = []
        size = 1
        while i < len(big) and (size != want or not group):
            group.append(i)
            size *= big[i]
            i += 1
            if size > want:
                return None
        if size != want or not group:
            return None
        groups.append(group)
    while i < len(big) and big[i] == 1:
        groups[-1].append(i)
        i += 1
    return groups if i == len(big) else None


# ---- activations and op decompositions --------------------------------------------------


def sigmoid(b: FunctionBuilder, x: Value) -> Value:
    e = b.unary("exp", b.unary("negf", x))
    return b.unary("rec", b.binary("add", e, 1.0))


def gelu_erf(b: FunctionBuilder, x: Value) -> Value:
    inner = b.unary("erf", b.binary("mul", x, 1 / math.sqrt(2)))
    return b.binary("mul", b.binary("mul", x, 0.5), b.binary("add", inner, 1.0))


def gelu_tanh(b: FunctionBuilder, x: Value) -> Value:
    cube = b.binary("mul", b.binary("mul", x, x), x)
    inner = b.binary("add", x, b.binary("mul", cube, 0.044715))
    t = b.unary("tanh", b.binary("mul", inner, math.sqrt(2 / math.pi)))
    return b.binary("mul", b.binary("mul", x, 0.5), b.binary("add", t, 1.0))


ACTIVATIONS: dict[str, Callable[[FunctionBuilder, Value], Value]] = {
    "relu": lambda b, x: b.unary("relu", x),
    "gelu": gelu_erf,
    "gelu_tanh": gelu_tanh,
    "sigmoid": sigmoid,
    "silu": lambda b, x: b.binary("mul", x, sigmoid(b, x)),
    "tanh": lambda b, x: b.unary("tanh", x),
}


def activation(b: FunctionBuilder, op: Operation, y: Value) -> Value:
    """The optional activation epilogue of a cube op."""
    p = Props(op.properties, op.name)
    if not p.has("activation"):
        return y
    act = p.text("activation")
    if act == "clip":
        lo, hi = p.opt_real("clip_min"), p.opt_real("clip_max")
        y = y if lo is None else b.binary("max_signed", y, lo)
        return y if hi is None else b.binary("min_signed", y, hi)
    if act not in ACTIVATIONS:
        raise Refusal(f"{op.name}: activation '{act}' has no HFusion form", op)
    return ACTIVATIONS[act](b, y)


Lowering = Callable[[FunctionBuilder, Operation, list[Value], list[Value]], list[Value]]
"""(builder, op, operands, result templates with concrete shapes) -> results."""


def _rounded(b: FunctionBuilder, value: Value, like: Value) -> Value:
    """`value` rounded to the graph result's element type and shaped as it."""
    return b.cast(b.reshape(value, like.shape or ()), like.dtype)


def _unary(fun: Callable[[FunctionBuilder, Value], Value]) -> Lowering:
    return lambda b, op, xs, rs: [_rounded(b, fun(b, b.widen(xs[0])), rs[0])]


def _binary(fun: str) -> Lowering:
    return lambda b, op, xs, rs: [_rounded(b, b.binary(fun, b.widen(xs[0]), b.widen(xs[1])), rs[0])]


def _logical(fun: str) -> Lowering:
    return lambda b, op, xs, rs: [b.reshape(b.binary(fun, xs[0], xs[1]), rs[0].shape or ())]


def _compare(fun: str) -> Lowering:
    return lambda b, op, xs, rs: [
        b.reshape(b.compare(fun, b.widen(xs[0]), b.widen(xs[1])), rs[0].shape or ())
    ]


def _axis(op: Operation, rank: int, name: str = "axis") -> int:
    return si.normalize_axis(Props(op.properties, op.name).integer(name), rank)


def _softmax(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    x = b.widen(xs[0])
    shape = x.shape or ()
    axis = _axis(op, len(shape))
    mx = b.keep(b.reduce(x, [axis], "arith.maximumf", -math.inf), [axis], shape)
    e = b.unary("exp", b.binary("sub", x, mx))
    total = b.keep(b.reduce(e, [axis], "arith.addf", 0.0), [axis], shape)
    return [_rounded(b, b.binary("div", e, total), rs[0])]


def _rstd(b: FunctionBuilder, x: Value, dims: list[int], eps: float) -> Value:
    """1 / sqrt(mean(x^2) + eps) over `dims` (reduced away), in x's compute type."""
    inv = 1.0 / math.prod((x.shape or ())[d] for d in dims)
    ms = b.binary("mul", b.reduce(b.binary("mul", x, x), dims, "arith.addf", 0.0), inv)
    return b.unary("rsqrt", b.binary("add", ms, eps))


def _rms_norm_stats(
    b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]
) -> list[Value]:
    """The statistics half of a split RMS norm (the norm prologue's): rstd with the
    norm's axes kept as unit dims, float32."""
    x = b.widen(xs[0])
    axis = _axis(op, len(x.shape or ()))
    dims = list(range(axis, len(x.shape or ())))
    eps = Props(op.properties, op.name).real("epsilon")
    return [_rounded(b, _rstd(b, x, dims, eps), rs[0])]


def _rms_norm_apply(
    b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]
) -> list[Value]:
    """x * rstd * scale in float32, rounded once (graph.rms_norm_apply)."""
    y = b.binary("mul", b.widen(xs[0]), b.widen(xs[1]))
    return [_rounded(b, b.binary("mul", y, b.widen(xs[2])), rs[0])]


def _norm(center: bool) -> Lowering:
    def lower(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
        x = b.widen(xs[0])
        shape = x.shape or ()
        axis = _axis(op, len(shape))
        dims = list(range(axis, len(shape)))
        inv = 1.0 / math.prod(shape[axis:])
        eps = Props(op.properties, op.name).real("epsilon")
        if center:
            mean = b.binary("mul", b.reduce(x, dims, "arith.addf", 0.0), inv)
            x = b.binary("sub", x, b.keep(mean, dims, shape))
        scale = _rstd(b, x, dims, eps)
        y = b.binary("mul", x, b.keep(scale, dims, shape))
        y = b.binary("mul", y, b.widen(xs[1]))
        if len(xs) > 2:
            y = b.binary("add", y, b.widen(xs[2]))
        return [_rounded(b, y, rs[0])]

    return lower


def _add_norm(center: bool) -> Lowering:
    """(norm(x + residual), x + residual): the sum rounded as the unfused add stores it."""
    norm = _norm(center)

    def lower(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
        total = _rounded(b, b.binary("add", b.widen(xs[0]), b.widen(xs[1])), rs[1])
        return [*norm(b, op, [total, *xs[2:]], rs[:1]), total]

    return lower


def _matmul(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    y = b.matmul(xs[0], xs[1])
    if len(xs) > 2:
        y = b.binary("add", y, b.widen(xs[2]))
    return [_rounded(b, activation(b, op, y), rs[0])]


def _gemm(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    p = Props(op.properties, op.name)
    a, w = xs[0], xs[1]
    if p.flag("trans_a"):
        a = _transpose(b, a, [1, 0])
    if p.flag("trans_b"):
        w = _transpose(b, w, [1, 0])
    y = b.matmul(a, w)
    if p.real("alpha") != 1.0:
        y = b.binary("mul", y, p.real("alpha"))
    if len(xs) > 2:
        c = b.widen(xs[2])
        if p.real("beta") != 1.0:
            c = b.binary("mul", c, p.real("beta"))
        y = b.binary("add", y, c)
    return [_rounded(b, activation(b, op, y), rs[0])]


def _transpose(b: FunctionBuilder, x: Value, perm: Sequence[int]) -> Value:
    shape = tuple((x.shape or ())[i] for i in perm)
    return b.emit("linalg.transpose", (x,), x.dtype, shape, perm=list(perm))


def _ffn(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    ffn = cast(graph.FfnOp, op)
    of = dict(zip(op.operands, xs))
    x, w1, w2 = of[ffn.input], [of[w] for w in ffn.weight1], of[ffn.weight2]
    b1 = [of[b] for b in ffn.bias1]
    b2 = of[ffn.bias2] if ffn.bias2 is not None else None
    residual = of[ffn.residual] if ffn.residual is not None else None
    act = ffn.activation.data
    dtype = rs[0].dtype
    if len(w1) == 1 and ffn.gated:  # one [K, 2F] weight: gate columns first, then up
        w1 = [b.columns(w1[0], half) for half in (0, 1)]
        b1 = [b.columns(b1[0], half) for half in (0, 1)] if b1 else []
    rstd = None
    if ffn.norm_epsilon is not None:  # x RMS-normalised first, g folded into W1
        wide = b.widen(x)
        dims = [len(wide.shape or ()) - 1]
        rstd = _rstd(b, wide, dims, ffn.norm_epsilon.value.data)
    h = []
    for i, w in enumerate(w1):
        y = b.matmul(x, w)
        if rstd is not None:  # round(x @ W1) * rstd, as graph.ffn defines it
            shape = y.shape or ()
            y = b.binary("mul", b.widen(b.cast(y, dtype)), b.keep(rstd, [len(shape) - 1], shape))
        h.append(b.binary("add", y, b.widen(b1[i])) if b1 else y)
    if act == "swiglu":
        gate, up = (b.widen(b.cast(v, dtype)) for v in h)
        g = b.binary("mul", ACTIVATIONS["silu"](b, gate), up)
    elif act in ACTIVATIONS:
        g = ACTIVATIONS[act](b, h[0])
    else:
        raise Refusal(f"graph.ffn: activation '{act}' has no HFusion form", op)
    y = b.matmul(b.cast(g, dtype), w2)
    if b2 is not None:
        y = b.binary("add", y, b.widen(b2))
    if residual is not None:
        y = b.binary("add", y, b.widen(residual))
    return [_rounded(b, y, rs[0])]


def _reduce(combiner: str, init: float, mean: bool = False) -> Lowering:
    def lower(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
        x = b.widen(xs[0])
        shape = x.shape or ()
        axes = Props(op.properties, op.name).integers("axes") or tuple(range(len(shape)))
        dims = sorted(si.normalize_axis(a, len(shape)) for a in axes)
        y = b.reduce(x, dims, combiner, init)
        if mean:
            y = b.binary("mul", y, 1.0 / math.prod(shape[d] for d in dims))
        return [_rounded(b, y, rs[0])]

    return lower


def _cast(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    if xs[0].dtype in FLOATS and rs[0].dtype not in FLOATS:
        raise Refusal(f"graph.cast: {xs[0].dtype} -> {rs[0].dtype} is not exported", op)
    return [b.cast(xs[0], rs[0].dtype)]


def _clip(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    p = Props(op.properties, op.name)
    y = b.widen(xs[0])
    lo, hi = p.opt_real("min"), p.opt_real("max")
    y = y if lo is None else b.binary("max_signed", y, lo)
    y = y if hi is None else b.binary("min_signed", y, hi)
    return [_rounded(b, y, rs[0])]


def _where(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    shape = rs[0].shape or ()
    ops = [b.broadcast_to(v, shape) for v in (xs[0], b.widen(xs[1]), b.widen(xs[2]))]
    y = b.emit("hfusion.select", ops, COMPUTE, shape)
    return [_rounded(b, y, rs[0])]


def _not(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    false = b.fill(0, "i1", xs[0].shape or ())
    return [b.emit("hfusion.compare", (xs[0], false), "i1", xs[0].shape, fun="veq")]


def _view(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    return [b.reshape(xs[0], rs[0].shape or ())]


def _transpose_op(
    b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]
) -> list[Value]:
    perm = Props(op.properties, op.name).integers("perm")
    return [_transpose(b, xs[0], perm)]


def _expand(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    return [b.broadcast_to(xs[0], rs[0].shape or ())]


def _concat(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    dim = _axis(op, len(rs[0].shape or ()))
    return [b.emit("tensor.concat", xs, rs[0].dtype, rs[0].shape, dim=dim)]


def _split(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    shape = xs[0].shape or ()
    dim = _axis(op, len(shape))
    outs, start = [], 0
    for r in rs:
        offsets = [start if i == dim else 0 for i in range(len(shape))]
        outs.append(b.emit("tensor.extract_slice", xs[:1], r.dtype, r.shape, offsets=offsets))
        start += (r.shape or ())[dim]
    return outs


def _swiglu(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    gate, up = b.widen(xs[0]), b.widen(xs[1])
    return [_rounded(b, b.binary("mul", ACTIVATIONS["silu"](b, gate), up), rs[0])]


def _batch_norm(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    """Inference batch norm over channel axis 1: per-channel vectors broadcast explicitly."""
    x, scale, bias, mean, var = (b.widen(v) for v in xs)
    shape = x.shape or ()
    eps = Props(op.properties, op.name).real("epsilon")
    inv = b.binary("mul", b.unary("rsqrt", b.binary("add", var, eps)), scale)
    dims = [d for d in range(len(shape)) if d != 1]

    def channel(v: Value) -> Value:
        return b.emit("linalg.broadcast", (v,), COMPUTE, shape, dims=dims)

    y = b.binary("mul", b.binary("sub", x, channel(mean)), channel(inv))
    return [_rounded(b, b.binary("add", y, channel(bias)), rs[0])]


def _slice(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    """A unit-step slice as tensor.extract_slice (its offsets from the clamped starts)."""
    p = Props(op.properties, op.name)
    shape = xs[0].shape or ()
    offsets = [0] * len(shape)
    for start, end, axis, step in zip(
        p.integers("starts"), p.integers("ends"), p.integers("axes"), p.integers("steps")
    ):
        if step != 1:
            raise Refusal(f"graph.slice: step {step} is not exported (unit steps only)", op)
        a = si.normalize_axis(axis, len(shape))
        offsets[a] = slice(start, end).indices(shape[a])[0]
    return [b.emit("tensor.extract_slice", xs[:1], rs[0].dtype, rs[0].shape, offsets=offsets)]


def _rope(b: FunctionBuilder, op: Operation, xs: list[Value], rs: list[Value]) -> list[Value]:
    """x * cos + rotate_half(x) * sin (the non-interleaved form); a partial rope
    (rotary_dim R) on x[..., :R], concatenated with x[..., R:]."""
    p = Props(op.properties, op.name)
    if p.flag("interleaved"):
        raise Refusal("graph.rope: the interleaved form is not exported", op)
    x, cos, sin = (b.widen(v) for v in xs)
    shape = x.shape or ()
    r = p.integer("rotary_dim") if p.has("rotary_dim") else shape[-1]
    head = x
    if r < shape[-1]:
        head = b.emit(
            "tensor.extract_slice", (x,), COMPUTE, (*shape[:-1], r), offsets=[0] * len(shape)
        )
    y = _rotate_half(b, head, cos, sin)
    if r < shape[-1]:
        at = [0] * (len(shape) - 1) + [r]
        tail = b.emit(
            "tensor.extract_slice", (x,), COMPUTE, (*shape[:-1], shape[-1] - r), offsets=at
        )
        y = b.emit("tensor.concat", (y, tail), COMPUTE, shape, dim=len(shape) - 1)
    return [_rounded(b, y, rs[0])]


def _rotate_half(b: FunctionBuilder, x: Value, cos: Value, sin: Value) -> Value:
    """x * cos + concat(-x2, x1) * sin, the tables broadcast to x."""
    shape = x.shape or ()
    half = shape[-1] // 2
    part = (*shape[:-1], half)
    lo = b.emit("tensor.extract_slice", (x,), COMPUTE, part, offsets=[0] * len(shape))
    hi_offsets = [0] * (len(shape) - 1) + [half]
    hi = b.emit("tensor.extract_slice", (x,), COMPUTE, part, offsets=hi_offsets)
    rotated = b.emit("tensor.concat", (b.unary("negf", hi), lo), COMPUTE, shape, dim=len(shape) - 1)
    cos_b, sin_b = _rope_table(b, cos, shape), _rope_table(b, sin, shape)
    return b.binary("add", b.binary("mul", x, cos_b), b.binary("mul", rotated, sin_b))


def _rope_table(b: FunctionBuilder, table: Value, shape: tuple[int, ...]) -> Value:
    """A [S, D] cos/sin table against x [B, N, S, D]: numpy broadcasting from the right."""
    return b.broadcast_to(table, shape)


LOWERINGS: dict[type[Operation], Lowering] = {
    graph.NegOp: _unary(lambda b, x: b.unary("negf", x)),
    graph.AbsOp: _unary(lambda b, x: b.unary("abs", x)),
    graph.ExpOp: _unary(lambda b, x: b.unary("exp", x)),
    graph.LogOp: _unary(lambda b, x: b.unary("log", x)),
    graph.SqrtOp: _unary(lambda b, x: b.unary("sqrt", x)),
    graph.RsqrtOp: _unary(lambda b, x: b.unary("rsqrt", x)),
    graph.ReciprocalOp: _unary(lambda b, x: b.unary("rec", x)),
    graph.ReluOp: _unary(ACTIVATIONS["relu"]),
    graph.SigmoidOp: _unary(sigmoid),
    graph.TanhOp: _unary(ACTIVATIONS["tanh"]),
    graph.ErfOp: _unary(lambda b, x: b.unary("erf", x)),
    graph.SiluOp: _unary(ACTIVATIONS["silu"]),
    graph.SinOp: _unary(lambda b, x: b.unary("sin", x)),
    graph.CosOp: _unary(lambda b, x: b.unary("cos", x)),
    graph.GeluOp: lambda b, op, xs, rs: _unary(
        gelu_tanh if cast(graph.GeluOp, op).approximate.data == "tanh" else gelu_erf
    )(b, op, xs, rs),
    graph.ClipOp: _clip,
    graph.NotOp: _not,
    graph.CastOp: _cast,
    graph.AddOp: _binary("add"),
    graph.SubOp: _binary("sub"),
    graph.MulOp: _binary("mul"),
    graph.DivOp: _binary("div"),
    graph.MaxOp: _binary("max_signed"),
    graph.MinOp: _binary("min_signed"),
    graph.PowOp: _binary("powf"),
    graph.AndOp: _logical("vand"),
    graph.OrOp: _logical("vor"),
    graph.EqualOp: _compare("veq"),
    graph.LessOp: _compare("vlt"),
    graph.GreaterOp: _compare("vgt"),
    graph.WhereOp: _where,
    graph.ReduceSumOp: _reduce("arith.addf", 0.0),
    graph.ReduceMeanOp: _reduce("arith.addf", 0.0, mean=True),
    graph.ReduceMaxOp: _reduce("arith.maximumf", -math.inf),
    graph.ReduceMinOp: _reduce("arith.minimumf", math.inf),
    graph.SoftmaxOp: _softmax,
    graph.LayerNormOp: _norm(center=True),
    graph.RmsNormOp: _norm(center=False),
    graph.AddLayerNormOp: _add_norm(center=True),
    graph.AddRmsNormOp: _add_norm(center=False),
    graph.RmsNormStatsOp: _rms_norm_stats,
    graph.RmsNormApplyOp: _rms_norm_apply,
    graph.MatmulOp: _matmul,
    graph.GemmOp: _gemm,
    graph.FfnOp: _ffn,
    graph.ReshapeOp: _view,
    graph.TransposeOp: _transpose_op,
    graph.ExpandOp: _expand,
    graph.ConcatOp: _concat,
    graph.SplitOp: _split,
    graph.RopeOp: _rope,
    graph.SwigluOp: _swiglu,
    graph.BatchNormOp: _batch_norm,
    graph.SliceOp: _slice,
}

# ops HFusion has no named op for: kept as calls of CANN library operators from the host
# function (shared/reference/bishengir.md: convolutions and pooling are not HFusion ops;
# gather has no HFusion lowering on Ascend910B)
LIBRARY_OPS: dict[str, str] = {
    "graph.conv2d": "convolution is not an HFusion op",
    "graph.max_pool2d": "pooling is not an HFusion op",
    "graph.avg_pool2d": "pooling is not an HFusion op",
    "graph.global_avg_pool": "pooling is not an HFusion op",
    "graph.gather": "gather has no HFusion lowering on Ascend910B",
    "graph.embedding": "gather has no HFusion lowering on Ascend910B",
    "graph.flash_attention": "attention is matmul-softmax-matmul, a cube-vector-cube (MIX_C2) "
    "kernel that HFusion 1.2.0 cannot schedule",
}


def splat_constant(b: FunctionBuilder, op: graph.ConstantOp, dynamic_size: int) -> Value | None:
    """A constant of one repeated value as a linalg.fill (None for any other constant)."""
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

    value = op.value
    if not isinstance(value, DenseIntOrFPElementsAttr) or not value.is_splat():
        return None
    t = static_type(cast(TensorType, op.results[0].type), dynamic_size)
    if t.dtype not in NUMPY_DTYPES:
        return None
    return b.fill(value.get_values()[0], t.dtype, t.shape or ())


def static_type(t: TensorType, dynamic_size: int) -> Value:
    shape = tuple(dynamic_size if d == si.DYN else d for d in t.get_shape())
    return Value("", element_name(t), shape)


def concrete_results(op: Operation, operands: Sequence[Value]) -> list[Value]:
    """The op's result types re-inferred from its operands' static shapes (a dynamic dim
    pinned at the inputs follows through reshapes as the graph's own shape rules say)."""
    from xdsl.dialects.builtin import TensorType as TT

    from autofusion.dtypes import ELEMENT_TYPES

    types = [TT(ELEMENT_TYPES[v.dtype], v.shape or ()) for v in operands]
    infer = getattr(type(op), "infer", None)
    declared = [cast(TensorType, r.type) for r in op.results]
    inferred = declared if infer is None else infer(types, Props(op.properties, op.name))
    out = []
    for have, want in zip(inferred, declared):
        shape = tuple(have.get_shape())
        if any(d == si.DYN for d in shape):
            raise Refusal(f"{op.name}: its result shape stays dynamic", op)
        out.append(Value("", element_name(want), shape))
    return out


def lower_op(b: FunctionBuilder, op: Operation, operands: list[Value]) -> list[Value]:
    """The steps of one graph op; a Refusal names the op and why it has no HFusion form."""
    lowering = LOWERINGS.get(type(op))
    if lowering is None:
        raise Refusal(
            f"{op.name} has no HFusion lowering in afc (autofusion/codegen/hfusion_lowering.py); "
            "the group is not exported",
            op,
        )
    for v in operands:
        if v.dtype not in (*FLOATS, "i1", "i32", "i64", "i8"):
            raise Refusal(f"{op.name}: element type {v.dtype} is not exported", op)
    results = concrete_results(op, operands)
    try:
        values = lowering(b, op, operands, results)
    except ValueError as e:
        raise Refusal(f"{op.name}: {e}", op) from e
    for got, want in zip(values, results):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise Refusal(f"{op.name}: exported as {got.type_text}, expected {want.type_text}", op)
    return values
