"""Quantization ops of the graph dialect: linear (de)quantization and integer matmul/conv.

They follow the ONNX operator specs (https://onnx.ai/onnx/operators/): quantized tensors
are real 8/16-bit integer tensors (i8, ui8, i16, ui16), integer products accumulate
exactly in i32. Every zero point is an operand (the importer gives zeros for an omitted
one), so the quantized element type is always an operand's. None of them has a kernel
template yet, so each is `opaque`: ub-fusion keeps it alone in its group and
lower-to-buffer refuses the group by name.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, f32, i32
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Fusible, FusionKind, GraphOp, Props, tensor
from autofusion.dialects.op_facts import (
    CONV_ROLES,
    ContractionFacts,
    OperandRole,
    StreamingFacts,
    dims,
    elements,
    window_macs,
)
from autofusion.dialects.shape_inference import ShapeError

DYN = si.DYN

# element types of quantized tensors (the float8, float4 and 4/2-bit ones from
# QuantizeLinear-19/21/23/25), and those a matmul/conv on them takes
FLOAT8 = ("f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ")
QUANTIZED = ("i8", "ui8", "i16", "ui16", "i4", "ui4", "i2", "ui2", *FLOAT8, "f4E2M1FN")
INTEGER_OPERANDS = ("i8", "ui8")
SCALES = ("f32", "f16", "bf16")


def _is(t: Attribute, names: Sequence[str]) -> bool:
    return dtypes.is_supported(t) and dtypes.type_name(t) in names


def _require(t: TensorType, names: Sequence[str], what: str) -> None:
    if not _is(t.element_type, names):
        raise ShapeError(f"{what} has element type {t.element_type}, not one of {', '.join(names)}")


def scale_shape(x: Sequence[int], axis: int, block_size: int) -> tuple[int, ...] | None:
    """The shape of a per-axis (block_size 0) or blocked scale of input shape `x`; None
    stands for per-tensor (a scalar or one element)."""
    if block_size == 0:
        return (x[axis],)
    d = x[axis]
    return (*x[:axis], DYN if d == DYN else -(-d // block_size), *x[axis + 1 :])


def check_quant_params(types: Sequence[TensorType], p: Props, quantized: Attribute) -> None:
    """Input, scale and zero point of (de)quantize_linear: the scale is a scalar (per
    tensor), 1-D along `axis`, or blocked (`block_size` > 0: the input's shape with
    ceil(d / block_size) on `axis`); the zero point has the scale's shape and the
    quantized type."""
    x, scale, zp = (t.get_shape() for t in types[:3])
    _require(types[1], SCALES, "scale")
    if types[2].element_type != quantized:
        raise ShapeError(f"zero point has element type {types[2].element_type}, not {quantized}")
    one = [si.num_elements(s) == 1 and len(s) <= 1 for s in (scale, zp)]
    if not all(one) and not si.shapes_compatible(scale, zp):  # a scalar and [1] agree
        raise ShapeError(f"scale {si.fmt(scale)} and zero point {si.fmt(zp)} differ in shape")
    block = p.integer("block_size")
    if block < 0:
        raise ShapeError(f"block_size {block} must be >= 0")
    if si.num_elements(scale) == 1 and len(scale) <= 1 and block == 0:
        return
    axis = si.normalize_axis(p.integer("axis"), len(x))
    want = scale_shape(x, axis, block)
    assert want is not None
    if not si.shapes_compatible(scale, want):
        kind = f"blocked by {block}" if block else "per-axis"
        raise ShapeError(
            f"{kind} scale along axis {axis} of {si.fmt(x)} must be {si.fmt(want)}, "
            f"got {si.fmt(scale)}"
        )


class LinearQuantOp(GraphOp, StreamingFacts, ABC):
    """(De)quantization of `input` with a per-tensor, per-axis or blocked scale and zero
    point (see `check_quant_params`)."""

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    block_size = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    NARROW_TYPES: ClassVar[bool] = True


@irdl_op_definition
class QuantizeLinearOp(LinearQuantOp):
    """y = saturate(round_half_even(x / scale) + zero_point), in the zero point's type
    (ONNX QuantizeLinear-25; the division is in the scale's type). A float8 result is
    x / scale cast with `saturate` (default true; the zero point is zero), a float4 one
    x / scale + zero_point cast (saturating).
    Example: `%y = graph.quantize_linear %x, %s, %z {axis = 1 : i64, block_size = 0 : i64}
    : (tensor<2x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x3xui8>`
    """

    name = "graph.quantize_linear"
    saturate = opt_prop_def(IntegerAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if p.has("saturate"):
            p.flag("saturate")
        _require(types[0], (*SCALES, "i32"), "input")
        _require(types[2], QUANTIZED, "zero point")
        check_quant_params(types, p, types[2].element_type)
        return [tensor(types[0].get_shape(), types[2].element_type)]


@irdl_op_definition
class DequantizeLinearOp(LinearQuantOp):
    """y = (x - zero_point) * scale, in the scale's type (ONNX DequantizeLinear-25; an i32
    input has a zero zero point, a float8 or float4 one's zero point is ignored)."""

    name = "graph.dequantize_linear"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _require(types[0], (*QUANTIZED, "i32"), "input")
        check_quant_params(types, p, types[0].element_type)
        return [tensor(types[0].get_shape(), types[1].element_type)]


@irdl_op_definition
class DynamicQuantizeLinearOp(GraphOp, StreamingFacts):
    """ui8 quantization of an f32 tensor over its range widened to include 0 (ONNX
    DynamicQuantizeLinear-11): scale = (max - min) / 255, zero_point = round(-min / scale);
    results y, scale, zero_point."""

    name = "graph.dynamic_quantize_linear"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scale = result_def(TensorType)
    zero_point = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _require(types[0], ("f32",), "input")
        return [tensor(types[0].get_shape(), dtypes.ui8), tensor((), f32), tensor((), dtypes.ui8)]


def check_zero_point(zp: TensorType, operand: TensorType, axis: int, what: str) -> None:
    """An integer matmul's zero point: a scalar, 1-D along `axis` (-2: rows of A, -1:
    columns of B), or the operand's shape with a 1 on the other matrix axis."""
    if zp.element_type != operand.element_type:
        raise ShapeError(f"{what} has element type {zp.element_type}, not {operand.element_type}")
    shape, full = zp.get_shape(), operand.get_shape()
    if si.num_elements(shape) == 1 and len(shape) <= 1:
        return
    if len(full) < 2:
        raise ShapeError(f"{what} {si.fmt(shape)} is not a scalar for a 1-D operand")
    other = -1 if axis == -2 else -2
    per = [*full[:-2], 1, 1]
    per[axis] = full[axis]
    if len(shape) == 1 and si.dims_compatible(shape[0], full[axis]):
        return
    if len(shape) != len(full) or not si.shapes_compatible(shape, per) or shape[other] != 1:
        raise ShapeError(
            f"{what} {si.fmt(shape)} is neither a scalar, {full[axis]} values nor {si.fmt(per)}"
        )


def _integer_matmul(types: Sequence[TensorType]) -> tuple[int, ...]:
    a, b = types[0], types[1]
    _require(a, INTEGER_OPERANDS, "A")
    _require(b, INTEGER_OPERANDS, "B")
    return si.matmul(a.get_shape(), b.get_shape())


def _check_scale(scale: TensorType, zp: TensorType, what: str) -> None:
    _require(scale, SCALES, f"{what} scale")
    if not si.shapes_compatible(scale.get_shape(), zp.get_shape()):
        raise ShapeError(
            f"{what} scale {si.fmt(scale.get_shape())} and zero point "
            f"{si.fmt(zp.get_shape())} differ in shape"
        )


@irdl_op_definition
class MatmulIntegerOp(GraphOp, ContractionFacts):
    """(A - a_zero_point) @ (B - b_zero_point) accumulated exactly in i32 (ONNX
    MatMulInteger-10); a zero point is per tensor, per row of A or per column of B."""

    name = "graph.matmul_integer"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_zero_point = operand_def(TensorType)
    rhs_zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        shape = _integer_matmul(types)
        check_zero_point(types[2], types[0], -2, "a_zero_point")
        check_zero_point(types[3], types[1], -1, "b_zero_point")
        return [tensor(shape, i32)]

    def macs(self, dynamic_size: int) -> float:
        return float(elements(self.output, dynamic_size)) * dims(self.lhs, dynamic_size)[-1]


@irdl_op_definition
class QLinearMatmulOp(GraphOp, ContractionFacts):
    """Quantized matmul (ONNX QLinearMatMul-21): the exact i32 product of the
    zero-point-shifted operands, scaled by a_scale * b_scale / y_scale and quantized to
    y_zero_point's type. Operands: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp."""

    name = "graph.qlinear_matmul"
    lhs = operand_def(TensorType)
    lhs_scale = operand_def(TensorType)
    lhs_zero_point = operand_def(TensorType)
    rhs = operand_def(TensorType)
    rhs_scale = operand_def(TensorType)
    rhs_zero_point = operand_def(TensorType)
    output_scale = operand_def(TensorType)
    output_zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    CONTRACTED: ClassVar[tuple[int, int]] = (0, 3)

    def macs(self, dynamic_size: int) -> float:
        return float(elements(self.output, dynamic_size)) * dims(self.lhs, dynamic_size)[-1]

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        shape = _integer_matmul([types[0], types[3]])
        check_zero_point(types[2], types[0], -2, "a_zero_point")
        check_zero_point(types[5], types[3], -1, "b_zero_point")
        _check_scale(types[1], types[2], "a")
        _check_scale(types[4], types[5], "b")
        _check_scale(types[6], types[7], "y")
        _require(types[7], INTEGER_OPERANDS, "y_zero_point")
        if si.num_elements(types[7].get_shape()) != 1:
            raise ShapeError(f"y_zero_point {si.fmt(types[7].get_shape())} is not a scalar")
        return [tensor(shape, types[7].element_type)]


def _integer_conv(types: Sequence[TensorType], p: Props) -> tuple[int, ...]:
    x, w = types[0], types[1]
    _require(x, INTEGER_OPERANDS, "input")
    _require(w, INTEGER_OPERANDS, "weight")
    return si.conv2d(
        x.get_shape(),
        w.get_shape(),
        p.integers("strides"),
        p.integers("pads"),
        p.integers("dilations"),
        p.integer("group"),
    )


def _check_conv_zero_points(x: TensorType, xzp: TensorType, w: TensorType, wzp: TensorType) -> None:
    """x's zero point is per tensor; w's per tensor or per output channel."""
    for zp, t, what in ((xzp, x, "x_zero_point"), (wzp, w, "w_zero_point")):
        if zp.element_type != t.element_type:
            raise ShapeError(f"{what} has element type {zp.element_type}, not {t.element_type}")
    if si.num_elements(xzp.get_shape()) != 1 or len(xzp.get_shape()) > 1:
        raise ShapeError(f"x_zero_point {si.fmt(xzp.get_shape())} is not a scalar")
    shape, m = wzp.get_shape(), w.get_shape()[0]
    if len(shape) > 1 or (
        len(shape) == 1 and shape[0] != 1 and not si.dims_compatible(shape[0], m)
    ):
        raise ShapeError(f"w_zero_point {si.fmt(shape)} is neither a scalar nor {m} values")


class IntegerConvOp(GraphOp, ContractionFacts, ABC):
    """A 2-D integer convolution with graph.conv2d's window properties."""

    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)
    CONTRACTED_ROLES: ClassVar[tuple[OperandRole, OperandRole]] = CONV_ROLES

    def macs(self, dynamic_size: int) -> float:
        return window_macs(self, self.operands[self.CONTRACTED[1]], dynamic_size)


@irdl_op_definition
class ConvIntegerOp(IntegerConvOp):
    """2-D convolution of zero-point-shifted integer tensors accumulated exactly in i32
    (ONNX ConvInteger-10); x's zero point is per tensor, w's per tensor or per output
    channel. Window properties are graph.conv2d's."""

    name = "graph.conv_integer"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    weight_zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        shape = _integer_conv(types, p)
        _check_conv_zero_points(types[0], types[2], types[1], types[3])
        return [tensor(shape, i32)]


@irdl_op_definition
class QLinearConvOp(IntegerConvOp):
    """Quantized 2-D convolution (ONNX QLinearConv-10): the exact i32 convolution of the
    zero-point-shifted operands plus an i32 bias, scaled by x_scale * w_scale / y_scale
    and quantized to y_zero_point's type. Operands: x, x_scale, x_zp, w, w_scale, w_zp,
    y_scale, y_zp, bias."""

    name = "graph.qlinear_conv"
    input = operand_def(TensorType)
    input_scale = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    weight = operand_def(TensorType)
    weight_scale = operand_def(TensorType)
    weight_zero_point = operand_def(TensorType)
    output_scale = operand_def(TensorType)
    output_zero_point = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    CONTRACTED: ClassVar[tuple[int, int]] = (0, 3)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        shape = _integer_conv([types[0], types[3]], p)
        _check_conv_zero_points(types[0], types[2], types[3], types[5])
        _check_scale(types[1], types[2], "x")
        _check_scale(types[4], types[5], "w")
        _check_scale(types[6], types[7], "y")
        _require(types[7], INTEGER_OPERANDS, "y_zero_point")
        bias = types[8]
        _require(bias, ("i32",), "bias")
        if len(bias.get_shape()) != 1 or not si.dims_compatible(bias.get_shape()[0], shape[1]):
            raise ShapeError(f"bias {si.fmt(bias.get_shape())} is not {shape[1]} values")
        return [tensor(shape, types[7].element_type)]


QUANT_OPS = [
    QuantizeLinearOp,
    DequantizeLinearOp,
    DynamicQuantizeLinearOp,
    MatmulIntegerOp,
    QLinearMatmulOp,
    ConvIntegerOp,
    QLinearConvOp,
]
