"""Reference semantics of the quantization graph ops (see autofusion/dialects/graph_quant.py).

Each follows ONNX's reference implementation (onnx/reference/ops/op_quantize_linear.py,
op_dequantize_linear.py, op_dynamic_quantize_linear.py, op_matmul_integer.py,
op_conv_integer.py, op_qlinear_matmul.py, op_qlinear_conv.py): integer products are
exact in int64 and wrap to i32, rounding is half to even, quantized results saturate.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation, SSAValue

from autofusion import dtypes, narrow_types
from autofusion.dialects import graph_quant as gq
from autofusion.interpreter.graph import Array, _props, _quiet, _result, conv2d


def _elt(v: SSAValue) -> TensorType:
    return cast(TensorType, v.type)


def broadcast_param(param: Array, x_shape: tuple[int, ...], axis: int, block: int) -> Array:
    """A per-tensor, per-axis or blocked scale/zero point broadcastable to `x_shape`."""
    if param.size == 1 and param.ndim <= 1 and block == 0:
        return param.reshape(())
    rank = len(x_shape)
    axis = axis + rank if axis < 0 else axis
    if block == 0:
        return param.reshape([-1 if k == axis else 1 for k in range(rank)])
    return np.take(np.repeat(param, block, axis=axis), np.arange(x_shape[axis]), axis=axis)


def saturate(q: Array, dtype: np.dtype, bits: int | None = None) -> Array:
    """Round half to even and clip to the range of `dtype` (or of its low `bits`: i4 ...)."""
    info = np.iinfo(dtype)
    low, high = int(info.min), int(info.max)
    if bits is not None:
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if low < 0 else (0, (1 << bits) - 1)
    return np.clip(np.rint(q), low, high).astype(dtype)


def quantize(x: Array, scale: Array, zero_point: Array, op: gq.QuantizeLinearOp) -> Array:
    """saturate(round(x / scale) + zero_point); the division rounded to the scale's type.
    A float8 result is x / scale cast (saturating unless `saturate` is false), a float4
    one x / scale + zero_point cast, as ONNX's reference QuantizeLinear does."""
    ratio = dtypes.to_storage(_quiet(lambda: x / scale), _elt(op.scale).element_type)
    name = dtypes.type_name(_elt(op.output).element_type)
    if name in narrow_types.FLOAT_FORMATS:
        p = _props(op)
        keep = p.flag("saturate") if p.has("saturate") else True
        shifted = ratio + zero_point if name == "f4E2M1FN" else ratio
        return narrow_types.to_narrow(shifted, name, saturate=keep)
    bits = narrow_types.BITS.get(name)
    return saturate(np.rint(ratio.astype(np.float64)) + zero_point, zero_point.dtype, bits)


def _params(op: Operation, args: PythonValues) -> tuple[Array, Array, Array]:
    p = _props(op)
    x = np.asarray(args[0])
    axis, block = p.integer("axis"), p.integer("block_size")
    scale = broadcast_param(np.asarray(args[1]), x.shape, axis, block)
    zp = broadcast_param(np.asarray(args[2]), x.shape, axis, block)
    return x, scale, zp


def dynamic_quantize(x: Array) -> tuple[Array, Array, Array]:
    """DynamicQuantizeLinear-11: ui8 over [min(0, min x), max(0, max x)]."""
    x = x.astype(np.float32)
    low = min(np.float32(0), x.min()) if x.size else np.float32(0)
    high = max(np.float32(0), x.max()) if x.size else np.float32(0)
    scale = np.float32((high - low) / np.float32(255))  # in float32, as ONNX Runtime
    if scale == 0:  # an all-zero input: every value is the zero point 0
        return np.zeros(x.shape, np.uint8), np.asarray(scale), np.asarray(0, np.uint8)
    zp = saturate(np.asarray(-low / scale), np.dtype(np.uint8))
    return saturate(np.rint(x / scale) + zp, np.dtype(np.uint8)), np.asarray(scale), zp


def _shifted(x: Array, zero_point: Array, row_axis: bool) -> Array:
    """x - zero_point in int64; a 1-D zero point of A's rows becomes a column."""
    zp = np.asarray(zero_point).astype(np.int64)
    if row_axis and zp.ndim == 1 and zp.size > 1:
        zp = zp.reshape(-1, 1)
    return x.astype(np.int64) - zp


def _wrap32(x: Array) -> Array:
    """int32 accumulation: wrap like a two's-complement int32 register."""
    return x.astype(np.int64).astype(np.int32)


def integer_matmul(a: Array, azp: Array, b: Array, bzp: Array) -> Array:
    return _wrap32(np.matmul(_shifted(a, azp, True), _shifted(b, bzp, False)))


def integer_conv(op: Operation, x: Array, xzp: Array, w: Array, wzp: Array) -> Array:
    p = _props(op)
    wz = np.asarray(wzp).astype(np.int64)
    wz = wz.reshape(-1, 1, 1, 1) if wz.ndim == 1 else wz
    acc = conv2d(
        x.astype(np.int64) - np.asarray(xzp).astype(np.int64).reshape(()),
        w.astype(np.int64) - wz,
        None,
        p.integers("strides"),
        p.integers("pads"),
        p.integers("dilations"),
        p.integer("group"),
    )
    return _wrap32(acc)


def requantize(acc: Array, multiplier: Array, zero_point: Array) -> Array:
    """saturate(round(acc * multiplier) + zero_point) (QLinearMatMul/QLinearConv)."""
    scaled = acc.astype(np.float64) * multiplier.astype(np.float64)
    return saturate(scaled + zero_point.astype(np.float64), zero_point.dtype)


def _row_column(scale: Array, row: bool) -> Array:
    s = np.asarray(scale)
    return s.reshape(-1, 1) if row and s.ndim == 1 and s.size > 1 else s


def multiplier(lhs_scale: Array, rhs_scale: Array, out_scale: Array) -> Array:
    """lhs_scale * rhs_scale / out_scale in the scales' own type (float16 stays float16),
    as ONNX's reference computes it."""
    with np.errstate(all="ignore"):
        return lhs_scale * rhs_scale / out_scale.reshape(())


@register_impls
class GraphQuantFunctions(InterpreterFunctions):
    """numpy implementations of the quantization graph ops."""

    @impl(gq.QuantizeLinearOp)
    def run_quantize_linear(
        self, i: Interpreter, op: gq.QuantizeLinearOp, args: PythonValues
    ) -> PythonValues:
        x, scale, zp = _params(op, args)
        return (_result(op, quantize(x, scale, zp, op)),)

    @impl(gq.DequantizeLinearOp)
    def run_dequantize_linear(
        self, i: Interpreter, op: gq.DequantizeLinearOp, args: PythonValues
    ) -> PythonValues:
        x, scale, zp = _params(op, args)
        if dtypes.is_narrow_float(_elt(op.input).element_type):  # no zero point
            shifted = x.astype(np.float32)
        else:
            shifted = (x.astype(np.int64) - zp.astype(np.int64)).astype(np.float32)
        return (_result(op, shifted * scale.astype(np.float32)),)

    @impl(gq.DynamicQuantizeLinearOp)
    def run_dynamic_quantize_linear(
        self, i: Interpreter, op: gq.DynamicQuantizeLinearOp, args: PythonValues
    ) -> PythonValues:
        y, scale, zp = dynamic_quantize(np.asarray(args[0]))
        return tuple(_result(op, v, k) for k, v in enumerate((y, scale, zp)))

    @impl(gq.MatmulIntegerOp)
    def run_matmul_integer(
        self, i: Interpreter, op: gq.MatmulIntegerOp, args: PythonValues
    ) -> PythonValues:
        a, b, azp, bzp = (np.asarray(v) for v in args)
        return (_result(op, integer_matmul(a, azp, b, bzp)),)

    @impl(gq.QLinearMatmulOp)
    def run_qlinear_matmul(
        self, i: Interpreter, op: gq.QLinearMatmulOp, args: PythonValues
    ) -> PythonValues:
        a, a_scale, azp, b, b_scale, bzp, y_scale, yzp = (np.asarray(v) for v in args)
        acc = integer_matmul(a, azp, b, bzp)
        m = multiplier(_row_column(a_scale, True), _row_column(b_scale, False), y_scale)
        return (_result(op, requantize(acc, m, yzp.reshape(()))),)

    @impl(gq.ConvIntegerOp)
    def run_conv_integer(
        self, i: Interpreter, op: gq.ConvIntegerOp, args: PythonValues
    ) -> PythonValues:
        x, w, xzp, wzp = (np.asarray(v) for v in args)
        return (_result(op, integer_conv(op, x, xzp, w, wzp)),)

    @impl(gq.QLinearConvOp)
    def run_qlinear_conv(
        self, i: Interpreter, op: gq.QLinearConvOp, args: PythonValues
    ) -> PythonValues:
        x, x_scale, xzp, w, w_scale, wzp, y_scale, yzp, bias = (np.asarray(v) for v in args)
        acc = integer_conv(op, x, xzp, w, wzp).astype(np.int64) + bias.reshape(1, -1, 1, 1)
        w_scale = w_scale.reshape(1, -1, 1, 1) if w_scale.ndim == 1 else w_scale
        m = multiplier(x_scale.reshape(()), w_scale, y_scale)
        return (_result(op, requantize(_wrap32(acc), m, yzp.reshape(()))),)
