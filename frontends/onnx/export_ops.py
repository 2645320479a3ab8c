"""The op table of the ONNX exporter: how each graph op becomes standard ONNX ops.

Every graph op has one entry in `export_table.TABLE` (this module's `CORE_TABLE`, and the
tables of export_math_ops.py and export_vision.py):

* `Standard(emit)`: the op is one standard ONNX op, plus Constant nodes for the inputs
  that ONNX takes as tensors where the graph dialect has properties (Reshape's shape,
  ReduceSum's axes, Clip's bounds, ...).
* `Named(function, decompose, native, native_when)`: an op with no single standard ONNX
  op at some opsets: rsqrt; silu before Swish-24; gelu before Gelu-20; layer_norm before
  LayerNormalization-17; rms_norm before RMSNormalization-23; softmax over a non-last
  axis before Softmax-13; the named fused ops; matmul/gemm/conv2d with an epilogue.
  Where `native_when(e)` holds, `native` emits one standard op. Otherwise the op becomes
  a call of the model-local function `ai.afc.<function>` whose body `decompose` builds
  from standard ops, so any ONNX runtime can run the model. Bodies compute f16/bf16 in
  float32 and round once at the end, as the graph dialect's semantics do (the graph ops'
  docstrings, autofusion/interpreter/).

A new named op needs one `Named` entry and its decomposition; nothing else changes.

An emit function sees the op through an `Emitter`: the ONNX names of its operands and
results, its properties, the opset, and builders for nodes and constants. Every standard
node is checked against the ONNX schema of its op at the opset, so an element type ONNX
does not accept becomes a one-line error naming the graph op, not an invalid model.

ONNX op versions below are cited as `Op-N` (https://onnx.ai/onnx/operators/).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

import numpy as np
import onnx
from onnx import TensorProto, helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation

from autofusion import dtypes, narrow_types
from autofusion.dialects import graph
from autofusion.dialects import graph_indexing as gi
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph import Props
from frontends.onnx import export_attributes

DOMAIN = "ai.afc"
"""The domain of afc's model-local functions."""

DOMAIN_VERSION = 1

# ONNX shapes use None for an unknown (dynamic) dim; a value's shape may be unknown
Shape = tuple[int | None, ...]

# --------------------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------------------

# graph-dialect element type name -> (ONNX TensorProto data type, ONNX schema type string)
_ELEMS: dict[str, tuple[int, str]] = {
    "f32": (TensorProto.FLOAT, "tensor(float)"),
    "f16": (TensorProto.FLOAT16, "tensor(float16)"),
    "bf16": (TensorProto.BFLOAT16, "tensor(bfloat16)"),
    "f64": (TensorProto.DOUBLE, "tensor(double)"),
    "i64": (TensorProto.INT64, "tensor(int64)"),
    "i32": (TensorProto.INT32, "tensor(int32)"),
    "i16": (TensorProto.INT16, "tensor(int16)"),
    "i8": (TensorProto.INT8, "tensor(int8)"),
    "ui64": (TensorProto.UINT64, "tensor(uint64)"),
    "ui32": (TensorProto.UINT32, "tensor(uint32)"),
    "ui16": (TensorProto.UINT16, "tensor(uint16)"),
    "ui8": (TensorProto.UINT8, "tensor(uint8)"),
    "i1": (TensorProto.BOOL, "tensor(bool)"),
    # storage-only types (autofusion/narrow_types.py)
    "f8E4M3FN": (TensorProto.FLOAT8E4M3FN, "tensor(float8e4m3fn)"),
    "f8E4M3FNUZ": (TensorProto.FLOAT8E4M3FNUZ, "tensor(float8e4m3fnuz)"),
    "f8E5M2": (TensorProto.FLOAT8E5M2, "tensor(float8e5m2)"),
    "f8E5M2FNUZ": (TensorProto.FLOAT8E5M2FNUZ, "tensor(float8e5m2fnuz)"),
    "f8E8M0FNU": (TensorProto.FLOAT8E8M0, "tensor(float8e8m0)"),
    "f4E2M1FN": (TensorProto.FLOAT4E2M1, "tensor(float4e2m1)"),
    "i4": (TensorProto.INT4, "tensor(int4)"),
    "ui4": (TensorProto.UINT4, "tensor(uint4)"),
    "i2": (TensorProto.INT2, "tensor(int2)"),
    "ui2": (TensorProto.UINT2, "tensor(uint2)"),
}
_NAME_OF_ELEM = {onnx_type: name for name, (onnx_type, _) in _ELEMS.items()}
_NAME_OF_SCHEMA_TYPE = {schema: name for name, (_, schema) in _ELEMS.items()}
_LOW_PRECISION = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def onnx_elem(element_type: Attribute) -> int:
    """The ONNX data type of a graph-dialect element type."""
    return _ELEMS[dtypes.type_name(element_type)][0]


def elem_name(elem: int) -> str:
    """The graph-dialect name (`f32`, `i1`, ...) of an ONNX data type."""
    return _NAME_OF_ELEM.get(elem, TensorProto.DataType.Name(elem).lower())


def onnx_shape(t: TensorType) -> Shape:
    """The shape of `t` with None for its dynamic dims."""
    return tuple(None if d == si.DYN else d for d in t.get_shape())


def tensor_proto(name: str, values: np.ndarray, elem: int) -> TensorProto:
    """A tensor with little-endian raw data (bf16 as its raw bits, i1 as bytes, the
    storage-only types as their codes, packed two or four to a byte when sub-byte)."""
    type_name = _NAME_OF_ELEM[elem]
    mlir_type = dtypes.ELEMENT_TYPES[type_name]
    arr = dtypes.to_storage(np.asarray(values), mlir_type)
    t = TensorProto()
    t.name = name
    t.data_type = elem
    t.dims.extend(arr.shape)
    if type_name in narrow_types.BITS:
        codes = narrow_types.codes_of(arr, type_name)
        t.raw_data = narrow_types.pack(codes, narrow_types.BITS[type_name])
    else:
        t.raw_data = dtypes.to_bytes(arr, mlir_type)
    return t


# --------------------------------------------------------------------------------------
# Names and bodies
# --------------------------------------------------------------------------------------


class Names:
    """Unique value names within one ONNX graph or function body, given deterministically."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._next: dict[str, int] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._used

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def fresh(self, base: str) -> str:
        """`base` if unused, else `base_1`, `base_2`, ..."""
        base = base or "t"
        if base not in self._used:
            self._used.add(base)
            return base
        i = self._next.get(base, 1)
        while f"{base}_{i}" in self._used:
            i += 1
        self._next[base] = i + 1
        name = f"{base}_{i}"
        self._used.add(name)
        return name


class NotExportable(Exception):
    """A graph op that ONNX cannot express as used (the message says why)."""


class ElementTypeError(NotExportable):
    """A node whose element types the ONNX schema of its op does not accept."""


@cache
def _schema(op_type: str, opset: int) -> onnx.defs.OpSchema:
    return onnx.defs.get_schema(op_type, opset, "")


def check_node_types(
    op_type: str, opset: int, inputs: Sequence[int | None], outputs: Sequence[int | None]
) -> None:
    """Raise ElementTypeError unless `op_type` at `opset` accepts these element types.

    `None` stands for an absent optional input or an unknown type; it is not checked.
    """
    schema = _schema(op_type, opset)
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    for kind, formals, elems in (
        ("input", schema.inputs, inputs),
        ("output", schema.outputs, outputs),
    ):
        for i, elem in enumerate(elems):
            if elem is None:
                continue
            if i < len(formals):
                formal = formals[i]
            elif (
                formals and formals[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
            ):
                formal = formals[-1]
            else:
                raise ElementTypeError(f"{op_type}-{schema.since_version} has no {kind} #{i}")
            types = allowed.get(formal.type_str, {formal.type_str})
            if _ELEMS[elem_name(elem)][1] not in types:
                ours = sorted(_NAME_OF_SCHEMA_TYPE[t] for t in types if t in _NAME_OF_SCHEMA_TYPE)
                raise ElementTypeError(
                    f"ONNX {op_type}-{schema.since_version} does not accept {elem_name(elem)} "
                    f"for its {kind} '{formal.name}' (it takes {', '.join(ours) or 'none of ours'})"
                )


class Body:
    """The nodes of one ONNX graph or function body, with every value's type.

    Types are (data type, shape or None); shapes are needed only for the main graph's
    value_info, element types for the schema check of every node.
    """

    def __init__(self, opset: int, names: Names) -> None:
        self.opset = opset
        self.names = names
        self.nodes: list[onnx.NodeProto] = []
        self.types: dict[str, tuple[int, Shape | None]] = {}
        self.calls_functions = False
        # node names are unique per graph (ONNX Runtime rejects duplicates); several ops
        # of one source statement share its location name, so later ones get _1, _2, ...
        self.node_names = Names()

    def declare(self, name: str, elem: int, shape: Shape | None) -> None:
        self.types[name] = (elem, shape)

    def elem(self, name: str) -> int | None:
        t = self.types.get(name)
        return t[0] if t is not None else None

    def add_node(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        domain: str = "",
        name: str = "",
        **attrs: Any,
    ) -> None:
        if domain == "":
            if op_type != "Constant":
                check_node_types(
                    op_type,
                    self.opset,
                    [self.elem(i) if i else None for i in inputs],
                    [self.elem(o) for o in outputs],
                )
            try:
                attrs = export_attributes.at_opset(
                    op_type, _schema(op_type, self.opset), self.opset, attrs
                )
            except export_attributes.AttributeOpsetError as e:
                raise NotExportable(str(e)) from e
        else:
            self.calls_functions = True
        unique = self.node_names.fresh(name) if name else None
        node = helper.make_node(
            op_type, list(inputs), list(outputs), name=unique, domain=domain or None, **attrs
        )
        self.nodes.append(node)


# --------------------------------------------------------------------------------------
# Model-local functions
# --------------------------------------------------------------------------------------


class FunctionTable:
    """The model-local functions, in creation order, with unique names.

    Named-op functions with identical bodies are shared; a name taken by a different
    body gets a suffix (`Gelu`, `Gelu_1`).
    """

    def __init__(self) -> None:
        self.names = Names()
        self._slots: dict[str, onnx.FunctionProto | None] = {}
        self._by_body: dict[bytes, str] = {}

    def reserve(self, base: str) -> str:
        name = self.names.fresh(base)
        self._slots[name] = None
        return name

    def fill(self, proto: onnx.FunctionProto) -> None:
        assert self._slots.get(proto.name, proto) is None, proto.name
        self._slots[proto.name] = proto

    def define(self, base: str, proto: onnx.FunctionProto) -> str:
        """Add `proto` (its name is ignored) or find an identical body; return the name."""
        proto.name = ""
        key = proto.SerializeToString(deterministic=True)
        if key not in self._by_body:
            proto.name = self.reserve(base)
            self.fill(proto)
            self._by_body[key] = proto.name
        return self._by_body[key]

    def protos(self) -> list[onnx.FunctionProto]:
        out = []
        for name, proto in self._slots.items():
            assert proto is not None, f"function {name} was never filled"
            out.append(proto)
        return out


def function_opsets(body: Body) -> list[onnx.OperatorSetIdProto]:
    opsets = [helper.make_opsetid("", body.opset)]
    if body.calls_functions:
        opsets.append(helper.make_opsetid(DOMAIN, DOMAIN_VERSION))
    return opsets


# --------------------------------------------------------------------------------------
# The per-op view emit functions work with
# --------------------------------------------------------------------------------------


class Emitter:
    """One graph op being emitted into a body: its ONNX value names and node builders.

    `inputs[i]` names operand i and `outputs[k]` result k (their types are declared);
    emit functions must define every output.
    """

    def __init__(
        self,
        body: Body,
        op: Operation,
        inputs: Sequence[str],
        outputs: Sequence[str],
        node_name: str = "",
        prefix: str = "",
    ) -> None:
        self.body = body
        self.op = op
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.node_name = node_name
        self.props = Props(op.properties, op.name)
        self.opset = body.opset
        self._prefix = prefix

    # ---- the op ----------------------------------------------------------------

    def in_type(self, i: int = 0) -> TensorType:
        return cast(TensorType, self.op.operands[i].type)

    def out_type(self, k: int = 0) -> TensorType:
        return cast(TensorType, self.op.results[k].type)

    def elem(self, i: int = 0) -> int:
        """ONNX data type of operand i."""
        return onnx_elem(self.in_type(i).element_type)

    def out_elem(self, k: int = 0) -> int:
        return onnx_elem(self.out_type(k).element_type)

    def rank(self, i: int = 0) -> int:
        return len(self.in_type(i).get_shape())

    def has(self, i: int) -> bool:
        """Whether optional operand i is present."""
        return i < len(self.inputs)

    def int_lists(self, *names: str) -> dict[str, list[int]]:
        """The integer-list properties `names` (a window's kernel_shape, strides, pads,
        dilations), as the attributes of the same names."""
        return {n: list(self.props.integers(n)) for n in names}

    # ---- building ----------------------------------------------------------------

    def fresh(self, role: str) -> str:
        return self.body.names.fresh(self._prefix + role)

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        *,
        out: str | None = None,
        elem: int | None = None,
        role: str | None = None,
        **attrs: Any,
    ) -> str:
        """Add a one-output node; return its output, `out` or a fresh name of type `elem`.

        A fresh output has the element type of the first input unless `elem` is given.
        """
        if out is None:
            out = self.fresh(role or op_type.lower())
            if elem is None:
                elem = self.body.elem(next(i for i in inputs if i))
            assert elem is not None, f"unknown element type for {op_type}"
            self.body.declare(out, elem, None)
        self.nodes(op_type, inputs, [out], **attrs)
        return out

    def nodes(
        self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any
    ) -> None:
        """Add a node writing declared outputs (the op's results)."""
        name = self.node_name if any(o in self.outputs for o in outputs) else ""
        self.body.add_node(op_type, inputs, outputs, name=name, **attrs)

    def const(self, values: object, elem: int, role: str) -> str:
        """A Constant node (Constant-13 `value`) holding `values` as type `elem`."""
        name = self.fresh(role)
        arr = np.asarray(values)
        self.body.declare(name, elem, tuple(arr.shape))
        self.body.add_node("Constant", [], [name], value=tensor_proto(name, arr, elem))
        return name

    def ints(self, values: Sequence[int], role: str) -> str:
        """A 1-D int64 constant (shapes, axes, pads, ...)."""
        return self.const(np.asarray(list(values), dtype=np.int64), TensorProto.INT64, role)

    def scalar(self, value: float, elem: int, role: str) -> str:
        return self.const(np.asarray(value, dtype=np.float64), elem, role)

    # ---- float32 computation of f16/bf16 in function bodies ------------------------

    def up(self, name: str) -> str:
        """`name` as float32 if it is f16/bf16 (Cast-13), else unchanged."""
        if self.body.elem(name) in _LOW_PRECISION:
            return self.node(
                "Cast", [name], to=TensorProto.FLOAT, elem=TensorProto.FLOAT, role="f32"
            )
        return name

    def target(self, k: int = 0) -> str | None:
        """Where the last op computing result k writes: the result unless it needs a cast."""
        return None if self.out_elem(k) in _LOW_PRECISION else self.outputs[k]

    def finish(self, k: int, value: str) -> None:
        """Make result k equal `value` (computed in float32 if the result is f16/bf16)."""
        if value == self.outputs[k]:
            return
        if self.body.elem(value) != self.out_elem(k):
            self.nodes("Cast", [value], [self.outputs[k]], to=self.out_elem(k))
        else:
            self.nodes("Identity", [value], [self.outputs[k]])


Emit = Callable[[Emitter], None]


# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Standard:
    """A graph op exported as standard ONNX ops by `emit`."""

    emit: Emit
    summary: str


@dataclass(frozen=True)
class Named:
    """A graph op exported as one standard op where `native_when` holds, else as a call
    of the model-local function `ai.afc.<function>` whose body is `decompose`."""

    function: str | Callable[[Emitter], str]
    decompose: Emit
    summary: str
    native: Emit | None = None
    native_when: Callable[[Emitter], bool] = lambda e: False

    def function_name(self, e: Emitter) -> str:
        return self.function if isinstance(self.function, str) else self.function(e)


Mapping = Standard | Named


def since(opset: int) -> Callable[[Emitter], bool]:
    """`native_when` for an ONNX op that exists from `opset` on."""
    return lambda e: e.opset >= opset


# --------------------------------------------------------------------------------------
# Shared helpers (opset-dependent input/attribute forms)
# --------------------------------------------------------------------------------------


def reduce(
    e: Emitter, op_type: str, x: str, axes: Sequence[int], keepdims: bool, out: str | None = None
) -> str:
    """ReduceX over `axes` (all when empty). ReduceSum-13 and the other reductions from
    opset 18 (ReduceMean-18, ...) take axes as an input; earlier versions as an attribute."""
    attrs: dict[str, Any] = {"keepdims": int(keepdims)}
    inputs = [x]
    if axes:
        if e.opset >= (13 if op_type == "ReduceSum" else 18):
            inputs.append(e.ints(axes, "axes"))
        else:
            attrs["axes"] = list(axes)
    return e.node(op_type, inputs, out=out, **attrs)


def unsqueeze(e: Emitter, x: str, axes: Sequence[int]) -> str:
    """Unsqueeze-13 takes axes as an input, Unsqueeze-11 as an attribute."""
    if e.opset >= 13:
        return e.node("Unsqueeze", [x, e.ints(axes, "axes")])
    return e.node("Unsqueeze", [x], axes=list(axes))


def slice_last(e: Emitter, x: str, start: int, end: int, step: int = 1) -> str:
    """x[..., start:end:step] (Slice-13 with inputs)."""
    return e.node(
        "Slice",
        [
            x,
            e.ints([start], "starts"),
            e.ints([end], "ends"),
            e.ints([-1], "axes"),
            e.ints([step], "steps"),
        ],
    )


def norm_axes(axis: int, rank: int) -> list[int]:
    """The axes [axis, rank) a norm reduces over."""
    return list(range(si.normalize_axis(axis, rank), rank))


# --------------------------------------------------------------------------------------
# Elementwise ops
# --------------------------------------------------------------------------------------


def same(op_type: str, **fixed: Any) -> Emit:
    """The graph op is the ONNX op `op_type` on the same operands."""

    def emit(e: Emitter) -> None:
        e.nodes(op_type, e.inputs, e.outputs, **fixed)

    return emit


def direct(op_type: str) -> Standard:
    """A graph op that is the ONNX op `op_type` on the same operands and results."""
    return Standard(same(op_type), op_type)


def emit_clip(e: Emitter) -> None:
    # Clip-11/13: min and max are optional inputs of the operand's type
    elem = e.elem()
    bounds = []
    for prop in ("min", "max"):
        value = e.props.opt_real(prop)
        bounds.append("" if value is None else e.scalar(value, elem, prop))
    while bounds and not bounds[-1]:
        bounds.pop()
    e.nodes("Clip", [e.inputs[0], *bounds], e.outputs)


def emit_cast(e: Emitter) -> None:
    # Cast-13; float -> int truncates in ONNX Runtime. saturate (Cast-19) and round_mode
    # (Cast-24) when the graph.cast has them (float8 and E8M0 targets); at older opsets
    # export_attributes leaves out their defaults and refuses other values
    attrs: dict[str, object] = {}
    if e.props.has("saturate"):
        attrs["saturate"] = int(e.props.flag("saturate"))
    if e.props.has("round_mode"):
        attrs["round_mode"] = e.props.text("round_mode")
    e.nodes("Cast", e.inputs, e.outputs, to=e.out_elem(), **attrs)


def rsqrt(e: Emitter) -> None:
    """1 / sqrt(x) as Reciprocal(Sqrt(x)) (ONNX has no Rsqrt)."""
    x = e.up(e.inputs[0])
    e.finish(0, e.node("Reciprocal", [e.node("Sqrt", [x])], out=e.target()))


def silu_into(e: Emitter, x: str, out: str | None) -> str:
    """x * sigmoid(x): Swish-24 (alpha = 1) from opset 24, else Sigmoid-13 and Mul-14."""
    if e.opset >= 24:
        return e.node("Swish", [x], out=out)
    return e.node("Mul", [x, e.node("Sigmoid", [x])], out=out)


def silu(e: Emitter) -> None:
    e.finish(0, silu_into(e, e.up(e.inputs[0]), e.target()))


def gelu_into(e: Emitter, x: str, approximate: str, out: str | None) -> str:
    """GELU; Gelu-20 from opset 20, else its formula from Erf-13 or Tanh-13."""
    if e.opset >= 20:
        return e.node("Gelu", [x], out=out, approximate=approximate)
    elem = cast(int, e.body.elem(x))
    half = e.scalar(0.5, elem, "half")
    one = e.scalar(1.0, elem, "one")
    if approximate == "tanh":
        # 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
        cube = e.node("Mul", [e.node("Mul", [x, x]), x])
        inner = e.node("Add", [x, e.node("Mul", [e.scalar(0.044715, elem, "c"), cube])])
        k = e.scalar(math.sqrt(2 / math.pi), elem, "k")
        t = e.node("Tanh", [e.node("Mul", [k, inner])])
    else:
        # 0.5 * x * (1 + erf(x / sqrt(2)))
        t = e.node("Erf", [e.node("Div", [x, e.scalar(math.sqrt(2), elem, "sqrt2")])])
    return e.node("Mul", [e.node("Mul", [half, x]), e.node("Add", [one, t])], out=out)


def gelu(e: Emitter) -> None:
    approximate = e.props.text("approximate")
    e.finish(0, gelu_into(e, e.up(e.inputs[0]), approximate, e.target()))


def gelu_native(e: Emitter) -> None:
    e.nodes("Gelu", e.inputs, e.outputs, approximate=e.props.text("approximate"))


# --------------------------------------------------------------------------------------
# Reductions and softmax
# --------------------------------------------------------------------------------------


def emit_reduce(op_type: str) -> Emit:
    """graph.reduce_* -> ReduceX over the op's axes (all when empty)."""

    def emit(e: Emitter) -> None:
        reduce(
            e,
            op_type,
            e.inputs[0],
            e.props.integers("axes"),
            e.props.flag("keepdims"),
            e.outputs[0],
        )

    return emit


def softmax_axis_is_last(e: Emitter) -> bool:
    """Whether the softmax axis is the last one (where Softmax-11 and -13 agree)."""
    return si.normalize_axis(e.props.integer("axis"), e.rank()) == e.rank() - 1


def softmax_native(e: Emitter) -> None:
    # Softmax-13 normalizes one axis; Softmax-11 flattens [axis, rank) into one, which
    # is the same for the last axis
    e.nodes("Softmax", e.inputs, e.outputs, axis=e.props.integer("axis"))


def softmax(e: Emitter) -> None:
    """exp(x - max(x)) / sum(...) over one axis, for Softmax-11's flattening semantics."""
    axis = [si.normalize_axis(e.props.integer("axis"), e.rank())]
    x = e.up(e.inputs[0])
    ex = e.node("Exp", [e.node("Sub", [x, reduce(e, "ReduceMax", x, axis, True)])])
    e.finish(0, e.node("Div", [ex, reduce(e, "ReduceSum", ex, axis, True)], out=e.target()))


# --------------------------------------------------------------------------------------
# Cube ops and their activation epilogues
# --------------------------------------------------------------------------------------

# graph.ACTIVATIONS -> the suffix of the epilogue function's name
_ACTIVATION_NAMES = {
    "relu": "Relu",
    "clip": "Clip",
    "gelu": "Gelu",
    "gelu_tanh": "GeluTanh",
    "silu": "Silu",
    "sigmoid": "Sigmoid",
}


def activation_into(e: Emitter, y: str, out: str | None) -> str:
    """The cube op's activation epilogue on `y` (graph.ACTIVATIONS)."""
    act = e.props.text("activation")
    if act == "relu":
        return e.node("Relu", [y], out=out)
    if act == "sigmoid":
        return e.node("Sigmoid", [y], out=out)
    if act == "silu":
        return silu_into(e, y, out)
    if act in ("gelu", "gelu_tanh"):
        return gelu_into(e, y, "tanh" if act == "gelu_tanh" else "none", out)
    assert act == "clip", act
    elem = cast(int, e.body.elem(y))
    bounds = [
        "" if (v := e.props.opt_real(p)) is None else e.scalar(v, elem, p)
        for p in ("clip_min", "clip_max")
    ]
    return e.node("Clip", [y, *(bounds if bounds[1] else bounds[:1])], out=out)


def has_epilogue(e: Emitter) -> bool:
    """Whether a cube op carries an activation epilogue."""
    return e.props.has("activation")


def epilogue_name(base: str) -> Callable[[Emitter], str]:
    """Function names `<base><Activation>` (ConvRelu, GemmGeluTanh, MatMulBiasSilu, ...)."""

    def name(e: Emitter) -> str:
        act = e.props.text("activation") if e.props.has("activation") else ""
        return base + _ACTIVATION_NAMES.get(act, "")

    return name


def with_epilogue(e: Emitter, y: str) -> None:
    """Apply the optional activation to `y` (computed in float32 for f16/bf16); finish."""
    if has_epilogue(e):
        y = activation_into(e, y, e.target())
    e.finish(0, y)


def matmul_native(e: Emitter) -> None:
    e.nodes("MatMul", e.inputs, e.outputs)  # MatMul-13


def matmul(e: Emitter) -> None:
    a, b = e.up(e.inputs[0]), e.up(e.inputs[1])
    last = not e.has(2) and not has_epilogue(e)
    y = e.node("MatMul", [a, b], out=e.target() if last else None)
    if e.has(2):
        y = e.node("Add", [y, e.up(e.inputs[2])], out=e.target() if not has_epilogue(e) else None)
    with_epilogue(e, y)


def _gemm_attrs(e: Emitter) -> dict[str, Any]:
    return {
        "alpha": e.props.real("alpha"),
        "beta": e.props.real("beta"),
        "transA": int(e.props.flag("trans_a")),
        "transB": int(e.props.flag("trans_b")),
    }


def gemm_native(e: Emitter) -> None:
    e.nodes("Gemm", e.inputs, e.outputs, **_gemm_attrs(e))  # Gemm-13, C optional since 11


def gemm(e: Emitter) -> None:
    ins = [e.up(i) for i in e.inputs]
    with_epilogue(e, e.node("Gemm", ins, **_gemm_attrs(e)))


def _conv_attrs(e: Emitter) -> dict[str, Any]:
    # pads [top, left, bottom, right] are ONNX's [x1_begin, x2_begin, x1_end, x2_end]
    return {**e.int_lists("strides", "pads", "dilations"), "group": e.props.integer("group")}


def conv_native(e: Emitter) -> None:
    e.nodes("Conv", e.inputs, e.outputs, **_conv_attrs(e))  # Conv-11


def conv(e: Emitter) -> None:
    ins = [e.up(i) for i in e.inputs]
    with_epilogue(e, e.node("Conv", ins, **_conv_attrs(e)))


# --------------------------------------------------------------------------------------
# Normalizations
# --------------------------------------------------------------------------------------


def emit_batch_norm(e: Emitter) -> None:
    """BatchNormalization in inference mode (scale, bias, mean, var are its inputs)."""
    # BatchNormalization-15 (-9 before opset 15), inference mode
    e.nodes("BatchNormalization", e.inputs, e.outputs, epsilon=e.props.real("epsilon"))


def layer_norm_into(e: Emitter, k: int, x: str, scale: str, bias: str | None) -> None:
    """Result k = layer_norm(x) * scale (+ bias) over [axis, rank).

    LayerNormalization-17 from opset 17 (it normalizes in float32 itself: stash_type 1);
    before, the formula in float32 from ReduceMean, Sub, Mul, Add, Sqrt and Div.
    """
    axis = e.props.integer("axis")
    if e.opset >= 17:
        e.nodes(
            "LayerNormalization",
            [x, scale, *([bias] if bias else [])],
            [e.outputs[k]],
            axis=axis,
            epsilon=e.props.real("epsilon"),
        )
        return
    axes = norm_axes(axis, len(e.out_type(k).get_shape()))
    x = e.up(x)
    d = e.node("Sub", [x, reduce(e, "ReduceMean", x, axes, True)])
    var = reduce(e, "ReduceMean", e.node("Mul", [d, d]), axes, True)
    std = e.node("Sqrt", [e.node("Add", [var, _epsilon(e, x)])])
    y = e.node("Mul", [e.node("Div", [d, std]), e.up(scale)], out=None if bias else e.target(k))
    if bias:
        y = e.node("Add", [y, e.up(bias)], out=e.target(k))
    e.finish(k, y)


def rms_norm_into(e: Emitter, k: int, x: str, scale: str) -> None:
    """Result k = x / sqrt(mean(x^2) + epsilon) * scale over [axis, rank).

    RMSNormalization-23 from opset 23; before, the formula in float32.
    """
    axis = e.props.integer("axis")
    if e.opset >= 23:
        e.nodes(
            "RMSNormalization",
            [x, scale],
            [e.outputs[k]],
            axis=axis,
            epsilon=e.props.real("epsilon"),
        )
        return
    axes = norm_axes(axis, len(e.out_type(k).get_shape()))
    x = e.up(x)
    ms = reduce(e, "ReduceMean", e.node("Mul", [x, x]), axes, True)
    std = e.node("Sqrt", [e.node("Add", [ms, _epsilon(e, x)])])
    e.finish(k, e.node("Mul", [e.node("Div", [x, std]), e.up(scale)], out=e.target(k)))


def layer_norm(e: Emitter) -> None:
    layer_norm_into(e, 0, e.inputs[0], e.inputs[1], e.inputs[2] if e.has(2) else None)


def rms_norm(e: Emitter) -> None:
    rms_norm_into(e, 0, e.inputs[0], e.inputs[1])


def add_layer_norm(e: Emitter) -> None:
    # the sum is a result in the operands' type, and what is normalized (as the unfused
    # graph.add would have stored it)
    e.nodes("Add", e.inputs[:2], [e.outputs[1]])
    layer_norm_into(e, 0, e.outputs[1], e.inputs[2], e.inputs[3] if e.has(3) else None)


def add_rms_norm(e: Emitter) -> None:
    e.nodes("Add", e.inputs[:2], [e.outputs[1]])
    rms_norm_into(e, 0, e.outputs[1], e.inputs[2])


def _epsilon(e: Emitter, x: str) -> str:
    return e.scalar(e.props.real("epsilon"), cast(int, e.body.elem(x)), "epsilon")


def layer_norm_stats(e: Emitter) -> None:
    # mean = reduce_mean(x); rstd = 1 / sqrt(reduce_mean((x - mean)^2) + epsilon)
    axes = norm_axes(e.props.integer("axis"), e.rank())
    x = e.up(e.inputs[0])
    mean = reduce(e, "ReduceMean", x, axes, True, out=e.target(0))
    d = e.node("Sub", [x, mean])
    var = reduce(e, "ReduceMean", e.node("Mul", [d, d]), axes, True)
    std = e.node("Sqrt", [e.node("Add", [var, _epsilon(e, x)])])
    e.finish(0, mean)
    e.finish(1, e.node("Reciprocal", [std], out=e.target(1)))


def rms_rstd(e: Emitter, x: str, axes: list[int], epsilon: float, out: str | None) -> str:
    """rstd = 1 / sqrt(reduce_mean(x^2) + epsilon) of a float32 x over `axes`."""
    ms = reduce(e, "ReduceMean", e.node("Mul", [x, x]), axes, True)
    eps = e.scalar(epsilon, cast(int, e.body.elem(x)), "epsilon")
    return e.node("Reciprocal", [e.node("Sqrt", [e.node("Add", [ms, eps])])], out=out)


def rms_norm_stats(e: Emitter) -> None:
    axes = norm_axes(e.props.integer("axis"), e.rank())
    x = e.up(e.inputs[0])
    e.finish(0, rms_rstd(e, x, axes, e.props.real("epsilon"), e.target()))


def layer_norm_apply(e: Emitter) -> None:
    # y = (x - mean) * rstd * scale + bias
    x, mean, rstd, scale = (e.up(i) for i in e.inputs[:4])
    y = e.node(
        "Mul",
        [e.node("Mul", [e.node("Sub", [x, mean]), rstd]), scale],
        out=None if e.has(4) else e.target(),
    )
    if e.has(4):
        y = e.node("Add", [y, e.up(e.inputs[4])], out=e.target())
    e.finish(0, y)


def rms_norm_apply(e: Emitter) -> None:
    # y = x * rstd * scale
    x, rstd, scale = (e.up(i) for i in e.inputs)
    e.finish(0, e.node("Mul", [e.node("Mul", [x, rstd]), scale], out=e.target()))


# --------------------------------------------------------------------------------------
# Named fused ops
# --------------------------------------------------------------------------------------


def _causal(e: Emitter, s: str) -> str:
    """s[..., i, j] = -inf where j > i (top-left aligned), for any (dynamic) Sq and Skv.

    Shape-15 would slice directly; Shape-13 + Gather-13 + Range-11 work from opset 11.
    """
    shape = e.node("Shape", [s], elem=TensorProto.INT64)
    zero = e.const(np.int64(0), TensorProto.INT64, "zero")
    one = e.const(np.int64(1), TensorProto.INT64, "one")
    dims = []
    for axis in (-2, -1):
        dim = e.node("Gather", [shape, e.const(np.int64(axis), TensorProto.INT64, "axis")], axis=0)
        dims.append(e.node("Range", [zero, dim, one]))
    rows = unsqueeze(e, dims[0], [1])
    above = e.node("Greater", [dims[1], rows], elem=TensorProto.BOOL, role="above")
    ninf = e.scalar(-np.inf, cast(int, e.body.elem(s)), "ninf")
    return e.node("Where", [above, ninf, s], elem=e.body.elem(s))


def _position_keep(e: Emitter, ids: str) -> str:
    """graph.flash_attention's integer mask as the boolean one it stands for: key j is
    kept for query i where ids[j] <= ids[i] (LessOrEqual-12 is Not + Greater)."""
    keys, queries = unsqueeze(e, ids, [0]), unsqueeze(e, ids, [1])
    later = e.node("Greater", [keys, queries], elem=TensorProto.BOOL, role="later")
    return e.node("Not", [later], elem=TensorProto.BOOL, role="keep")


def _mask_input(e: Emitter) -> list[str]:
    """The mask operand as ONNX takes it (none, boolean, true = attend, or additive)."""
    if not e.has(3):
        return []
    if e.elem(3) in (TensorProto.INT64, TensorProto.INT32):
        return [_position_keep(e, e.inputs[3])]
    if cast(graph.FlashAttentionOp, e.op).mask_hides:  # true = hidden (Not-1)
        return [e.node("Not", [e.inputs[3]], elem=TensorProto.BOOL, role="keep")]
    return [e.inputs[3]]


def _zero_masked_rows(e: Emitter, s: str, p: str) -> str:
    """p with its fully masked rows (max(s) == -inf over the keys) set to 0: the
    softmax of an all -inf row is NaN in ONNX (masked_row = "zero")."""
    elem = cast(int, e.body.elem(s))
    row_max = reduce(e, "ReduceMax", s, [-1], keepdims=True)
    ninf = e.scalar(-np.inf, elem, "ninf")
    hidden = e.node("Equal", [row_max, ninf], elem=TensorProto.BOOL, role="masked_row")
    return e.node("Where", [hidden, e.scalar(0.0, elem, "zero"), p], elem=elem)


def flash_attention(e: Emitter) -> None:
    """softmax(scale * q k^T + mask, causal) v in float32, GQA by gathering kv heads; a
    fully masked row (only a mask can hide every key of a row) is 0, or NaN with
    masked_row = "nan"."""
    p = e.props
    bsnd = p.text("layout") == "BSND"
    heads = 2 if bsnd else 1
    hq, hkv = e.in_type(0).get_shape()[heads], e.in_type(1).get_shape()[heads]
    q, k, v = (e.up(i) for i in e.inputs[:3])
    if bsnd:
        q, k, v = (e.node("Transpose", [t], perm=[0, 2, 1, 3]) for t in (q, k, v))
    if hq != hkv:
        if si.DYN in (hq, hkv):
            raise NotExportable(
                "grouped-query attention with a dynamic number of heads "
                f"({si.fmt([hq])} query, {si.fmt([hkv])} key/value heads) cannot be exported"
            )
        # query head h reads kv head h // (hq / hkv): transformers' repeat_kv (Gather-13)
        heads_idx = e.ints([h // (hq // hkv) for h in range(hq)], "kv_heads")
        k, v = (e.node("Gather", [t, heads_idx], axis=1) for t in (k, v))
    s = e.node("MatMul", [q, e.node("Transpose", [k], perm=[0, 1, 3, 2])])
    s = e.node("Mul", [s, e.scalar(p.real("scale"), cast(int, e.body.elem(s)), "scale")])
    softcap = p.opt_real("softcap")
    if softcap is not None:
        cap = e.scalar(softcap, cast(int, e.body.elem(s)), "softcap")
        s = e.node("Mul", [e.node("Tanh", [e.node("Div", [s, cap])]), cap])
    if e.has(3):
        if e.elem(3) != e.elem(0):  # boolean, or position ids made boolean
            ninf = e.scalar(-np.inf, cast(int, e.body.elem(s)), "ninf")
            s = e.node("Where", [*_mask_input(e), s, ninf], elem=e.body.elem(s))
        else:
            s = e.node("Add", [s, e.up(e.inputs[3])])
    if p.flag("causal"):
        s = _causal(e, s)
    # Softmax-13 over the last axis (Softmax-11 is the same there)
    probs = e.node("Softmax", [s], axis=-1)
    # only a float or i1 mask can hide every key of a row (a query keeps its own position)
    hides_rows = e.has(3) and e.elem(3) not in (TensorProto.INT64, TensorProto.INT32)
    if hides_rows and not cast(graph.FlashAttentionOp, e.op).nan_rows:
        probs = _zero_masked_rows(e, s, probs)
    out = e.node("MatMul", [probs, v], out=None if bsnd else e.target())
    if bsnd:
        out = e.node("Transpose", [out], perm=[0, 2, 1, 3], out=e.target())
    e.finish(0, out)


def flash_attention_native(e: Emitter) -> None:
    """Attention-23 on BNSD operands (BSND is transposed in and out): its top-left causal
    mask without a cache, GQA head mapping, mask forms and fully-masked-row zeros are
    graph.flash_attention's (masked_row = "nan" is exported as the function); softcap
    is its attribute of the same name."""
    p = e.props
    bsnd = p.text("layout") == "BSND"
    q, k, v = e.inputs[:3]
    if bsnd:
        q, k, v = (e.node("Transpose", [t], perm=[0, 2, 1, 3]) for t in (q, k, v))
    attrs: dict[str, Any] = {"scale": p.real("scale"), "is_causal": int(p.flag("causal"))}
    softcap = p.opt_real("softcap")
    if softcap is not None:
        attrs["softcap"] = softcap
    ins = [q, k, v, *_mask_input(e)]
    if bsnd:
        out = e.node("Attention", ins, **attrs)
        e.nodes("Transpose", [out], e.outputs, perm=[0, 2, 1, 3])
    else:
        e.nodes("Attention", ins, e.outputs, **attrs)


def rope(e: Emitter) -> None:
    """x * cos + rotate(x) * sin; rotate by Slice-13, Neg-13, Concat-13 (and Reshape-14).
    With rotary_dim R: the same on x[..., :R], concatenated with x[..., R:]."""
    full = e.in_type(0).get_shape()[-1]
    if full == si.DYN:
        raise NotExportable("a dynamic rotary dimension (last dim of the input) cannot be exported")
    d = e.props.integer("rotary_dim") if e.props.has("rotary_dim") else full
    half, rank = d // 2, e.rank()
    x, cos, sin = (e.up(i) for i in e.inputs)
    whole = x
    if d != full:
        x = slice_last(e, whole, 0, d)
    if e.props.flag("interleaved"):
        # pairs (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]); 0 in a Reshape shape copies the dim
        pairs = e.node("Reshape", [x, e.ints([0] * (rank - 1) + [half, 2], "pairs")])
        even, odd = slice_last(e, pairs, 0, 1), slice_last(e, pairs, 1, 2)
        turned = e.node("Concat", [e.node("Neg", [odd]), even], axis=-1)
        rotated = e.node("Reshape", [turned, e.ints([0] * (rank - 1) + [d], "shape")])
    else:
        first, second = slice_last(e, x, 0, half), slice_last(e, x, half, d)
        rotated = e.node("Concat", [e.node("Neg", [second]), first], axis=-1)
    if d == full:
        y = e.node("Add", [e.node("Mul", [x, cos]), e.node("Mul", [rotated, sin])], out=e.target())
    else:
        y = e.node("Add", [e.node("Mul", [x, cos]), e.node("Mul", [rotated, sin])])
        y = e.node("Concat", [y, slice_last(e, whole, d, full)], axis=-1, out=e.target())
    e.finish(0, y)


def _rope_head_axis(e: Emitter) -> int | None:
    """The axis (1 for [B, H, S, D], 2 for [B, S, H, D]) over which graph.rope's cos and
    sin are the same for every head, if RotaryEmbedding-23 can take the op; else None."""
    x = e.in_type(0).get_shape()
    if e.opset < 23 or len(x) != 4 or x[3] == si.DYN:
        return None
    if e.props.has("rotary_dim") and e.props.integer("rotary_dim") != x[3]:
        return None  # partial rotary: the function form (Slice, rope, Concat)
    shapes = [[1] * (4 - e.rank(i)) + list(e.in_type(i).get_shape()) for i in (1, 2)]
    if any(e.rank(i) > 4 for i in (1, 2)) or any(s[3] != x[3] for s in shapes):
        return None
    for axis in (1, 2):
        # a [B, S, H, D] input becomes [B, S, H * D]: H must be known
        if all(s[axis] == 1 for s in shapes) and (axis == 1 or x[2] != si.DYN):
            return axis
    return None


def rope_native(e: Emitter) -> None:
    """graph.rope as RotaryEmbedding-23 (caches [B, S, D/2]; a [B, S, H, D] input goes in as
    [B, S, H * D] with num_heads). rope's cos/sin are full width, RotaryEmbedding applies
    one half-width angle to both features of a pair: one call takes the angles of the
    first features of the pairs and one those of the second; each supplies its half of y."""
    axis = _rope_head_axis(e)
    assert axis is not None
    heads, d = e.in_type(0).get_shape()[2], e.in_type(0).get_shape()[3]
    half, interleaved = d // 2, e.props.flag("interleaved")
    x = e.inputs[0]
    # the caches broadcast to the input, with one head: [B, 1, S, D] or [B, S, 1, D]
    target = e.node(
        "Concat",
        [
            e.node("Shape", [x], end=axis, elem=TensorProto.INT64),
            e.ints([1], "one_head"),
            e.node("Shape", [x], start=axis + 1, elem=TensorProto.INT64),
        ],
        axis=0,
    )
    attrs: dict[str, Any] = {"interleaved": int(interleaved)}
    if axis == 2:
        x = e.node("Reshape", [x, e.ints([0, 0, -1], "hidden")])
        attrs["num_heads"] = heads
    parts: list[list[str]] = [[], []]  # [cos, sin] of the first / second features
    for t in e.inputs[1:3]:
        full = e.node("Expand", [t, target])
        full = e.node("Squeeze", [full, e.ints([axis], "head_axis")])  # [B, S, D]
        if interleaved:
            halves = [slice_last(e, full, 0, d, 2), slice_last(e, full, 1, d, 2)]
        else:
            halves = [slice_last(e, full, 0, half), slice_last(e, full, half, d)]
        for k in (0, 1):
            parts[k].append(halves[k])
    ys = [e.node("RotaryEmbedding", [x, *parts[k]], **attrs) for k in (0, 1)]
    # [..., D/2, 2] pairs (interleaved) or [..., 2, D/2] halves: take part k of call k
    split = [0, 0, -1, half, 2] if interleaved else [0, 0, -1, 2, half]
    grouped = [e.node("Reshape", [y, e.ints(split, "split")]) for y in ys]
    on = -1 if interleaved else -2
    kept = [
        e.node(
            "Slice",
            [grouped[k], e.ints([k], "start"), e.ints([k + 1], "end"), e.ints([on], "axis")],
        )
        for k in (0, 1)
    ]
    both = e.node("Concat", kept, axis=on)
    shape = e.ints([0, 0, heads if axis == 2 else -1, d], "shape")
    e.nodes("Reshape", [both, shape], e.outputs)


def swiglu(e: Emitter) -> None:
    # silu(gate) * up
    gate, up = e.up(e.inputs[0]), e.up(e.inputs[1])
    e.finish(0, e.node("Mul", [silu_into(e, gate, None), up], out=e.target()))


def _rounded(e: Emitter, x: str) -> str:
    """float32 `x` rounded to the result's f16/bf16 and widened again (Cast-13 twice),
    where graph.ffn's formula rounds an intermediate."""
    elem = e.out_elem()
    if elem not in _LOW_PRECISION:
        return x
    low = e.node("Cast", [x], to=elem, elem=elem, role="rounded")
    return e.up(low)


def ffn(e: Emitter) -> None:
    """[residual +] act(x @ W1 + b1) @ W2 + b2 with graph.ffn's roundings (its docstring):
    MatMul, Add, the activation, MatMul, Add in float32."""
    op = cast(graph.FfnOp, e.op)
    n_w1, n_b1 = len(op.weight1), len(op.bias1)
    names = [e.up(n) for n in e.inputs]
    x, w1, w2 = names[0], names[1 : 1 + n_w1], names[1 + n_w1]
    rest = names[2 + n_w1 :]
    b1, rest = rest[:n_b1], rest[n_b1:]
    b2 = rest.pop(0) if op.bias2 is not None else None
    residual = rest.pop(0) if op.residual is not None else None
    h = [e.node("MatMul", [x, w]) for w in w1]
    eps = e.props.opt_real("norm_epsilon")
    if eps is not None:  # x RMS-normalised first, its scale folded into W1
        rstd = rms_rstd(e, x, [len(e.in_type(0).get_shape()) - 1], eps, None)
        h = [e.node("Mul", [_rounded(e, v), rstd]) for v in h]
    h = [e.node("Add", [v, b]) for v, b in zip(h, b1)] if b1 else h
    act = op.activation.data
    if op.gated and len(h) == 1:  # the merged weight's gate half, then its up half
        width = e.in_type(1).get_shape()[1]
        if width == si.DYN:
            raise NotExportable("graph.ffn with a merged weight1 of dynamic width")
        h = [slice_last(e, h[0], 0, width // 2), slice_last(e, h[0], width // 2, width)]
    if op.gated:
        gate, up = _rounded(e, h[0]), _rounded(e, h[1])
        if act == "swiglu":
            a = silu_into(e, gate, None)
        elif act in ("geglu", "geglu_tanh"):
            a = _rounded(e, gelu_into(e, gate, "tanh" if act == "geglu_tanh" else "none", None))
        else:
            a = e.node("Relu", [gate])
        g = e.node("Mul", [a, up])
    elif act == "relu":
        g = e.node("Relu", [h[0]])
    elif act == "sigmoid":
        g = e.node("Sigmoid", [h[0]])
    elif act == "silu":
        g = silu_into(e, h[0], None)
    else:
        g = gelu_into(e, h[0], "tanh" if act == "gelu_tanh" else "none", None)
    last = b2 is None and residual is None
    y = e.node("MatMul", [_rounded(e, g), w2], out=e.target() if last else None)
    if b2 is not None:
        y = e.node("Add", [y, b2], out=e.target() if residual is None else None)
    if residual is not None:
        y = e.node("Add", [y, residual], out=e.target())
    e.finish(0, y)


# --------------------------------------------------------------------------------------
# Pooling and data movement
# --------------------------------------------------------------------------------------


def emit_max_pool(e: Emitter) -> None:
    # MaxPool-12 (dilations since 10, ceil_mode since 10); pads as for conv
    p = e.props
    window = e.int_lists("kernel_shape", "strides", "pads", "dilations")
    e.nodes("MaxPool", e.inputs, e.outputs, ceil_mode=int(p.flag("ceil_mode")), **window)


def emit_avg_pool(e: Emitter) -> None:
    # AveragePool-11/19 (dilations from 19 on)
    p = e.props
    attrs: dict[str, Any] = {}
    dilations = list(graph.AvgPool2dOp.window_dilations(p))
    if dilations != [1, 1]:
        if e.opset < 19:
            raise NotExportable(f"AveragePool with dilations needs opset 19, not {e.opset}")
        attrs["dilations"] = dilations
    e.nodes(
        "AveragePool",
        e.inputs,
        e.outputs,
        ceil_mode=int(p.flag("ceil_mode")),
        count_include_pad=int(p.flag("count_include_pad")),
        **e.int_lists("kernel_shape", "strides", "pads"),
        **attrs,
    )


def emit_reshape(e: Emitter) -> None:
    # Reshape-14 with allowzero = 0 (also Reshape-5): 0 copies a dim, -1 is inferred
    e.nodes("Reshape", [e.inputs[0], e.ints(e.props.integers("shape"), "shape")], e.outputs)


def emit_transpose(e: Emitter) -> None:
    e.nodes("Transpose", e.inputs, e.outputs, perm=list(e.props.integers("perm")))  # Transpose-13


def emit_concat(e: Emitter) -> None:
    e.nodes("Concat", e.inputs, e.outputs, axis=e.props.integer("axis"))  # Concat-13


def emit_split(e: Emitter) -> None:
    # Split-13/18 take the sizes as an input, Split-11 as an attribute
    axis, sizes = e.props.integer("axis"), e.props.integers("sizes")
    if e.opset >= 13:
        e.nodes("Split", [e.inputs[0], e.ints(sizes, "split")], e.outputs, axis=axis)
    else:
        e.nodes("Split", e.inputs, e.outputs, axis=axis, split=list(sizes))


def emit_slice(e: Emitter) -> None:
    # Slice-13: starts, ends, axes and steps as inputs; clamping as python slices
    p = e.props
    ins = [e.ints(p.integers(n), n) for n in ("starts", "ends", "axes", "steps")]
    e.nodes("Slice", [e.inputs[0], *ins], e.outputs)


def emit_gather(e: Emitter) -> None:
    e.nodes("Gather", e.inputs, e.outputs, axis=e.props.integer("axis"))  # Gather-13


def emit_expand(e: Emitter) -> None:
    # Expand-13; a shape dim of 1 keeps the input's dim, which is what -1 means here
    shape = [1 if d == -1 else d for d in e.props.integers("shape")]
    e.nodes("Expand", [e.inputs[0], e.ints(shape, "shape")], e.outputs)


def emit_pad(e: Emitter) -> None:
    # Pad-11..23: pads (and the constant value, of the operand's type) as inputs; wrap
    # from Pad-19
    mode = e.props.text("mode")
    if mode == "wrap" and e.opset < 19:
        raise NotExportable(f"Pad mode wrap needs opset 19, not {e.opset}")
    ins = [e.inputs[0], e.ints(e.props.integers("pads"), "pads")]
    if mode == "constant":
        ins.append(e.scalar(e.props.real("value"), e.elem(), "value"))
    e.nodes("Pad", ins, e.outputs, mode=mode)


# --------------------------------------------------------------------------------------
# Indexing ops (autofusion/dialects/graph_indexing.py): the ONNX ops of the same names
# --------------------------------------------------------------------------------------


def with_props(op_type: str, *names: str) -> Standard:
    """The ONNX op `op_type` on the same operands, with the op's properties `names` (those
    present) as its attributes."""

    def emit(e: Emitter) -> None:
        attrs = {n: e.op.properties[n] for n in names if n in e.op.properties}
        values = {n: e.props.text(n) if n == "reduction" else e.props.integer(n) for n in attrs}
        e.nodes(op_type, e.inputs, e.outputs, **values)

    return Standard(emit, op_type)


def emit_scatter(op_type: str) -> Standard:
    """ScatterElements/ScatterND: axis and reduction, which opsets before 16 lack (as
    'none', every version's behaviour, it is then left out: export_attributes.py)."""
    return Standard(
        with_props(op_type, "axis", "reduction").emit, f"{op_type} (reduction from opset 16)"
    )


def emit_one_hot(e: Emitter) -> None:
    depth = e.const(np.asarray([e.props.integer("depth")], np.int64), TensorProto.INT64, "depth")
    ins = [e.inputs[0], depth, e.inputs[1]]
    e.nodes("OneHot", ins, e.outputs, axis=e.props.integer("axis"))


def emit_unique(e: Emitter) -> None:
    attrs = {"sorted": int(e.props.flag("sorted"))}
    if e.props.has("axis"):
        attrs["axis"] = e.props.integer("axis")
    e.nodes("Unique", e.inputs, e.outputs, **attrs)


INDEXING_TABLE: dict[type[Operation], Mapping] = {
    gi.GatherElementsOp: with_props("GatherElements", "axis"),
    gi.ScatterElementsOp: emit_scatter("ScatterElements"),
    gi.ScatterNDOp: emit_scatter("ScatterND"),
    gi.OneHotOp: Standard(emit_one_hot, "OneHot (depth as a constant input)"),
    gi.ReverseSequenceOp: with_props("ReverseSequence", "batch_axis", "time_axis"),
    gi.CompressOp: with_props("Compress", "axis"),
    gi.NonZeroOp: direct("NonZero"),
    gi.UniqueOp: Standard(emit_unique, "Unique"),
}


# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------

CORE_TABLE: dict[type[Operation], Mapping] = {
    # elementwise (ONNX op versions at opset 17; the same ops exist from opset 11)
    graph.NegOp: direct("Neg"),
    graph.AbsOp: direct("Abs"),
    graph.ExpOp: direct("Exp"),
    graph.LogOp: direct("Log"),
    graph.SqrtOp: direct("Sqrt"),
    graph.RsqrtOp: Named("Rsqrt", rsqrt, "ai.afc.Rsqrt = Reciprocal(Sqrt(x))"),
    graph.ReciprocalOp: direct("Reciprocal"),
    graph.ReluOp: direct("Relu"),
    graph.SigmoidOp: direct("Sigmoid"),
    graph.TanhOp: direct("Tanh"),
    graph.ErfOp: direct("Erf"),
    graph.SiluOp: Named(
        "Silu",
        silu,
        "Swish-24; before: ai.afc.Silu = x * Sigmoid(x)",
        native=same("Swish"),
        native_when=since(24),
    ),
    graph.SinOp: direct("Sin"),
    graph.CosOp: direct("Cos"),
    graph.NotOp: direct("Not"),
    graph.GeluOp: Named(
        lambda e: "GeluTanh" if e.props.text("approximate") == "tanh" else "Gelu",
        gelu,
        "Gelu-20; before: ai.afc.Gelu / ai.afc.GeluTanh (Erf or Tanh formula)",
        native=gelu_native,
        native_when=since(20),
    ),
    graph.ClipOp: Standard(emit_clip, "Clip (bounds as inputs)"),
    graph.CastOp: Standard(emit_cast, "Cast"),
    graph.AddOp: direct("Add"),
    graph.SubOp: direct("Sub"),
    graph.MulOp: direct("Mul"),
    graph.DivOp: direct("Div"),
    graph.PowOp: direct("Pow"),
    graph.MaxOp: direct("Max"),
    graph.MinOp: direct("Min"),
    graph.AndOp: direct("And"),
    graph.OrOp: direct("Or"),
    graph.EqualOp: direct("Equal"),
    graph.LessOp: direct("Less"),
    graph.GreaterOp: direct("Greater"),
    graph.WhereOp: direct("Where"),
    # reductions
    graph.ReduceSumOp: Standard(emit_reduce("ReduceSum"), "ReduceSum (axes input from 13)"),
    graph.ReduceMeanOp: Standard(emit_reduce("ReduceMean"), "ReduceMean (axes input from 18)"),
    graph.ReduceMaxOp: Standard(emit_reduce("ReduceMax"), "ReduceMax (axes input from 18)"),
    graph.ReduceMinOp: Standard(emit_reduce("ReduceMin"), "ReduceMin (axes input from 18)"),
    graph.SoftmaxOp: Named(
        "Softmax",
        softmax,
        "Softmax-13; opsets 11-12 over a non-last axis: ai.afc.Softmax (Exp/ReduceSum)",
        native=softmax_native,
        native_when=lambda e: e.opset >= 13 or softmax_axis_is_last(e),
    ),
    # cube ops; with an epilogue (or matmul's bias) a function Conv<Act>, Gemm<Act>, ...
    graph.MatmulOp: Named(
        lambda e: epilogue_name("MatMulBias" if e.has(2) else "MatMul")(e),
        matmul,
        "MatMul; with bias/activation: ai.afc.MatMul[Bias][Act]",
        native=matmul_native,
        native_when=lambda e: not e.has(2) and not has_epilogue(e),
    ),
    graph.GemmOp: Named(
        epilogue_name("Gemm"),
        gemm,
        "Gemm; with activation: ai.afc.Gemm<Act>",
        native=gemm_native,
        native_when=lambda e: not has_epilogue(e),
    ),
    graph.Conv2dOp: Named(
        epilogue_name("Conv"),
        conv,
        "Conv; with activation: ai.afc.Conv<Act>",
        native=conv_native,
        native_when=lambda e: not has_epilogue(e),
    ),
    # normalizations
    graph.BatchNormOp: Standard(emit_batch_norm, "BatchNormalization"),
    graph.LayerNormOp: Named(
        "LayerNormalization",
        layer_norm,
        "LayerNormalization-17; before: ai.afc.LayerNormalization",
        native=layer_norm,
        native_when=since(17),
    ),
    graph.RmsNormOp: Named(
        "RMSNormalization",
        rms_norm,
        "RMSNormalization-23; before: ai.afc.RMSNormalization",
        native=rms_norm,
        native_when=since(23),
    ),
    # pooling
    graph.MaxPool2dOp: Standard(emit_max_pool, "MaxPool"),
    graph.AvgPool2dOp: Standard(emit_avg_pool, "AveragePool"),
    graph.GlobalAvgPoolOp: direct("GlobalAveragePool"),
    # data movement
    graph.ReshapeOp: Standard(emit_reshape, "Reshape"),
    graph.TransposeOp: Standard(emit_transpose, "Transpose"),
    graph.ConcatOp: Standard(emit_concat, "Concat"),
    graph.SplitOp: Standard(emit_split, "Split (sizes input from 13)"),
    graph.SliceOp: Standard(emit_slice, "Slice"),
    graph.GatherOp: Standard(emit_gather, "Gather"),
    graph.ExpandOp: Standard(emit_expand, "Expand (-1 dims as 1)"),
    graph.PadOp: Standard(emit_pad, "Pad"),
    # named fused ops: functions, except flash_attention and rope from opset 23
    # (Attention-23, RotaryEmbedding-23)
    graph.FlashAttentionOp: Named(
        "FlashAttention",
        flash_attention,
        "Attention-23; before: ai.afc.FlashAttention",
        native=flash_attention_native,
        native_when=lambda e: e.opset >= 23 and not cast(graph.FlashAttentionOp, e.op).nan_rows,
    ),
    graph.RopeOp: Named(
        "Rope",
        rope,
        "RotaryEmbedding-23 for [B, H, S, D] inputs; else ai.afc.Rope",
        native=rope_native,
        native_when=lambda e: _rope_head_axis(e) is not None,
    ),
    graph.SwigluOp: Named("SwiGLU", swiglu, "ai.afc.SwiGLU"),
    graph.FfnOp: Named("FFN", ffn, "ai.afc.FFN"),
    graph.AddLayerNormOp: Named("AddLayerNorm", add_layer_norm, "ai.afc.AddLayerNorm"),
    graph.AddRmsNormOp: Named("AddRmsNorm", add_rms_norm, "ai.afc.AddRmsNorm"),
    graph.LayerNormStatsOp: Named("LayerNormStats", layer_norm_stats, "ai.afc.LayerNormStats"),
    graph.RmsNormStatsOp: Named("RmsNormStats", rms_norm_stats, "ai.afc.RmsNormStats"),
    graph.LayerNormApplyOp: Named("LayerNormApply", layer_norm_apply, "ai.afc.LayerNormApply"),
    graph.RmsNormApplyOp: Named("RmsNormApply", rms_norm_apply, "ai.afc.RmsNormApply"),
    **INDEXING_TABLE,
}
