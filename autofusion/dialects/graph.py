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
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
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
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
)
from xdsl.utils.exceptions import VerifyException

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import ShapeError

# --------------------------------------------------------------------------------------
# Fusion kinds
# --------------------------------------------------------------------------------------


class FusionKind(str, Enum):
    """How an op's output elements depend on its inputs (the TVM op-pattern lattice)."""

    ELEMENTWISE = "elementwise"  # out[i] depends on in[i] only
    BROADCAST = "broadcast"  # out[i] depends on in[f(i)], f drops or repeats axes in order
    INJECTIVE = "injective"  # out[i] depends on one in[f(i)] (reshape, transpose, gather)
    REDUCE = "reduce"  # reduces one or more axes (also norms and softmax)
    CUBE = "cube"  # matrix-unit work (matmul, gemm, conv); fuses forward into epilogues
    OPAQUE = "opaque"  # fusion barrier


@dataclass(frozen=True)
class Fusible(OpTrait):
    """The fusion kind of an op."""

    kind: FusionKind


def fusion_kind(op: Operation) -> FusionKind:
    """The declared fusion kind of `op`; ops without the trait are opaque."""
    trait = op.get_trait(Fusible)
    return trait.kind if trait is not None else FusionKind.OPAQUE


# --------------------------------------------------------------------------------------
# Property helpers
# --------------------------------------------------------------------------------------

IntList = DenseArrayBase[IntegerType]


def ints_attr(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def bool_attr(value: bool) -> BoolAttr:
    return IntegerAttr(1 if value else 0, i1)


def to_prop(value: object) -> Attribute:
    """Python value -> the property attribute the graph dialect uses for it."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool):
        return bool_attr(value)
    if isinstance(value, int):
        return int_attr(value)
    if isinstance(value, float):
        return float_attr(value)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, list | tuple):
        return ints_attr(cast(Sequence[int], value))
    raise TypeError(f"cannot make a graph property from {value!r}")


class Props:
    """Typed read access to an op's properties, with errors that name the property."""

    def __init__(self, props: Mapping[str, Attribute], op_name: str) -> None:
        self._p = props
        self._op = op_name

    def _get(self, name: str) -> Attribute:
        if name not in self._p:
            raise ShapeError(f"missing property '{name}'")
        return self._p[name]

    def has(self, name: str) -> bool:
        return name in self._p

    def integer(self, name: str) -> int:
        a = self._get(name)
        if not isinstance(a, IntegerAttr):
            raise ShapeError(f"property '{name}' must be an integer")
        return a.value.data

    def integers(self, name: str) -> tuple[int, ...]:
        a = self._get(name)
        if not isinstance(a, DenseArrayBase) or not isinstance(a.elt_type, IntegerType):
            raise ShapeError(f"property '{name}' must be a list of integers")
        return tuple(int(v) for v in a.get_values())

    def real(self, name: str) -> float:
        a = self._get(name)
        if isinstance(a, FloatAttr):
            return a.value.data
        if isinstance(a, IntegerAttr) and a.type != i1:
            return float(a.value.data)
        raise ShapeError(f"property '{name}' must be a float")

    def opt_real(self, name: str) -> float | None:
        return self.real(name) if name in self._p else None

    def flag(self, name: str) -> bool:
        a = self._get(name)
        if not isinstance(a, IntegerAttr) or a.type != i1:
            raise ShapeError(f"property '{name}' must be true or false")
        return bool(a.value.data)

    def text(self, name: str) -> str:
        a = self._get(name)
        if not isinstance(a, StringAttr):
            raise ShapeError(f"property '{name}' must be a string")
        return a.data


def _tensor(t: Attribute, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise ShapeError(f"{what} must be a ranked tensor, got {t}")
    if not dtypes.is_supported(t.element_type):
        raise ShapeError(f"{what} has unsupported element type {t.element_type}")
    return cast(TensorType, t)


def tensor(shape: Sequence[int], element_type: Attribute) -> TensorType:
    return TensorType(element_type, list(shape))


# --------------------------------------------------------------------------------------
# Base class with the shared syntax and verification
# --------------------------------------------------------------------------------------


def _print_prop(printer: Printer, value: Attribute) -> None:
    """Print a property value without the type suffixes the defaults make redundant."""
    if isinstance(value, DenseArrayBase) and value.elt_type == i64:
        printer.print_string("[")
        printer.print_list(value.get_values(), lambda v: printer.print_string(str(v)))
        printer.print_string("]")
    elif isinstance(value, IntegerAttr) and value.type == i64:
        printer.print_string(str(value.value.data))
    elif isinstance(value, FloatAttr) and isinstance(value.type, Float64Type):
        printer.print_float(value.value.data, f64)
    else:
        printer.print_attribute(value)


def _coerce_prop(value: Attribute) -> Attribute:
    """Undo `_print_prop`: `[1, 2]` parses as an ArrayAttr of i64 and becomes array<i64>."""
    if isinstance(value, ArrayAttr):
        elems = value.data
        if all(isinstance(e, IntegerAttr) and e.type == i64 for e in elems):
            return ints_attr([cast(IntegerAttr, e).value.data for e in elems])
    return value


class GraphOp(IRDLOperation, ABC):
    """A graph op: shared custom syntax, operand checks and shape verification.

    Subclasses implement `infer`, which computes result types from operand types and
    properties; the verifier checks the declared result types against it, and builders
    use it so frontends never compute shapes by hand.
    """

    # ops whose first operand must be floating point
    FLOAT_ONLY: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        raise NotImplementedError(f"{cls.name} does not infer result types")

    @classmethod
    def make(
        cls,
        operands: Sequence[SSAValue],
        props: Mapping[str, object] | None = None,
        attributes: Mapping[str, Attribute] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> GraphOp:
        """Create the op, inferring result types unless they are given."""
        properties = {k: to_prop(v) for k, v in (props or {}).items() if v is not None}
        if result_types is None:
            types = [_tensor(o.type, f"operand #{i}") for i, o in enumerate(operands)]
            result_types = cls.infer(types, Props(properties, cls.name))
        return cls.create(
            operands=list(operands),
            result_types=list(result_types),
            properties=properties,
            attributes=dict(attributes or {}),
        )

    # ---- verification ----------------------------------------------------------

    def verify_(self) -> None:
        try:
            types = [_tensor(o.type, f"operand #{i}") for i, o in enumerate(self.operands)]
            for i, r in enumerate(self.results):
                _tensor(r.type, f"result #{i}")
            if self.FLOAT_ONLY:
                for t in types[:1]:
                    if not dtypes.is_float(t.element_type):
                        raise ShapeError(f"expects a floating-point operand, got {t.element_type}")
            inferred = self.infer(types, Props(self.properties, self.name))
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from e
        if len(inferred) != len(self.results):
            raise VerifyException(
                f"'{self.name}' has {len(self.results)} results, expected {len(inferred)}"
            )
        for i, (want, res) in enumerate(zip(inferred, self.results)):
            got = cast(TensorType, res.type)
            if got.element_type != want.element_type or not si.shapes_compatible(
                got.get_shape(), want.get_shape()
            ):
                raise VerifyException(
                    f"'{self.name}' result #{i} has type {got}, but the operands give {want}"
                )

    # ---- syntax ------------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        entries = {**self.properties, **self.attributes}
        if entries:
            printer.print_string(" {")
            first = True
            for key in sorted(entries):
                if not first:
                    printer.print_string(", ")
                first = False
                printer.print_identifier_or_string_literal(key)
                printer.print_string(" = ")
                if key in self.properties:
                    _print_prop(printer, entries[key])
                else:
                    printer.print_attribute(entries[key])
            printer.print_string("}")
        printer.print_string(" : ")
        print_type_signature(printer, self.operand_types, self.result_types)

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        pos = parser.pos
        operands = (
            parser.parse_optional_undelimited_comma_separated_list(
                parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
            )
            or []
        )
        entries = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_types, out_types = parse_type_signature(parser, len(operands))
        resolved = parser.resolve_operands(operands, in_types, pos)
        prop_names = set(cls.get_irdl_definition().properties)
        props = {k: _coerce_prop(v) for k, v in entries.items() if k in prop_names}
        attrs = {k: v for k, v in entries.items() if k not in prop_names}
        return cls.create(
            operands=resolved, result_types=out_types, properties=props, attributes=attrs
        )


def print_type_signature(
    printer: Printer, ins: Sequence[Attribute], outs: Sequence[Attribute]
) -> None:
    """`T` when every type is T, `A -> B` for one operand and one result, else `(A, B) -> C`."""
    all_types = [*ins, *outs]
    if len(outs) == 1 and all(t == outs[0] for t in all_types):
        printer.print_attribute(outs[0])
        return
    if len(ins) == 1:
        printer.print_attribute(ins[0])
    else:
        printer.print_string("(")
        printer.print_list(ins, printer.print_attribute)
        printer.print_string(")")
    printer.print_string(" -> ")
    if len(outs) == 1:
        printer.print_attribute(outs[0])
    else:
        printer.print_string("(")
        printer.print_list(outs, printer.print_attribute)
        printer.print_string(")")


def parse_type_signature(
    parser: Parser, num_operands: int
) -> tuple[list[Attribute], list[Attribute]]:
    """Inverse of `print_type_signature`."""
    if parser.parse_optional_punctuation("(") is not None:
        ins = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_type, parser.parse_type
        )
        parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        return list[Attribute](ins or []), _parse_result_types(parser)
    first = parser.parse_type()
    if parser.parse_optional_punctuation("->") is None:
        return [first] * num_operands, [first]
    return [first], _parse_result_types(parser)


def _parse_result_types(parser: Parser) -> list[Attribute]:
    if parser.parse_optional_punctuation("(") is not None:
        outs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
        return list(outs)
    return [parser.parse_type()]


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
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


# --------------------------------------------------------------------------------------
# Elementwise unary ops
# --------------------------------------------------------------------------------------


class UnaryOp(GraphOp, ABC):
    """y = f(x) elementwise; y has x's type."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.ELEMENTWISE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return [types[0]]


class FloatUnaryOp(UnaryOp, ABC):
    FLOAT_ONLY: ClassVar[bool] = True


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


@irdl_op_definition
class LogOp(FloatUnaryOp):
    """y = ln x (ONNX Log)."""

    name = "graph.log"


@irdl_op_definition
class SqrtOp(FloatUnaryOp):
    """y = sqrt(x) (ONNX Sqrt)."""

    name = "graph.sqrt"


@irdl_op_definition
class RsqrtOp(FloatUnaryOp):
    """y = 1 / sqrt(x) (Ascend C Rsqrt; ONNX has no single op)."""

    name = "graph.rsqrt"


@irdl_op_definition
class ReciprocalOp(FloatUnaryOp):
    """y = 1 / x (ONNX Reciprocal)."""

    name = "graph.reciprocal"


@irdl_op_definition
class ReluOp(UnaryOp):
    """y = max(x, 0) (ONNX Relu)."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(FloatUnaryOp):
    """y = 1 / (1 + e^-x) (ONNX Sigmoid)."""

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(FloatUnaryOp):
    """y = tanh(x) (ONNX Tanh)."""

    name = "graph.tanh"


@irdl_op_definition
class ErfOp(FloatUnaryOp):
    """y = erf(x) (ONNX Erf)."""

    name = "graph.erf"


@irdl_op_definition
class SiluOp(FloatUnaryOp):
    """y = x * sigmoid(x), also called swish."""

    name = "graph.silu"


@irdl_op_definition
class SinOp(FloatUnaryOp):
    """y = sin(x) (ONNX Sin)."""

    name = "graph.sin"


@irdl_op_definition
class CosOp(FloatUnaryOp):
    """y = cos(x) (ONNX Cos)."""

    name = "graph.cos"


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
class CastOp(GraphOp):
    """Element type conversion (ONNX Cast); the shape is unchanged.

    Float to integer truncates toward zero; float to f16/bf16 rounds to nearest even.
    """

    name = "graph.cast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.ELEMENTWISE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        # the target element type is the result's own; only the shape is inferred
        return [types[0]]

    def verify_(self) -> None:
        try:
            x = _tensor(self.input.type, "operand")
            y = _tensor(self.output.type, "result")
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


class BinaryOp(GraphOp, ABC):
    """z = f(x, y) with numpy broadcasting; operands share an element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))

    @classmethod
    def result_element_type(cls, operand: Attribute) -> Attribute:
        return operand

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        a, b = types
        if a.element_type != b.element_type:
            raise ShapeError(
                f"operands have different element types {a.element_type} and {b.element_type}"
            )
        shape = si.broadcast(a.get_shape(), b.get_shape())
        return [tensor(shape, cls.result_element_type(a.element_type))]


class CompareOp(BinaryOp, ABC):
    """Elementwise comparison with broadcasting; the result is i1."""

    @classmethod
    def result_element_type(cls, operand: Attribute) -> Attribute:
        return i1


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


@irdl_op_definition
class PowOp(BinaryOp):
    """z = x ^ y (ONNX Pow)."""

    name = "graph.pow"
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
class WhereOp(GraphOp):
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


class ReduceOp(GraphOp, ABC):
    """Reduce over `axes` (all axes when empty); `keepdims` keeps them as size 1."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    keepdims = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = si.reduce(x.get_shape(), p.integers("axes"), p.flag("keepdims"))
        return [tensor(shape, x.element_type)]

    def reduced_axes(self) -> tuple[int, ...]:
        rank = len(cast(TensorType, self.input.type).get_shape())
        axes = Props(self.properties, self.name).integers("axes")
        return tuple(sorted(si.normalize_axis(a, rank) for a in axes)) or tuple(range(rank))


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
class SoftmaxOp(GraphOp):
    """Softmax along one axis (ONNX Softmax-13)."""

    name = "graph.softmax"
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


@irdl_op_definition
class MatmulOp(GraphOp):
    """Batched matrix product with broadcast batch dims (ONNX MatMul, numpy matmul)."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        a, b = types
        if a.element_type != b.element_type:
            raise ShapeError(
                f"operands have different element types {a.element_type} and {b.element_type}"
            )
        return [tensor(si.matmul(a.get_shape(), b.get_shape()), a.element_type)]


@irdl_op_definition
class GemmOp(GraphOp):
    """Y = alpha * op(A) * op(B) + beta * C (ONNX Gemm); C broadcasts to [M, N]."""

    name = "graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    output = result_def(TensorType)
    trans_a = prop_def(BoolAttr)
    trans_b = prop_def(BoolAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
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
        return [tensor(shape, a.element_type)]


@irdl_op_definition
class Conv2dOp(GraphOp):
    """2-D convolution, NCHW input, weight [M, C/group, kH, kW] (ONNX Conv).

    pads are [top, left, bottom, right].
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
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))
    FLOAT_ONLY: ClassVar[bool] = True

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
        return [tensor(shape, x.element_type)]


# --------------------------------------------------------------------------------------
# Normalizations
# --------------------------------------------------------------------------------------


def _check_param(t: TensorType, shape: Sequence[int], what: str, elt: Attribute) -> None:
    if not si.shapes_compatible(t.get_shape(), shape):
        raise ShapeError(f"{what} has shape {si.fmt(t.get_shape())}, expected {si.fmt(shape)}")
    if t.element_type != elt:
        raise ShapeError(f"{what} has element type {t.element_type}, expected {elt}")


def _check_epsilon(p: Props) -> None:
    if not p.real("epsilon") > 0:
        raise ShapeError("epsilon must be > 0")


@irdl_op_definition
class BatchNormOp(GraphOp):
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
class LayerNormOp(GraphOp):
    """Layer norm over axes [axis, rank) (ONNX LayerNormalization-17).

    y = (x - mean) / sqrt(var + epsilon) * scale + bias; scale and bias have the
    normalized shape.
    """

    name = "graph.layer_norm"
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
        x = types[0]
        shape = x.get_shape()
        ax = si.normalize_axis(p.integer("axis"), len(shape))
        norm = shape[ax:]
        for t, what in zip(types[1:], ("scale", "bias")):
            if not si.broadcasts_to(t.get_shape(), norm):
                raise ShapeError(
                    f"{what} {si.fmt(t.get_shape())} does not broadcast to the normalized "
                    f"shape {si.fmt(norm)}"
                )
            if t.element_type != x.element_type:
                raise ShapeError(f"{what} has element type {t.element_type}, not {x.element_type}")
        _check_epsilon(p)
        return [x]


@irdl_op_definition
class RmsNormOp(GraphOp):
    """RMS norm over axes [axis, rank) (ONNX RMSNormalization-23, the Llama/Qwen form).

    y = x / sqrt(mean(x^2) + epsilon) * scale
    """

    name = "graph.rms_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return LayerNormOp.infer(types, p)


# --------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------


class Pool2dOp(GraphOp, ABC):
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
        h, w = si.window2d(
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
    """Max pooling (ONNX MaxPool); padding never wins the max."""

    name = "graph.max_pool2d"
    dilations = prop_def(DenseArrayBase)

    @classmethod
    def window_dilations(cls, p: Props) -> tuple[int, ...]:
        return p.integers("dilations")


@irdl_op_definition
class AvgPool2dOp(Pool2dOp):
    """Average pooling (ONNX AveragePool); count_include_pad counts padded zeros."""

    name = "graph.avg_pool2d"
    count_include_pad = prop_def(BoolAttr)


@irdl_op_definition
class GlobalAvgPoolOp(GraphOp):
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
class ReshapeOp(GraphOp):
    """Reshape to `shape` (ONNX Reshape, allowzero=0): 0 copies a dim, -1 is inferred."""

    name = "graph.reshape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        return [tensor(si.reshape(x.get_shape(), p.integers("shape")), x.element_type)]


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permute dims: out.shape[i] = in.shape[perm[i]] (ONNX Transpose)."""

    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.INJECTIVE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        return [tensor(si.transpose(x.get_shape(), p.integers("perm")), x.element_type)]


@irdl_op_definition
class ConcatOp(GraphOp):
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
class SplitOp(GraphOp):
    """Split along `axis` into parts of the given `sizes` (ONNX Split)."""

    name = "graph.split"
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
class SliceOp(GraphOp):
    """Strided slice (ONNX Slice): for each axis, python slice start:end:step with clamping."""

    name = "graph.slice"
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
class GatherOp(GraphOp):
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


@irdl_op_definition
class ExpandOp(GraphOp):
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


PAD_MODES = ("constant", "reflect", "edge")


@irdl_op_definition
class PadOp(GraphOp):
    """Pad (ONNX Pad): pads = [begin_0, ..., begin_n, end_0, ..., end_n], may be negative."""

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
    results. ub-fusion records why it formed the group in discardable attributes.

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
    ) -> None:
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            regions=[body],
            attributes=dict(attributes or {}),
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
        attrs = parser.parse_optional_attr_dict_with_keyword()
        operands = parser.resolve_operands([b[1] for b in bindings], [b[2] for b in bindings], pos)
        body = parser.parse_region([b[0].resolve(b[2]) for b in bindings])
        return cls(operands, outs, body, attrs.data if attrs is not None else None)


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
    ],
    [],
)
