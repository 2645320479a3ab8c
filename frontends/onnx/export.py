"""ONNX export: a graph-dialect module's entry function as an ONNX model (`-t onnx`).

`export_module(module)` exports `@main` (else the only function) at the requested opset,
else the module's `graph.opset` (set by the ONNX importer), else 17:

* Graph ops map to standard ONNX ops through the table in `export_ops.py`. Ops with no
  single ONNX op at the opset (rsqrt, silu, gelu, norms, fused ops, cube epilogues)
  become calls of model-local functions in the domain `ai.afc` whose bodies are standard
  ops, so the model runs on any ONNX runtime.
* Every `graph.fusion_group` becomes a call of its own function `ai.afc.fusion_group_<i>`
  (or the group's `name` attribute), whose body is the group's ops exported with the
  same table. Constants inside a group are hoisted: they stay initializers of the graph
  and are passed to the function as extra inputs (functions cannot see initializers).
* `graph.constant` values become initializers (little-endian raw data; bf16 as BFLOAT16
  bits) named by their `name` attribute; a shape-only weight becomes a graph input of
  its type. Constants the exporter itself needs (shapes, axes, bounds) are Constant
  nodes next to their use. Inputs and outputs keep their `graph.name`s; every other
  value of the graph gets a value_info; a dynamic dim is a dim_param
  `<tensor>_dim<i>`.
* The output is deterministic (names come from SSA name hints and first use), and the
  model passes `onnx.checker.check_model(full_check=True)` before it is returned.

`OnnxTarget` prints the model in ONNX's text format, or with `file="PATH"` writes the
binary model to PATH atomically and prints one summary line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import IO, TYPE_CHECKING, ClassVar, cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    FusedLoc,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.target import Target

from autofusion import dtypes, resources
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.interpreter import argument_names, find_function, result_names

if TYPE_CHECKING:
    import onnx

    from frontends.onnx import export_ops, origin

DEFAULT_OPSET = 17
MIN_OPSET = 11  # Pad, Clip and Slice take their parameters as inputs from here on
OPSET_ATTR = "graph.opset"
PROTOBUF_LIMIT = 2**31 - 1  # a serialized ModelProto cannot exceed 2 GiB


class ExportInternalError(RuntimeError):
    """The exporter produced a model ONNX rejects: a bug in afc, not in the input."""


def _require_onnx() -> ModuleType:
    try:
        import onnx
    except ImportError as e:
        raise UserError("ONNX export needs the onnx package: pip install 'afc[onnx]'") from e
    return onnx


# the first opset whose Cast takes each storage-only type (https://onnx.ai/onnx/operators/)
TYPE_OPSETS = {
    "f8E4M3FN": 19,
    "f8E4M3FNUZ": 19,
    "f8E5M2": 19,
    "f8E5M2FNUZ": 19,
    "i4": 21,
    "ui4": 21,
    "f4E2M1FN": 23,
    "f8E8M0FNU": 24,
    "i2": 25,
    "ui2": 25,
}


def _opsets_of_types(module: ModuleOp) -> set[int]:
    """The opsets the storage-only element types in `module` need."""
    needed = {0}
    for op in module.walk():
        for v in (*op.operands, *op.results):
            t = v.type
            if isinstance(t, TensorType) and dtypes.is_narrow(t.element_type):
                needed.add(TYPE_OPSETS[dtypes.type_name(t.element_type)])
    return needed


def choose_opset(module: ModuleOp, opset: int | None = None) -> int:
    """The requested `opset`, else the module's `graph.opset`, else 17 (or the first opset
    with the storage-only types the module uses); range-checked.

    An imported model below opset 11 is exported at 11 (the oldest opset the exporter
    speaks), which every runtime that runs the original also runs.
    """
    onnx = _require_onnx()
    attr = module.attributes.get(OPSET_ATTR)
    if opset is not None:
        chosen = opset
    elif attr is not None:
        if not isinstance(attr, IntegerAttr):
            raise UserError(f"module attribute {OPSET_ATTR} must be an integer, got {attr}")
        chosen = max(attr.value.data, MIN_OPSET)
    else:
        chosen = max(DEFAULT_OPSET, *_opsets_of_types(module))
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= chosen <= newest:
        raise UserError(f"ONNX export supports opsets {MIN_OPSET} to {newest}, not {chosen}")
    return chosen


def export_module(
    module: ModuleOp, opset: int | None = None, entry: str | None = None
) -> onnx.ModelProto:
    """The module's entry function as a checked ONNX model (see the module docstring).

    `entry` names the function to export; by default `@main`, else the only function.

    Raises UserError for what ONNX cannot express (naming the op), ExportInternalError
    if the result fails onnx.checker.
    """
    onnx = _require_onnx()
    chosen = choose_opset(module, opset)
    model = _Exporter(chosen).export(find_function(module, entry))
    size = model.ByteSize()
    if size > PROTOBUF_LIMIT:
        raise UserError(
            f"the ONNX model would be {size / 2**30:.1f} GiB, over protobuf's 2 GiB limit; "
            "export with shape-only weights instead"
        )
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # ValidationError, InferenceError and friends
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportInternalError(f"the exported ONNX model fails onnx.checker: {first}") from e
    return model


def serialize(model: onnx.ModelProto) -> bytes:
    """The model's protobuf bytes, deterministically."""
    return model.SerializeToString(deterministic=True)


# --------------------------------------------------------------------------------------
# The exporter
# --------------------------------------------------------------------------------------


def _loc_name(loc: Attribute) -> str:
    """A node name from an op location: NameLoc names, joined with '+' for a FusedLoc."""
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if isinstance(loc, FusedLoc):
        parts = cast(ArrayAttr[Attribute], loc.locations).data
        return "+".join(n for n in (_loc_name(part) for part in parts) if n)
    return ""


def _where(op: Operation) -> str | None:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


def _short(op: Operation) -> str:
    return op.name.split(".", 1)[-1]


def _copies(values: Sequence[SSAValue]) -> set[int]:
    """Indices of returned values that need an Identity to become an output: arguments,
    constants (initializers or function inputs) and values returned a second time."""
    seen: set[SSAValue] = set()
    out: set[int] = set()
    for k, v in enumerate(values):
        if not isinstance(v.owner, Operation) or isinstance(v.owner, graph.ConstantOp) or v in seen:
            out.add(k)
        seen.add(v)
    return out


def _weight_key(op: graph.ConstantOp) -> tuple[Attribute | None, Attribute]:
    """Constants with the same name and value (or shape-only type) are one weight."""
    return op.attributes.get("name"), op.value if op.value is not None else op.result.type


class _Scope:
    """Where ops are being exported: the model graph, or a fusion group's function."""

    def __init__(self, exporter: _Exporter, body: export_ops.Body, prefix_constants: bool) -> None:
        self.exporter = exporter
        self.body = body
        self.values: dict[SSAValue, str] = {}
        self.preassigned: dict[SSAValue, str] = {}
        self.prefix_constants = prefix_constants

    def weight(self, op: graph.ConstantOp) -> str:
        raise NotImplementedError

    def define(self, value: SSAValue, default: str) -> str:
        """Name a new value (its preassigned output name, else from its SSA name hint)."""
        name = self.preassigned.get(value) or self.body.names.fresh(value.name_hint or default)
        return self.bind(value, name)

    def bind(self, value: SSAValue, name: str) -> str:
        """Give `value` the (reserved) ONNX name `name`."""
        t = cast(TensorType, value.type)
        self.body.declare(
            name, self.exporter.ops.onnx_elem(t.element_type), self.exporter.ops.onnx_shape(t)
        )
        self.values[value] = name
        return name


class _GraphScope(_Scope):
    """The model's graph; its constants are initializers (or inputs, if shape-only)."""

    def weight(self, op: graph.ConstantOp) -> str:
        return self.exporter.initializer(self, op)


class _FunctionScope(_Scope):
    """A fusion group's body; its constants become extra function inputs."""

    def __init__(self, exporter: _Exporter, body: export_ops.Body) -> None:
        super().__init__(exporter, body, prefix_constants=False)
        self.weight_inputs: dict[tuple[Attribute | None, Attribute], str] = {}
        self.weight_ops: list[graph.ConstantOp] = []

    def weight(self, op: graph.ConstantOp) -> str:
        key = _weight_key(op)
        if key not in self.weight_inputs:
            name_attr = op.attributes.get("name")
            hint = name_attr.data if isinstance(name_attr, StringAttr) else op.result.name_hint
            name = self.body.names.fresh(hint or "weight")
            t = cast(TensorType, op.result.type)
            self.body.declare(name, self.exporter.ops.onnx_elem(t.element_type), None)
            self.weight_inputs[key] = name
            self.weight_ops.append(op)
        return self.weight_inputs[key]


class _Exporter:
    """Exports one function, with the initializers and functions it accumulates."""

    def __init__(self, opset: int) -> None:
        from frontends.onnx import export_ops

        self.ops = export_ops
        self.opset = opset
        self.functions = export_ops.FunctionTable()
        self.initializers: list[onnx.TensorProto] = []
        self.weight_inputs: list[onnx.ValueInfoProto] = []
        self._weights: dict[tuple[Attribute | None, Attribute], str] = {}
        self._groups = 0

    # ---- the model ----------------------------------------------------------------

    def export(self, f: func.FuncOp) -> onnx.ModelProto:
        from onnx import helper

        ops = self.ops
        block = self._single_block(f)
        in_names, out_names = argument_names(f), result_names(f)
        self._check_io_names(in_names, out_names)
        body = ops.Body(self.opset, ops.Names())
        for n in (*in_names, *out_names):
            body.names.reserve(n)
        scope = _GraphScope(self, body, prefix_constants=True)
        for arg, name in zip(block.args, in_names):
            self._check_tensor(arg.type, f"argument '{name}' of @{f.sym_name.data}")
            scope.bind(arg, name)
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        returned = list(ret.arguments)
        copies = _copies(returned)
        for k, (value, name) in enumerate(zip(returned, out_names)):
            self._check_tensor(value.type, f"result '{name}' of @{f.sym_name.data}")
            if k not in copies:
                scope.preassigned[value] = name
        self._export_ops(scope, block)
        for k in sorted(copies):
            t = cast(TensorType, returned[k].type)
            body.declare(out_names[k], ops.onnx_elem(t.element_type), ops.onnx_shape(t))
            body.add_node("Identity", [scope.values[returned[k]]], [out_names[k]])

        inputs = [self._value_info(n, body) for n in in_names] + self.weight_inputs
        outputs = [self._value_info(n, body) for n in out_names]
        boundary = {*in_names, *out_names, *(t.name for t in self.initializers)}
        boundary |= {v.name for v in self.weight_inputs}
        value_info = [
            self._value_info(o, body)
            for node in body.nodes
            for o in node.output
            if o and o not in boundary
        ]
        g = helper.make_graph(
            body.nodes,
            f.sym_name.data,
            inputs,
            outputs,
            initializer=self.initializers,
            value_info=value_info,
        )
        functions = self.functions.protos()
        opsets = [helper.make_opsetid("", self.opset)]
        if functions:
            opsets.append(helper.make_opsetid(ops.DOMAIN, ops.DOMAIN_VERSION))
        # IR 8 is the first with model-local functions
        ir_version = max(8, helper.find_min_ir_version_for(opsets[:1]))
        return helper.make_model(
            g,
            opset_imports=opsets,
            functions=functions,
            ir_version=ir_version,
            producer_name="afc",
            producer_version="0.1.0",
        )

    @staticmethod
    def _single_block(f: func.FuncOp) -> Block:
        if len(f.body.blocks) != 1:
            raise UserError(
                f"@{f.sym_name.data} has {len(f.body.blocks)} blocks; ONNX export needs one"
            )
        return f.body.block

    @staticmethod
    def _check_io_names(ins: Sequence[str], outs: Sequence[str]) -> None:
        seen: set[str] = set()
        for kind, names in (("input", ins), ("output", outs)):
            for n in names:
                if n in seen:
                    raise UserError(
                        f"the model has two inputs/outputs named '{n}'; ONNX names must be unique"
                    )
                if not n:
                    raise UserError(f"an {kind} has an empty graph.name")
                seen.add(n)

    @staticmethod
    def _check_tensor(t: Attribute, what: str) -> None:
        if not isinstance(t, TensorType) or not dtypes.is_supported(t.element_type):
            raise UserError(
                f"{what} has type {t}; ONNX export needs a tensor of a graph-dialect type"
            )

    def _value_info(self, name: str, body: export_ops.Body) -> onnx.ValueInfoProto:
        from onnx import helper

        elem, shape = body.types[name]
        dims = (
            None
            if shape is None
            else [f"{name}_dim{i}" if d is None else d for i, d in enumerate(shape)]
        )
        return helper.make_tensor_value_info(name, elem, dims)

    # ---- weights --------------------------------------------------------------------

    def initializer(self, scope: _Scope, op: graph.ConstantOp) -> str:
        """The graph initializer (or graph input, for shape-only weights) of a constant."""
        from onnx import helper

        key = _weight_key(op)
        if key in self._weights:
            return self._weights[key]
        t = cast(TensorType, op.result.type)
        name_attr = op.attributes.get("name")
        hint = name_attr.data if isinstance(name_attr, StringAttr) else op.result.name_hint
        name = scope.body.names.fresh(hint or "weight")
        elem, shape = self.ops.onnx_elem(t.element_type), tuple(t.get_shape())
        scope.body.declare(name, elem, shape)
        if op.value is None:
            self.weight_inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        else:
            values = resources.constant_array(op.value)
            if values is None:
                raise UserError(
                    f"weight '{name}' ({t}) refers to a dense_resource blob that the file "
                    "does not contain",
                    _where(op),
                )
            self.initializers.append(self.ops.tensor_proto(name, values, elem))
        self._weights[key] = name
        return name

    # ---- ops ------------------------------------------------------------------------

    def _export_ops(self, scope: _Scope, block: Block) -> None:
        from frontends.onnx import origin

        groups = origin.complete_groups(block, self.opset)
        written: set[int] = set()
        for op in block.ops:
            if isinstance(op, func.ReturnOp | graph.YieldOp):
                continue
            group = groups.get(op)
            if group is not None:
                if id(group) in written:
                    continue
                written.add(id(group))
                if self._export_origin(scope, group):
                    continue
                for member in group.members:  # its inputs come later: write the parts
                    del groups[member]
            if isinstance(op, graph.ConstantOp):
                scope.values[op.result] = scope.weight(op)
            elif isinstance(op, graph.FusionGroupOp):
                self._export_group(scope, op)
            else:
                self._export_op(scope, op)

    def _export_origin(self, scope: _Scope, group: origin.Group) -> bool:
        """Write the ONNX node `group` came from, where its operands are all defined
        before its first op (else False, and nothing is written)."""
        from onnx import helper

        from frontends.onnx import origin

        if any(isinstance(v, SSAValue) and not self._defined(scope, v) for v in group.inputs):
            return False
        first = group.members[0]
        inputs: list[str] = []
        for i, v in enumerate(group.inputs):
            if v is None:
                inputs.append("")
            elif isinstance(v, SSAValue):
                inputs.append(scope.values[v])
            else:
                inputs.append(self._origin_constant(scope, v, v.name or f"in{i}"))
        outputs = [
            "" if r is None else scope.define(r, group.node.op_type.lower()) for r in group.outputs
        ]
        node = helper.make_node(group.node.op_type, inputs, outputs)
        node.attribute.extend(origin.with_defaults(group.node, self.opset).attribute)
        name = _loc_name(first.location)
        if name:
            node.name = scope.body.node_names.fresh(name)
        self.ops.check_node_types(
            node.op_type,
            self.opset,
            [scope.body.elem(i) if i else None for i in inputs],
            [scope.body.elem(o) if o else None for o in outputs],
        )
        scope.body.nodes.append(node)
        return True

    @staticmethod
    def _defined(scope: _Scope, value: SSAValue) -> bool:
        """`value` has an ONNX name here; a constant gets its weight on first use."""
        if value in scope.values:
            return True
        if isinstance(value.owner, graph.ConstantOp):
            scope.values[value] = scope.weight(value.owner)
            return True
        return False

    def _origin_constant(self, scope: _Scope, t: onnx.TensorProto, hint: str) -> str:
        """A constant node input kept in an origin tag: an initializer of the graph, or a
        Constant node in a function body (functions cannot see initializers)."""
        from onnx import TensorProto, helper

        name = scope.body.names.fresh(hint)
        scope.body.declare(name, t.data_type, tuple(t.dims))
        value = TensorProto()
        value.CopyFrom(t)
        value.name = name
        if isinstance(scope, _GraphScope):
            self.initializers.append(value)
        else:
            scope.body.nodes.append(helper.make_node("Constant", [], [name], value=value))
        return name

    def _export_op(self, scope: _Scope, op: Operation) -> None:
        from frontends.onnx import export_table

        ops = self.ops
        if type(op) not in export_table.TABLE:
            raise UserError(f"'{op.name}' has no ONNX export (only graph ops do)", _where(op))
        inputs = [scope.values[v] for v in op.operands]
        outputs = [scope.define(r, _short(op)) for r in op.results]
        prefix = outputs[0] + "_" if scope.prefix_constants and outputs else ""
        try:
            export_table.emit_op(
                scope.body, self.functions, op, inputs, outputs, _loc_name(op.location), prefix
            )
        except ops.NotExportable as e:
            raise UserError(
                f"cannot export '{op.name}' to ONNX opset {self.opset}: {e}", _where(op)
            ) from e

    def _group_name(self, group: graph.FusionGroupOp) -> str:
        name = group.attributes.get("name")
        index = self._groups
        self._groups += 1
        if isinstance(name, StringAttr) and name.data:
            return "".join(c if c.isalnum() or c == "_" else "_" for c in name.data)
        return f"fusion_group_{index}"

    def _export_group(self, scope: _Scope, group: graph.FusionGroupOp) -> None:
        from onnx import helper

        ops = self.ops
        name = self.functions.reserve(self._group_name(group))
        fscope = _FunctionScope(self, ops.Body(self.opset, ops.Names()))
        inputs = []
        for i, arg in enumerate(group.block.args):
            inputs.append(fscope.define(arg, f"in{i}"))
        self._export_ops(fscope, group.block)
        # function outputs keep the names of the values they yield, except those that
        # are not node outputs of the body (or are yielded twice): those get an Identity
        yielded = list(group.yield_op.values)
        copies = _copies(yielded)
        outputs = []
        for k, value in enumerate(yielded):
            out = fscope.values[value]
            if k in copies:
                copy = fscope.body.names.fresh(f"out{k}")
                fscope.body.declare(copy, cast(int, fscope.body.elem(out)), None)
                fscope.body.add_node("Identity", [out], [copy])
                out = copy
            outputs.append(out)
        doc = ", ".join(f"{k} = {v}" for k, v in sorted(group.attributes.items()))
        self.functions.fill(
            helper.make_function(
                ops.DOMAIN,
                name,
                [*inputs, *fscope.weight_inputs.values()],
                outputs,
                fscope.body.nodes,
                ops.function_opsets(fscope.body),
                doc_string=doc or None,
            )
        )
        call_inputs = [scope.values[v] for v in group.inputs]
        call_inputs += [scope.weight(c) for c in fscope.weight_ops]
        call_outputs = [scope.define(r, "group") for r in group.results]
        scope.body.add_node(
            name, call_inputs, call_outputs, domain=ops.DOMAIN, name=_loc_name(group.location)
        )


# --------------------------------------------------------------------------------------
# The target
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnnxTarget(Target):
    """`afc-opt -t onnx`: the model in ONNX text format, or as a binary model file.

    `-o m.onnx` or `-t 'onnx{file=m.onnx}'` writes the binary model (`onnx.load` reads it).
    """

    name: ClassVar[str] = "onnx"
    file: str | None = None
    """Write the binary model to this path and print a one-line summary instead."""
    opset: int | None = None
    """The ONNX opset, when the module has no `graph.opset` attribute."""
    entry: str | None = None
    """The function to export (default: @main or the only function)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        onnx = _require_onnx()
        model = export_module(module, self.opset, self.entry)
        if self.file is None:
            output.write(onnx.printer.to_text(model))
            output.write("\n")
            return
        from autofusion.tools.atomic_output import atomic_file

        data = serialize(model)
        with atomic_file(self.file) as tmp:
            tmp.write_bytes(data)
        g = model.graph
        output.write(
            f"wrote {self.file}: ONNX opset {model.opset_import[0].version}, "
            f"{len(g.node)} nodes, {len(model.functions)} functions, "
            f"{len(g.initializer)} initializers, {len(data)} bytes\n"
        )
