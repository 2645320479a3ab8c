"""Reference semantics of the graph dialect's math and search ops (`graph_math`) on numpy.

Same conventions as `autofusion.interpreter.graph`: f16 is computed in float32 and every
result is rounded to its element type; inf and nan are values, not errors.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from autofusion.dialects import graph_math as gm
from autofusion.interpreter.graph import Array, _compute, _props, _quiet, _result, sigmoid


def sign(x: Array) -> Array:
    # np.sign of an unsigned array is already 0/1; NaN stays NaN
    return np.sign(x)


def shrink(x: Array, lambd: float, bias: float) -> Array:
    """Shrink-9 on the exact values (float64 holds every integer input up to 2**53)."""
    v = x.astype(np.float64)
    return np.where(v < -lambd, v + bias, np.where(v > lambd, v - bias, 0.0))


def celu(x: Array, alpha: float) -> Array:
    return np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha))


def mod(a: Array, b: Array, fmod: bool) -> Array:
    """Mod-13/28: fmod is C's truncated remainder, else the floored (Python) one."""
    if np.issubdtype(a.dtype, np.integer) and np.any(b == 0):
        raise InterpretationError("integer modulo by zero")
    return np.fmod(a, b) if fmod else np.mod(a, b)


def bit_shift(x: Array, y: Array, direction: str) -> Array:
    """BitShift-28: a shift by y outside [0, bits) leaves only the sign fill."""
    bits = x.dtype.itemsize * 8
    x, y = np.broadcast_arrays(x, y)
    outside = (y < 0) | (y >= bits) if np.issubdtype(y.dtype, np.signedinteger) else y >= bits
    amount = np.where(outside, 0, y).astype(x.dtype)
    if direction == "LEFT":
        return np.where(outside, np.zeros((), x.dtype), np.left_shift(x, amount))
    fill = np.where(x < 0, -1, 0).astype(x.dtype) if np.issubdtype(x.dtype, np.signedinteger) else 0
    return np.where(outside, fill, np.right_shift(x, amount))


def arg_extreme(x: Array, axis: int, keepdims: bool, last: bool, fn: Callable) -> Array:
    """ArgMax/ArgMin-13: the first extreme index along axis, or the last one."""
    if last:
        n = x.shape[axis]
        idx = n - 1 - fn(np.flip(x, axis), axis=axis, keepdims=True)
    else:
        idx = fn(x, axis=axis, keepdims=True)
    return idx if keepdims else np.squeeze(idx, axis)


def hardmax(x: Array, axis: int) -> Array:
    idx = np.argmax(x, axis=axis, keepdims=True)
    positions = np.arange(x.shape[axis]).reshape(
        [-1 if d == axis % x.ndim else 1 for d in range(x.ndim)]
    )
    return (positions == idx).astype(x.dtype)


def top_k(x: Array, k: int, axis: int, largest: bool) -> tuple[Array, Array]:
    """TopK-24: the k extreme values, equal values in the order of their indices."""
    if largest:
        # a stable ascending sort of the flipped axis, reversed, is a stable descending
        # sort whose ties come in increasing original index
        n = x.shape[axis]
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


def scan(x: Array, axis: int, exclusive: bool, reverse: bool, product: bool) -> Array:
    """CumSum-14 / CumProd-26 along axis, optionally exclusive and from the end."""
    fn = np.cumprod if product else np.cumsum
    v = np.flip(x, axis) if reverse else x
    y = fn(v, axis=axis, dtype=v.dtype)
    if exclusive:
        identity = np.ones_like if product else np.zeros_like
        head = identity(np.take(y, [0], axis=axis))
        y = np.concatenate([head, np.take(y, np.arange(y.shape[axis] - 1), axis=axis)], axis)
    return np.flip(y, axis) if reverse else y


_UNARY: dict[type[Operation], Callable[[Array], Array]] = {
    gm.TanOp: np.tan,
    gm.AsinOp: np.arcsin,
    gm.AcosOp: np.arccos,
    gm.AtanOp: np.arctan,
    gm.SinhOp: np.sinh,
    gm.CoshOp: np.cosh,
    gm.AsinhOp: np.arcsinh,
    gm.AcoshOp: np.arccosh,
    gm.AtanhOp: np.arctanh,
    gm.FloorOp: np.floor,
    gm.CeilOp: np.ceil,
    gm.RoundOp: np.round,  # halves to even, as Round-11 says
    gm.SignOp: sign,
    gm.BitwiseNotOp: np.invert,
    gm.IsNanOp: np.isnan,
}

_BINARY: dict[type[Operation], Callable[[Array, Array], Array]] = {
    gm.BitwiseAndOp: np.bitwise_and,
    gm.BitwiseOrOp: np.bitwise_or,
    gm.BitwiseXorOp: np.bitwise_xor,
}


@register_impls
class GraphMathFunctions(InterpreterFunctions):
    """numpy implementations of the ops of `autofusion.dialects.graph_math`."""

    def run_unary(self, op: Operation, x: Array) -> PythonValues:
        fn = _UNARY[type(op)]
        return (_result(op, _quiet(lambda: fn(_compute(x)))),)

    def run_binary(self, op: Operation, a: Array, b: Array) -> PythonValues:
        fn = _BINARY[type(op)]
        return (_result(op, _quiet(lambda: fn(a, b))),)

    @impl(gm.TanOp)
    def run_tan(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.AsinOp)
    def run_asin(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.AcosOp)
    def run_acos(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.AtanOp)
    def run_atan(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.SinhOp)
    def run_sinh(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.CoshOp)
    def run_cosh(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.AsinhOp)
    def run_asinh(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.AcoshOp)
    def run_acosh(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.AtanhOp)
    def run_atanh(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.FloorOp)
    def run_floor(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.CeilOp)
    def run_ceil(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.RoundOp)
    def run_round(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.SignOp)
    def run_sign(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.BitwiseNotOp)
    def run_bitwise_not(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.IsNanOp)
    def run_is_nan(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_unary(op, *args)

    @impl(gm.IsInfOp)
    def run_is_inf(self, i: Interpreter, op: gm.IsInfOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x = args[0]
        pos = np.isposinf(x) & p.flag("detect_positive")
        neg = np.isneginf(x) & p.flag("detect_negative")
        return (_result(op, pos | neg),)

    @impl(gm.ShrinkOp)
    def run_shrink(self, i: Interpreter, op: gm.ShrinkOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        return (_result(op, shrink(args[0], p.real("lambd"), p.real("bias"))),)

    @impl(gm.CeluOp)
    def run_celu(self, i: Interpreter, op: gm.CeluOp, args: PythonValues) -> PythonValues:
        alpha = _props(op).real("alpha")
        x = _compute(args[0])
        return (_result(op, _quiet(lambda: celu(x, alpha))),)

    @impl(gm.SwishOp)
    def run_swish(self, i: Interpreter, op: gm.SwishOp, args: PythonValues) -> PythonValues:
        alpha = _props(op).real("alpha")
        x = _compute(args[0])
        return (_result(op, _quiet(lambda: x * sigmoid(alpha * x))),)

    @impl(gm.ModOp)
    def run_mod(self, i: Interpreter, op: gm.ModOp, args: PythonValues) -> PythonValues:
        fmod = _props(op).flag("fmod")
        a, b = _compute(args[0]), _compute(args[1])
        return (_result(op, _quiet(lambda: mod(a, b, fmod))),)

    @impl(gm.BitShiftOp)
    def run_bit_shift(self, i: Interpreter, op: gm.BitShiftOp, args: PythonValues) -> PythonValues:
        direction = _props(op).text("direction")
        return (_result(op, bit_shift(args[0], args[1], direction)),)

    @impl(gm.BitwiseAndOp)
    def run_bitwise_and(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(gm.BitwiseOrOp)
    def run_bitwise_or(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(gm.BitwiseXorOp)
    def run_bitwise_xor(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return self.run_binary(op, *args)

    @impl(gm.ReduceProdOp)
    def run_reduce_prod(
        self, i: Interpreter, op: gm.ReduceProdOp, args: PythonValues
    ) -> PythonValues:
        axes = op.reduced_axes()
        keep = _props(op).flag("keepdims")
        x = _compute(args[0])
        return (_result(op, _quiet(lambda: np.prod(x, axis=axes, keepdims=keep))),)

    def run_arg(self, op: gm.ArgReduceOp, x: Array, fn: Callable) -> PythonValues:
        p = _props(op)
        axis = p.integer("axis") % x.ndim
        y = arg_extreme(x, axis, p.flag("keepdims"), p.flag("select_last_index"), fn)
        return (_result(op, y),)

    @impl(gm.ArgMaxOp)
    def run_arg_max(self, i: Interpreter, op: gm.ArgMaxOp, args: PythonValues) -> PythonValues:
        return self.run_arg(op, args[0], np.argmax)

    @impl(gm.ArgMinOp)
    def run_arg_min(self, i: Interpreter, op: gm.ArgMinOp, args: PythonValues) -> PythonValues:
        return self.run_arg(op, args[0], np.argmin)

    @impl(gm.HardmaxOp)
    def run_hardmax(self, i: Interpreter, op: gm.HardmaxOp, args: PythonValues) -> PythonValues:
        x = args[0]
        return (_result(op, hardmax(x, _props(op).integer("axis") % x.ndim)),)

    @impl(gm.TopKOp)
    def run_top_k(self, i: Interpreter, op: gm.TopKOp, args: PythonValues) -> PythonValues:
        p = _props(op)
        x = args[0]
        axis = p.integer("axis") % x.ndim
        k = p.integer("k")
        if k > x.shape[axis]:
            raise InterpretationError(f"graph.top_k: k = {k} exceeds axis size {x.shape[axis]}")
        values, indices = top_k(x, k, axis, p.flag("largest"))
        return (_result(op, values, 0), _result(op, indices, 1))

    def run_scan(self, op: gm.ScanOp, x: Array, product: bool) -> PythonValues:
        p = _props(op)
        axis = p.integer("axis") % x.ndim
        exclusive, reverse = p.flag("exclusive"), p.flag("reverse")
        return (_result(op, _quiet(lambda: scan(_compute(x), axis, exclusive, reverse, product))),)

    @impl(gm.CumSumOp)
    def run_cum_sum(self, i: Interpreter, op: gm.CumSumOp, args: PythonValues) -> PythonValues:
        return self.run_scan(op, args[0], False)

    @impl(gm.CumProdOp)
    def run_cum_prod(self, i: Interpreter, op: gm.CumProdOp, args: PythonValues) -> PythonValues:
        return self.run_scan(op, args[0], True)
