"""Converters of the ONNX sequence operators, resolved at compile time.

The graph dialect has tensors only, so a sequence is taken apart by the importer: it is a
Python-side tuple of graph values (`Seq`), built and read by these converters, and only its
tensors reach the graph (SplitToSequence through graph.split, ConcatFromSequence through
graph.concat, SequenceMap as one copy of its body per element). The length of every
sequence and each position used on it must be known at compile time; one that depends on
run-time data is refused, naming the node and the value. Versions are cited as
`Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto
from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute

from autofusion import dtypes
from autofusion.dialects import graph
from frontends.onnx.importer import (
    Item,
    Node,
    OpConverters,
    Seq,
    Value,
    element_type,
    item_kind,
    probe_dims,
)
from frontends.onnx.ops_control import stack
from frontends.onnx.ops_tensor import reshape_to

# SplitToSequence-24 only adds element types
OPS = OpConverters(
    versions={
        "SequenceEmpty": (11,),
        "SequenceConstruct": (11,),
        "SequenceAt": (11,),
        "SequenceInsert": (11,),
        "SequenceErase": (11,),
        "SequenceLength": (11,),
        "SplitToSequence": (11, 24),
        "ConcatFromSequence": (11,),
        "SequenceMap": (17,),
    }
)


def _sequence(node: Node, i: int) -> Seq:
    """Input `i`, which must be a sequence."""
    v = node.opt_item(i)
    if v is None:
        raise node.error(f"input #{i} is required")
    if not isinstance(v, Seq):
        kind = "a tensor" if isinstance(v, Value) else item_kind(v)
        raise node.error(f"input #{i} ('{node.proto.input[i]}') is {kind}, not a sequence")
    return v


def _position(node: Node, i: int, length: int, end: bool) -> int | None:
    """The position input `i` (a constant scalar; negative counts from the back) as an index
    into a sequence of `length`, or None when it is omitted. `end`: the length itself is a
    position (where SequenceInsert appends)."""
    given = node.const_input(i, "the position")
    if given is None:
        return None
    if given.size != 1:
        raise node.error(f"the position must be a scalar, got shape {list(given.shape)}")
    pos = int(given.reshape(-1)[0])
    top = length if end else length - 1
    if not -length <= pos <= top:
        raise node.error(f"position {pos} is out of range for a sequence of length {length}")
    return pos + length if pos < 0 else pos


def _same_type(node: Node, seq_elt: Attribute, v: Value) -> None:
    if v.elt != seq_elt:
        raise node.error(
            f"a {dtypes.type_name(v.elt)} tensor cannot join a sequence of "
            f"{dtypes.type_name(seq_elt)} tensors"
        )


@OPS.register("SequenceEmpty")
def convert_sequence_empty(node: Node) -> list[Item]:
    """SequenceEmpty-11: an empty sequence of `dtype` tensors (float by default)."""
    dtype = int(node.attr("dtype", TensorProto.FLOAT))
    return [Seq((), element_type(dtype, f"node '{node.name}'"))]


@OPS.register("SequenceConstruct")
def convert_sequence_construct(node: Node) -> list[Item]:
    """SequenceConstruct-11: the inputs (tensors of one element type) in order."""
    items = node.inputs()
    for v in items[1:]:
        _same_type(node, items[0].elt, v)
    return [Seq(tuple(items), items[0].elt)]


@OPS.register("SequenceAt")
def convert_sequence_at(node: Node) -> list[Item]:
    """SequenceAt-11: the tensor at a constant position."""
    seq = _sequence(node, 0)
    pos = _position(node, 1, len(seq.items), end=False)
    if pos is None:
        raise node.error("input #1 is required")
    return [seq.items[pos]]


@OPS.register("SequenceInsert")
def convert_sequence_insert(node: Node) -> list[Item]:
    """SequenceInsert-11: the tensor inserted at a constant position (appended without one)."""
    seq, tensor = _sequence(node, 0), node.input(1)
    _same_type(node, seq.elt, tensor)
    pos = _position(node, 2, len(seq.items), end=True)
    at = len(seq.items) if pos is None else pos
    return [Seq((*seq.items[:at], tensor, *seq.items[at:]), seq.elt)]


@OPS.register("SequenceErase")
def convert_sequence_erase(node: Node) -> list[Item]:
    """SequenceErase-11: the sequence without the tensor at a constant position (the last
    without one)."""
    seq = _sequence(node, 0)
    if not seq.items:
        raise node.error("cannot erase from an empty sequence")
    pos = _position(node, 1, len(seq.items), end=False)
    at = len(seq.items) - 1 if pos is None else pos
    return [Seq((*seq.items[:at], *seq.items[at + 1 :]), seq.elt)]


@OPS.register("SequenceLength")
def convert_sequence_length(node: Node) -> list[Item]:
    """SequenceLength-11: the number of tensors, a constant int64 scalar."""
    return [node.const(np.asarray(len(_sequence(node, 0).items), np.int64), i64)]


def _split_sizes(node: Node, dim: int, keepdims: int) -> tuple[list[int], bool]:
    """The part sizes of SplitToSequence along a dim of extent `dim`, and whether the split
    axis is dropped (keepdims=0 without a split input)."""
    split = node.const_input(1, "the split sizes")
    if split is None:
        if keepdims not in (0, 1):
            raise node.reject("keepdims", keepdims, "0 or 1")
        return [1] * dim, keepdims == 0
    if split.ndim == 0:
        size = int(split)
        if size <= 0:
            raise node.error(f"the split size {size} must be positive")
        return [min(size, dim - k) for k in range(0, dim, size)], False
    sizes = [int(s) for s in split.reshape(-1)]
    if any(s <= 0 for s in sizes):
        raise node.error(f"split sizes {sizes} must be positive")
    if sum(sizes) != dim:
        raise node.error(f"split sizes {sizes} do not add up to the dim's extent {dim}")
    return sizes, False


@OPS.register("SplitToSequence")
def convert_split_to_sequence(node: Node) -> list[Item]:
    """SplitToSequence-11/24: the parts of a split along `axis`, as a sequence; without a
    split input, every slice of size 1 (the axis dropped when keepdims=0)."""
    x = node.input(0)
    rank = len(x.shape)
    axis = node.axis(int(node.attr("axis", 0)), rank)
    keepdims = int(node.attr("keepdims", 1))
    a, b = probe_dims(x)
    if a[axis] != b[axis]:
        raise node.symbolic_error(f"the sequence length (dim {axis} of the input)")
    sizes, drop = _split_sizes(node, a[axis], keepdims)
    if not sizes:
        return [Seq((), x.elt)]
    parts = node.emit(graph.SplitOp, [x], {"axis": axis, "sizes": sizes})
    if drop:
        dims_a, dims_b = (*a[:axis], *a[axis + 1 :]), (*b[:axis], *b[axis + 1 :])
        parts = [reshape_to(node, p, dims_a, dims_b) for p in parts]
    return [Seq(tuple(parts), x.elt)]


@OPS.register("ConcatFromSequence")
def convert_concat_from_sequence(node: Node) -> list[Item]:
    """ConcatFromSequence-11: the tensors concatenated along `axis`, or stacked along a new
    axis there when new_axis=1."""
    seq = _sequence(node, 0)
    new_axis = int(node.attr("new_axis", 0))
    if new_axis not in (0, 1):
        raise node.reject("new_axis", new_axis, "0 or 1")
    axis = int(node.attr("axis"))
    if not seq.items:
        raise node.error("cannot concatenate an empty sequence")
    axis = node.axis(axis, len(seq.items[0].shape) + new_axis)
    if new_axis:
        return [stack(node, seq.items, axis)]
    if len(seq.items) == 1:
        return [seq.items[0]]
    return [node.emit1(graph.ConcatOp, seq.items, {"axis": axis})]


def _body_output_type(node: Node, out: onnx.ValueInfoProto) -> Attribute:
    """The element type a body output declares (for the outputs of an empty SequenceMap)."""
    tt = out.type.tensor_type if out.type.HasField("tensor_type") else None
    if tt is None or not tt.elem_type:
        raise node.error(f"body output '{out.name}' of an empty map declares no element type")
    return element_type(tt.elem_type, f"body output '{out.name}'")


@OPS.register("SequenceMap")
def convert_sequence_map(node: Node) -> list[Item]:
    """SequenceMap-17: the body applied to each element (sequence inputs give their k-th
    tensor, tensor inputs themselves), unrolled; output j is the sequence of the bodies'
    j-th outputs."""
    body = node.attr("body")
    if not isinstance(body, onnx.GraphProto):
        raise node.error("attribute 'body' must be a graph")
    args: list[Item] = [_sequence(node, 0)]
    for i in range(1, node.num_inputs):
        v = node.opt_item(i)
        if v is None:
            raise node.error(f"input #{i} is required")
        args.append(v)
    lengths = {len(v.items) for v in args if isinstance(v, Seq)}
    if len(lengths) != 1:
        raise node.error(f"the input sequences have different lengths {sorted(lengths)}")
    length = lengths.pop()
    steps: list[list[Value]] = []
    for k in range(length):
        bound = [v.items[k] if isinstance(v, Seq) else v for v in args]
        outs = node.importer.convert_subgraph(node, body, bound, f"iter{k}")
        steps.append([node.tensor(v, f"body output #{j}") for j, v in enumerate(outs)])
    results: list[Item] = []
    for j, out in enumerate(body.output):
        parts: Sequence[Value] = [s[j] for s in steps]
        elt = parts[0].elt if parts else _body_output_type(node, out)
        for p in parts[1:]:
            _same_type(node, elt, p)
        results.append(Seq(tuple(parts), elt))
    return results
