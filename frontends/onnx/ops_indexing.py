"""Converters of ONNX indexing operators to the graph dialect's indexing ops
(autofusion/dialects/graph_indexing.py): GatherElements, ScatterElements, ScatterND,
OneHot, ReverseSequence, Compress, NonZero and Unique. Versions are cited as
`Op-<since_version>` from https://onnx.ai/onnx/operators/; the later versions `OPS` lists
only add element types.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i1, i64

from autofusion.dialects import graph
from autofusion.dialects import graph_indexing as gi
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Const, Node, OpConverters, Value

OPS = OpConverters(
    versions={
        "GatherElements": (11, 13),
        "ScatterElements": (11, 13, 16, 18),
        "ScatterND": (11, 13, 16, 18),
        "OneHot": (11, 28),
        "ReverseSequence": (10, 28),
        "Compress": (11, 28),
        "NonZero": (9, 13),
        "Unique": (11, 28),
    },
    refused={
        ("OneHot", 9): "OneHot-9 takes no negative indices (OneHot-11 counts them from the back)",
        ("Compress", 9): "Compress-9 takes no negative axis",
    },
)

# the reductions each ScatterElements/ScatterND version defines
_REDUCTIONS = {11: ("none",), 13: ("none",), 16: ("none", "add", "mul")}


@OPS.register("GatherElements")
def convert_gather_elements(node: Node) -> list[Value]:
    """GatherElements-13: out[i][j] = data[indices[i][j]][j] along `axis`."""
    data = node.input(0)
    axis = node.axis(int(node.attr("axis", 0)), len(data.shape))
    return node.emit(gi.GatherElementsOp, [data, node.input(1)], {"axis": axis})


def _reduction(node: Node) -> str:
    reduction = node.attr("reduction", "none")
    allowed = _REDUCTIONS.get(node.version, gi.SCATTER_REDUCTIONS)
    if reduction not in allowed:
        raise node.reject("reduction", reduction, f"{node.op_type}-{node.version}: {allowed}")
    return str(reduction)


@OPS.register("ScatterElements")
def convert_scatter_elements(node: Node) -> list[Value]:
    """ScatterElements-11..18: reductions none, add, mul (16), max, min (18)."""
    data = node.input(0)
    axis = node.axis(int(node.attr("axis", 0)), len(data.shape))
    props = {"axis": axis, "reduction": _reduction(node)}
    return node.emit(gi.ScatterElementsOp, [data, node.input(1), node.input(2)], props)


@OPS.register("ScatterND")
def convert_scatter_nd(node: Node) -> list[Value]:
    """ScatterND-11..18: reductions none, add, mul (16), max, min (18)."""
    operands = [node.input(0), node.input(1), node.input(2)]
    return node.emit(gi.ScatterNDOp, operands, {"reduction": _reduction(node)})


@OPS.register("OneHot")
def convert_one_hot(node: Node) -> list[Value]:
    """OneHot-11: depth (a constant input) classes along `axis`, values = [off, on]."""
    indices, values = node.input(0), node.input(2)
    depth = node.const_input(1, "depth")
    if depth is None or np.asarray(depth).size != 1:
        raise node.error("depth must be a one-element tensor")
    d = np.asarray(depth).reshape(())
    count = int(np.float64(d)) if d.dtype.kind == "f" else int(d)
    axis = int(node.attr("axis", -1))
    node.axis(axis, len(indices.shape) + 1)
    props = {"depth": count, "axis": axis}
    return node.emit(gi.OneHotOp, [indices, values], props)


@OPS.register("ReverseSequence")
def convert_reverse_sequence(node: Node) -> list[Value]:
    """ReverseSequence-10: batch_axis and time_axis are 0 and 1 in some order."""
    props = {
        "batch_axis": int(node.attr("batch_axis", 1)),
        "time_axis": int(node.attr("time_axis", 0)),
    }
    return node.emit(gi.ReverseSequenceOp, [node.input(0), node.input(1)], props)


@OPS.register("Compress")
def convert_compress(node: Node) -> list[Value]:
    """Compress-11: a constant condition is a graph.gather of the selected positions
    (static shape); a computed one a graph.compress (dynamic selected dim)."""
    x, cond = node.input(0), node.input(1)
    axis = node.attr("axis", None)
    if axis is not None:
        axis = node.axis(int(axis), len(x.shape))
    if cond.elt != i1:
        raise node.error(f"condition must be bool, got {cond.elt}")
    if isinstance(cond, Const) and not isinstance(x, Const):
        if axis is None:
            x = node.emit1(graph.ReshapeOp, [x], {"shape": [-1]})
        kept = np.flatnonzero(cond.array).astype(np.int64)
        size = x.shape[axis or 0]
        if size != si.DYN and len(kept) and kept[-1] >= size:
            raise node.error(f"condition selects index {kept[-1]} of a dim of {size}")
        return node.emit(graph.GatherOp, [x, node.const(kept, i64)], {"axis": axis or 0})
    props = {} if axis is None else {"axis": axis}
    return node.emit(gi.CompressOp, [x, cond], props)


@OPS.register("NonZero")
def convert_non_zero(node: Node) -> list[Value]:
    """NonZero-13: [rank, n] coordinates of the non-zero elements."""
    return node.emit(gi.NonZeroOp, [node.input(0)])


@OPS.register("Unique")
def convert_unique(node: Node) -> list[Value]:
    """Unique-11: Y, first indices, inverse indices and counts; sorted or first-seen order."""
    x = node.input(0)
    props: dict[str, object] = {"sorted": bool(node.attr("sorted", 1))}
    axis = node.attr("axis", None)
    if axis is not None:
        props["axis"] = node.axis(int(axis), len(x.shape))
    return node.emit(gi.UniqueOp, [x], props)
