"""3-D MaxPool and AveragePool (graph.max_pool3d / avg_pool3d) and 2-D AveragePool with
dilations (graph.avg_pool2d's dilations), each exported back as itself, against ONNX
Runtime, over the window attributes: pads, strides, dilations, ceil_mode,
count_include_pad and auto_pad."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import import check_against_ort, compiled_ops, make_model, ops, ort_run, vi  # noqa: E402

from frontends.onnx.export import export_module  # noqa: E402

F = TensorProto.FLOAT

WINDOWS = [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [3, 3, 2], "strides": [2, 2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 3, 3], "auto_pad": "SAME_UPPER", "strides": [1, 2, 2]},
]


@pytest.mark.parametrize("window", WINDOWS, ids=range(len(WINDOWS)))
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "AveragePool-count-pad"])
def test_pool_3d_matches_onnxruntime(op: str, window: dict) -> None:
    attrs = dict(window)
    if op == "AveragePool-count-pad":
        op, attrs["count_include_pad"] = "AveragePool", 1
    if op == "MaxPool" and "auto_pad" not in attrs:
        attrs["dilations"] = [1, 2, 1]
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    m = make_model([node], [vi("x", F, [2, 3, 7, 6, 8])], [vi("y", F, None)], opset=19)
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 6, 8)).astype(np.float32)
    module = check_against_ort(m, {"x": x})
    assert ops(module) == ["graph.max_pool3d" if op == "MaxPool" else "graph.avg_pool3d"]
    exported = export_module(module)
    assert [n.op_type for n in exported.graph.node] == [op]
    np.testing.assert_allclose(ort_run(exported, {"x": x})[0], ort_run(m, {"x": x})[0], rtol=1e-6)


@pytest.mark.parametrize("window", WINDOWS[:3], ids=range(3))
@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("rank", [2, 3])
def test_dilated_average_pool_matches_onnxruntime(
    window: dict, include_pad: int, rank: int
) -> None:
    attrs = {
        k: v[3 - rank :] if isinstance(v, list) and len(v) == 3 else v for k, v in window.items()
    }
    if "pads" in attrs:
        attrs["pads"] = window["pads"][3 - rank : 3] + window["pads"][6 - rank :]
    attrs["dilations"] = [2] * rank
    node = helper.make_node("AveragePool", ["x"], ["y"], count_include_pad=include_pad, **attrs)
    shape = [2, 3, 9, 8, 10][: 2 + rank]
    m = make_model([node], [vi("x", F, shape)], [vi("y", F, None)], opset=19)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    module = check_against_ort(m, {"x": x})
    assert ops(module) == [f"graph.avg_pool{rank}d"]
    exported = export_module(module, opset=19)
    (pool,) = exported.graph.node
    assert pool.op_type == "AveragePool"
    dilations = next(a for a in pool.attribute if a.name == "dilations")
    assert helper.get_attribute_value(dilations) == [2] * rank
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(ort_run(exported, {"x": x})[0], want, rtol=1e-6)


def test_dilated_average_pool_2d_keeps_symbolic_dims() -> None:
    """The dilated 2-D pool is one graph.avg_pool2d, so symbolic dims need no probe."""
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], dilations=[2, 3])
    m = make_model([node], [vi("x", F, ["N", 3, "H", 11])], [vi("y", F, None)], opset=19)
    x = np.random.default_rng(5).standard_normal((2, 3, 9, 11)).astype(np.float32)
    module = check_against_ort(m, {"x": x})
    assert ops(module) == ["graph.avg_pool2d"]


def test_dilated_average_pool_2d_compiles_as_a_library_op(tmp_path: Path) -> None:
    """No kernel template pools: `afc compile --check` keeps the dilated graph.avg_pool2d a
    library op (run with its dilations), fuses the ops around it, and fused.onnx writes
    AveragePool with the dilations back."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[3, 3], dilations=[2, 1]),
        helper.make_node("Sigmoid", ["p"], ["y"]),
    ]
    m = make_model(nodes, [vi("x", F, [1, 4, 9, 8])], [vi("y", F, None)], opset=19)
    (pool,) = [op for op in compiled_ops(tmp_path, m) if op.name == "graph.avg_pool2d"]
    assert list(pool.properties["dilations"].get_values()) == [2, 1]
