"""Reference semantics of the graph dialect on numpy, for xDSL's interpreter.

Values are numpy arrays in the storage dtype of their element type (see
`autofusion.dtypes`). Floating-point work is done in float32 (float64 for f64) and
rounded to the result's element type after every op; reductions and matmuls accumulate
in float32 as Ascend's vector and cube units do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from autofusion import dtypes, narrow_types, resources
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph import Props

Array = np.ndarray


def _props(op: Operation) -> Props:
    return Props(op.properties, op.name)


def _compute(x: Array) -> Array:
    """Widen f16 (and bf16-in-f32) to float32 for arithmetic; leave other dtypes alone."""
    if x.dtype == np.float16:
        return x.astype(np.float32)
    return x


def _result(op: Operation, value: Any, index: int = 0) -> Array:
    t = cast(TensorType, op.results[index].type)
    out = dtypes.to_storage(np.asarray(value), t.element_type)
    got = out.shape
    want = t.get_shape()
    if len(got) != len(want) or any(w not in (si.DYN, g) for g, w in zip(got, want)):
        raise InterpretationError(
            f"{op.name} produced shape {si.fmt(got)} but its result type is {t}"
        )
    return out


def erf(x: Array) -> Array:
    """erf to double precision (numpy has none; math.erf is exact to 1 ulp)."""
    values = np.frompyfunc(math.erf, 1, 1)(np.asarray(x, dtype=np.float64))
    return np.asarray(values, dtype=np.float64)


def sigmoid(x: Array) -> Array:
    # exp of a non-positive argument only: no overflow warnings for large |x|
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def gelu(x: Array, approximate: str) -> Array:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def int_div(a: Array, b: Array) -> Array:
    """Integer division truncating toward zero (C semantics, as ONNX Runtime does)."""
    if np.any(b == 0):
        raise InterpretationError("integer division by zero")
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix


def _window_view(x: Array, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int) -> Array:
    """[N, C, OH, OW, kh, kw] strided view of a padded NCHW array."""
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x,
        shape=(n, c, oh, ow, kh, kw),
        strides=(s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw),
        writeable=False,
    )


def conv2d(
    x: Array,
    w: Array,
    b: Array | None,
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    group: int,
) -> Array:
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    m, cg, kh, kw = w.shape
    cols = _window_view(xp, kh, kw, strides[0], strides[1], dilations[0], dilations[1])
    n, _, oh, ow = cols.shape[:4]
    mg = m // group
    out = np.empty((n, m, oh, ow), dtype=np.result_type(x, w))
    for g in range(group):
        xg = cols[:, g * cg : (g + 1) * cg]  # [N, cg, OH, OW, kh, kw]
        wg = w[g * mg : (g + 1) * mg]  # [mg, cg, kh, kw]
        out[:, g * mg : (g + 1) * mg] = np.einsum("nchwij,mcij->nmhw", xg, wg, optimize=True)
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def pool_padding(
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: bool,
) -> tuple[tuple[int, ...], tuple[int, int], list[tuple[int, int]]]:
    """The kernel extents that count, the output (H, W) and the np.pad spec of a 2-D pool
    over an NCHW input of `shape`: the strided window view of the padded input yields
    exactly the output's windows (ceil_mode's extra windows by more end padding)."""
    h_out, w_out = si.window_nd(shape, kernel, strides, pads, dilations, ceil_mode)
    # taps at or past the end of the padded input (a ceil_mode window larger than the
    # input) never count: every window starts inside it, so dropping them changes nothing
    kernel = tuple(
        min(k, -(-(size + before + after) // d))
        for k, size, before, after, d in zip(kernel, shape[2:], pads[:2], pads[2:], dilations)
    )
    # extra bottom/right padding so the strided view yields ceil-mode windows
    need_h = (h_out - 1) * strides[0] + dilations[0] * (kernel[0] - 1) + 1
    need_w = (w_out - 1) * strides[1] + dilations[1] * (kernel[1] - 1) + 1
    extra_h = max(0, need_h - (shape[2] + pads[0] + pads[2]))
    extra_w = max(0, need_w - (shape[3] + pads[1] + pads[3]))
    spec = [(0, 0), (0, 0), (pads[0], pads[2] + extra_h), (pads[1], pads[3] + extra_w)]
    return kernel, (h_out, w_out), spec


def pool2d(
    x: Array,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: bool,
    kind: str,
    count_include_pad: bool = False,
) -> Array:
    kernel, (h_out, w_out), spec = pool_padding(
        x.shape, kernel, strides, pads, dilations, ceil_mode
    )
    if kind == "max":
        xp = np.pad(x, spec, constant_values=_extreme(x, low=True))
        win = _window_view(xp, *kernel, *strides, *dilations)[:, :, :h_out, :w_out]
        return cast(Array, win.max(axis=(4, 5)))
    xp = np.pad(x, spec)
    win = _window_view(xp, *kernel, *strides, *dilations)[:, :, :h_out, :w_out]
    total = win.sum(axis=(4, 5))
    # divisor: window cells inside the input (plus explicit pads if count_include_pad);
    # cells added only for ceil_mode never count (ONNX AveragePool reference)
    inside = np.zeros(xp.shape[2:], dtype=np.float32)
    if count_include_pad:
        inside[: x.shape[2] + pads[0] + pads[2], : x.shape[3] + pads[1] + pads[3]] = 1
    else:
        inside[pads[0] : pads[0] + x.shape[2], pads[1] : pads[1] + x.shape[3]] = 1
    counts = _window_view(inside[None, None], *kernel, *strides, *dilations)[
        :, :, :h_out, :w_out
    ].sum(axis=(4, 5))
    return cast(Array, total / counts)


def normalize(x: Array, axes: tuple[int, ...], epsilon: float, center: bool) -> Array:
    if center:
        mean = x.mean(axis=axes, keepdims=True)
        d = x - mean
        var = (d * d).mean(axis=axes, keepdims=True)
        return cast(Array, d / np.sqrt(var + epsilon))
    ms = (x * x).mean(axis=axes, keepdims=True)
    return cast(Array, x / np.sqrt(ms + epsilon))


def reshape_target(shape: tuple[int, ...], spec: tuple[int, ...]) -> tuple[int, ...]:
    out = [shape[i] if d == 0 else d for i, d in enumerate(spec)]
    return tuple(out)


# graph.pad's modes other than constant, by their np.pad names
_NUMPY_PAD_MODES: dict[str, Literal["reflect", "edge", "wrap"]] = {
    "reflect": "reflect",
    "edge": "edge",
    "wrap": "wrap",
}


def pad(x: Array, pads: tuple[int, ...], mode: str, value: float) -> Array:
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    # negative pads crop
    index = tuple(
        slice(-b if b < 0 else 0, x.shape[i] + e if e < 0 else x.shape[i])
        for i, (b, e) in enumerate(zip(begins, ends))
    )
    x = x[index]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    numpy_mode = _NUMPY_PAD_MODES.get(mode)
    if numpy_mode is None:
        raise InterpretationError(f"graph.pad mode '{mode}' is not one of {graph.PAD_MODES}")
    return np.pad(x, width, mode=numpy_mode)


_UNARY: dict[type[Operation], Callable[[Array], Array]] = {
    graph.NegOp: np.negative,
    graph.AbsOp: np.abs,
    graph.ExpOp: np.exp,
    graph.LogOp: np.log,
    graph.SqrtOp: np.sqrt,
    graph.RsqrtOp: lambda x: 1 / np.sqrt(x),
    graph.ReciprocalOp: lambda x: 1 / x,
    graph.ReluOp: lambda x: np.maximum(x, np.zeros((), x.dtype)),
    graph.SigmoidOp: sigmoid,
    graph.TanhOp: np.tanh,
    graph.ErfOp: erf,
    graph.SiluOp: lambda x: x * sigmoid(x),
    graph.SinOp: np.sin,
    graph.CosOp: np.cos,
    graph.NotOp: np.logical_not,
}

_BINARY: dict[type[Operation], Callable[[Array, Array], Array]] = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.PowOp: np.power,
    graph.MaxOp: np.maximum,
    graph.MinOp: np.minimum,
    graph.AndOp: np.logical_and,
    graph.OrOp: np.logical_or,
    graph.EqualOp: np.equal,
    graph.LessOp: np.less,
    graph.GreaterOp: np.greater,
}

_REDUCE: dict[type[Operation], Callable[..., Array]] = {
    graph.ReduceSumOp: np.sum,
    graph.ReduceMeanOp: np.mean,
    graph.ReduceMaxOp: np.max,
    graph.ReduceMinOp: np.min,
}


def _extreme(x: Array, low: bool) -> Any:
    """The lowest (or highest) value of `x`'s dtype: -inf/+inf for floats."""
    if x.dtype == np.bool_:
        return not low
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return info.min if low else info.max
    return -np.inf if low else np.inf


_ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "gelu": lambda x: gelu(x, "none"),
    "gelu_tanh": lambda x: gelu(x, "tanh"),
    "silu": lambda x: x * sigmoid(x),
    "sigmoid": sigmoid,
}


def apply_activation(op: Operation, y: Array) -> Array:
    """The optional activation epilogue of a cube op (graph.ACTIVATIONS)."""
    p = _props(op)
    if not p.has("activation"):
        return y
    act = p.text("activation")
    if act == "clip":
        lo, hi = p.opt_real("clip_min"), p.opt_real("clip_max")
        if lo is not None:
            y = np.maximum(y, np.asarray(lo).astype(y.dtype))
        if hi is not None:
            y = np.minimum(y, np.asarray(hi).astype(y.dtype))
        return y
    return _ACTIVATIONS[act](y)


def _quiet(fn: Callable[[], Array]) -> Array:
    # inf and nan are values, not errors: ONNX Runtime returns them silently too
    with np.errstate(all="ignore"):
        return fn()


@register_impls
class GraphFunctions(InterpreterFunctions):
    """numpy implementations of every graph op."""

    shape_only_fill: Callable[[graph.ConstantOp], Array] | None = None

    @impl(graph.ConstantOp)
    def run_constant(
        self, interp: Interpreter, op: graph.ConstantOp, args: PythonValues
    ) -> PythonValues:
        arr = resources.constant_array(op.value)
        if arr is None:
            if op.value is None and self.shape_only_fill is not None:
                return (_result(op, self.shape_only_fill(op)),)
            what = "is a shape-only weight" if op.value is None else "has no blob in the file"
            name = op.attributes.get("name")
            label = f" {name}" if name is not None else ""
            raise InterpretationError(
                f"graph.constant{label} of type {op.result.type} {what}; "
                "it has no values to run with"
            )
        return (arr,)

    # ---- elementwise ------------------------------------------------------------

    def run_unary(self, op: Operation, x: Array) -> PythonValues:
        fn = _UNARY[type(op)]
        return (_result(op, _quiet(lambda: fn(_compute(x)))),)

    def run_binary(self, op: Operation, a: Array, b: Array) -> PythonValues:
        if isinstance(op, graph.DivOp):
            if np.issubdtype(a.dtype, np.integer):
                return (_result(op, int_div(a, b)),)
            return (_result(op, _quiet(lambda: np.divide(_compute(a), _compute(b)))),)
        fn = _BINARY[type(op)]
        return (_result(op, _quiet(lambda: fn(_compute(a), _compute(b)))),)

    @impl(graph.NegOp)
    def run_neg(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.AbsOp)
    def run_abs(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.ExpOp)
    def run_exp(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.LogOp)
    def run_log(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.SqrtOp)
    def run_sqrt(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.RsqrtOp)
    def run_rsqrt(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.ReciprocalOp)
    def run_reciprocal(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.ReluOp)
    def run_relu(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.SigmoidOp)
    def run_sigmoid(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.TanhOp)
    def run_tanh(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.ErfOp)
    def run_erf(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.SiluOp)
    def run_silu(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.SinOp)
    def run_sin(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.CosOp)
    def run_cos(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.NotOp)
    def run_not(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(graph.GeluOp)
    def run_gelu(self, i: Interpreter, op: graph.GeluOp, args: PythonValues) -> PythonValues:
        approx = _props(op).text("approximate")
        return (_result(op, _quiet(lambda: gelu(_compute(args[0]), approx))),)

    @impl(graph.ClipOp)
    def run_clip(self, i: Interpreter, op: graph.ClipOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x = _compute(args[0])
        lo, hi = p.opt_real("min"), p.opt_real("max")
        if lo is not None:
            x = np.maximum(x, np.asarray(lo).astype(x.dtype))
        if hi is not None:
            x = np.minimum(x, np.asarray(hi).astype(x.dtype))
        return (_result(op, x),)

    @impl(graph.CastOp)
    def run_cast(self, i: Interpreter, op: graph.CastOp, args: PythonValues) -> PythonValues:
        x = args[0]
        target = cast(TensorType, op.output.type).element_type
        # float -> int truncates toward zero; float -> bool is x != 0
        source = cast(TensorType, op.input.type).element_type
        if dtypes.is_narrow(target):  # saturate and round_mode: autofusion/narrow_types.py
            p = _props(op)
            saturate = p.flag("saturate") if p.has("saturate") else True
            mode = p.text("round_mode") if p.has("round_mode") else "up"
            narrow = narrow_types.to_narrow(x, dtypes.type_name(target), saturate, mode)
            return (_result(op, narrow),)
        if dtypes.is_float(source) and dtypes.is_integer(target):
            x = np.trunc(x)
        return (_result(op, _quiet(lambda: x)),)

    @impl(graph.AddOp)
    def run_add(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.SubOp)
    def run_sub(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.MulOp)
    def run_mul(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.DivOp)
    def run_div(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.PowOp)
    def run_pow(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.MaxOp)
    def run_max(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.MinOp)
    def run_min(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.AndOp)
    def run_and(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.OrOp)
    def run_or(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.EqualOp)
    def run_equal(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.LessOp)
    def run_less(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.GreaterOp)
    def run_greater(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(graph.WhereOp)
    def run_where(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        c, a, b = args
        return (_result(op, np.where(c, a, b)),)

    # ---- reductions -------------------------------------------------------------

    def run_reduce(self, op: graph.ReduceOp, x: Array) -> PythonValues:
        axes = op.reduced_axes()
        keep = _props(op).flag("keepdims")
        fn = _REDUCE[type(op)]
        if x.size == 0 and isinstance(op, graph.ReduceMaxOp | graph.ReduceMinOp):
            # ONNX ReduceMax/ReduceMin-18: an empty set gives -inf/+inf, or the integer
            # type's lowest/highest value (False/True for bool)
            low = isinstance(op, graph.ReduceMaxOp)
            return (_result(op, fn(x, axis=axes, keepdims=keep, initial=_extreme(x, low))),)
        return (_result(op, _quiet(lambda: fn(_compute(x), axis=axes, keepdims=keep))),)

    @impl(graph.ReduceSumOp)
    def run_reduce_sum(
        self, i: Interpreter, op: graph.ReduceOp, args: PythonValues
    ) -> PythonValues:
        return self.run_reduce(op, *args)

    @impl(graph.ReduceMeanOp)
    def run_reduce_mean(
        self, i: Interpreter, op: graph.ReduceOp, args: PythonValues
    ) -> PythonValues:
        return self.run_reduce(op, *args)

    @impl(graph.ReduceMaxOp)
    def run_reduce_max(
        self, i: Interpreter, op: graph.ReduceOp, args: PythonValues
    ) -> PythonValues:
        return self.run_reduce(op, *args)

    @impl(graph.ReduceMinOp)
    def run_reduce_min(
        self, i: Interpreter, op: graph.ReduceOp, args: PythonValues
    ) -> PythonValues:
        return self.run_reduce(op, *args)

    @impl(graph.SoftmaxOp)
    def run_softmax(self, i: Interpreter, op: graph.SoftmaxOp, args: PythonValues) -> PythonValues:
        x = _compute(args[0])
        axis = _props(op).integer("axis")

        def softmax() -> Array:
            e = np.exp(x - x.max(axis=axis, keepdims=True))
            return cast(Array, e / e.sum(axis=axis, keepdims=True))

        return (_result(op, _quiet(softmax)),)

    # ---- cube -------------------------------------------------------------------

    @impl(graph.MatmulOp)
    def run_matmul(self, i: Interpreter, op: graph.MatmulOp, args: PythonValues) -> PythonValues:
        a, b = _compute(args[0]), _compute(args[1])

        def matmul() -> Array:
            y = np.matmul(a, b)
            if len(args) == 3:
                y = y + _compute(args[2])
            return apply_activation(op, y)

        return (_result(op, _quiet(matmul)),)

    @impl(graph.GemmOp)
    def run_gemm(self, i: Interpreter, op: graph.GemmOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        a, b = _compute(args[0]), _compute(args[1])
        a = a.T if p.flag("trans_a") else a
        b = b.T if p.flag("trans_b") else b
        alpha, beta = np.float32(p.real("alpha")), np.float32(p.real("beta"))

        def gemm() -> Array:
            y = alpha * (a @ b)
            if len(args) == 3:
                y = y + beta * _compute(args[2])
            return apply_activation(op, y)

        return (_result(op, _quiet(gemm)),)

    @impl(graph.Conv2dOp)
    def run_conv2d(self, i: Interpreter, op: graph.Conv2dOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x, w = _compute(args[0]), _compute(args[1])
        b = _compute(args[2]) if len(args) == 3 else None
        y = conv2d(
            x,
            w,
            b,
            p.integers("strides"),
            p.integers("pads"),
            p.integers("dilations"),
            p.integer("group"),
        )
        return (_result(op, _quiet(lambda: apply_activation(op, y))),)

    # ---- normalization ----------------------------------------------------------

    @impl(graph.BatchNormOp)
    def run_batch_norm(
        self, i: Interpreter, op: graph.BatchNormOp, args: PythonValues
    ) -> PythonValues:
        x, scale, bias, mean, var = (_compute(v) for v in args)
        eps = np.float32(_props(op).real("epsilon"))
        shape = (1, -1) + (1,) * (x.ndim - 2)

        def bn() -> Array:
            inv = scale / np.sqrt(var + eps)
            return cast(Array, (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape))

        return (_result(op, _quiet(bn)),)

    @impl(graph.LayerNormOp)
    def run_layer_norm(
        self, i: Interpreter, op: graph.LayerNormOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        x = _compute(args[0])
        axis = si.normalize_axis(p.integer("axis"), x.ndim)
        axes = tuple(range(axis, x.ndim))

        def ln() -> Array:
            y = normalize(x, axes, p.real("epsilon"), center=True) * _compute(args[1])
            return y + _compute(args[2]) if len(args) == 3 else y

        return (_result(op, _quiet(ln)),)

    @impl(graph.RmsNormOp)
    def run_rms_norm(self, i: Interpreter, op: graph.RmsNormOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x = _compute(args[0])
        axis = si.normalize_axis(p.integer("axis"), x.ndim)
        axes = tuple(range(axis, x.ndim))
        return (
            _result(
                op,
                _quiet(
                    lambda: normalize(x, axes, p.real("epsilon"), center=False) * _compute(args[1])
                ),
            ),
        )

    # ---- pooling ----------------------------------------------------------------

    @impl(graph.MaxPool2dOp)
    def run_max_pool(
        self, i: Interpreter, op: graph.MaxPool2dOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        y = pool2d(
            _compute(args[0]),
            p.integers("kernel_shape"),
            p.integers("strides"),
            p.integers("pads"),
            p.integers("dilations"),
            p.flag("ceil_mode"),
            "max",
        )
        return (_result(op, y),)

    @impl(graph.AvgPool2dOp)
    def run_avg_pool(
        self, i: Interpreter, op: graph.AvgPool2dOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        y = pool2d(
            _compute(args[0]),
            p.integers("kernel_shape"),
            p.integers("strides"),
            p.integers("pads"),
            graph.AvgPool2dOp.window_dilations(p),
            p.flag("ceil_mode"),
            "avg",
            p.flag("count_include_pad"),
        )
        return (_result(op, y),)

    @impl(graph.GlobalAvgPoolOp)
    def run_global_avg_pool(
        self, i: Interpreter, op: Operation, args: PythonValues
    ) -> PythonValues:
        x = _compute(args[0])
        return (_result(op, x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)),)

    # ---- data movement ----------------------------------------------------------

    @impl(graph.ReshapeOp)
    def run_reshape(self, i: Interpreter, op: graph.ReshapeOp, args: PythonValues) -> PythonValues:
        x = args[0]
        target = reshape_target(x.shape, _props(op).integers("shape"))
        try:
            return (_result(op, x.reshape(target)),)
        except ValueError as e:
            raise InterpretationError(
                f"graph.reshape cannot reshape {si.fmt(x.shape)} into {list(target)}"
            ) from e

    @impl(graph.TransposeOp)
    def run_transpose(
        self, i: Interpreter, op: graph.TransposeOp, args: PythonValues
    ) -> PythonValues:
        return (
            _result(op, np.ascontiguousarray(np.transpose(args[0], _props(op).integers("perm")))),
        )

    @impl(graph.ConcatOp)
    def run_concat(self, i: Interpreter, op: graph.ConcatOp, args: PythonValues) -> PythonValues:
        return (_result(op, np.concatenate(args, axis=_props(op).integer("axis"))),)

    @impl(graph.SplitOp)
    def run_split(self, i: Interpreter, op: graph.SplitOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x = args[0]
        axis = p.integer("axis")
        sizes = p.integers("sizes")
        if sum(sizes) != x.shape[axis]:
            raise InterpretationError(
                f"graph.split sizes {list(sizes)} do not add up to {x.shape[axis]}"
            )
        parts = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
        return tuple(_result(op, part, k) for k, part in enumerate(parts))

    @impl(graph.SliceOp)
    def run_slice(self, i: Interpreter, op: graph.SliceOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x = args[0]
        index = [slice(None)] * x.ndim
        for s, e, a, st in zip(
            p.integers("starts"), p.integers("ends"), p.integers("axes"), p.integers("steps")
        ):
            index[si.normalize_axis(a, x.ndim)] = slice(s, e, st)
        return (_result(op, np.ascontiguousarray(x[tuple(index)])),)

    @impl(graph.GatherOp)
    def run_gather(self, i: Interpreter, op: graph.GatherOp, args: PythonValues) -> PythonValues:
        data, idx = args
        axis = si.normalize_axis(_props(op).integer("axis"), data.ndim)
        n = data.shape[axis]
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise InterpretationError(f"graph.gather index out of range [-{n}, {n})")
        return (_result(op, np.take(data, idx, axis=axis)),)

    @impl(graph.ExpandOp)
    def run_expand(self, i: Interpreter, op: graph.ExpandOp, args: PythonValues) -> PythonValues:
        x = args[0]
        spec = _props(op).integers("shape")
        rank = max(len(spec), x.ndim)
        xs = (1,) * (rank - x.ndim) + x.shape
        ss = (-1,) * (rank - len(spec)) + tuple(spec)
        target = tuple(xd if sd in (-1, 1) else sd for xd, sd in zip(xs, ss))
        try:
            return (_result(op, np.broadcast_to(x, target).copy()),)
        except ValueError as e:
            raise InterpretationError(
                f"graph.expand cannot broadcast {si.fmt(x.shape)} to {list(spec)}"
            ) from e

    @impl(graph.PadOp)
    def run_pad(self, i: Interpreter, op: graph.PadOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        return (_result(op, pad(args[0], p.integers("pads"), p.text("mode"), p.real("value"))),)

    # ---- fusion groups ----------------------------------------------------------

    @impl(graph.FusionGroupOp)
    def run_fusion_group(
        self, interp: Interpreter, op: graph.FusionGroupOp, args: PythonValues
    ) -> PythonValues:
        return interp.run_ssacfg_region(op.body, args, "fusion_group")

    @impl_terminator(graph.YieldOp)
    def run_yield(
        self, interp: Interpreter, op: graph.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()
