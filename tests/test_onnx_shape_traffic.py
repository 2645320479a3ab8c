"""bench/onnx_shape_traffic.py: one-rule traffic from shapes agrees with the run-based count."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from model_suite import onnx_node_traffic  # noqa: E402
from onnx_shape_traffic import shape_traffic  # noqa: E402


def _model(nodes: list[Any], domains: tuple[str, ...] = ()) -> object:
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", f32, [2, 4, 8])],
        [helper.make_tensor_value_info("y", f32, None)],
        [helper.make_tensor("w", f32, [16, 8], np.ones(128, np.float32).tolist())],
    )
    opsets = [helper.make_opsetid("", 18)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets)


def test_shapes_agree_with_a_run() -> None:
    model = _model(
        [
            helper.make_node("FusedMatMul", ["x", "w"], ["m"], domain="com.microsoft", transB=1),
            helper.make_node("QuickGelu", ["m"], ["g"], domain="com.microsoft"),
            helper.make_node("ReduceMean", ["g"], ["y"], keepdims=1),
        ],
        ("com.microsoft",),
    )
    feeds = {"x": np.ones((2, 4, 8), np.float32)}
    # x 256 B + w 512 B -> m 2x4x16 (512 B); g 512 B; y 4 B
    expected = (3, (256 + 512 + 512) + (512 + 512) + (512 + 4))
    assert shape_traffic(model) == expected
    assert onnx_node_traffic(model, feeds) == expected


def test_unknown_shape_is_a_one_line_error() -> None:
    model = _model(
        [helper.make_node("Mystery", ["x"], ["y"], domain="ai.nowhere")], ("ai.nowhere",)
    )
    with pytest.raises(ValueError, match=r"^no static shape for 'y' \(Mystery node ''\)$"):
        shape_traffic(model)
