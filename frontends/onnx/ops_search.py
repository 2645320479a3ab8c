"""Converters of ONNX search and scan operators: ArgMax, ArgMin, Hardmax, TopK, CumSum
and CumProd, each one op of `autofusion.dialects.graph_math`. Inputs that decide a
result's shape or the axis (TopK's K, the scans' axis) must be known at import time.
Versions are cited as `Op-<since_version>`.
"""

from __future__ import annotations

from autofusion.dialects import graph_math as gm
from frontends.onnx.importer import Node, OpConverters, Value
from frontends.onnx.ops_legacy import along_axis

OPS = OpConverters(
    versions={
        "ArgMax": (13,),
        "ArgMin": (13,),
        "CumProd": (26,),
        "CumSum": (11, 14),
        "Hardmax": (13,),
        "TopK": (11, 24),
    }
)


ARG: dict[str, type[gm.ArgReduceOp]] = {"ArgMax": gm.ArgMaxOp, "ArgMin": gm.ArgMinOp}


@OPS.register(*ARG)
def convert_arg(node: Node) -> list[Value]:
    """ArgMax-13 / ArgMin-13: the first (or, with select_last_index, last) extreme index."""
    props = {
        "axis": int(node.attr("axis", 0)),
        "keepdims": bool(node.attr("keepdims", 1)),
        "select_last_index": bool(node.attr("select_last_index", 0)),
    }
    return node.emit(ARG[node.op_type], [node.input(0)], props)


@OPS.register("Hardmax")
def convert_hardmax(node: Node) -> list[Value]:
    """Hardmax-13: one-hot of the first maximum along axis (default -1); -1 and -11 over
    a 2-D flattening."""
    return along_axis(node, lambda x, axis: node.emit(gm.HardmaxOp, [x], {"axis": axis}))


def _scalar_input(node: Node, i: int, what: str) -> int:
    values = node.ints_input(i, what)
    if values is None:
        raise node.error(f"input #{i} ({what}) is required")
    if len(values) != 1:
        raise node.error(f"{what} (input #{i}) must hold one value, got {len(values)}")
    return values[0]


@OPS.register("TopK")
def convert_top_k(node: Node) -> list[Value]:
    """TopK-10, -11 and -24 (bf16 added): K is a constant input (TopK-1: the k attribute);
    results are values, indices."""
    props = {
        "k": int(node.attr("k")) if node.version < 10 else _scalar_input(node, 1, "K"),
        "axis": int(node.attr("axis", -1)),
        "largest": bool(node.attr("largest", 1)),
        "sorted": bool(node.attr("sorted", 1)),
    }
    return node.emit(gm.TopKOp, [node.input(0)], props)


SCAN: dict[str, type[gm.ScanOp]] = {"CumSum": gm.CumSumOp, "CumProd": gm.CumProdOp}


@OPS.register(*SCAN)
def convert_scan(node: Node) -> list[Value]:
    """CumSum-11 and -14 (f16/bf16 added) / CumProd-26: the axis is a constant input; exclusive and reverse."""
    props = {
        "axis": _scalar_input(node, 1, "axis"),
        "exclusive": bool(node.attr("exclusive", 0)),
        "reverse": bool(node.attr("reverse", 0)),
    }
    return node.emit(SCAN[node.op_type], [node.input(0)], props)
