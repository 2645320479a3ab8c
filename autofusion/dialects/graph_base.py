"""Infrastructure of the graph dialect: fusion kinds, properties, the shared op syntax.

`graph.py` (primitive ops), `graph_fused.py` (named fused ops) and `graph_math.py` (further
math and search ops) build on this module;
import ops from `autofusion.dialects.graph`, which re-exports the names here.
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
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.op_facts import OpFacts, StreamingFacts
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

    def reals(self, name: str) -> tuple[float, ...]:
        a = self._get(name)
        if not isinstance(a, DenseArrayBase) or a.elt_type != f64:
            raise ShapeError(f"property '{name}' must be a list of f64")
        return tuple(float(v) for v in a.get_values())

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
    try:
        si.check_dims(t.get_shape())
    except ShapeError as e:
        raise ShapeError(f"{what} ({t}): {e}") from e
    return cast(TensorType, t)


def check_no_narrow_types(op_name: str, types: Sequence[TensorType]) -> None:
    """Refuse a storage-only element type for an op with arithmetic (see dtypes.NARROW)."""
    for t in types:
        if dtypes.is_narrow(t.element_type):
            raise ShapeError(
                f"{op_name} does not take {t.element_type}, a storage-only type (only "
                "casts, (de)quantization, reshapes and transposes do): cast or dequantize it"
            )


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


class GraphOp(IRDLOperation, OpFacts, ABC):
    """A graph op: shared custom syntax, operand checks and shape verification.

    Subclasses implement `infer`, which computes result types from operand types and
    properties; the verifier checks the declared result types against it, and builders
    use it so frontends never compute shapes by hand. Each op answers its facts
    (op_facts.OpFacts), most by listing its family's (StreamingFacts, MovementFacts).
    """

    # ops whose first operand must be floating point
    FLOAT_ONLY: ClassVar[bool] = False
    # ops that take the storage-only types (float8, float4, int4, int2: casts,
    # quantization, data movement); no other op has arithmetic on them
    NARROW_TYPES: ClassVar[bool] = False

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
            results = [_tensor(r.type, f"result #{i}") for i, r in enumerate(self.results)]
            if not self.NARROW_TYPES:
                check_no_narrow_types(self.name, [*types, *results])
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


def _check_param(t: TensorType, shape: Sequence[int], what: str, elt: Attribute) -> None:
    if not si.shapes_compatible(t.get_shape(), shape):
        raise ShapeError(f"{what} has shape {si.fmt(t.get_shape())}, expected {si.fmt(shape)}")
    if t.element_type != elt:
        raise ShapeError(f"{what} has element type {t.element_type}, expected {elt}")


def _check_epsilon(p: Props) -> None:
    if not p.real("epsilon") > 0:
        raise ShapeError("epsilon must be > 0")


def infer_norm(types: Sequence[TensorType], p: Props) -> list[TensorType]:
    """Result type of a norm over axes [axis, rank) with scale (and bias) operands."""
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


# --------------------------------------------------------------------------------------
# Op families shared by graph.py and graph_math.py
# --------------------------------------------------------------------------------------


class UnaryOp(GraphOp, StreamingFacts, ABC):
    """y = f(x) elementwise; y has x's type."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.ELEMENTWISE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return [types[0]]


class FloatUnaryOp(UnaryOp, ABC):
    FLOAT_ONLY: ClassVar[bool] = True


class BinaryOp(GraphOp, StreamingFacts, ABC):
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


class ReduceOp(GraphOp, StreamingFacts, ABC):
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
