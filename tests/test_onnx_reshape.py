"""Reshape-14's allowzero: a 0 in the shape is a zero dim (not a copied one), against ONNX
Runtime, and the refusals of what allowzero=1 forbids or afc cannot tell at import."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import import (  # noqa: E402
    check_against_ort,
    error_of,
    init,
    make_model,
    ops,
    ort_run,
    vi,
)

from frontends.onnx.export import export_module  # noqa: E402

F = TensorProto.FLOAT


def reshape_model(x_shape: list[int | str], shape: list[int], allowzero: int) -> onnx.ModelProto:
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="r", allowzero=allowzero)
    inits = [init("shape", np.array(shape, np.int64))]
    return make_model([node], [vi("x", F, x_shape)], [vi("y", F, None)], inits, opset=14)


@pytest.mark.parametrize(
    ("x_shape", "shape", "want"),
    [([0, 3, 4], [3, 4, 0], (3, 4, 0)), ([2, 0, 5], [0, 7], (0, 7)), ([2, 3, 4], [4, -1], (4, 6))],
    ids=["reordered", "fewer_dims", "no_zero"],
)
def test_allowzero_matches_onnxruntime(x_shape: list[int], shape: list[int], want: tuple) -> None:
    x = np.arange(int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    module = check_against_ort(reshape_model(x_shape, shape, 1), {"x": x})
    if 0 in want:  # no elements: the result is the empty constant
        assert "graph.reshape" not in ops(module)
    (got,) = ort_run(export_module(module), {"x": x})
    assert got.shape == want


def test_allowzero_zero_copies_without_it() -> None:
    # the same shape with allowzero=0: the 0 copies the input's dim 2 (4)
    x = np.zeros((0, 3, 4), np.float32)
    module = check_against_ort(reshape_model([0, 3, 4], [3, 0, -1], 0), {"x": x})
    assert ops(module) == ["graph.reshape"]


def test_allowzero_refusals() -> None:
    assert error_of(reshape_model([0, 3], [0, -1], 1)) == (
        "node 'r' (Reshape-14): shape [0, -1] has both 0 and -1, which allowzero=1 forbids"
    )
    assert error_of(reshape_model([2, 3], [3, 0], 1)).startswith(
        "node 'r' (Reshape-14): cannot reshape 2x3 into [3, 0]"
    )
    assert "allowzero=2" in error_of(reshape_model([2, 3], [3, 2], 2))
