"""ONNX export of the quantization graph ops (autofusion/dialects/graph_quant.py): each is
the ONNX operator it was imported from, with its zero points always given.

`table()` gives their entries of `export_table.TABLE`; export_ops is imported where it
is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from autofusion.dialects import graph_quant as gq

if TYPE_CHECKING:
    from frontends.onnx.export_ops import Emit, Emitter, Mapping


def _linear(op_type: str) -> Emit:
    """QuantizeLinear/DequantizeLinear: axis, saturate when given, and block_size (from
    opset 21) when blocked."""

    def emit(e: Emitter) -> None:
        from frontends.onnx.export_ops import NotExportable

        block = e.props.integer("block_size")
        attrs = {"axis": e.props.integer("axis")}
        if e.props.has("saturate"):  # a float8 QuantizeLinear's (opset 19 on)
            attrs["saturate"] = int(e.props.flag("saturate"))
        if block:
            if e.opset < 21:
                raise NotExportable(f"blocked {op_type} needs opset 21, not {e.opset}")
            attrs["block_size"] = block
        e.nodes(op_type, e.inputs, e.outputs, **attrs)

    return emit


def _same(op_type: str) -> Emit:
    """An operator with the op's operands and results, without attributes."""

    def emit(e: Emitter) -> None:
        e.nodes(op_type, e.inputs, e.outputs)

    return emit


def _conv(op_type: str) -> Emit:
    """ConvInteger/QLinearConv with graph.conv2d's window attributes."""

    def emit(e: Emitter) -> None:
        from frontends.onnx.export_ops import _conv_attrs

        e.nodes(op_type, e.inputs, e.outputs, **_conv_attrs(e))

    return emit


def table() -> dict[type[Operation], Mapping]:
    """The export entries of the quantization ops."""
    from frontends.onnx.export_ops import Standard

    return {
        gq.QuantizeLinearOp: Standard(_linear("QuantizeLinear"), "QuantizeLinear"),
        gq.DequantizeLinearOp: Standard(_linear("DequantizeLinear"), "DequantizeLinear"),
        gq.DynamicQuantizeLinearOp: Standard(
            _same("DynamicQuantizeLinear"), "DynamicQuantizeLinear"
        ),
        gq.MatmulIntegerOp: Standard(_same("MatMulInteger"), "MatMulInteger"),
        gq.QLinearMatmulOp: Standard(_same("QLinearMatMul"), "QLinearMatMul"),
        gq.ConvIntegerOp: Standard(_conv("ConvInteger"), "ConvInteger (explicit pads)"),
        gq.QLinearConvOp: Standard(_conv("QLinearConv"), "QLinearConv (explicit pads)"),
    }
