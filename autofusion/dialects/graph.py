"""The `graph` dialect: hardware-independent tensor ops with ONNX semantics.

Values are builtin ranked tensors (f32, f16, bf16, i64, i32, i8, i1; static or `?` dims).
Ops follow the ONNX operator specs (https://onnx.ai/onnx/operators/): NCHW layout and
numpy broadcasting. Every op carries a `Fusible` trait naming its fusion kind; fusion
legality is decided from these kinds, never from op names.

Syntax: `%r = graph.op %a, %b {props} : T` when every operand and result has type T,
otherwise `: (T0, T1) -> T2`. Integer lists are written `[1, 2]`, integers and floats
without a type suffix.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from typing import ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    AnyOf,
    BaseAttr,
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
)
from xdsl.utils.exceptions import VerifyException

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import (
    BinaryOp,
    CompareOp,
    FloatUnaryOp,
    Fusible,
    FusionKind,
    GraphOp,
    Props,
    ReduceOp,
    UnaryOp,
    _check_epsilon,
    _check_param,
    _tensor,
    bool_attr,
    float_attr,
    fusion_kind,
    infer_norm,
    int_attr,
    ints_attr,
    parse_type_signature,
    print_type_signature,
    tensor,
    to_prop,
)
from autofusion.dialects.graph_fused import (
    ATTENTION_LAYOUTS,
    FUSED_OPS,
    AddLayerNormOp,
    AddRmsNormOp,
    FfnOp,
    FlashAttentionOp,
    LayerNormApplyOp,
    LayerNormStatsOp,
    RmsNormApplyOp,
    RmsNormStatsOp,
    RopeOp,
    SwigluOp,
)
from autofusion.dialects.graph_indexing import INDEXING_OPS
from autofusion.dialects.graph_library import LIBRARY_OPS
from autofusion.dialects.graph_math import MATH_OPS
from autofusion.dialects.graph_quant import QUANT_OPS
from autofusion.dialects.graph_random import RANDOM_OPS
from autofusion.dialects.graph_vision import VISION_OPS

# the names below are re-exported: `autofusion.dialects.graph` is the dialect's public API
from autofusion.dialects.group_plan import PLAN_PROPERTIES, verify_edge_views, verify_plan
from autofusion.dialects.op_facts import (
    CONV_ROLES,
    SOFTMAX_WEIGHT,
    Access,
    ContractionFacts,
    MovementFacts,
    OperandRole,
    StreamingFacts,
    dims,
    elements,
    result_elements,
    uses_per_element,
    window_macs,
)
from autofusion.dialects.shape_inference import ShapeError
from autofusion.dialects.target import TargetAttr
from autofusion.narrow_types import ROUND_MODES

# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation, MovementFacts):
    """A constant tensor: dense values, a `dense_resource` blob, or shape only.

    A shape-only weight has no values; it lets fusion be planned for models whose
    weights are not at hand. Interpreting it is an error.

        %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
        %w = graph.constant dense_resource<fc_weight> : tensor<64x64xf16>
        %s = graph.constant shape_only : tensor<3584x3584xf16>
    """

    name = "graph.constant"
    value = opt_prop_def(AnyOf((BaseAttr(DenseIntOrFPElementsAttr), BaseAttr(DenseResourceAttr))))
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike(), Fusible(FusionKind.OPAQUE))

    def __init__(
        self,
        value: DenseIntOrFPElementsAttr | DenseResourceAttr | None,
        result_type: Attribute | None = None,
        attributes: Mapping[str, Attribute] | None = None,
    ) -> None:
        if result_type is None:
            if value is None:
                raise ValueError("a shape-only constant needs a result type")
            result_type = value.type
        super().__init__(
            properties={"value": value} if value is not None else {},
            result_types=[result_type],
            attributes=dict(attributes or {}),
        )

    @property
    def is_shape_only(self) -> bool:
        return self.value is None

    def verify_(self) -> None:
        try:
            _tensor(self.result.type, "result")
        except ShapeError as e:
            raise VerifyException(f"'graph.constant': {e}") from e
        value = self.value
        if isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr) and (
            value.type != self.result.type
        ):
            raise VerifyException(
                f"'graph.constant' value has type {value.type}, "
                f"but the result has type {self.result.type}"
            )
        shape = cast(TensorType, self.result.type).get_shape()
        if any(d == si.DYN for d in shape):
            raise VerifyException("'graph.constant' must have a static shape")

    def print(self, printer: Printer) -> None:
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        if self.value is None:
            printer.print_string(" shape_only : ")
            printer.print_attribute(self.result.type)
        elif isinstance(self.value, DenseIntOrFPElementsAttr) and _has_non_finite(self.value):
            # xDSL 0.74 prints inf/nan elements as hex literals but parses hex literals
            # in dense<[...]> as integer values (-inf in f16 came back as 64512); the
            # string form dense<"0x..."> holds the raw bytes and round-trips exactly
            printer.print_string(f' dense<"0x{self.value.data.data.hex().upper()}"> : ')
            printer.print_attribute(self.value.type)
        else:
            printer.print_string(" ")
            printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        if parser.parse_optional_keyword("shape_only") is not None:
            parser.parse_punctuation(":")
            return cls(None, parser.parse_type(), attrs)
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error("expected dense<...>, dense_resource<...> or shape_only", pos)
        return cls(value, None, attrs)


def _has_non_finite(value: Attribute) -> bool:
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return False
    t = cast(TensorType, value.type)
    if not (dtypes.is_float(t.element_type) or dtypes.is_narrow_float(t.element_type)):
        return False
    from autofusion import resources

    return not bool(np.isfinite(resources.dense_array(value).astype(np.float64)).all())


# --------------------------------------------------------------------------------------
# Elementwise unary ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class NegOp(UnaryOp):
    """y = -x (ONNX Neg)."""

    name = "graph.neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    """y = |x| (ONNX Abs)."""

    name = "graph.abs"


@irdl_op_definition
class ExpOp(FloatUnaryOp):
    """y = e^x (ONNX Exp)."""

    name = "graph.exp"
    VECTOR_WEIGHT: ClassVar[float] = 2


@irdl_op_definition
class LogOp(FloatUnaryOp):
    """y = ln x (ONNX Log)."""

    name = "graph.log"
    VECTOR_WEIGHT: ClassVar[float] = 2


@irdl_op_definition
class SqrtOp(FloatUnaryOp):
    """y = sqrt(x) (ONNX Sqrt)."""

    name = "graph.sqrt"
    VECTOR_WEIGHT: ClassVar[float] = 2


@irdl_op_definition
class RsqrtOp(FloatUnaryOp):
    """y = 1 / sqrt(x) (Ascend C Rsqrt; ONNX has no single op)."""

    name = "graph.rsqrt"
    VECTOR_WEIGHT: ClassVar[float] = 2


@irdl_op_definition
class ReciprocalOp(FloatUnaryOp):
    """y = 1 / x (ONNX Reciprocal)."""

    name = "graph.reciprocal"
    VECTOR_WEIGHT: ClassVar[float] = 2


@irdl_op_definition
class ReluOp(UnaryOp):
    """y = max(x, 0) (ONNX Relu)."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(FloatUnaryOp):
    """y = 1 / (1 + e^-x) (ONNX Sigmoid)."""

    name = "graph.sigmoid"
    VECTOR_WEIGHT: ClassVar[float] = 5


@irdl_op_definition
class TanhOp(FloatUnaryOp):
    """y = tanh(x) (ONNX Tanh)."""

    name = "graph.tanh"
    VECTOR_WEIGHT: ClassVar[float] = 8


@irdl_op_definition
class ErfOp(FloatUnaryOp):
    """y = erf(x) (ONNX Erf)."""

    name = "graph.erf"
    VECTOR_WEIGHT: ClassVar[float] = 18


@irdl_op_definition
class SiluOp(FloatUnaryOp):
    """y = x * sigmoid(x), also called swish."""

    name = "graph.silu"
    VECTOR_WEIGHT: ClassVar[float] = 6


@irdl_op_definition
class SinOp(FloatUnaryOp):
    """y = sin(x) (ONNX Sin)."""

    name = "graph.sin"
    # range reduction and a degree-11 polynomial (lowering/row_trig.py)
    VECTOR_WEIGHT: ClassVar[float] = 30


@irdl_op_definition
class CosOp(FloatUnaryOp):
    """y = cos(x) (ONNX Cos)."""

    name = "graph.cos"
    # range reduction and a degree-11 polynomial (lowering/row_trig.py)
    VECTOR_WEIGHT: ClassVar[float] = 30


@irdl_op_definition
class NotOp(UnaryOp):
    """y = !x on i1 (ONNX Not)."""

    name = "graph.not"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if types[0].element_type != i1:
            raise ShapeError(f"expects an i1 operand, got {types[0].element_type}")
        return [types[0]]


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(FloatUnaryOp):
    """GELU (ONNX Gelu-20): approximate "none" is x*Phi(x) with erf, "tanh" the tanh form.

    %y = graph.gelu %x {approximate = "tanh"} : tensor<8xf32>
    """

    name = "graph.gelu"
    VECTOR_WEIGHT: ClassVar[float] = 22
    approximate = prop_def(StringAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if p.text("approximate") not in GELU_APPROXIMATIONS:
            raise ShapeError(f"approximate must be one of {GELU_APPROXIMATIONS}")
        return [types[0]]


@irdl_op_definition
class ClipOp(UnaryOp):
    """y = min(max(x, min), max) (ONNX Clip); a missing bound is unbounded.

    relu6 is `graph.clip %x {max = 6.0, min = 0.0}`.
    """

    name = "graph.clip"
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        lo, hi = p.opt_real("min"), p.opt_real("max")
        if lo is not None and hi is not None and lo > hi:
            raise ShapeError(f"min {lo} is greater than max {hi}")
        return [types[0]]


@irdl_op_definition
class CastOp(GraphOp, StreamingFacts):
    """Element type conversion (ONNX Cast); the shape is unchanged.

    Float to integer truncates toward zero; float to f16/bf16 rounds to nearest even.
    To a float8 type, `saturate = false` gives inf/NaN out of range (default: clamp to
    the largest finite value); to f8E8M0FNU, `round_mode` is up (default), down or
    nearest (ONNX Cast-19/24; autofusion/narrow_types.py).
    """

    name = "graph.cast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    saturate = opt_prop_def(IntegerAttr)
    round_mode = opt_prop_def(StringAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.ELEMENTWISE))
    NARROW_TYPES: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        # the target element type is the result's own; only the shape is inferred
        if p.has("saturate"):
            p.flag("saturate")
        if p.has("round_mode") and p.text("round_mode") not in ROUND_MODES:
            raise ShapeError(
                f"round_mode '{p.text('round_mode')}' is not one of {', '.join(ROUND_MODES)}"
            )
        return [types[0]]

    def verify_(self) -> None:
        try:
            x = _tensor(self.input.type, "operand")
            y = _tensor(self.output.type, "result")
            self.infer([x], Props(self.properties, self.name))
        except ShapeError as e:
            raise VerifyException(f"'graph.cast': {e}") from e
        if not si.shapes_compatible(x.get_shape(), y.get_shape()):
            raise VerifyException(f"'graph.cast' changes the shape from {x} to {y}")

    @classmethod
    def to(cls, x: SSAValue, element_type: Attribute) -> CastOp:
        t = cast(TensorType, x.type)
        return cast(CastOp, cls.make([x], result_types=[tensor(t.get_shape(), element_type)]))


# --------------------------------------------------------------------------------------
# Binary ops with broadcasting
# --------------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryOp):
    """z = x + y (ONNX Add)."""

    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """z = x - y (ONNX Sub)."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """z = x * y (ONNX Mul)."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """z = x / y (ONNX Div; integer division truncates)."""

    name = "graph.div"
    VECTOR_WEIGHT: ClassVar[float] = 2


@irdl_op_definition
class PowOp(BinaryOp):
    """z = x ^ y (ONNX Pow)."""

    name = "graph.pow"
    VECTOR_WEIGHT: ClassVar[float] = 2
    FLOAT_ONLY: ClassVar[bool] = True


@irdl_op_definition
class MaxOp(BinaryOp):
    """z = max(x, y) (ONNX Max with two inputs)."""

    name = "graph.max"


@irdl_op_definition
class MinOp(BinaryOp):
    """z = min(x, y) (ONNX Min with two inputs)."""

    name = "graph.min"


@irdl_op_definition
class AndOp(BinaryOp):
    """z = x && y on i1 (ONNX And)."""

    name = "graph.and"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if types[0].element_type != i1:
            raise ShapeError(f"expects i1 operands, got {types[0].element_type}")
        return super().infer(types, p)


@irdl_op_definition
class OrOp(BinaryOp):
    """z = x || y on i1 (ONNX Or)."""

    name = "graph.or"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if types[0].element_type != i1:
            raise ShapeError(f"expects i1 operands, got {types[0].element_type}")
        return super().infer(types, p)


@irdl_op_definition
class EqualOp(CompareOp):
    """z = (x == y) (ONNX Equal)."""

    name = "graph.equal"


@irdl_op_definition
class LessOp(CompareOp):
    """z = (x < y) (ONNX Less)."""

    name = "graph.less"


@irdl_op_definition
class GreaterOp(CompareOp):
    """z = (x > y) (ONNX Greater)."""

    name = "graph.greater"


@irdl_op_definition
class WhereOp(GraphOp, StreamingFacts):
    """z = cond ? x : y with three-way broadcasting (ONNX Where)."""

    name = "graph.where"
    condition = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        c, x, y = types
        if c.element_type != i1:
            raise ShapeError(f"condition must be i1, got {c.element_type}")
        if x.element_type != y.element_type:
            raise ShapeError(
                f"branches have different element types {x.element_type} and {y.element_type}"
            )
        return [tensor(si.broadcast(c.get_shape(), x.get_shape(), y.get_shape()), x.element_type)]


# --------------------------------------------------------------------------------------
# Reductions and softmax
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over axes (ONNX ReduceSum)."""

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over axes (ONNX ReduceMean)."""

    name = "graph.reduce_mean"
    FLOAT_ONLY: ClassVar[bool] = True


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over axes (ONNX ReduceMax)."""

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over axes (ONNX ReduceMin)."""

    name = "graph.reduce_min"


@irdl_op_definition
class SoftmaxOp(GraphOp, StreamingFacts):
    """Softmax along one axis (ONNX Softmax-13)."""

    name = "graph.softmax"
    VECTOR_WEIGHT: ClassVar[float] = SOFTMAX_WEIGHT
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        si.normalize_axis(p.integer("axis"), len(types[0].get_shape()))
        return [types[0]]


# --------------------------------------------------------------------------------------
# Cube ops
# --------------------------------------------------------------------------------------


# Activations a cube op may apply to its output (graph fusion's epilogue rewrites);
# "clip" takes clip_min/clip_max (relu6 is clip 0..6).
ACTIVATIONS = ("relu", "clip", "gelu", "gelu_tanh", "silu", "sigmoid")


def check_activation(p: Props) -> None:
    """Validate the optional activation epilogue properties of a cube op."""
    bounds = p.has("clip_min") or p.has("clip_max")
    if not p.has("activation"):
        if bounds:
            raise ShapeError('clip_min/clip_max need activation = "clip"')
        return
    act = p.text("activation")
    if act not in ACTIVATIONS:
        raise ShapeError(f"activation must be one of {ACTIVATIONS}, got {act!r}")
    if act == "clip" and not bounds:
        raise ShapeError('activation "clip" needs clip_min or clip_max')
    if act != "clip" and bounds:
        raise ShapeError(f'clip_min/clip_max only apply to activation "clip", not {act!r}')
    lo, hi = p.opt_real("clip_min"), p.opt_real("clip_max")
    if lo is not None and hi is not None and lo > hi:
        raise ShapeError(f"clip_min {lo} is greater than clip_max {hi}")


@irdl_op_definition
class MatmulOp(GraphOp, ContractionFacts):
    """Batched matrix product with broadcast batch dims (ONNX MatMul, numpy matmul).

    Graph fusion may give it a bias (broadcast to the output, usually [N]) and an
    activation epilogue: y = act(a @ b + bias).
    """

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    activation = opt_prop_def(StringAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        a, b = types[0], types[1]
        if a.element_type != b.element_type:
            raise ShapeError(
                f"operands have different element types {a.element_type} and {b.element_type}"
            )
        shape = si.matmul(a.get_shape(), b.get_shape())
        if len(types) == 3:
            c = types[2]
            if c.element_type != a.element_type:
                raise ShapeError(f"bias has element type {c.element_type}, not {a.element_type}")
            if not si.broadcasts_to(c.get_shape(), shape):
                raise ShapeError(
                    f"bias {si.fmt(c.get_shape())} does not broadcast to {si.fmt(shape)}"
                )
        check_activation(p)
        return [tensor(shape, a.element_type)]

    def macs(self, dynamic_size: int) -> float:
        return float(elements(self.output, dynamic_size)) * dims(self.lhs, dynamic_size)[-1]


@irdl_op_definition
class GemmOp(GraphOp, ContractionFacts):
    """Y = act(alpha * op(A) * op(B) + beta * C) (ONNX Gemm); C broadcasts to [M, N].

    The activation epilogue is optional (see ACTIVATIONS).
    """

    name = "graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    output = result_def(TensorType)
    trans_a = prop_def(BoolAttr)
    trans_b = prop_def(BoolAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    activation = opt_prop_def(StringAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        a, b = types[0], types[1]
        if a.element_type != b.element_type:
            raise ShapeError(
                f"operands have different element types {a.element_type} and {b.element_type}"
            )
        shape = si.gemm(a.get_shape(), b.get_shape(), p.flag("trans_a"), p.flag("trans_b"))
        if len(types) == 3:
            c = types[2]
            if c.element_type != a.element_type:
                raise ShapeError(f"bias has element type {c.element_type}, not {a.element_type}")
            if len(c.get_shape()) > 2 or not si.broadcasts_to(c.get_shape(), shape):
                raise ShapeError(
                    f"bias {si.fmt(c.get_shape())} does not broadcast to {si.fmt(shape)}"
                )
        p.real("alpha")
        p.real("beta")
        check_activation(p)
        return [tensor(shape, a.element_type)]

    def macs(self, dynamic_size: int) -> float:
        a = dims(self.a, dynamic_size)
        k = a[0] if self.trans_a.value.data else a[1]
        return float(elements(self.output, dynamic_size)) * k


@irdl_op_definition
class Conv2dOp(GraphOp, ContractionFacts):
    """2-D convolution, NCHW input, weight [M, C/group, kH, kW] (ONNX Conv).

    pads are [top, left, bottom, right]. An optional activation epilogue (see
    ACTIVATIONS) is applied to the output.
    """

    name = "graph.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)
    activation = opt_prop_def(StringAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))
    FLOAT_ONLY: ClassVar[bool] = True
    CONTRACTED_ROLES: ClassVar[tuple[OperandRole, OperandRole]] = CONV_ROLES

    def macs(self, dynamic_size: int) -> float:
        return window_macs(self, self.weight, dynamic_size)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, w = types[0], types[1]
        if x.element_type != w.element_type:
            raise ShapeError(
                f"input and weight element types differ: {x.element_type}, {w.element_type}"
            )
        shape = si.conv2d(
            x.get_shape(),
            w.get_shape(),
            p.integers("strides"),
            p.integers("pads"),
            p.integers("dilations"),
            p.integer("group"),
        )
        if len(types) == 3:
            b = types[2]
            if len(b.get_shape()) != 1 or not si.dims_compatible(b.get_shape()[0], shape[1]):
                raise ShapeError(
                    f"bias must be 1-D with {shape[1]} elements, got {si.fmt(b.get_shape())}"
                )
            if b.element_type != x.element_type:
                raise ShapeError(f"bias has element type {b.element_type}, not {x.element_type}")
        check_activation(p)
        return [tensor(shape, x.element_type)]


# --------------------------------------------------------------------------------------
# Normalizations
# --------------------------------------------------------------------------------------


@irdl_op_definition
class BatchNormOp(GraphOp, StreamingFacts):
    """Inference batch norm over channel axis 1 (ONNX BatchNormalization, training_mode=0).

    y = (x - mean) / sqrt(var + epsilon) * scale + bias
    """

    name = "graph.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        if len(x.get_shape()) < 2:
            raise ShapeError("input must have rank >= 2 (N, C, ...)")
        c = x.get_shape()[1]
        for t, what in zip(types[1:], ("scale", "bias", "mean", "var")):
            _check_param(t, (c,), what, x.element_type)
        _check_epsilon(p)
        return [x]


@irdl_op_definition
class LayerNormOp(GraphOp, StreamingFacts):
    """Layer norm over axes [axis, rank) (ONNX LayerNormalization-17).

    y = (x - mean) / sqrt(var + epsilon) * scale + bias; scale and bias have the
    normalized shape.
    """

    name = "graph.layer_norm"
    VECTOR_WEIGHT: ClassVar[float] = 9
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return infer_norm(types, p)


@irdl_op_definition
class RmsNormOp(GraphOp, StreamingFacts):
    """RMS norm over axes [axis, rank) (ONNX RMSNormalization-23, the Llama/Qwen form).

    y = x / sqrt(mean(x^2) + epsilon) * scale
    """

    name = "graph.rms_norm"
    VECTOR_WEIGHT: ClassVar[float] = 6
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return infer_norm(types, p)


# --------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------


class Pool2dOp(GraphOp, StreamingFacts, ABC):
    """2-D pooling over NCHW; pads are [top, left, bottom, right]."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    ceil_mode = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def window_dilations(cls, p: Props) -> tuple[int, ...]:
        return (1, 1)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = x.get_shape()
        if len(shape) != 4:
            raise ShapeError(f"expects a 4-D NCHW input, got {si.fmt(shape)}")
        h, w = si.window_nd(
            shape,
            p.integers("kernel_shape"),
            p.integers("strides"),
            p.integers("pads"),
            cls.window_dilations(p),
            p.flag("ceil_mode"),
        )
        return [tensor((shape[0], shape[1], h, w), x.element_type)]


@irdl_op_definition
class MaxPool2dOp(Pool2dOp):
    """Max pooling (ONNX MaxPool, also on integers); padding never wins the max."""

    name = "graph.max_pool2d"
    dilations = prop_def(DenseArrayBase)
    FLOAT_ONLY: ClassVar[bool] = False

    @classmethod
    def window_dilations(cls, p: Props) -> tuple[int, ...]:
        return p.integers("dilations")


@irdl_op_definition
class AvgPool2dOp(Pool2dOp):
    """Average pooling (ONNX AveragePool-19); count_include_pad counts padded zeros.
    `dilations` (AveragePool-19's) may be left out for 1, 1."""

    name = "graph.avg_pool2d"
    count_include_pad = prop_def(BoolAttr)
    dilations = opt_prop_def(DenseArrayBase)

    @classmethod
    def window_dilations(cls, p: Props) -> tuple[int, ...]:
        return p.integers("dilations") if p.has("dilations") else (1, 1)


@irdl_op_definition
class GlobalAvgPoolOp(GraphOp, StreamingFacts):
    """Mean over all spatial dims, keeping them as 1 (ONNX GlobalAveragePool)."""

    name = "graph.global_avg_pool"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = x.get_shape()
        if len(shape) < 3:
            raise ShapeError(f"expects an (N, C, spatial...) input, got {si.fmt(shape)}")
        return [tensor((*shape[:2], *([1] * (len(shape) - 2))), x.element_type)]


# --------------------------------------------------------------------------------------
# Injective (data movement) ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(GraphOp, MovementFacts):
    """Reshape to `shape` (ONNX Reshape, allowzero=0): 0 copies a dim, -1 is inferred."""

    name = "graph.reshape"
    ACCESS: ClassVar[Access] = Access.VIEW
    input = operand_def(TensorType)
    output = result_def(TensorType)
    NARROW_TYPES: ClassVar[bool] = True  # data movement only
    shape = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        return [tensor(si.reshape(x.get_shape(), p.integers("shape")), x.element_type)]


@irdl_op_definition
class TransposeOp(GraphOp, MovementFacts):
    """Permute dims: out.shape[i] = in.shape[perm[i]] (ONNX Transpose)."""

    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    NARROW_TYPES: ClassVar[bool] = True  # data movement only
    perm = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        return [tensor(si.transpose(x.get_shape(), p.integers("perm")), x.element_type)]


@irdl_op_definition
class ConcatOp(GraphOp, MovementFacts):
    """Concatenate along `axis` (ONNX Concat)."""

    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        if not types:
            raise ShapeError("needs at least one operand")
        elts = {t.element_type for t in types}
        if len(elts) > 1:
            raise ShapeError("operands have different element types")
        shape = si.concat([t.get_shape() for t in types], p.integer("axis"))
        return [tensor(shape, types[0].element_type)]


@irdl_op_definition
class SplitOp(GraphOp, MovementFacts):
    """Split along `axis` into parts of the given `sizes` (ONNX Split)."""

    name = "graph.split"
    ACCESS: ClassVar[Access] = Access.SUBVIEW
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr)
    sizes = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shapes = si.split(x.get_shape(), p.integer("axis"), p.integers("sizes"))
        return [tensor(s, x.element_type) for s in shapes]


@irdl_op_definition
class SliceOp(GraphOp, MovementFacts):
    """Strided slice (ONNX Slice): for each axis, python slice start:end:step with clamping."""

    name = "graph.slice"
    ACCESS: ClassVar[Access] = Access.SUBVIEW
    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    axes = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = si.slice_(
            x.get_shape(),
            p.integers("starts"),
            p.integers("ends"),
            p.integers("axes"),
            p.integers("steps"),
        )
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class GatherOp(GraphOp, MovementFacts):
    """Take slices of `data` along `axis` at `indices` (ONNX Gather; negative indices wrap).

    An embedding lookup is `graph.gather %table, %ids {axis = 0}`.
    """

    name = "graph.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        data, idx = types
        if dtypes.type_name(idx.element_type) not in ("i32", "i64"):
            raise ShapeError(f"indices must be i32 or i64, got {idx.element_type}")
        shape = si.gather(data.get_shape(), idx.get_shape(), p.integer("axis"))
        return [tensor(shape, data.element_type)]

    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        # each result element copies one data element; each index selects one slice
        out = result_elements(self, dynamic_size)
        has_indices = 1.0 if elements(self.indices, dynamic_size) else 0.0
        return (uses_per_element(out, self.data, dynamic_size), has_indices)

    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        data = self.operand_reads(dynamic_size)[0]
        return (OperandRole.HOT if data > 1 else OperandRole.STREAMED, OperandRole.STREAMED)


@irdl_op_definition
class ExpandOp(GraphOp, StreamingFacts):
    """Broadcast to `shape` (ONNX Expand); -1 in `shape` stands for a dynamic size."""

    name = "graph.expand"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        return [tensor(si.expand(x.get_shape(), p.integers("shape")), x.element_type)]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


@irdl_op_definition
class PadOp(GraphOp, MovementFacts):
    """Pad (ONNX Pad-19): pads = [begin_0, ..., begin_n, end_0, ..., end_n], may be negative
    (a crop first); modes constant, reflect, edge and wrap (the axis repeated cyclically,
    as far as the pads reach)."""

    name = "graph.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = prop_def(DenseArrayBase)
    mode = prop_def(StringAttr)
    value = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        if p.text("mode") not in PAD_MODES:
            raise ShapeError(f"mode must be one of {PAD_MODES}")
        p.real("value")
        return [tensor(si.pad(x.get_shape(), p.integers("pads")), x.element_type)]


# --------------------------------------------------------------------------------------
# Fusion groups
# --------------------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a fusion group body and returns its results."""

    name = "graph.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusionGroupOp), Pure()))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]) -> None:
        super().__init__(operands=[list(values)])


@irdl_op_definition
class FusionGroupOp(IRDLOperation):
    """One kernel: a body of graph ops over explicit inputs, isolated from above.

    The body's block arguments are bound to the operands; `graph.yield` gives the
    results. ub-fusion writes the group's plan as properties (dialects/group_plan.py:
    target, template, tiling, footprint, cost_us, reason), printed after `plan`;
    lower-to-buffer carries it out. Discardable attributes say which rules formed it.

        %r = graph.fusion_group (%x = %a : tensor<8xf32>, %y = %b : tensor<8xf32>)
                 -> tensor<8xf32> attributes {afc.benefit_us = 1.5 : f64} {
          %s = graph.add %x, %y : tensor<8xf32>
          graph.yield %s : tensor<8xf32>
        }
    """

    name = "graph.fusion_group"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    target = opt_prop_def(TargetAttr)
    template = opt_prop_def(StringAttr)
    tiling = opt_prop_def(DictionaryAttr)
    footprint = opt_prop_def(DictionaryAttr)
    cost_us = opt_prop_def(FloatAttr)
    reason = opt_prop_def(StringAttr)
    traits = traits_def(
        IsolatedFromAbove(),
        SingleBlockImplicitTerminator(YieldOp),
        RecursiveMemoryEffect(),
        Fusible(FusionKind.OPAQUE),
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        attributes: Mapping[str, Attribute] | None = None,
        properties: Mapping[str, Attribute] | None = None,
    ) -> None:
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[body],
            attributes=dict(attributes or {}),
            properties=dict(properties or {}),
        )

    @property
    def block(self) -> Block:
        return self.body.block

    @property
    def yield_op(self) -> YieldOp:
        term = self.body.block.last_op
        assert isinstance(term, YieldOp)
        return term

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"'graph.fusion_group' has {len(self.inputs)} inputs but its body takes "
                f"{len(block.args)} arguments"
            )
        for i, (arg, val) in enumerate(zip(block.args, self.inputs)):
            if arg.type != val.type:
                raise VerifyException(
                    f"'graph.fusion_group' input #{i} has type {val.type}, "
                    f"but the body argument has type {arg.type}"
                )
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("'graph.fusion_group' body must end with graph.yield")
        if [v.type for v in term.values] != [r.type for r in self.outputs]:
            raise VerifyException(
                "'graph.fusion_group' yields ("
                + ", ".join(str(v.type) for v in term.values)
                + ") but its results are ("
                + ", ".join(str(r.type) for r in self.outputs)
                + ")"
            )
        verify_edge_views(block)
        verify_plan(self, self.target, self.footprint)

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        args = self.body.block.args

        def print_binding(i: int) -> None:
            printer.print_block_argument(args[i], print_type=False)
            printer.print_string(" = ")
            printer.print_operand(self.inputs[i])
            printer.print_string(" : ")
            printer.print_attribute(self.inputs[i].type)

        printer.print_list(range(len(args)), print_binding)
        printer.print_string(") -> ")
        if len(self.outputs) == 1:
            printer.print_attribute(self.outputs[0].type)
        else:
            printer.print_string("(")
            printer.print_list([r.type for r in self.outputs], printer.print_attribute)
            printer.print_string(")")
        if self.properties:
            printer.print_string(" plan ")
            order = {k: i for i, k in enumerate(PLAN_PROPERTIES)}
            keys = sorted(self.properties, key=lambda k: (order.get(k, len(order)), k))
            printer.print_attr_dict({k: self.properties[k] for k in keys})
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> FusionGroupOp:
        pos = parser.pos

        def parse_binding() -> tuple[Parser.UnresolvedArgument, UnresolvedOperand, Attribute]:
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            operand = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            return arg, operand, parser.parse_type()

        bindings = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_binding)
        parser.parse_punctuation("->")
        if parser.parse_optional_punctuation("(") is not None:
            outs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
        else:
            outs = [parser.parse_type()]
        props = parser.parse_optional_attr_dict() if parser.parse_optional_keyword("plan") else {}
        attrs = parser.parse_optional_attr_dict_with_keyword()
        operands = parser.resolve_operands([b[1] for b in bindings], [b[2] for b in bindings], pos)
        body = parser.parse_region([b[0].resolve(b[2]) for b in bindings])
        return cls(operands, outs, body, attrs.data if attrs is not None else None, props)


Graph = Dialect(
    "graph",
    [
        ConstantOp,
        NegOp,
        AbsOp,
        ExpOp,
        LogOp,
        SqrtOp,
        RsqrtOp,
        ReciprocalOp,
        ReluOp,
        SigmoidOp,
        TanhOp,
        ErfOp,
        SiluOp,
        SinOp,
        CosOp,
        NotOp,
        GeluOp,
        ClipOp,
        CastOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        PowOp,
        MaxOp,
        MinOp,
        AndOp,
        OrOp,
        EqualOp,
        LessOp,
        GreaterOp,
        WhereOp,
        ReduceSumOp,
        ReduceMeanOp,
        ReduceMaxOp,
        ReduceMinOp,
        SoftmaxOp,
        MatmulOp,
        GemmOp,
        Conv2dOp,
        BatchNormOp,
        LayerNormOp,
        RmsNormOp,
        MaxPool2dOp,
        AvgPool2dOp,
        GlobalAvgPoolOp,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        SplitOp,
        SliceOp,
        GatherOp,
        ExpandOp,
        PadOp,
        FusionGroupOp,
        YieldOp,
        *FUSED_OPS,
        *MATH_OPS,
        *INDEXING_OPS,
        *LIBRARY_OPS,
        *VISION_OPS,
        *QUANT_OPS,
        *RANDOM_OPS,
    ],
    [],
)
