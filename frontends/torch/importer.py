"""From a `torch.export` program to one `func.func @main` of graph ops.

`Importer` walks the FX graph of a decomposed program (program.py exports, decomposes and
checks it) and calls the converter it is given for each node.
Converters (in `frontends.torch.aten`) see each node through `Args`, which reads the
node's arguments by their schema names and checks, after the converter ran, that every
argument it did not read still has its default value: an option that no converter
understands is an error, never silently dropped.

torch is imported inside functions only, so that this module imports without it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import numpy as np
from xdsl.dialects.builtin import NameLoc, NoneAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from autofusion import dtypes, resources
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects.shape_inference import ShapeError

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram
    from torch.fx import Node


# ATen ops kept whole by the decomposition to core ATen, because a graph op (or a short
# expansion of our own) represents them better than torch's decomposition does.
KEPT_OPS = (
    "linear.default",  # one graph.gemm instead of permute + addmm (+ views)
    "matmul.default",  # graph.matmul has numpy matmul semantics, like torch.matmul
    "layer_norm.default",  # graph.layer_norm
    "rms_norm.default",  # graph.rms_norm
    "silu.default",  # graph.silu
    "scaled_dot_product_attention.default",  # expanded in aten.py, not by torch
    # graph.pad's reflect and edge modes (torch decomposes them into index arithmetic)
    "reflection_pad1d.default",
    "reflection_pad2d.default",
    "replication_pad1d.default",
    "replication_pad2d.default",
)

# torch dtype name -> the name (in autofusion.dtypes) of the graph element type it is
_TYPE_NAMES: dict[str, str] = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int8": "i8",
    "bool": "i1",
}
# Element types by torch dtype name.
_ELEMENT_TYPES: dict[str, Attribute] = {
    torch_name: dtypes.ELEMENT_TYPES[name] for torch_name, name in _TYPE_NAMES.items()
}

# Ops that create tensors from their arguments' metadata only: evaluated with torch.
_LIKE_OPS = ("aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default")
# Creation ops whose values are undefined: never evaluated.
_UNDEFINED_VALUE_OPS = (
    "aten.empty.memory_format",
    "aten.empty_like.default",
    "aten.empty_strided.default",
    "aten.empty_permuted.default",
)
# Constants with at most this many distinct elements are printed inline as dense<...>.
_MAX_INLINE_ELEMENTS = 16


def element_type(dtype: torch.dtype) -> Attribute:
    """The graph element type of a torch dtype, or a `UserError`."""
    name = str(dtype).removeprefix("torch.")
    if name not in _ELEMENT_TYPES:
        supported = ", ".join(_ELEMENT_TYPES)
        raise UserError(f"tensors of dtype {name} are not supported (supported: {supported})")
    return _ELEMENT_TYPES[name]


def tensor_type(value: Any, what: str) -> TensorType:
    """The static tensor type of a (fake) tensor; symbolic sizes are a `UserError`."""
    import torch

    if not isinstance(value, torch.Tensor):
        raise UserError(f"{what} is not a tensor ({type(value).__name__})")
    shape = []
    for d in value.shape:
        if not isinstance(d, int):
            raise UserError(f"{what} has a dynamic shape; only static shapes are supported")
        shape.append(d)
    return TensorType(element_type(value.dtype), shape)


def to_storage(value: torch.Tensor, elt: Attribute) -> np.ndarray:
    """A torch tensor's values as a numpy array in the storage form of `elt`."""
    import torch

    t = value.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.float()  # numpy has no bfloat16; the values stay bf16-representable
    return dtypes.to_storage(t.numpy(), elt)


class UnsupportedOp(UserError):
    """An ATen op without a converter."""


@dataclass
class Folded:
    """A tensor known at import time (computed by torch from literal constants).

    It becomes a `graph.constant` when an imported op first uses it.
    """

    value: torch.Tensor
    hint: str
    ssa: SSAValue | None = None


# What a node's value is while importing: an SSA value, a folded constant, a list of
# those for multi-result ops (None for results we do not support), or a python scalar.
Value = Any


class Importer:
    """Builds the body of @main from an exported program's FX graph."""

    def __init__(self, program: ExportedProgram, block: Block) -> None:
        self.program = program
        self.block = block
        self.env: dict[Node, Value] = {}
        # values of the parameters, buffers and tensor attributes, for `_fold_weights`
        self.weights: dict[Node, torch.Tensor] = {}
        self._weight_values: dict[Node, Any] = {}  # what `_fold_weights` computed
        self.node: Node | None = None
        self._location: Attribute = NameLoc(StringAttr("main"), NoneAttr())
        self._scalars: dict[tuple[str, str], SSAValue] = {}

    # ---- emitting ----------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        """Append `op` at the end of the body, located at the current FX node."""
        op.location = self._location  # type: ignore[assignment]
        self.block.add_op(op)
        return op

    def make(
        self,
        op_type: type[graph.GraphOp],
        operands: Sequence[SSAValue],
        props: Mapping[str, object] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> graph.GraphOp:
        """Build a graph op (inferring its result types) and emit it."""
        try:
            op = op_type.make(operands, props, result_types=result_types)
        except ShapeError as e:
            raise self.error(f"cannot build {op_type.name}: {e}") from e
        self.emit(op)
        return op

    def op(
        self,
        op_type: type[graph.GraphOp],
        operands: Sequence[SSAValue],
        props: Mapping[str, object] | None = None,
    ) -> SSAValue:
        """Emit a single-result graph op; return its result."""
        return self.make(op_type, operands, props).results[0]

    def cast(self, value: SSAValue, elt: Attribute) -> SSAValue:
        """`value` converted to element type `elt` (no op when it already is)."""
        if cast(TensorType, value.type).element_type == elt:
            return value
        return self.emit(graph.CastOp.to(value, elt)).results[0]

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`value` reshaped to the static `shape` (no op when it already has it)."""
        if tuple(cast(TensorType, value.type).get_shape()) == tuple(shape):
            return value
        if any(d == 0 for d in shape):
            # graph.reshape follows ONNX: a 0 in the target copies the input dimension
            raise self.error("reshaping to a shape with a zero-size dimension is not supported")
        return self.op(graph.ReshapeOp, [value], {"shape": list(shape)})

    def literal(self, array: np.ndarray, elt: Attribute, hint: str) -> SSAValue:
        """A constant holding `array` (storage form) with element type `elt`."""
        t = TensorType(elt, list(array.shape))
        flat = np.asarray(array).reshape(-1)
        # xDSL 0.74 parses the hex form it prints for inf/nan in dense<...> as an integer
        # (dense<0xff800000> reads back as 4.28e9), so non-finite values go into blobs.
        finite = not dtypes.is_float(elt) or bool(np.isfinite(flat.astype(np.float64)).all())
        value: Any
        if finite and flat.size > 0 and bool((flat == flat[0]).all()):
            value = resources.dense_attr(flat[:1], t)  # a splat: dense<1.0> : tensor<4x4xf32>
        elif finite and flat.size <= _MAX_INLINE_ELEMENTS:
            value = resources.dense_attr(flat, t)
        else:
            value = resources.add_blob(hint, array, t)
        return self.emit(graph.ConstantOp(value)).results[0]

    def scalar(self, value: bool | int | float, elt: Attribute) -> SSAValue:
        """A 0-d constant of element type `elt`, shared by all its uses in the function."""
        key = (repr(value), dtypes.type_name(elt))
        if key not in self._scalars:
            array = dtypes.to_storage(np.asarray(value), elt)
            hint = "scalar" if math.isfinite(value) else str(value).replace("-", "neg_")
            self._scalars[key] = self.literal(array, elt, hint)
        return self._scalars[key]

    def splat(self, value: float, shape: Sequence[int], elt: Attribute) -> SSAValue:
        """A constant of `shape` with every element `value`."""
        array = dtypes.to_storage(np.full(tuple(shape), value), elt)
        return self.literal(array, elt, "splat")

    def materialize(self, folded: Folded) -> SSAValue:
        """The SSA value of a folded constant, emitting its graph.constant on first use."""
        if folded.ssa is None:
            elt = element_type(folded.value.dtype)
            folded.ssa = self.literal(to_storage(folded.value, elt), elt, folded.hint)
        return folded.ssa

    def weight(self, name: str, value: torch.Tensor) -> SSAValue:
        """A parameter, buffer or tensor attribute: a named dense_resource constant."""
        t = tensor_type(value, f"weight '{name}'")
        blob = resources.add_blob(name, to_storage(value, t.element_type), t)
        op = graph.ConstantOp(blob, attributes={"name": StringAttr(name)})
        return self.emit(op).results[0]

    # ---- errors --------------------------------------------------------------------

    def error(self, message: str) -> UserError:
        """A `UserError` about the node being imported, naming its op and FX name."""
        node = self.node
        if node is None:
            return UserError(message)
        return UserError(f"{target_name(node)} (node '{node.name}'): {message}")

    # ---- the walk ------------------------------------------------------------------

    def at(self, node: Node | None) -> None:
        """Make `node` the one being imported: errors name it, new ops are located at it."""
        self.node = node
        name = node.name if node is not None else "main"
        self._location = NameLoc(StringAttr(name), NoneAttr())

    def run(self, live: set[Node], convert: Callable[[Importer, Node], Value]) -> list[SSAValue]:
        """Import the live nodes in order; return the function's result values."""
        results: list[SSAValue] = []
        for node in self.program.graph.nodes:
            if node not in live:
                continue
            self.at(node)
            if node.op == "output":
                results = self._outputs(node)
            elif node.op == "call_function":
                self.env[node] = self._call(node, convert)
            elif node.op != "placeholder":
                raise self.error(f"unsupported FX node kind '{node.op}'")
        self.at(None)
        return results

    def _call(self, node: Node, convert: Callable[[Importer, Node], Value]) -> Value:
        if node.target is operator.getitem:
            return self._getitem(node)
        folded = self._fold(node)
        if folded is not None:
            return folded
        try:
            value = convert(self, node)
        except UnsupportedOp:
            # an op with no graph counterpart computed from weights only (e.g. torch.gather
            # of position-id buffers) is evaluated with torch instead
            folded = self._fold_weights(node)
            if folded is None:
                raise
            return folded
        self._check_types(node, value)
        if isinstance(value, SSAValue) and value.name_hint is None:
            value.name_hint = node.name  # `%linear = graph.gemm ...`
        return value

    def _getitem(self, node: Node) -> Value:
        source, index = node.args
        values = self.env[cast("Node", source)]
        if not isinstance(values, list | tuple):
            raise self.error(f"'{cast('Node', source).name}' has no results to index")
        value = values[cast(int, index)]
        if value is None:
            raise UserError(
                f"result #{index} of {target_name(cast('Node', source))} "
                f"(node '{cast('Node', source).name}') is not supported; only its "
                "main result is"
            )
        return value

    def _fold(self, node: Node) -> Value | None:
        """Evaluate `node` with torch if its tensor inputs are folded literals; else None."""
        import torch

        like = target_name(node) in _LIKE_OPS

        def known(input_node: Node) -> Any:
            v = self.env[input_node]
            if isinstance(v, Folded):
                return v.value
            if like and input_node is node.args[0]:
                # only the shape and dtype of a *_like op's input matter
                meta = input_node.meta["val"]
                return torch.zeros(meta.shape, dtype=meta.dtype)
            raise _NotKnown

        try:
            result = _evaluate(node, known)
        except _NotKnown:
            return None
        return self._folded(node, result)

    def _fold_weights(self, node: Node) -> Value | None:
        """Evaluate `node` with torch if it is computed from literals and weights only.

        The fallback for ops without a converter: the inputs' values are recomputed with
        torch from the weights (the imported ops on weights stay as they are).
        """
        values = self._weight_values

        def known(input_node: Node) -> Any:
            if input_node not in values:
                v = self.env.get(input_node)
                if isinstance(v, Folded):
                    values[input_node] = v.value
                elif input_node in self.weights:
                    values[input_node] = self.weights[input_node]
                elif input_node.op == "call_function":
                    values[input_node] = _evaluate(input_node, known)
                else:
                    raise _NotKnown
            return values[input_node]

        try:
            result = _evaluate(node, known)
        except _NotKnown:
            return None
        return self._folded(node, result)

    def _folded(self, node: Node, result: Any) -> Value | None:
        import torch

        if isinstance(result, torch.Tensor):
            folded: Value = Folded(result, node.name)
        elif isinstance(result, list | tuple) and all(isinstance(r, torch.Tensor) for r in result):
            folded = [Folded(r, f"{node.name}_{i}") for i, r in enumerate(result)]
        else:
            return None
        self._check_types(node, folded)
        return folded

    def _outputs(self, node: Node) -> list[SSAValue]:
        results: list[SSAValue] = []
        for i, out in enumerate(cast(Sequence[Any], node.args[0])):
            if out is None:
                continue
            value = self.env.get(out) if _is_node(out) else None
            if isinstance(value, Folded):
                value = self.materialize(value)
            if not isinstance(value, SSAValue):
                raise UserError(
                    f"output #{i} is not a tensor ({out!r}); return tensors (or None) only"
                )
            results.append(value)
        return results

    def _check_types(self, node: Node, value: Value) -> None:
        """Check a converter's result against torch's own shape and dtype for `node`."""
        meta = node.meta.get("val")
        values = value if isinstance(value, list | tuple) else [value]
        metas = meta if isinstance(meta, list | tuple) else [meta]
        if len(values) != len(metas):
            raise RuntimeError(
                f"internal error: {target_name(node)} (node '{node.name}') gave "
                f"{len(values)} results, torch gives {len(metas)}"
            )
        for v, m in zip(values, metas):
            if v is None:
                continue
            want = tensor_type(m, f"result of node '{node.name}'")
            got = (
                cast(SSAValue, v).type
                if not isinstance(v, Folded)
                else tensor_type(v.value, f"node '{node.name}'")
            )
            if got != want:
                raise RuntimeError(
                    f"internal error: {target_name(node)} (node '{node.name}') was imported "
                    f"as {got}, but torch computes {want}"
                )


class _NotKnown(Exception):
    """An input of a node is not known at import time."""


def _evaluate(node: Node, known: Callable[[Node], Any]) -> Any:
    """Run `node`'s op with torch on its inputs' values (`known` raises `_NotKnown`)."""
    import torch

    op = node.target
    if op is operator.getitem:
        source, index = node.args
        return known(cast("Node", source))[cast(int, index)]
    if not isinstance(op, torch._ops.OpOverload) or not _deterministic(op):
        raise _NotKnown

    def value(arg: Any) -> Any:
        if _is_node(arg):
            return known(arg)
        if isinstance(arg, list | tuple):
            return type(arg)(value(a) for a in arg)
        return arg

    args = [value(a) for a in node.args]
    kwargs = {k: value(v) for k, v in node.kwargs.items()}
    with torch.no_grad():
        return op(*args, **kwargs)


def _deterministic(op: Any) -> bool:
    """Whether an ATen op gives defined, repeatable values (not random, not `empty`)."""
    import torch

    if str(op) in _UNDEFINED_VALUE_OPS:
        return False
    nondeterministic = (torch.Tag.nondeterministic_seeded, torch.Tag.nondeterministic_bitwise)
    return not any(tag in op.tags for tag in nondeterministic)


def _is_node(value: object) -> TypeGuard[Node]:
    """Whether `value` is an FX node (a tensor argument, as opposed to a literal)."""
    import torch

    return isinstance(value, torch.fx.Node)


def target_name(node: Node) -> str:
    """The ATen name of a call node (`aten.add.Tensor`), else its target's repr."""
    target = node.target
    if target is operator.getitem:
        return "getitem"
    return str(target)


class Args:
    """A call node's arguments by schema name, read by a converter.

    Reads are recorded; `check_unused` then rejects any argument the converter did not
    read whose value differs from the schema default.
    """

    def __init__(self, importer: Importer, node: Node) -> None:
        import torch

        self.importer = importer
        self.node = node
        op = node.target
        if not isinstance(op, torch._ops.OpOverload):
            raise importer.error("not an ATen operator")
        self.name = target_name(node)
        self._values: dict[str, Any] = {}
        self._defaults: dict[str, Any] = {}
        schema = op._schema
        positional = list(node.args)
        unknown = set(node.kwargs) - {arg.name for arg in schema.arguments}
        if unknown:
            raise importer.error(f"unknown argument(s) {', '.join(sorted(unknown))}")
        for i, arg in enumerate(schema.arguments):
            if not arg.kwarg_only and i < len(positional):
                self._values[arg.name] = positional[i]
            elif arg.name in node.kwargs:
                self._values[arg.name] = node.kwargs[arg.name]
            elif arg.has_default_value():
                self._values[arg.name] = arg.default_value
            else:
                raise importer.error(f"argument '{arg.name}' is missing")
            if arg.has_default_value():
                self._defaults[arg.name] = arg.default_value
        self._read: set[str] = set()

    # ---- the node's result ---------------------------------------------------------

    @property
    def meta(self) -> Any:
        """torch's (fake) value of the node's result: its shape and dtype."""
        return self.node.meta["val"]

    @property
    def out_type(self) -> TensorType:
        return tensor_type(self.meta, f"result of node '{self.node.name}'")

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.out_type.get_shape())

    @property
    def out_elt(self) -> Attribute:
        return self.out_type.element_type

    def error(self, message: str) -> UserError:
        return self.importer.error(message)

    # ---- reading arguments ---------------------------------------------------------

    def raw(self, name: str) -> Any:
        """The argument as written in the FX graph (nodes unresolved)."""
        self._read.add(name)
        return self._values[name]

    def ignore(self, *names: str) -> None:
        """Mark arguments that do not affect the values computed (device, layout...)."""
        self._read.update(names)

    def is_tensor(self, name: str) -> bool:
        return _is_node(self._values[name])

    def tensor(self, name: str) -> SSAValue:
        """A tensor argument as an SSA value."""
        value = self.raw(name)
        if not _is_node(value):
            raise self.error(f"argument '{name}' is not a tensor ({value!r})")
        return self.resolve(value, name)

    def opt_tensor(self, name: str) -> SSAValue | None:
        return None if self.raw(name) is None else self.tensor(name)

    def tensors(self, name: str) -> list[SSAValue]:
        """A list-of-tensors argument."""
        values = self.raw(name)
        return [self.resolve(v, name) for v in values]

    def tensor_or_scalar(self, name: str) -> SSAValue | bool | int | float:
        value = self.raw(name)
        if _is_node(value):
            return self.resolve(value, name)
        if isinstance(value, bool | int | float):
            return value
        raise self.error(f"argument '{name}' is neither a tensor nor a number ({value!r})")

    def folded(self, name: str) -> torch.Tensor | None:
        """The value of a tensor argument if it is known at import time."""
        value = self._values[name]
        if _is_node(value):
            v = self.importer.env[value]
            if isinstance(v, Folded):
                return v.value
        return None

    def meta_of(self, name: str) -> Any:
        """torch's (fake) value of a tensor argument, or the python value of a scalar."""
        value = self._values[name]
        if _is_node(value):
            return value.meta["val"]
        return value

    def integer(self, name: str) -> int:
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"argument '{name}' must be an integer, got {value!r}")
        return value

    def opt_integer(self, name: str) -> int | None:
        return None if self.raw(name) is None else self.integer(name)

    def integers(self, name: str) -> list[int]:
        value = self.raw(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return [value]
        if not isinstance(value, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self.error(f"argument '{name}' must be a list of integers, got {value!r}")
        return list(value)

    def opt_integers(self, name: str) -> list[int] | None:
        return None if self.raw(name) is None else self.integers(name)

    def real(self, name: str) -> float:
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"argument '{name}' must be a number, got {value!r}")
        return float(value)

    def opt_real(self, name: str) -> float | None:
        return None if self.raw(name) is None else self.real(name)

    def flag(self, name: str) -> bool:
        value = self.raw(name)
        if not isinstance(value, bool):
            raise self.error(f"argument '{name}' must be true or false, got {value!r}")
        return value

    def text(self, name: str) -> str:
        value = self.raw(name)
        if not isinstance(value, str):
            raise self.error(f"argument '{name}' must be a string, got {value!r}")
        return value

    def resolve(self, node: Node, name: str) -> SSAValue:
        """The SSA value of a tensor node found in argument `name`."""
        value = self.importer.env[node]
        if isinstance(value, Folded):
            return self.importer.materialize(value)
        if not isinstance(value, SSAValue):
            raise self.error(f"argument '{name}' is not a tensor")
        return value

    # ---- the check -----------------------------------------------------------------

    def check_unused(self) -> None:
        """Reject arguments the converter ignored that differ from their defaults."""
        for name, value in self._values.items():
            if name in self._read:
                continue
            if name not in self._defaults or not _same(value, self._defaults[name]):
                raise self.error(f"argument {name}={_show(value)} is not supported")

    def __contains__(self, name: str) -> bool:
        """Whether the op's schema has an argument `name`."""
        return name in self._values


def _same(value: Any, default: Any) -> bool:
    """Whether an argument value is its schema default (True is not 1 here)."""
    if _is_node(value) or _is_node(default):
        return False
    if isinstance(value, list | tuple) and isinstance(default, list | tuple):
        return len(value) == len(default) and all(_same(v, d) for v, d in zip(value, default))
    if isinstance(value, bool) != isinstance(default, bool):
        return False
    return bool(value == default)


def _show(value: Any) -> str:
    if _is_node(value):
        return f"%{value.name}"
    return repr(value)
