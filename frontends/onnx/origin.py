"""Origin groups: the graph ops one ONNX node became, tagged so that export writes the node.

The importer decomposes many operators (LeakyRelu into where/mul, LogSoftmax into
reductions, GroupNormalization into layer_norm and reshapes, ...). It tags every op a node
became with the discardable attribute `onnx.origin`, a dictionary:

* `id`: the node's number in the import session (unique within the module);
* `op`, `version`: the operator type and its since_version;
* `node`: the NodeProto without inputs and outputs (type, name, attributes), serialized
  and base64-encoded;
* `count`: how many ops the node became (internal constants included);
* `operands`, `results`: for each operand of this op the node input it is (-1: a value
  of the group), for each result the node output it is (-1: internal);
* `inputs`: for each node input, -2 when omitted, -1 when it is a constant known at
  import (serialized in `constants` under its index), -3 when it is a constant too large
  or of a type the tag does not keep (an LSTM's weights, a bf16 one), held instead by a
  graph.constant member of the group whose own tag names the input (`input`), else the
  first input index with the same value (inputs bound to one value are one operand).

The exporter writes the original node once in place of a group that is complete and
unmodified (`complete_groups`); otherwise, when a pass rewrote part of it, the parts.
The attribute is plain builtin attributes, so it survives printing and parsing.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

import numpy as np
import onnx
from onnx import AttributeProto, helper, numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseResourceAttr,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from autofusion import dtypes, resources
from autofusion.dialects.shape_inference import DYN
from frontends.onnx.values import ELEMENT_TYPES, Const, Item, Tensor

ORIGIN_ATTR = "onnx.origin"
OMITTED = -2
CONSTANT = -1
REFERENCE = -3  # a constant held by a graph.constant member (its tag's `input`)
# a constant node input (axes, repeats, scales, ...) larger than this is not kept in the
# tag, and its node is exported as its parts
CONSTANT_LIMIT = 4096


def _ints(values: Sequence[int]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr([IntegerAttr(v, i64) for v in values])


@lru_cache(maxsize=4096)
def _text(attr: Attribute) -> str:
    """An attribute's printed form, once per distinct attribute (printing is the slow
    part of a digest, and a model repeats a few types and properties many times). Two
    attributes that compare equal but print apart (0.0 and -0.0) share one text: the
    digest is then only coarser, never wrong about an edit it tells apart."""
    return str(attr)


def _b64(data: bytes) -> StringAttr:
    return StringAttr(base64.b64encode(data).decode("ascii"))


def constant_proto(array: np.ndarray, elt: Attribute, name: str) -> onnx.TensorProto | None:
    """The TensorProto of a constant node input, or None when it is not kept (too large,
    or of a type numpy holds in another storage: bf16 and the narrow types)."""
    if array.size > CONSTANT_LIMIT or dtypes.type_name(elt) == "bf16" or dtypes.is_narrow(elt):
        return None
    return numpy_helper.from_array(np.asarray(array), name)


def zeros_proto(data_type: int, shape: Sequence[int]) -> onnx.TensorProto | None:
    """Zeros of an ONNX data type and shape, or None when larger than CONSTANT_LIMIT."""
    size = int(np.prod(shape, dtype=np.int64))
    if size > CONSTANT_LIMIT:
        return None
    return helper.make_tensor("", data_type, list(shape), [0] * size)


def is_own_op(op_type: str, members: Sequence[Operation]) -> bool:
    """`members` is the one graph op named after `op_type` (Relu -> graph.relu, MatMul ->
    graph.matmul), which the op table exports back as `op_type`: no tag is needed."""
    if len(members) != 1:
        return False
    short = members[0].name.split(".", 1)[-1]
    return short.replace("_", "") == op_type.lower()


def digest(op: Operation) -> str:
    """What makes `op` compute what it does: its name, properties and operand and result
    types. A pass that rewrites a member in place (a property, an operand of another
    type) changes it, and the group is then exported as its parts."""
    parts = [op.name, *(f"{k}={_stable(v)}" for k, v in sorted(op.properties.items()))]
    parts += [_text(v.type) for v in (*op.operands, *op.results)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _stable(value: Attribute) -> str:
    """`value` as the digest reads it: a resource by its blob's bytes, not its handle (the
    process-wide registry renames handles, and printing renames them per module)."""
    if isinstance(value, DenseResourceAttr):
        blob = resources.blob_text(value.resource_handle.data) or value.resource_handle.data
        return f"{hashlib.sha256(blob.encode()).hexdigest()}:{value.type}"
    return _text(value)


@dataclass
class Conversion:
    """One converted node as tagging reads it: its proto and since_version, its input
    `i` (None where omitted), the ops its converter built, in order (internal constants
    included), and the values the converter gave for its outputs."""

    proto: onnx.NodeProto
    version: int
    input: Callable[[int], Item | None]
    ops: list[Operation]
    outputs: Sequence[Item | None]


def tag_conversion(c: Conversion, node_id: int, hold: Callable[[Const], SSAValue]) -> bool:
    """Tag the ops node `c.proto` became with its origin as node `node_id`; whether it
    was tagged. Not tagged: nodes that became the one graph op of their own name (the op
    table exports it back as the node), nodes with subgraphs (their bodies name outer
    values), nodes that became no op, and nodes with an input or output that is neither a
    tensor value of the group nor a small constant. `hold` materializes a constant the
    tag does not keep as a graph.constant, which joins the group."""
    # most nodes become their own op (members are a subset of the ops): no tag, and no
    # need to look at their inputs (a profile of the corpus import: 9% of it was tagging)
    if not c.ops or is_own_op(c.proto.op_type, c.ops):
        return False
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in c.proto.attribute):
        return False
    items = [c.input(i) for i in range(len(c.proto.input))]
    bound = {v.ssa for v in items if isinstance(v, Tensor | Const) and v.ssa is not None}
    members = [op for op in c.ops if not any(r in bound for r in op.results)]
    if not members or is_own_op(c.proto.op_type, members):
        return False
    read = {v for op in members for v in op.operands}
    inputs: list[SSAValue | onnx.TensorProto | Const | None] = []
    for v in items:
        if v is None:
            inputs.append(None)
        elif isinstance(v, Tensor | Const) and v.ssa is not None and v.ssa in read:
            inputs.append(v.ssa)
        elif (proto := _kept_input(v)) is not None:
            inputs.append(proto)
        elif isinstance(v, Const) and v.ssa is None:
            inputs.append(v)
        else:
            return False
    results = {r for op in members for r in op.results}
    outs: list[SSAValue | None] = []
    for k, name in enumerate(c.proto.output):
        value = c.outputs[k] if name and k < len(c.outputs) else None
        if not name:
            outs.append(None)
        elif isinstance(value, Tensor) and value.ssa in results:
            outs.append(value.ssa)
        else:
            return False
    # a constant the tag does not keep (too large, bf16, narrow) is referred to: its
    # graph.constant joins the group, which the exporter writes as the node
    held: list[SSAValue | onnx.TensorProto | None] = []
    for given in inputs:
        if isinstance(given, Const):
            constant = hold(given)
            held.append(constant)
            members.append(cast(Operation, constant.owner))
        else:
            held.append(given)
    tag(node_id, c.proto, c.version, members, held, outs)
    return True


def _kept_input(v: Item) -> onnx.TensorProto | None:
    """A node input the ops of its origin group do not read, as the constant export
    writes for it: a constant's value, or zeros of a run-time tensor's type and static
    shape (CastLike reads only its target's type); None when it cannot be kept."""
    if isinstance(v, Const):
        return constant_proto(v.array, v.elt, v.initializer or v.hint)
    if isinstance(v, Tensor) and DYN not in v.shape:
        data_type = next(k for k, t in ELEMENT_TYPES.items() if t == v.elt)
        return zeros_proto(data_type, v.shape)
    return None


def tag(
    node_id: int,
    proto: onnx.NodeProto,
    version: int,
    members: Sequence[Operation],
    inputs: Sequence[SSAValue | onnx.TensorProto | None],
    outputs: Sequence[SSAValue | None],
) -> None:
    """Tag `members`, the ops node `proto` became, with its origin; the first member
    (the group's head) also holds the node.

    `inputs[i]` is input i's value (an SSA value, a kept constant, or None if omitted);
    `outputs[k]` the SSA value of output k (None if the node leaves it unnamed). An SSA
    value made by a member that no member reads is a referenced constant (REFERENCE).
    """
    read = {v for op in members for v in op.operands}
    first: dict[SSAValue, int] = {}
    links: list[int] = []
    constants: dict[str, Attribute] = {}
    referenced: dict[Operation, int] = {}
    for i, v in enumerate(inputs):
        if v is None:
            links.append(OMITTED)
        elif isinstance(v, onnx.TensorProto):
            links.append(CONSTANT)
            constants[str(i)] = _b64(v.SerializeToString(deterministic=True))
        elif v not in read and v.owner in members:
            links.append(REFERENCE)
            referenced[cast(Operation, v.owner)] = i
        else:
            links.append(first.setdefault(v, i))
    out_index = {v: k for k, v in enumerate(outputs) if v is not None}
    bare = onnx.NodeProto()
    bare.CopyFrom(proto)
    del bare.input[:]
    del bare.output[:]
    head: dict[str, Attribute] = {
        "op": StringAttr(proto.op_type),
        "version": IntegerAttr(version, i64),
        "node": _b64(bare.SerializeToString(deterministic=True)),
        "count": IntegerAttr(len(members), i64),
        "inputs": _ints(links),
        "constants": DictionaryAttr(constants),
    }
    for k, op in enumerate(members):
        op.attributes[ORIGIN_ATTR] = DictionaryAttr(
            {
                "id": IntegerAttr(node_id, i64),
                **(head if k == 0 else {}),
                **({"input": IntegerAttr(referenced[op], i64)} if op in referenced else {}),
                "operands": _ints([first.get(v, -1) for v in op.operands]),
                "results": _ints([out_index.get(r, -1) for r in op.results]),
                "digest": StringAttr(digest(op)),
            }
        )


# --------------------------------------------------------------------------------------
# Reading the tags back (the exporter)
# --------------------------------------------------------------------------------------


@dataclass
class Group:
    """A complete, unmodified origin group of one block: the node to write for it."""

    node: onnx.NodeProto  # without inputs and outputs
    members: list[Operation]
    # per node input: its value, a constant, or None when omitted
    inputs: list[SSAValue | onnx.TensorProto | None] = field(default_factory=list)
    # per node output: its value, or None when the node leaves it unnamed
    outputs: list[SSAValue | None] = field(default_factory=list)


def _int_list(attr: Attribute | None) -> list[int] | None:
    if not isinstance(attr, ArrayAttr):
        return None
    out = []
    for a in cast(ArrayAttr[Attribute], attr).data:
        if not isinstance(a, IntegerAttr):
            return None
        out.append(a.value.data)
    return out


def _int(attr: Attribute | None) -> int | None:
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _origin(op: Operation) -> dict[str, Attribute] | None:
    attr = op.attributes.get(ORIGIN_ATTR)
    return dict(attr.data) if isinstance(attr, DictionaryAttr) else None


def complete_groups(block: Block, opset: int) -> dict[Operation, Group]:
    """Each op of `block` in a complete, unmodified origin group whose operator has the
    same version at `opset`, mapped to its group."""
    by_id: dict[int, list[Operation]] = {}
    for op in block.ops:
        origin = _origin(op)
        node_id = _int(origin.get("id")) if origin is not None else None
        if node_id is not None:
            by_id.setdefault(node_id, []).append(op)
    out: dict[Operation, Group] = {}
    for ops in by_id.values():
        group = _read_group(ops, opset)
        if group is not None:
            for op in ops:
                out[op] = group
    return out


def _read_group(ops: list[Operation], opset: int) -> Group | None:
    """The group of `ops` (one id), or None unless it is whole and as imported."""
    heads = [o for o in (_origin(op) for op in ops) if o is not None and "node" in o]
    if len(heads) != 1:
        return None
    head = heads[0]
    links = _int_list(head.get("inputs"))
    node_attr, constants = head.get("node"), head.get("constants")
    if _int(head.get("count")) != len(ops) or not _same_version(head, opset):
        return None
    if links is None or not isinstance(node_attr, StringAttr):
        return None
    if not isinstance(constants, DictionaryAttr):
        return None
    bound, outputs = _bindings(ops)
    if bound is None or outputs is None:
        return None
    node = onnx.NodeProto()
    node.ParseFromString(base64.b64decode(node_attr.data))
    group = Group(node, ops)
    for i, link in enumerate(links):
        if link == OMITTED:
            group.inputs.append(None)
        elif link == CONSTANT:
            data = constants.data.get(str(i))
            if not isinstance(data, StringAttr):
                return None
            t = onnx.TensorProto()
            t.ParseFromString(base64.b64decode(data.data))
            group.inputs.append(t)
        elif link == REFERENCE:
            held = _referenced(ops, i)
            if held is None:
                return None
            group.inputs.append(held)
        elif link in bound:
            group.inputs.append(bound[link])
        else:  # an input no op of the group reads any more
            return None
    group.outputs = [outputs.get(k) for k in range(max(outputs, default=-1) + 1)]
    return group


def _referenced(ops: list[Operation], index: int) -> SSAValue | None:
    """The result of the member constant that holds node input `index` (REFERENCE)."""
    held = [op for op in ops if _int(cast(dict[str, Attribute], _origin(op)).get("input")) == index]
    if len(held) != 1 or held[0].operands or len(held[0].results) != 1:
        return None
    return held[0].results[0]


def _bindings(
    ops: list[Operation],
) -> tuple[dict[int, SSAValue] | None, dict[int, SSAValue] | None]:
    """The value of each node input the members read and of each node output they
    make, or None when a member changed, an input is read as two values, or an
    internal value is read from outside the group or used outside it."""
    members = set(ops)
    bound: dict[int, SSAValue] = {}
    outputs: dict[int, SSAValue] = {}
    for op in ops:
        origin = cast(dict[str, Attribute], _origin(op))
        operands, results = _int_list(origin.get("operands")), _int_list(origin.get("results"))
        if operands is None or results is None or origin.get("digest") != StringAttr(digest(op)):
            return None, None
        if len(operands) != len(op.operands) or len(results) != len(op.results):
            return None, None
        for v, i in zip(op.operands, operands):
            if i < 0:
                if v.owner not in members:
                    return None, None
            elif bound.setdefault(i, v) is not v:
                return None, None
        for r, k in zip(op.results, results):
            if k < 0:
                if any(use.operation not in members for use in r.uses):
                    return None, None
            elif k in outputs:
                return None, None
            else:
                outputs[k] = r
    return bound, outputs


def _same_version(head: dict[str, Attribute], opset: int) -> bool:
    """The operator resolves to the imported version at the export opset."""
    op, version = head.get("op"), _int(head.get("version"))
    if not isinstance(op, StringAttr):
        return False
    try:
        schema = onnx.defs.get_schema(op.data, opset, "")
    except onnx.defs.SchemaError:
        return False
    return schema.since_version == version


def with_defaults(node: onnx.NodeProto, opset: int) -> onnx.NodeProto:
    """`node` with the attributes it leaves at their defaults written out, when its
    operator is defined by a function body: onnx 1.23's checker expands such a body
    without the defaults (MeanVarianceNormalization without `axes` fails its Constant)."""
    schema = onnx.defs.get_schema(node.op_type, opset, "")
    # onnx's stubs lack these OpSchema properties (onnx/defs/__init__.pyi)
    bodied = getattr(schema, "has_function", False) or getattr(
        schema, "has_context_dependent_function", False
    )
    if not bodied:
        return node
    given = {a.name for a in node.attribute}
    out = onnx.NodeProto()
    out.CopyFrom(node)
    for name, spec in sorted(schema.attributes.items()):
        default = spec.default_value
        if name not in given and default.type != onnx.AttributeProto.UNDEFINED:
            attr = out.attribute.add()
            attr.CopyFrom(default)
            attr.name = name
    return out


def forget(root: Operation) -> None:
    """Drop the origin tags under `root`, so that export writes what each node became."""
    for op in root.walk():
        op.attributes.pop(ORIGIN_ATTR, None)
