"""OptionalHasElement and OptionalGetElement on tensors and omitted inputs
(frontends/onnx/ops_optional.py), against ONNX Runtime; an optional graph input is refused."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import import check_against_ort, error_of, make_model, ops, vi  # noqa: E402

F = TensorProto.FLOAT


def test_has_element_of_an_omitted_input_is_false() -> None:
    node = helper.make_node("OptionalHasElement", [""], ["y"])
    m = make_model([node], [], [vi("y", TensorProto.BOOL, [])], opset=18)
    module = check_against_ort(m, {})
    assert ops(module) == ["graph.constant"]


def test_get_element_of_a_tensor_is_the_tensor() -> None:
    get = helper.make_node("OptionalGetElement", ["x"], ["g"])
    has = helper.make_node("OptionalHasElement", ["x"], ["h"])
    outputs = [vi("g", F, [3]), vi("h", TensorProto.BOOL, [])]
    m = make_model([get, has], [vi("x", F, [3])], outputs, opset=18)
    check_against_ort(m, {"x": np.arange(3, dtype=np.float32)})


def test_optional_input_is_refused() -> None:
    opt = helper.make_tensor_type_proto(F, [3])
    x = helper.make_value_info("x", helper.make_optional_type_proto(opt))
    node = helper.make_node("OptionalHasElement", ["x"], ["y"])
    m = make_model([node], [x], [vi("y", TensorProto.BOOL, [])], opset=18)
    assert error_of(m) == (
        "input 'x' is an optional, not a tensor (afc imports tensor inputs only: it "
        "resolves sequences and optionals at compile time)"
    )
