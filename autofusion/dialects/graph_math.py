"""Math ops of the graph dialect beyond the core set: rounding, trigonometric and
hyperbolic functions, tests for NaN/Inf, modulo and bitwise ops, and search ops
(arg max/min, top-k, hardmax, cumulative sums and products).

They follow their ONNX operators (https://onnx.ai/onnx/operators/), cited as
`Op-<since_version>`. Elementwise ones are `elementwise`/`broadcast` so graph fusion may
group them; ub-fusion keeps any op without a vector kernel outside its kernels as a
library op. Search ops and scans are `opaque` library ops. `MATH_OPS` is registered in
the `graph` dialect.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, FloatAttr, IntegerAttr, StringAttr, TensorType, i1, i64
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import (
    BinaryOp,
    FloatUnaryOp,
    Fusible,
    FusionKind,
    GraphOp,
    Props,
    ReduceOp,
    UnaryOp,
    tensor,
)
from autofusion.dialects.op_facts import StreamingFacts
from autofusion.dialects.shape_inference import ShapeError


def _check_integer(t: TensorType, what: str = "operand") -> None:
    elt = t.element_type
    if dtypes.is_float(elt) or elt == i1:
        raise ShapeError(f"expects an integer {what}, got {elt}")


def _check_numeric(t: TensorType) -> None:
    if t.element_type == i1:
        raise ShapeError("expects a numeric operand, got i1")


# --------------------------------------------------------------------------------------
# Elementwise unary
# --------------------------------------------------------------------------------------


@irdl_op_definition
class TanOp(FloatUnaryOp):
    """y = tan(x) (ONNX Tan-7/22)."""

    name = "graph.tan"


@irdl_op_definition
class AsinOp(FloatUnaryOp):
    """y = asin(x) (ONNX Asin-7/22); NaN outside [-1, 1]."""

    name = "graph.asin"


@irdl_op_definition
class AcosOp(FloatUnaryOp):
    """y = acos(x) (ONNX Acos-7/22); NaN outside [-1, 1]."""

    name = "graph.acos"


@irdl_op_definition
class AtanOp(FloatUnaryOp):
    """y = atan(x) (ONNX Atan-7/22)."""

    name = "graph.atan"


@irdl_op_definition
class SinhOp(FloatUnaryOp):
    """y = sinh(x) (ONNX Sinh-9/22)."""

    name = "graph.sinh"


@irdl_op_definition
class CoshOp(FloatUnaryOp):
    """y = cosh(x) (ONNX Cosh-9/22)."""

    name = "graph.cosh"


@irdl_op_definition
class AsinhOp(FloatUnaryOp):
    """y = asinh(x) (ONNX Asinh-9/22)."""

    name = "graph.asinh"


@irdl_op_definition
class AcoshOp(FloatUnaryOp):
    """y = acosh(x) (ONNX Acosh-9/22); NaN below 1."""

    name = "graph.acosh"


@irdl_op_definition
class AtanhOp(FloatUnaryOp):
    """y = atanh(x) (ONNX Atanh-9/22); +-inf at +-1, NaN outside [-1, 1]."""

    name = "graph.atanh"


@irdl_op_definition
class FloorOp(FloatUnaryOp):
    """y = floor(x) (ONNX Floor-13)."""

    name = "graph.floor"


@irdl_op_definition
class CeilOp(FloatUnaryOp):
    """y = ceil(x) (ONNX Ceil-13)."""

    name = "graph.ceil"


@irdl_op_definition
class RoundOp(FloatUnaryOp):
    """y = x rounded to the nearest integer, halves to even (ONNX Round-11/22)."""

    name = "graph.round"


@irdl_op_definition
class SignOp(UnaryOp):
    """y = -1, 0 or 1 by the sign of x, in x's type (ONNX Sign-13); NaN stays NaN."""

    name = "graph.sign"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_numeric(types[0])
        return [types[0]]


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    """y = ~x on integers (ONNX BitwiseNot-18).

    %y = graph.bitwise_not %x : tensor<4xi32>
    """

    name = "graph.bitwise_not"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_integer(types[0])
        return [types[0]]


class FloatTestOp(GraphOp, StreamingFacts, ABC):
    """y = a property of each floating-point x, as i1."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.ELEMENTWISE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return [tensor(types[0].get_shape(), i1)]


@irdl_op_definition
class IsNanOp(FloatTestOp):
    """y = isnan(x) (ONNX IsNaN-13/20).

    %y = graph.is_nan %x : tensor<4xf32> -> tensor<4xi1>
    """

    name = "graph.is_nan"


@irdl_op_definition
class IsInfOp(FloatTestOp):
    """y = x is +inf (if detect_positive) or -inf (if detect_negative) (ONNX IsInf-10/20).

    %y = graph.is_inf %x {detect_negative = true, detect_positive = false}
        : tensor<4xf32> -> tensor<4xi1>
    """

    name = "graph.is_inf"
    detect_positive = prop_def(BoolAttr)
    detect_negative = prop_def(BoolAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        p.flag("detect_positive")
        p.flag("detect_negative")
        return super().infer(types, p)


@irdl_op_definition
class ShrinkOp(UnaryOp):
    """y = x < -lambd ? x + bias : (x > lambd ? x - bias : 0) (ONNX Shrink-9).

    On integers the comparison and the arithmetic are done on the exact values and the
    result is converted back to x's type.

    %y = graph.shrink %x {bias = 0.5, lambd = 1.5} : tensor<4xf32>
    """

    name = "graph.shrink"
    lambd = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_numeric(types[0])
        if p.real("lambd") < 0:
            raise ShapeError(f"lambd must be >= 0, got {p.real('lambd')}")
        p.real("bias")
        return [types[0]]


class AlphaUnaryOp(FloatUnaryOp, ABC):
    """y = f(x) on floats with a float parameter `alpha` (nonzero where f divides by it)."""

    alpha = prop_def(FloatAttr)
    NONZERO_ALPHA: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if p.real("alpha") == 0 and cls.NONZERO_ALPHA:
            raise ShapeError("alpha must be nonzero")
        return [types[0]]


@irdl_op_definition
class CeluOp(AlphaUnaryOp):
    """y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (ONNX Celu-12).

    %y = graph.celu %x {alpha = 2.0} : tensor<4xf32>
    """

    name = "graph.celu"
    NONZERO_ALPHA: ClassVar[bool] = True


@irdl_op_definition
class SwishOp(AlphaUnaryOp):
    """y = x * sigmoid(alpha * x) (ONNX Swish-24); alpha = 1 is graph.silu.

    %y = graph.swish %x {alpha = 0.5} : tensor<4xf32>
    """

    name = "graph.swish"


# --------------------------------------------------------------------------------------
# Elementwise binary
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ModOp(BinaryOp):
    """z = x mod y with broadcasting (ONNX Mod-13/28).

    fmod = true: the remainder of truncated division, with the sign of x (C fmod).
    fmod = false: the remainder of floored division, with the sign of y (Python %).
    Integer division by zero is an error; on floats it gives NaN.

    %z = graph.mod %x, %y {fmod = false} : tensor<4xi32>
    """

    name = "graph.mod"
    fmod = prop_def(BoolAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        p.flag("fmod")
        _check_numeric(types[0])
        return super().infer(types, p)


BIT_SHIFT_DIRECTIONS = ("LEFT", "RIGHT")


@irdl_op_definition
class BitShiftOp(BinaryOp):
    """z = x << y or x >> y on integers with broadcasting (ONNX BitShift-11/28).

    A right shift of a signed x is arithmetic. A shift by y < 0 or y >= the bit width
    gives what the sign fill alone gives: -1 for a right shift of a negative x, else 0.

    %z = graph.bit_shift %x, %y {direction = "LEFT"} : tensor<4xi32>
    """

    name = "graph.bit_shift"
    direction = prop_def(StringAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if p.text("direction") not in BIT_SHIFT_DIRECTIONS:
            raise ShapeError(f"direction must be one of {BIT_SHIFT_DIRECTIONS}")
        _check_integer(types[0])
        return super().infer(types, p)


class BitwiseBinaryOp(BinaryOp, ABC):
    """z = f(x, y) bit by bit on integers, with broadcasting."""

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_integer(types[0])
        return super().infer(types, p)


@irdl_op_definition
class BitwiseAndOp(BitwiseBinaryOp):
    """z = x & y (ONNX BitwiseAnd-18)."""

    name = "graph.bitwise_and"


@irdl_op_definition
class BitwiseOrOp(BitwiseBinaryOp):
    """z = x | y (ONNX BitwiseOr-18)."""

    name = "graph.bitwise_or"


@irdl_op_definition
class BitwiseXorOp(BitwiseBinaryOp):
    """z = x ^ y (ONNX BitwiseXor-18)."""

    name = "graph.bitwise_xor"


# --------------------------------------------------------------------------------------
# Reductions and search
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over axes (ONNX ReduceProd-13/18); the product of nothing is 1."""

    name = "graph.reduce_prod"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_numeric(types[0])
        return super().infer(types, p)


class ArgReduceOp(GraphOp, StreamingFacts, ABC):
    """The i64 index of the extreme value along `axis` (the first one, or the last when
    `select_last_index`); `keepdims` keeps the axis as size 1."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    keepdims = prop_def(BoolAttr)
    select_last_index = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        _check_numeric(x)
        p.flag("select_last_index")
        shape = x.get_shape()
        axis = si.normalize_axis(p.integer("axis"), len(shape))
        if shape[axis] == 0:
            raise ShapeError(f"axis {axis} is empty: there is no extreme value")
        return [tensor(si.reduce(shape, [axis], p.flag("keepdims")), i64)]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """Index of the maximum along an axis (ONNX ArgMax-13).

    %i = graph.arg_max %x {axis = 1, keepdims = true, select_last_index = false}
        : tensor<2x3xf32> -> tensor<2x1xi64>
    """

    name = "graph.arg_max"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """Index of the minimum along an axis (ONNX ArgMin-13)."""

    name = "graph.arg_min"


@irdl_op_definition
class HardmaxOp(GraphOp, StreamingFacts):
    """1 at the first maximum along `axis`, 0 elsewhere (ONNX Hardmax-13).

    %y = graph.hardmax %x {axis = -1} : tensor<2x3xf32>
    """

    name = "graph.hardmax"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        si.normalize_axis(p.integer("axis"), len(types[0].get_shape()))
        return [types[0]]


@irdl_op_definition
class TopKOp(GraphOp, StreamingFacts):
    """The `k` largest (or smallest) values along `axis` and their i64 indices (ONNX
    TopK-11/24). Results are sorted, largest (smallest) first; equal values keep their
    order of index. With `sorted` false ONNX allows any order; afc still sorts.

    %v, %i = graph.top_k %x {axis = -1, k = 2, largest = true, sorted = true}
        : tensor<3x4xf32> -> (tensor<3x2xf32>, tensor<3x2xi64>)
    """

    name = "graph.top_k"
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = prop_def(IntegerAttr)
    axis = prop_def(IntegerAttr)
    largest = prop_def(BoolAttr)
    sorted = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        _check_numeric(x)
        p.flag("largest")
        p.flag("sorted")
        shape = list(x.get_shape())
        axis = si.normalize_axis(p.integer("axis"), len(shape))
        k = p.integer("k")
        if k < 0:
            raise ShapeError(f"k must be >= 0, got {k}")
        if shape[axis] != si.DYN and k > shape[axis]:
            raise ShapeError(f"k = {k} is larger than axis {axis} (size {shape[axis]})")
        shape[axis] = k
        return [tensor(shape, x.element_type), tensor(shape, i64)]


class ScanOp(GraphOp, StreamingFacts, ABC):
    """A running reduction along `axis`: y[i] combines x[0..i] (x[0..i) when `exclusive`;
    from the end when `reverse`); y has x's type."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    exclusive = prop_def(BoolAttr)
    reverse = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_numeric(types[0])
        si.normalize_axis(p.integer("axis"), len(types[0].get_shape()))
        p.flag("exclusive")
        p.flag("reverse")
        return [types[0]]


@irdl_op_definition
class CumSumOp(ScanOp):
    """Cumulative sum along an axis (ONNX CumSum-14); exclusive sums start at 0.

    %y = graph.cum_sum %x {axis = 0, exclusive = false, reverse = true} : tensor<5xf32>
    """

    name = "graph.cum_sum"


@irdl_op_definition
class CumProdOp(ScanOp):
    """Cumulative product along an axis (ONNX CumProd-26); exclusive products start at 1."""

    name = "graph.cum_prod"


MATH_OPS: list[type[IRDLOperation]] = [
    TanOp,
    AsinOp,
    AcosOp,
    AtanOp,
    SinhOp,
    CoshOp,
    AsinhOp,
    AcoshOp,
    AtanhOp,
    FloorOp,
    CeilOp,
    RoundOp,
    SignOp,
    BitwiseNotOp,
    IsNanOp,
    IsInfOp,
    ShrinkOp,
    CeluOp,
    SwishOp,
    ModOp,
    BitShiftOp,
    BitwiseAndOp,
    BitwiseOrOp,
    BitwiseXorOp,
    ReduceProdOp,
    ArgMaxOp,
    ArgMinOp,
    HardmaxOp,
    TopKOp,
    CumSumOp,
    CumProdOp,
]
