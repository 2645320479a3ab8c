"""Export entries of the `graph_math` ops: each becomes its own ONNX operator.

An op whose ONNX operator is newer than the export opset (BitwiseAnd-18, Celu-12,
CumProd-26, Mod with fmod=0 on floats before Mod-28, ...) is not exportable there; the
error names the operator and the opset it needs. `math_table()` is merged into
`export_table.TABLE`; export_ops is imported where it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import TensorProto

from autofusion import dtypes
from autofusion.dialects import graph_math as gm

if TYPE_CHECKING:
    from xdsl.ir import Operation

    from frontends.onnx.export_ops import Emit, Emitter, Mapping


def _require(e: Emitter, op_type: str, opset: int, what: str = "") -> None:
    from frontends.onnx.export_ops import NotExportable

    if e.opset < opset:
        raise NotExportable(
            f"ONNX has {op_type}{what} from opset {opset} on; the export opset is {e.opset}"
        )


def _standard(op_type: str, since: int, attrs: Any = None) -> Emit:
    """`op_type` on the op's operands, from opset `since`, with `attrs(e)` as attributes."""

    def emit(e: Emitter) -> None:
        _require(e, op_type, since)
        e.nodes(op_type, e.inputs, e.outputs, **(attrs(e) if attrs else {}))

    return emit


def emit_mod(e: Emitter) -> None:
    fmod = e.props.flag("fmod")
    if not fmod and dtypes.is_float(e.in_type().element_type):
        _require(e, "Mod", 28, " with fmod=0 on floating point")
    e.nodes("Mod", e.inputs, e.outputs, fmod=int(fmod))


def emit_arg(op_type: str) -> Emit:
    def emit(e: Emitter) -> None:
        p = e.props
        attrs = {"axis": p.integer("axis"), "keepdims": int(p.flag("keepdims"))}
        if p.flag("select_last_index"):  # from opset 12 (export_attributes)
            attrs["select_last_index"] = 1
        e.nodes(op_type, e.inputs, e.outputs, **attrs)

    return emit


def emit_top_k(e: Emitter) -> None:
    # TopK-11: K is a 1-D int64 input
    p = e.props
    k = e.ints([p.integer("k")], "k")
    attrs = {
        "axis": p.integer("axis"),
        "largest": int(p.flag("largest")),
        "sorted": int(p.flag("sorted")),
    }
    e.nodes("TopK", [e.inputs[0], k], e.outputs, **attrs)


def emit_scan(op_type: str, since: int) -> Emit:
    # CumSum-11 / CumProd-26: the axis is a rank-0 int64 input
    def emit(e: Emitter) -> None:
        _require(e, op_type, since)
        p = e.props
        axis = e.const(np.asarray(p.integer("axis"), dtype=np.int64), TensorProto.INT64, "axis")
        attrs = {"exclusive": int(p.flag("exclusive")), "reverse": int(p.flag("reverse"))}
        e.nodes(op_type, [e.inputs[0], axis], e.outputs, **attrs)

    return emit


def _flags(*names: str) -> Any:
    """attrs(e): the boolean properties `names` as ONNX int attributes of the same name."""
    return lambda e: {n: int(e.props.flag(n)) for n in names}


def swish(e: Emitter) -> None:
    """ai.afc.Swish = x * Sigmoid(alpha * x), in float32 for f16/bf16."""
    x = e.up(e.inputs[0])
    elem = e.body.elem(x)
    assert elem is not None
    scaled = e.node("Mul", [x, e.scalar(e.props.real("alpha"), elem, "alpha")])
    e.finish(0, e.node("Mul", [x, e.node("Sigmoid", [scaled])], out=e.target()))


def swish_native(e: Emitter) -> None:
    e.nodes("Swish", e.inputs, e.outputs, alpha=e.props.real("alpha"))


def math_table() -> dict[type[Operation], Mapping]:
    """The export entries of the graph_math ops (ONNX op versions cited as Op-N)."""
    from frontends.onnx.export_ops import Named, Standard, direct, emit_reduce, since

    def standard(op_type: str, since: int, attrs: Any = None) -> Standard:
        return Standard(_standard(op_type, since, attrs), f"{op_type}-{since}")

    return {
        gm.TanOp: direct("Tan"),
        gm.AsinOp: direct("Asin"),
        gm.AcosOp: direct("Acos"),
        gm.AtanOp: direct("Atan"),
        gm.SinhOp: direct("Sinh"),
        gm.CoshOp: direct("Cosh"),
        gm.AsinhOp: direct("Asinh"),
        gm.AcoshOp: direct("Acosh"),
        gm.AtanhOp: direct("Atanh"),
        gm.FloorOp: direct("Floor"),
        gm.CeilOp: direct("Ceil"),
        gm.RoundOp: direct("Round"),
        gm.SignOp: direct("Sign"),
        gm.IsNanOp: direct("IsNaN"),
        gm.IsInfOp: standard("IsInf", 10, _flags("detect_positive", "detect_negative")),
        gm.BitwiseNotOp: standard("BitwiseNot", 18),
        gm.BitwiseAndOp: standard("BitwiseAnd", 18),
        gm.BitwiseOrOp: standard("BitwiseOr", 18),
        gm.BitwiseXorOp: standard("BitwiseXor", 18),
        gm.BitShiftOp: standard("BitShift", 11, lambda e: {"direction": e.props.text("direction")}),
        gm.ShrinkOp: standard(
            "Shrink", 9, lambda e: {"lambd": e.props.real("lambd"), "bias": e.props.real("bias")}
        ),
        gm.CeluOp: standard("Celu", 12, lambda e: {"alpha": e.props.real("alpha")}),
        gm.SwishOp: Named(
            "Swish",
            swish,
            "Swish-24; before: ai.afc.Swish = x * Sigmoid(alpha * x)",
            native=swish_native,
            native_when=since(24),
        ),
        gm.ModOp: Standard(emit_mod, "Mod-13 (fmod=0 on floats: Mod-28)"),
        gm.ReduceProdOp: Standard(emit_reduce("ReduceProd"), "ReduceProd (axes input from 18)"),
        gm.ArgMaxOp: Standard(emit_arg("ArgMax"), "ArgMax-13"),
        gm.ArgMinOp: Standard(emit_arg("ArgMin"), "ArgMin-13"),
        gm.HardmaxOp: standard("Hardmax", 13, lambda e: {"axis": e.props.integer("axis")}),
        gm.TopKOp: Standard(emit_top_k, "TopK-11 (K as an input)"),
        gm.CumSumOp: Standard(emit_scan("CumSum", 11), "CumSum-11"),
        gm.CumProdOp: Standard(emit_scan("CumProd", 26), "CumProd-26"),
    }
