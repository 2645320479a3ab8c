"""Converters of ONNX quantization operators: QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.

Each becomes its graph op (autofusion/dialects/graph_quant.py) on real integer tensors;
an omitted zero point becomes a zero constant of the quantized type (for QuantizeLinear
the type output_dtype names, uint8 by default). The float8, float4, 4-bit and 2-bit
types are storage-only types of the graph dialect (autofusion/narrow_types.py). Operator versions are cited as
`Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i32
from xdsl.ir import Attribute

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import graph_quant as gq
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Const, Node, OpConverters, Value, element_type
from frontends.onnx.ops_math import _drop_unit_dim, conv_window

# a later version adds float6, which `element_type` refuses by name
OPS = OpConverters(
    versions={
        "QuantizeLinear": (13, 19, 21, 23, 24, 25, 28),
        "DequantizeLinear": (13, 19, 21, 23, 24, 25, 28),
        "DynamicQuantizeLinear": (11,),
        "MatMulInteger": (10,),
        "ConvInteger": (10,),
        "QLinearMatMul": (10, 21),
        "QLinearConv": (10,),
    }
)


def _zero_point(node: Node, i: int, elt: Attribute, shape: tuple[int, ...] = ()) -> Value:
    """Input `i`, or a zero of element type `elt` when it is omitted."""
    v = node.opt_input(i)
    if v is not None:
        return v
    array = np.zeros(shape, dtypes.storage_dtype(elt))
    return Const(array, elt, f"{node.name}_zero_point_{i}")


def _quant_props(node: Node) -> dict[str, object]:
    """axis and block_size, the properties every linear (de)quantization has."""
    return {"axis": int(node.attr("axis", 1)), "block_size": int(node.attr("block_size", 0))}


def _type_attr(node: Node, name: str) -> Attribute | None:
    """The element type attribute `name` (output_dtype, precision) names; None when 0."""
    given = int(node.attr(name, 0))
    if not given:
        return None
    try:
        return element_type(given, f"attribute {name}")
    except UserError as e:
        raise node.error(e.message) from e


def _check_type_attr(node: Node, name: str, want: Attribute) -> None:
    """An output_dtype/precision attribute naming a type: 0 (the default) or `want`."""
    given = _type_attr(node, name)
    if given is not None and given != want:
        raise node.reject(name, int(node.attr(name)), f"only the scale's type {want}")


def _check_float8_zero_point(node: Node, zp: Value | None, elt: Attribute) -> None:
    """A float8 zero point must be zero (QuantizeLinear-19 on): a constant one is checked."""
    if dtypes.type_name(elt) not in gq.FLOAT8 or not isinstance(zp, Const):
        return
    if np.any(zp.array != 0):
        raise node.error(f"a {elt} zero point must be zero (input #2)")


@OPS.register("QuantizeLinear")
def convert_quantize_linear(node: Node) -> list[Value]:
    """QuantizeLinear-13..28 to an integer, float8 or float4 type; `saturate` (version 19
    on) only concerns float8 outputs."""
    x, scale = node.input(0), node.input(1)
    saturate = int(node.attr("saturate", 1))
    _check_type_attr(node, "precision", scale.type.element_type)
    zp = node.opt_input(2)
    elt = _type_attr(node, "output_dtype")
    if elt is not None and zp is not None and zp.type.element_type != elt:
        raise node.reject("output_dtype", int(node.attr("output_dtype")), f"zero point {zp.type}")
    if elt is None:
        elt = dtypes.ui8 if zp is None else zp.type.element_type
    _check_float8_zero_point(node, zp, elt)
    zp = zp if zp is not None else _zero_point(node, 2, elt, scale.shape)
    props = _quant_props(node)
    if dtypes.type_name(elt) in gq.FLOAT8 and not saturate:
        props["saturate"] = False
    return node.emit(gq.QuantizeLinearOp, [x, scale, zp], props)


@OPS.register("DequantizeLinear")
def convert_dequantize_linear(node: Node) -> list[Value]:
    """DequantizeLinear-13..28 from an integer, float8 or float4 type."""
    x, scale = node.input(0), node.input(1)
    _check_type_attr(node, "output_dtype", scale.type.element_type)
    _check_float8_zero_point(node, node.opt_input(2), x.type.element_type)
    zp = _zero_point(node, 2, x.type.element_type, scale.shape)
    return node.emit(gq.DequantizeLinearOp, [x, scale, zp], _quant_props(node))


@OPS.register("DynamicQuantizeLinear")
def convert_dynamic_quantize_linear(node: Node) -> list[Value]:
    """DynamicQuantizeLinear-11."""
    return node.emit(gq.DynamicQuantizeLinearOp, [node.input(0)])


@OPS.register("MatMulInteger")
def convert_matmul_integer(node: Node) -> list[Value]:
    """MatMulInteger-10."""
    a, b = node.input(0), node.input(1)
    azp = _zero_point(node, 2, a.type.element_type)
    bzp = _zero_point(node, 3, b.type.element_type)
    return node.emit(gq.MatmulIntegerOp, [a, b, azp, bzp])


@OPS.register("QLinearMatMul")
def convert_qlinear_matmul(node: Node) -> list[Value]:
    """QLinearMatMul-10 and -21 (which adds float16/bfloat16 scales)."""
    return node.emit(gq.QLinearMatmulOp, [node.input(k) for k in range(8)])


@OPS.register("ConvInteger")
def convert_conv_integer(node: Node) -> list[Value]:
    """ConvInteger-10 in 1-D and 2-D."""
    x, w = node.input(0), node.input(1)
    xzp = _zero_point(node, 2, x.type.element_type)
    wzp = _zero_point(node, 3, w.type.element_type)
    x, w, props, spatial = conv_window(node, x, w)
    y = node.emit1(gq.ConvIntegerOp, [x, w, xzp, wzp], props)
    return [_drop_unit_dim(node, y, 2) if spatial == 1 else y]


@OPS.register("QLinearConv")
def convert_qlinear_conv(node: Node) -> list[Value]:
    """QLinearConv-10 in 1-D and 2-D; an omitted bias is zeros."""
    ins = [node.input(k) for k in range(8)]
    x, w, props, spatial = conv_window(node, ins[0], ins[3])
    bias = node.opt_input(8)
    if bias is None:
        if w.shape[0] == si.DYN:
            raise node.error("an omitted bias needs a weight with a static output-channel dim")
        bias = Const(np.zeros(w.shape[:1], np.int32), i32, f"{node.name}_bias")
    operands = [x, *ins[1:3], w, *ins[4:8], bias]
    y = node.emit1(gq.QLinearConvOp, operands, props)
    return [_drop_unit_dim(node, y, 2) if spatial == 1 else y]
