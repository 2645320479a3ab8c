"""Attributes a later opset added (frontends/onnx/export_attributes.py): the table agrees
with onnx.defs, an attribute at its old default is left out at older opsets, and any
other value there is a one-line refusal naming the op, the attribute and the opset."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_onnx_export import check, fn, parse  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from frontends.onnx import export_attributes  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402


def _has(op_type: str, opset: int, attribute: str) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return False
    return attribute in schema.attributes


@pytest.mark.parametrize(("op_type", "attribute"), sorted(export_attributes.SINCE))
def test_table_agrees_with_onnx(op_type: str, attribute: str) -> None:
    since = export_attributes.SINCE[op_type, attribute]
    assert _has(op_type, since.opset, attribute)
    assert not _has(op_type, since.opset - 1, attribute)
    for opset in since.values.values():
        assert opset > since.opset


def _node(model: object, op_type: str) -> object:
    return next(n for n in model.graph.node if n.op_type == op_type)  # type: ignore[attr-defined]


def _attributes(model: object, op_type: str) -> dict[str, object]:
    node = _node(model, op_type)
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}  # type: ignore[attr-defined]


SCATTER = fn(
    "%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>",
    '  %r = graph.scatter_elements %x, %i, %u {axis = 1, reduction = "REDUCTION"}'
    " : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>",
    "tensor<3x4xf32>",
)
SCATTER_INPUTS = {"arg1": np.array([[0, 1], [2, 3], [1, 0]], np.int64)}


@pytest.mark.parametrize(("opset", "written"), [(11, False), (15, False), (16, True)])
def test_scatter_reduction_none_is_left_out_before_16(opset: int, written: bool) -> None:
    model = check(SCATTER.replace("REDUCTION", "none"), opset, SCATTER_INPUTS)
    assert ("reduction" in _attributes(model, "ScatterElements")) == written


@pytest.mark.parametrize(
    ("reduction", "opset", "need"), [("add", 11, 16), ("mul", 15, 16), ("max", 17, 18)]
)
def test_scatter_reduction_before_its_opset_is_refused(
    reduction: str, opset: int, need: int
) -> None:
    with pytest.raises(UserError) as info:
        export_module(parse(SCATTER.replace("REDUCTION", reduction)), opset)
    message = str(info.value)
    assert "\n" not in message
    assert (
        f"ScatterElements attribute reduction='{reduction}' needs opset {need}, not {opset}"
        in message
    )


def test_scatter_reduction_from_its_opset_runs() -> None:
    model = check(SCATTER.replace("REDUCTION", "max"), 18, SCATTER_INPUTS)
    assert _attributes(model, "ScatterElements")["reduction"] == b"max"


def _quantize(scale: str) -> str:
    return fn(
        f"%x: tensor<2x4xf32>, %s: tensor<{scale}f32>, %z: tensor<{scale}ui8>",
        "  %r = graph.quantize_linear %x, %s, %z {axis = 1, block_size = 0}"
        f" : (tensor<2x4xf32>, tensor<{scale}f32>, tensor<{scale}ui8>) -> tensor<2x4xui8>",
        "tensor<2x4xui8>",
    )


QUANT_INPUTS = {"arg1": np.float32(0.05), "arg2": np.uint8(128)}


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_per_tensor_quantize_has_no_axis(opset: int) -> None:
    """A scalar scale quantizes per tensor, where ONNX ignores axis: it is not written,
    so QuantizeLinear-10 (opset 11) takes it."""
    model = check(_quantize(""), opset, QUANT_INPUTS)
    assert "axis" not in _attributes(model, "QuantizeLinear")


def test_per_axis_quantize_writes_axis_from_13() -> None:
    inputs = {"arg1": np.float32([0.1, 0.2, 0.3, 0.4]), "arg2": np.uint8([1, 2, 3, 4])}
    model = check(_quantize("4x"), 13, inputs)
    assert _attributes(model, "QuantizeLinear")["axis"] == 1


def test_per_axis_quantize_before_13_is_refused() -> None:
    with pytest.raises(UserError) as info:
        export_module(parse(_quantize("4x")), 11)
    assert str(info.value).endswith(
        "cannot export 'graph.quantize_linear' to ONNX opset 11: "
        "QuantizeLinear attribute axis=1 needs opset 13, not 11"
    )


def test_an_attribute_no_opset_has_is_refused() -> None:
    """An attribute outside the table that the schema lacks is an exporter bug: a clear
    NotExportable, not a model the checker rejects."""
    with pytest.raises(export_attributes.AttributeOpsetError) as info:
        export_attributes.at_opset("Relu", onnx.defs.get_schema("Relu", 17, ""), 17, {"alpha": 1.0})
    assert str(info.value) == "ONNX Relu-14 (opset 17) has no attribute alpha"


# (op, opset, attributes given, attributes written or the refusal's text)
AT_OPSET = [
    ("SpaceToDepth", 27, {"blocksize": 2, "mode": "DCR"}, {"blocksize": 2}),
    ("SpaceToDepth", 28, {"blocksize": 2, "mode": "CRD"}, {"blocksize": 2, "mode": "CRD"}),
    ("SpaceToDepth", 27, {"blocksize": 2, "mode": "CRD"}, "mode='CRD' needs opset 28, not 27"),
    ("Cast", 23, {"to": 1, "round_mode": "up"}, {"to": 1}),
    ("Cast", 23, {"to": 1, "round_mode": "nearest"}, "round_mode='nearest' needs opset 24"),
    ("ArgMax", 11, {"axis": 0, "select_last_index": 1}, "select_last_index=1 needs opset 12"),
    ("Resize", 17, {"mode": "linear", "antialias": 1}, "antialias=1 needs opset 18, not 17"),
    ("RoiAlign", 15, {"coordinate_transformation_mode": "output_half_pixel"}, {}),
    ("RoiAlign", 15, {"coordinate_transformation_mode": "half_pixel"}, "needs opset 16"),
    ("ScatterND", 17, {"reduction": "min"}, "ScatterND attribute reduction='min' needs opset 18"),
]


@pytest.mark.parametrize(("op_type", "opset", "given", "expected"), AT_OPSET)
def test_attributes_at_an_opset(
    op_type: str, opset: int, given: dict[str, object], expected: dict[str, object] | str
) -> None:
    schema = onnx.defs.get_schema(op_type, opset, "")
    if isinstance(expected, dict):
        assert export_attributes.at_opset(op_type, schema, opset, given) == expected
        return
    with pytest.raises(export_attributes.AttributeOpsetError) as info:
        export_attributes.at_opset(op_type, schema, opset, given)
    assert expected in str(info.value) and str(info.value).startswith(op_type)
