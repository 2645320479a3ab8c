"""Walking an ONNX graph into one `func.func @main` of graph-dialect ops.

The importer keeps a table from ONNX value names to what it knows about each value
(frontends/onnx/values.py):

* `Const`: the values are known at import time (initializers, Constant nodes, and every
  node whose inputs are all known: such nodes are folded, graph ops through
  `interpreter.folding.evaluate` so folding and interpreting agree, shape-only ONNX ops
  such as Shape or Range with numpy). A Const becomes a `graph.constant` only where an
  emitted op uses it.
* `Tensor`: an SSA value of the function being built.
* `Sym`: an integer tensor computed from symbolic dims (`Shape` of a tensor with `?`
  dims, and arithmetic on it). Its values are only known at run time, so the importer
  evaluates it under two probe assignments of the symbolic dims (A and B, distinct
  primes): an element equal under both is static, one that differs is symbolic. A
  Reshape/Expand/Slice whose shape argument is a Sym is emitted with the graph ops' `0`
  / `-1` conventions when a symbolic element is a dim the data already has; otherwise the
  node is rejected with a message asking for static input shapes (`--input-shape`).

Every tensor value also carries its shape under both probe assignments, so that the
shape arithmetic above can tell which dim of the data a symbolic element is.

Converters (ONNX op type -> function) live in the `ops_*` modules; each gets a
`Node`, the converter's view of one ONNX node, and returns the values of its outputs.
The subgraphs of If, Loop and Scan are converted inline, each in a scope of its own over
the enclosing ones (`Importer.convert_subgraph`).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, InterpretationError

from autofusion import dtypes, resources
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph import GraphOp, Props
from autofusion.dialects.shape_inference import ShapeError
from autofusion.interpreter import NAME_ATTR, name_attr
from autofusion.interpreter.folding import evaluate
from frontends.onnx import origin
from frontends.onnx.schemas import operator_schema
from frontends.onnx.values import (
    ELEMENT_TYPES,
    Const,
    Item,
    Opt,
    Seq,
    Sym,
    Tensor,
    Value,
    element_type,
    item_kind,
    plain_array,
    probe_dims,
)

# afc imports every default-domain opset up to the installed onnx's newest
# (`onnx.defs.onnx_opset_version()`). Each node is converted by the version of its
# operator that the model's opset resolves to (its schema's since_version), and a
# version its converter does not implement is refused (see `OpVersions`). The versions
# reached from this opset on (numpy-style broadcasting) are each implemented or refused
# with what differs (frontends/onnx/ops_legacy.py); older ones are refused as such.
LEGACY_OPSET = 7

DEFAULT_DOMAINS = ("", "ai.onnx")

# ONNX TypeProto kinds other than tensors, as named in diagnostics
NON_TENSOR_TYPES = {
    "sequence_type": "a sequence",
    "optional_type": "an optional",
    "map_type": "a map",
    "sparse_tensor_type": "a sparse tensor",
}

# constants with at most this many elements are printed inline as dense<...>
DENSE_LIMIT = 8

DYN = si.DYN

# static shapes of graph inputs by name, replacing their symbolic dims (--input-shape)
InputShapes = Mapping[str, Sequence[int]]


def _primes(start: int) -> Callable[[int], int]:
    """The k-th prime above `start` (k from 0), computed on demand."""
    found: list[int] = []

    def kth(k: int) -> int:
        n = found[-1] + 1 if found else start + 1
        while len(found) <= k:
            if all(n % d for d in range(2, int(n**0.5) + 1)):
                found.append(n)
            n += 1
        return found[k]

    return kth


# probe values of the k-th symbolic dim under assignments A and B
_PROBE_A = _primes(1000)
_PROBE_B = _primes(3000)


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def load_model_bytes(data: bytes, name: str) -> onnx.ModelProto:
    """Parse a serialized ModelProto without touching external data."""
    from google.protobuf.message import DecodeError

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise UserError(f"not a valid ONNX model (truncated or garbled file: {e})", name) from e
    if not model.HasField("graph") or not model.opset_import:
        raise UserError("not a valid ONNX model (no graph or no opset_import)", name)
    return model


# --------------------------------------------------------------------------------------
# The converter's view of one node
# --------------------------------------------------------------------------------------

_REQUIRED = object()


class Node:
    """One ONNX node being converted: its inputs, attributes and an op builder."""

    def __init__(self, importer: Importer, proto: onnx.NodeProto, index: int) -> None:
        self.importer = importer
        self.proto = proto
        self.op_type = proto.op_type
        self.name = importer.scope + (proto.name or f"{proto.op_type}_{index}")
        self.opset = importer.opset
        self.version = importer.since_version(proto.op_type)
        self._attrs = {a.name: a for a in proto.attribute}
        self._used: set[str] = set()

    # ---- diagnostics ---------------------------------------------------------------

    def error(self, message: str) -> UserError:
        return UserError(f"node '{self.name}' ({self.op_type}-{self.version}): {message}")

    def computed_error(self, what: str, i: int) -> UserError:
        return self.error(f"{what} (input #{i}) must be a constant, but it is computed")

    def symbolic_error(self, what: str) -> UserError:
        return self.error(
            f"{what} depends on symbolic input dims; give static input shapes "
            "(afc import --input-shape NAME=D1,D2,...)"
        )

    # ---- inputs --------------------------------------------------------------------

    @property
    def num_inputs(self) -> int:
        return len(self.proto.input)

    def input(self, i: int) -> Value:
        """Input `i`, which must be given."""
        v = self.opt_input(i)
        if v is None:
            raise self.error(f"input #{i} is required")
        return v

    def opt_input(self, i: int) -> Value | None:
        """Input `i`, a tensor, or None when it is omitted (absent or named '')."""
        v = self.opt_item(i)
        if v is None or isinstance(v, Const | Sym | Tensor):
            return v
        raise self.error(f"input #{i} ('{self.proto.input[i]}') is {item_kind(v)}, not a tensor")

    def opt_item(self, i: int) -> Item | None:
        """Input `i` of any kind (a tensor, sequence or optional), or None when omitted."""
        if i >= len(self.proto.input) or not self.proto.input[i]:
            return None
        return self.importer.lookup(self.proto.input[i], self)

    def tensor(self, v: Item, what: str) -> Value:
        """`v` (a subgraph's output, say), which must be a tensor."""
        if isinstance(v, Seq | Opt):
            raise self.error(f"{what} is {item_kind(v)}, not a tensor")
        return v

    def inputs(self) -> list[Value]:
        return [self.input(i) for i in range(self.num_inputs)]

    def const_input(self, i: int, what: str) -> np.ndarray | None:
        """The values of optional input `i`, which must be known at import time."""
        v = self.opt_input(i)
        if v is None:
            return None
        if isinstance(v, Sym):
            raise self.symbolic_error(what)
        if isinstance(v, Tensor):
            raise self.computed_error(what, i)
        return v.array

    def ints_input(self, i: int, what: str) -> list[int] | None:
        arr = self.const_input(i, what)
        return None if arr is None else [int(x) for x in np.asarray(arr).reshape(-1)]

    # ---- attributes ----------------------------------------------------------------

    def attr(self, name: str, default: Any = _REQUIRED) -> Any:
        """Attribute `name` as a python value (strings decoded), or `default`."""
        self._used.add(name)
        if name not in self._attrs:
            if default is _REQUIRED:
                raise self.error(f"attribute '{name}' is required")
            return default
        a = self._attrs[name]
        if a.ref_attr_name:
            raise self.error(f"attribute '{name}' refers to a function attribute")
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode("utf-8", "replace") for v in value]
        return value

    def ints_attr(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.attr(name, None)
        if value is None:
            return None if default is None else list(default)
        return [int(v) for v in value]

    def check_attrs(self) -> None:
        """Every attribute of the node was read by its converter; others are unsupported."""
        for name in self._attrs:
            if name not in self._used:
                raise self.error(f"attribute '{name}' is not supported")

    def reject(self, name: str, value: object, supported: str) -> UserError:
        return self.error(f"attribute {name}={value!r} is not supported ({supported})")

    def axis(self, axis: int, rank: int) -> int:
        """`axis` (negative counts from the back) in [0, rank), or the node's error."""
        try:
            return si.normalize_axis(axis, rank)
        except ShapeError as e:
            raise self.error(str(e)) from e

    # ---- building ------------------------------------------------------------------

    def emit(
        self,
        cls: type[GraphOp],
        operands: Sequence[Value],
        props: Mapping[str, object] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> list[Value]:
        """Build a graph op on `operands`; fold it when they are all known.

        A fold evaluates the op with the interpreter; with a Sym operand it is evaluated
        under both probe assignments and gives a Sym (or a Const when the results agree).
        """
        if all(isinstance(v, Const | Sym) for v in operands):
            return self._fold(cls, operands, props, result_types)
        return self.importer.build(self, cls, operands, props, result_types)

    def emit1(
        self,
        cls: type[GraphOp],
        operands: Sequence[Value],
        props: Mapping[str, object] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> Value:
        return self.emit(cls, operands, props, result_types)[0]

    def _fold(
        self,
        cls: type[GraphOp],
        operands: Sequence[Value],
        props: Mapping[str, object] | None,
        result_types: Sequence[Attribute] | None,
    ) -> list[Value]:
        known = [cast(Const | Sym, v) for v in operands]
        placeholders = [graph.ConstantOp(None, v.type).result for v in known]
        op = self.importer.make(self, cls, placeholders, props, result_types)
        arrays_a = [v.array if isinstance(v, Const) else v.a for v in known]
        try:
            outs_a = evaluate(op, arrays_a)
            if any(isinstance(v, Sym) for v in operands):
                arrays_b = [v.array if isinstance(v, Const) else v.b for v in known]
                outs_b = evaluate(op, arrays_b)
            else:
                outs_b = outs_a
        except (InterpretationError, ValueError, FloatingPointError) as e:
            raise self.error(f"cannot fold: {e}") from e
        results: list[Value] = []
        for k, (a, b) in enumerate(zip(outs_a, outs_b)):
            elt = cast(TensorType, op.results[k].type).element_type
            if a.shape != b.shape:
                raise self.symbolic_error("the shape of the result")
            if a is b or np.array_equal(a, b):
                results.append(Const(a, elt, self.output_name(k)))
            else:
                results.append(Sym(a, b, elt))
        return results

    def output_name(self, k: int) -> str:
        outs = self.proto.output
        return outs[k] if k < len(outs) and outs[k] else f"{self.name}_{k}"

    def const(self, array: np.ndarray, elt: Attribute, k: int = 0) -> Const:
        """A Const result for output `k`, from a numpy array (converted to storage form)."""
        array = np.asarray(array)
        # reshape: bf16 rounding returns rank-0 arrays as rank 1
        return Const(dtypes.to_storage(array, elt).reshape(array.shape), elt, self.output_name(k))


Converter = Callable[[Node], Sequence[Item | None]]

# op type -> the since_versions its converter implements (a version it is not listed
# for is refused)
OpVersions = dict[str, tuple[int, ...]]

# (op type, since_version) -> what that version changes that afc does not implement
RefusedVersions = dict[tuple[str, int], str]


ConverterT = TypeVar("ConverterT", bound=Converter)


@dataclass
class OpConverters:
    """The table of one converter module, its `OPS` (frontends/onnx/converters.py joins
    them): the converters its `register` decorator adds, the since_versions each
    implements (those reached from opset 13 on; ops_legacy adds the earlier ones) and the
    versions it refuses, with what they change. Unless a converter's docstring says
    otherwise, a later version only adds element types, which `element_type` accepts or
    refuses by name."""

    versions: OpVersions
    refused: RefusedVersions = field(default_factory=dict)
    converters: dict[str, Converter] = field(default_factory=dict)

    def register(self, *op_types: str) -> Callable[[ConverterT], ConverterT]:
        """Decorator: the converter of `op_types`."""

        def add(fn: ConverterT) -> ConverterT:
            for t in op_types:
                assert t not in self.converters, f"two converters for {t}"
                self.converters[t] = fn
            return fn

        return add


class ConverterTable(NamedTuple):
    """The default-domain converters the importer is handed (frontends/onnx/converters.py
    builds it, so the importer does not import the converter modules)."""

    converters: Mapping[str, Converter]
    versions: OpVersions
    refused: RefusedVersions
    # for an operator with no converter: the converter of its ONNX function body, or None
    # when it has none (frontends/onnx/functions.py)
    function: Callable[[Node], Converter | None] | None = None


# --------------------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------------------


class Importer:
    """Builds the graph-dialect module of one ONNX model."""

    def __init__(
        self,
        ctx: Context,
        model: onnx.ModelProto,
        name: str,
        input_shapes: InputShapes | None,
        base_dir: str | Path | None,
    ) -> None:
        self.ctx = ctx
        self.model = model
        self.name = name
        self.input_shapes = dict(input_shapes or {})
        self.base_dir = str(base_dir) if base_dir is not None else ""
        self.opset = self._default_opset()
        # the value table: the main graph's values, or while a subgraph is converted a
        # ChainMap of its scope over the enclosing ones (see `convert_subgraph`)
        self.graph_values: dict[str, Item] = {}
        self.values: MutableMapping[str, Item] = self.graph_values
        self.scope = ""  # the node-name prefix of the subgraph being converted
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.block = Block()
        self.symbols: dict[str, int] = {}
        self._arg_dims: dict[str, tuple[str, ...]] = {}  # each input's dim_params
        self._since: dict[tuple[str, int], int] = {}
        self._table: Mapping[str, Converter] = {}
        self._versions: OpVersions = {}
        self._refused: RefusedVersions = {}
        self._function: Callable[[Node], Converter | None] | None = None
        self._origins = 0  # origin ids given (origin.py)

    # ---- opsets --------------------------------------------------------------------

    def _default_opset(self) -> int:
        versions = [o.version for o in self.model.opset_import if o.domain in DEFAULT_DOMAINS]
        if not versions:
            raise UserError("the model imports no default-domain (ai.onnx) opset")
        opset = versions[0]
        newest = onnx.defs.onnx_opset_version()
        if opset > newest:
            raise UserError(
                f"the model uses ONNX opset {opset}, newer than the installed onnx "
                f"{onnx.__version__} knows ({newest}); afc imports opsets up to {newest}"
            )
        return opset

    def since_version(self, op_type: str) -> int:
        """The version of `op_type` in the model's opset (its spec's since_version)."""
        key = (op_type, self.opset)  # a function body may import another opset
        if key not in self._since:
            try:
                schema = onnx.defs.get_schema(op_type, self.opset, "")
                self._since[key] = schema.since_version
            except onnx.defs.SchemaError:
                self._since[key] = 0
        return self._since[key]

    # ---- the walk ------------------------------------------------------------------

    def run(self, table: ConverterTable) -> ModuleOp:
        """Import the model, converting each node with `table` (ONNX op type ->
        converter and the versions each implements: frontends/onnx/converters.py)."""
        self._table, self._versions, self._refused, self._function = table
        g = self.model.graph
        if g.sparse_initializer:
            raise UserError(
                f"sparse initializer '{g.sparse_initializer[0].values.name}' is not supported"
            )
        for t in g.initializer:
            self.initializers[t.name] = t
        arg_names, arg_types = self._arguments()
        self.block = Block(arg_types=arg_types)
        for name, arg in zip(arg_names, self.block.args):
            arg.name_hint = _name_hint(name)
            dims_a, dims_b = self._arg_probes[name]
            self.values[name] = Tensor(arg, dims_a, dims_b)
        for index, proto in enumerate(g.node):
            self._convert(proto, index)
        results = self._results()
        res_types = [r.type for r in results]
        self.block.add_op(func.ReturnOp(*results))
        fn = func.FuncOp(
            "main",
            (arg_types, res_types),
            Region(self.block),
            arg_attrs=ArrayAttr([name_attr(n, self._arg_dims.get(n, ())) for n in arg_names]),
            res_attrs=ArrayAttr([_name_attr(o.name) for o in g.output]),
        )
        module = ModuleOp([fn])
        module.attributes["graph.opset"] = IntegerAttr(self.opset, i64)
        try:
            module.verify()
        except DiagnosticException as e:  # a converter bug, not a user error
            raise RuntimeError(f"the imported module does not verify: {e}") from e
        return module

    def _arguments(self) -> tuple[list[str], list[Attribute]]:
        """Graph inputs that are not initializers, with their (overridden) types."""
        names: list[str] = []
        types: list[Attribute] = []
        self._arg_probes: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        declared = {i.name for i in self.model.graph.input}
        unknown = sorted(set(self.input_shapes) - declared)
        if unknown:
            raise UserError(
                f"--input-shape names unknown input '{unknown[0]}'; the model's inputs are "
                + ", ".join(
                    i.name for i in self.model.graph.input if i.name not in self.initializers
                )
            )
        for inp in self.model.graph.input:
            if inp.name in self.initializers:
                if inp.name in self.input_shapes:
                    raise UserError(f"--input-shape names '{inp.name}', which is an initializer")
                continue  # older exporters list initializers as inputs: they are constants
            tt = inp.type.tensor_type if inp.type.HasField("tensor_type") else None
            if tt is None:
                kind = NON_TENSOR_TYPES.get(inp.type.WhichOneof("value") or "", "untyped")
                raise UserError(
                    f"input '{inp.name}' is {kind}, not a tensor (afc imports tensor inputs "
                    "only: it resolves sequences and optionals at compile time)"
                )
            elt = element_type(tt.elem_type, f"input '{inp.name}'")
            dims_a, dims_b, shape = self._input_dims(inp.name, tt)
            names.append(inp.name)
            types.append(graph.tensor(shape, elt))
            self._arg_probes[inp.name] = (dims_a, dims_b)
        return names, types

    def _input_dims(
        self, name: str, tt: onnx.TypeProto.Tensor
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Shape of an input (`?` for symbolic dims) and its probe shapes."""
        declared: list[int | str | None] = []
        if tt.HasField("shape"):
            for d in tt.shape.dim:
                if d.HasField("dim_value"):
                    declared.append(int(d.dim_value))
                elif d.HasField("dim_param"):
                    declared.append(d.dim_param)
                else:
                    declared.append(None)
        elif name not in self.input_shapes:
            raise UserError(
                f"input '{name}' has no shape; give it with --input-shape {name}=D1,D2,..."
            )
        if name in self.input_shapes:
            given = [int(d) for d in self.input_shapes[name]]
            if tt.HasField("shape") and len(given) != len(declared):
                raise UserError(
                    f"--input-shape gives '{name}' rank {len(given)}, but the model declares "
                    f"rank {len(declared)}"
                )
            if any(d < 0 for d in given):
                raise UserError(f"--input-shape for '{name}' must give static dims >= 0")
            for g_dim, d_dim in zip(given, declared):
                if isinstance(d_dim, int) and d_dim != g_dim:
                    raise UserError(
                        f"--input-shape gives '{name}' shape {si.fmt(given)}, but the model "
                        f"declares {_fmt_declared(declared)}"
                    )
            return tuple(given), tuple(given), tuple(given)
        dims_a: list[int] = []
        dims_b: list[int] = []
        shape: list[int] = []
        names = [""] * len(declared)
        for k, d in enumerate(declared):
            if isinstance(d, int):
                dims_a.append(d)
                dims_b.append(d)
                shape.append(d)
                continue
            # a named dim is one symbol wherever it appears; an unnamed one is its own
            key = d if d else f"{name}#{k}"
            names[k] = d or ""
            index = self.symbols.setdefault(key, len(self.symbols))
            dims_a.append(_PROBE_A(index))
            dims_b.append(_PROBE_B(index))
            shape.append(DYN)
        self._arg_dims[name] = tuple(names)
        return tuple(dims_a), tuple(dims_b), tuple(shape)

    def _convert(self, proto: onnx.NodeProto, index: int) -> None:
        node = Node(self, proto, index)
        if proto.domain not in DEFAULT_DOMAINS:
            raise UserError(
                f"node '{node.name}' ({proto.domain}.{proto.op_type}): operator domain "
                f"'{proto.domain}' is not supported (afc imports the default ONNX domain only)"
            )
        if node.version == 0:
            raise UserError(f"node '{node.name}': {_not_in_opset(proto.op_type, self.opset)}")
        fn = self._table.get(proto.op_type)
        if fn is None:
            # an operator with no converter may be defined by a function body
            fn = self._function(node) if self._function else None
            if fn is None:
                raise UserError(
                    f"node '{node.name}': unsupported ONNX operator {proto.op_type} "
                    f"(opset {self.opset})"
                )
            self._check_schema(node)
            outputs = list(fn(node))
        else:
            self._check_version(node)
            self._check_schema(node)
            before = self.block.last_op
            outputs = list(fn(node))
            node.check_attrs()
            self._tag_origin(node, before, outputs)
        for k, out_name in enumerate(proto.output):
            if not out_name:
                continue
            if k >= len(outputs) or outputs[k] is None:
                raise node.error(f"output #{k} ('{out_name}') is not supported")
            value = outputs[k]
            assert value is not None
            if isinstance(value, Const) and value.initializer is None and value.ssa is None:
                value.hint = out_name
            self.values[out_name] = value

    def _tag_origin(
        self, node: Node, before: Operation | None, outputs: Sequence[Item | None]
    ) -> None:
        """Tag the ops `node` became with its origin (origin.tag_conversion), so that
        export writes the node back."""
        made: list[Operation] = []
        op = before.next_op if before is not None else self.block.first_op
        while op is not None:
            made.append(op)
            op = op.next_op
        done = origin.Conversion(node.proto, node.version, node.opt_item, made, outputs)
        if origin.tag_conversion(done, self._origins + 1, lambda c: self.materialize(c, node)):
            self._origins += 1

    def convert_subgraph(
        self, node: Node, body: onnx.GraphProto, bindings: Sequence[Item], scope: str
    ) -> list[Item]:
        """Convert the nodes of `body`, a GRAPH attribute of `node`, inline into the function
        being built, with its inputs bound to `bindings`: its outputs' values.

        The names `body` defines live in a scope of their own (so a loop body can be
        converted once per iteration); values of enclosing scopes stay visible, as ONNX
        specifies. Its nodes are named `<node>/<scope>/<name>` in diagnostics and locations.
        """
        if len(bindings) != len(body.input):
            raise node.error(
                f"subgraph '{scope}' has {len(body.input)} inputs, but {len(bindings)} are given"
            )
        if body.sparse_initializer:
            raise node.error(f"subgraph '{scope}' has a sparse initializer, which is not supported")
        local: dict[str, Item] = {}
        for t in body.initializer:
            local[t.name] = self._initializer(t)
        for inp, value in zip(body.input, bindings):
            local[inp.name] = value
        outer_values, outer_scope = self.values, self.scope
        self.values, self.scope = ChainMap(local, outer_values), f"{node.name}/{scope}/"
        try:
            for index, proto in enumerate(body.node):
                self._convert(proto, index)
            return [self.lookup(out.name, node) for out in body.output]
        finally:
            self.values, self.scope = outer_values, outer_scope

    def _check_version(self, node: Node) -> None:
        """Refuse an operator version the converter does not implement, saying what differs."""
        implemented = self._versions.get(node.op_type, ())
        if node.version in implemented:
            return
        listed = ", ".join(str(v) for v in implemented)
        reason = self._refused.get((node.op_type, node.version))
        if reason is None and node.version < min(implemented, default=0):
            reason = (
                f"afc implements versions {listed} of {node.op_type}; version "
                f"{node.version} is only reached from opsets before {LEGACY_OPSET} "
                "(convert the model with onnx.version_converter)"
            )
        elif reason is None:
            reason = (
                f"afc implements versions {listed} of {node.op_type}, and version "
                f"{node.version} is newer than the ones it was checked against"
            )
        raise node.error(f"operator version {node.version} is not supported: {reason}")

    def _check_schema(self, node: Node) -> None:
        """The node's inputs and attributes as its operator version's schema declares them:
        required inputs given, no extra ones, every attribute known and of its type."""
        schema = operator_schema(node.op_type, node.version)
        given = node.proto.input
        if len(given) > schema.max_input:
            raise node.error(f"has {len(given)} inputs; it takes at most {schema.max_input}")
        for i, name in schema.required_inputs:
            if i >= len(given) or not given[i]:
                raise node.error(f"required input #{i} ('{name}') is missing")
        if len(given) < schema.min_input:
            raise node.error(f"has {len(given)} inputs; it takes at least {schema.min_input}")
        for a in node.proto.attribute:
            want = schema.attribute_types.get(a.name)
            if want is None:
                known = ", ".join(sorted(schema.attribute_types))
                has = f"its attributes are {known}" if known else "it has no attributes"
                raise node.error(f"attribute '{a.name}' is not in the spec ({has})")
            if a.type and not a.ref_attr_name and a.type != want:
                type_name = onnx.AttributeProto.AttributeType.Name
                raise node.error(
                    f"attribute '{a.name}' must be {type_name(want)}, got {type_name(a.type)}"
                )
        for name in schema.required_attributes:
            if all(a.name != name for a in node.proto.attribute):
                raise node.error(f"required attribute '{name}' is missing")

    def _results(self) -> list[SSAValue]:
        results: list[SSAValue] = []
        for out in self.model.graph.output:
            v = self.lookup(out.name, None)
            declared = out.type.WhichOneof("value")
            if isinstance(v, Seq | Opt) or declared in NON_TENSOR_TYPES:
                kind = (
                    item_kind(v) if isinstance(v, Seq | Opt) else NON_TENSOR_TYPES[declared or ""]
                )
                raise UserError(
                    f"graph output '{out.name}' is {kind}; afc compiles models whose "
                    "outputs are tensors"
                )
            if isinstance(v, Sym):
                raise UserError(
                    f"output '{out.name}' depends on symbolic input dims; give static input "
                    "shapes (afc import --input-shape NAME=D1,D2,...)"
                )
            ssa = self.materialize(v, None)
            self._check_declared(out, cast(TensorType, ssa.type))
            results.append(ssa)
        return results

    def _check_declared(self, out: onnx.ValueInfoProto, got: TensorType) -> None:
        """The model's declared output type agrees with what the graph computes."""
        if not out.type.HasField("tensor_type"):
            return
        tt = out.type.tensor_type
        if tt.elem_type and ELEMENT_TYPES.get(tt.elem_type) != got.element_type:
            raise UserError(
                f"output '{out.name}' is declared as "
                f"{TensorProto.DataType.Name(tt.elem_type)} but the graph computes {got}"
            )
        if not tt.HasField("shape"):
            return
        dims = [d.dim_value if d.HasField("dim_value") else DYN for d in tt.shape.dim]
        if not si.shapes_compatible(dims, got.get_shape()):
            raise UserError(
                f"output '{out.name}' is declared with shape {si.fmt(dims)} but the graph "
                f"computes {si.fmt(got.get_shape())}"
            )

    # ---- the value table -----------------------------------------------------------

    def lookup(self, name: str, node: Node | None) -> Item:
        if name in self.values:
            return self.values[name]
        if name in self.initializers:
            value = self._initializer(self.initializers[name])
            self.graph_values[name] = value  # main-graph initializers live in its scope
            return value
        where = f"node '{node.name}' ({node.op_type})" if node else "graph output"
        raise UserError(
            f"{where}: value '{name}' is not defined (no initializer, graph input or "
            "earlier node output)"
        )

    def _initializer(self, t: onnx.TensorProto) -> Const:
        elt = element_type(t.data_type, f"initializer '{t.name}'")
        try:
            array = numpy_helper.to_array(t, self.base_dir)
        except (FileNotFoundError, onnx.checker.ValidationError) as e:
            if t.data_location != TensorProto.EXTERNAL:
                raise UserError(f"initializer '{t.name}' cannot be read: {e}") from e
            location = next((d.value for d in t.external_data if d.key == "location"), "?")
            raise UserError(
                f"initializer '{t.name}': external data file '{location}' not found "
                f"(looked in '{self.base_dir or '.'}')"
            ) from e
        except (ValueError, OSError, TypeError) as e:
            raise UserError(f"initializer '{t.name}' cannot be read: {e}") from e
        expected = tuple(int(d) for d in t.dims)
        if tuple(array.shape) != expected:
            raise UserError(
                f"initializer '{t.name}' holds {array.size} values for shape {list(expected)}"
            )
        if dtypes.type_name(elt) == "bf16" or dtypes.is_narrow(elt):
            array = plain_array(np.asarray(array), elt)
        return Const(dtypes.to_storage(array, elt).reshape(expected), elt, t.name, t.name)

    def materialize(self, v: Value, node: Node | None) -> SSAValue:
        """The SSA value of `v`; a Const becomes a graph.constant on first use."""
        if isinstance(v, Tensor):
            return v.ssa
        if isinstance(v, Sym):
            assert node is not None
            raise node.symbolic_error("a value used as data")
        if v.ssa is not None:
            return v.ssa
        ttype = v.type
        attrs: dict[str, Attribute] = {}
        if v.initializer is not None:
            value: Attribute = resources.add_blob(v.initializer, v.array, ttype)
            attrs["name"] = StringAttr(v.initializer)
        elif v.array.size <= DENSE_LIMIT:
            value = resources.dense_attr(v.array, ttype)
        else:
            value = resources.add_blob(v.hint, v.array, ttype)
        op = graph.ConstantOp(value, ttype, attrs)  # type: ignore[arg-type]
        op.location = name_loc(v.initializer or (node.name if node else v.hint))
        op.result.name_hint = _name_hint(v.initializer) if v.initializer else None
        self.block.add_op(op)
        v.ssa = op.result
        return op.result

    # ---- building ops --------------------------------------------------------------

    def make(
        self,
        node: Node,
        cls: type[GraphOp],
        operands: Sequence[SSAValue],
        props: Mapping[str, object] | None,
        result_types: Sequence[Attribute] | None,
    ) -> GraphOp:
        """`cls.make(...)` with shape errors reported against the node."""
        try:
            op = cls.make(operands, props, result_types=result_types)
            op.verify()
        except (ShapeError, DiagnosticException) as e:
            msg = str(e).split("\n", 1)[0].removeprefix("Operation does not verify: ")
            raise node.error(msg) from e
        return op

    def build(
        self,
        node: Node,
        cls: type[GraphOp],
        operands: Sequence[Value],
        props: Mapping[str, object] | None,
        result_types: Sequence[Attribute] | None,
    ) -> list[Value]:
        ssas = [self.materialize(v, node) for v in operands]
        op = self.make(node, cls, ssas, props, result_types)
        op.location = name_loc(node.name)
        self.block.add_op(op)
        return [
            Tensor(r, a, b)
            for r, (a, b) in zip(op.results, self._result_probes(node, op, operands))
        ]

    def _result_probes(
        self, node: Node, op: Operation, operands: Sequence[Value]
    ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Result shapes of `op` under both probe assignments."""
        static = [tuple(cast(TensorType, r.type).get_shape()) for r in op.results]
        if all(DYN not in s for s in static):
            return [(s, s) for s in static]
        assert isinstance(op, GraphOp)
        props = Props(op.properties, op.name)
        per_assignment: list[list[tuple[int, ...]]] = []
        for which in (0, 1):
            types = [graph.tensor(probe_dims(v)[which], v.elt) for v in operands]
            try:
                inferred = type(op).infer(types, props)
            except ShapeError as e:
                raise node.error(f"inconsistent symbolic shapes: {e}") from e
            per_assignment.append([tuple(t.get_shape()) for t in inferred])
        return list(zip(per_assignment[0], per_assignment[1]))

    def dims_value(self, v: Value, node: Node) -> Value:
        """The shape of `v` as an i64 value (Const when static, else Sym)."""
        a, b = probe_dims(v)
        arr_a = np.asarray(a, dtype=np.int64)
        if a == b:
            return node.const(arr_a, i64)
        return Sym(arr_a, np.asarray(b, dtype=np.int64), i64)


def _not_in_opset(op_type: str, opset: int) -> str:
    """Why `op_type` has no schema at `opset`: unknown to ONNX, or introduced later."""
    versions = [
        s.since_version
        for s in onnx.defs.get_all_schemas_with_history()
        if s.name == op_type and s.domain == ""
    ]
    if not versions:
        return f"{op_type} is not an ONNX operator (opset {opset})"
    return (
        f"ONNX operator {op_type} does not exist in opset {opset} (the model's); it was "
        f"introduced in opset {min(versions)}"
    )


def name_loc(name: str) -> NameLoc:
    """The location of an op built for the ONNX node (or initializer) `name`."""
    return NameLoc(StringAttr(name), NoneAttr())


def _name_attr(name: str) -> DictionaryAttr:
    return DictionaryAttr({NAME_ATTR: StringAttr(name)})


def _name_hint(name: str) -> str | None:
    """An SSA name hint from an ONNX name (letters, digits, `_`, `.`, `$`, `-`)."""
    out = "".join(c if c.isalnum() or c in "_.$-" else "_" for c in name).strip("_")
    if not out:
        return None
    if out[0].isdigit() or out[0] in ".-$":
        out = "v" + out
    return out


def _fmt_declared(dims: Sequence[int | str | None]) -> str:
    return "x".join(str(d) if isinstance(d, int) else (d or "?") for d in dims)
