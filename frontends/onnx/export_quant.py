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
    """QuantizeLinear/DequantizeLinear: axis for a per-axis or blocked scale (ONNX ignores
    it for a scalar one), saturate when given, block_size when blocked. Attributes an
    older opset lacks are refused by export_attributes (axis: per-axis needs opset 13)."""

    def emit(e: Emitter) -> None:
        attrs: dict[str, int] = {}
        if e.in_type(1).get_shape():
            attrs["axis"] = e.props.integer("axis")
        if e.props.has("saturate"):  # a float8 QuantizeLinear's (opset 19 on)
            attrs["saturate"] = int(e.props.flag("saturate"))
        if e.props.integer("block_size"):
            attrs["block_size"] = e.props.integer("block_size")
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
