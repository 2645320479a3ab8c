"""IREE's dispatch count and traffic for the bench (bench/iree_dispatches.py).

The parser runs on a checked-in cut of flow-level IR; the end-to-end tests run IREE
(the `bench` extra) on onnx.helper models and are skipped when it is not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import iree_dispatches  # noqa: E402
from iree_dispatches import Dispatch, IreeError, parse_dispatches, type_bytes  # noqa: E402

SNIPPET = Path(__file__).with_name("iree_flow_dispatches.mlir")


def test_parse_checked_in_flow_ir() -> None:
    dispatches = parse_dispatches(SNIPPET.read_text())
    assert dispatches == [
        # 4x8 and 8x16 f32 read, 4x16 f32 written
        Dispatch("@g$async_dispatch_0::@g$async_dispatch_0_matmul_4x16x8_f32", 640, 256),
        # an i1 takes a byte; the result tied to %2 writes %2's 4x16 f32
        Dispatch("@ex1::@mask", 256 + 64, 256),
        # two results: 4x8 f16 and 4x8 bf16
        Dispatch("@ex2::@split", 256, 64 + 64),
    ]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("tensor<2x3xf16>", 12),
        ("tensor<7xi1>", 7),
        ("tensor<4xi4>", 2),
        ("tensor<2x2xcomplex<f32>>", 32),
        ("tensor<8xf32, #enc<a, b>>", 32),
        ("tensor<f64>", 8),
        ("index", 8),
    ],
)
def test_type_bytes(text: str, size: int) -> None:
    assert type_bytes(text) == size


def test_dynamic_dims_are_refused() -> None:
    line = "%1 = flow.dispatch @e::@f(%0, %d) : (tensor<?x4xf32>{%d}, index) -> tensor<4xf32>"
    with pytest.raises(IreeError, match=r"dynamic dimension in tensor<\?x4xf32>"):
        parse_dispatches(line)


def test_tied_result_must_name_an_operand() -> None:
    line = "%1 = flow.dispatch @e::@f(%0) : (tensor<4xf32>) -> %9"
    with pytest.raises(IreeError, match="tied result %9 is not an operand"):
        parse_dispatches(line)


def _model(
    nodes: list[Any], inputs: dict[str, list[int]], output: list[int], domain: str = ""
) -> object:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, f32, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", f32, output)],
    )
    opsets = [helper.make_opsetid("", 18)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    onnx.checker.check_model(model)
    return model


requires_iree = pytest.mark.skipif(
    iree_dispatches.missing_reason() is not None,
    reason=f"IREE: {iree_dispatches.missing_reason()} (the bench extra)",
)


@requires_iree
def test_iree_fuses_matmul_bias_relu_into_one_dispatch() -> None:
    from onnx import helper

    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    model = _model(nodes, {"x": [4, 8], "w": [8, 16], "b": [16]}, [4, 16])
    # reads x, w, b and writes y once, f32: (32 + 128 + 16 + 64) * 4
    assert iree_dispatches.dispatch_traffic(model) == (1, 960)


@requires_iree
def test_iree_dispatches_around_transposed_softmax() -> None:
    from onnx import helper

    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
        helper.make_node("Softmax", ["t"], ["s"], axis=0),
        helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0]),
    ]
    model = _model(nodes, {"x": [4, 8], "w": [8, 16]}, [4, 16])
    # matmul+relu (x, w -> 4x16); the transpose with the softmax's max; the rest:
    # (128 + 512 + 256) + (256 + 256) + (256 + 256)
    assert iree_dispatches.dispatch_traffic(model) == (3, 1920)


@requires_iree
def test_iree_failure_is_one_line_reason() -> None:
    from onnx import helper

    # a custom-domain op IREE's importer has no lowering for
    nodes = [helper.make_node("NoSuchOp", ["x"], ["y"], domain="ai.nowhere")]
    model = _model(nodes, {"x": [4, 16]}, [4, 16], domain="ai.nowhere")
    with pytest.raises(
        IreeError, match=r"^iree-compile failed: no lowering for onnx.NoSuchOp$"
    ) as info:
        iree_dispatches.dispatch_traffic(model)
    assert "\n" not in str(info.value)
