"""Models at the opsets before 13 (frontends/onnx/ops_legacy.py): each old operator version
whose attributes became inputs, or whose semantics differ, against ONNX Runtime; and the
refusals of the versions afc does not implement."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import import check_against_ort, error_of, init, make_model, randn, vi  # noqa: E402

F = TensorProto.FLOAT

# (case, node, input shape, output shape, opset, initializers)
CASES = [
    # Softmax/LogSoftmax/Hardmax before 13: over the input flattened to 2-D at axis
    ("softmax-11", helper.make_node("Softmax", ["x"], ["y"]), [2, 3, 4], [2, 3, 4], 11, []),
    (
        "logsoftmax-11-axis2",
        helper.make_node("LogSoftmax", ["x"], ["y"], axis=2),
        [2, 3, 4],
        [2, 3, 4],
        11,
        [],
    ),
    ("hardmax-1", helper.make_node("Hardmax", ["x"], ["y"], axis=1), [2, 3, 4], [2, 3, 4], 7, []),
    # attributes that became inputs in version 13
    ("squeeze-11", helper.make_node("Squeeze", ["x"], ["y"], axes=[1]), [2, 1, 4], [2, 4], 11, []),
    (
        "unsqueeze-1",
        helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0, 3]),
        [2, 3],
        [1, 2, 3, 1],
        9,
        [],
    ),
    (
        "reducesum-11",
        helper.make_node("ReduceSum", ["x"], ["y"], axes=[-1], keepdims=0),
        [2, 3, 4],
        [2, 3],
        11,
        [],
    ),
    (
        "split-11",
        helper.make_node("Split", ["x"], ["y", "z"], axis=1, split=[1, 3]),
        [2, 4],
        [2, 1],
        11,
        [],
    ),
    ("clip-6", helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25), [3, 4], [3, 4], 7, []),
    (
        "pad-2",
        helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 1, 2], value=1.5),
        [2, 3],
        [3, 6],
        7,
        [],
    ),
    ("topk-1", helper.make_node("TopK", ["x"], ["y", "i"], k=2), [3, 5], [3, 2], 7, []),
    (
        "upsample-7",
        helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0]),
        [1, 1, 2, 2],
        [1, 1, 4, 6],
        7,
        [],
    ),
    (
        "resize-10",
        helper.make_node("Resize", ["x", "s"], ["y"], mode="linear"),
        [1, 1, 2, 3],
        [1, 1, 4, 6],
        10,
        [init("s", np.array([1, 1, 2, 2], np.float32))],
    ),
    ("dropout-7", helper.make_node("Dropout", ["x"], ["y"], ratio=0.3), [2, 3], [2, 3], 7, []),
]


@pytest.mark.parametrize(
    ("node", "in_shape", "out_shape", "opset", "inits"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_legacy_version_matches_onnxruntime(
    node: onnx.NodeProto, in_shape: list[int], out_shape: list[int], opset: int, inits: list
) -> None:
    outputs = [vi(o, F, None) for o in node.output]
    if node.op_type == "TopK":
        outputs[1] = vi("i", TensorProto.INT64, None)
    m = make_model([node], [vi("x", F, in_shape)], outputs, inits, opset=opset)
    module = check_against_ort(m, {"x": randn(*in_shape)})
    assert module.attributes["graph.opset"].value.data == opset  # type: ignore[attr-defined]


def test_scatter_9_is_scatter_elements() -> None:
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)
    idx = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    m = make_model(
        [node],
        [vi("x", F, [2, 4]), vi("u", F, [2, 3])],
        [vi("y", F, [2, 4])],
        [init("i", idx)],
        opset=10,
    )
    check_against_ort(m, {"x": randn(2, 4), "u": randn(2, 3)})


def test_version_before_opset_7_is_refused() -> None:
    """Relu-1 (consumed_inputs) is only reached from opsets before 7."""
    node = helper.make_node("Relu", ["x"], ["y"], name="act")
    m = make_model([node], [vi("x", F, [2])], [vi("y", F, [2])], opset=5)
    assert error_of(m) == (
        "node 'act' (Relu-1): operator version 1 is not supported: afc implements versions "
        "6, 13, 14 of Relu; version 1 is only reached from opsets before 7 (convert the "
        "model with onnx.version_converter)"
    )


def test_old_version_that_differs_is_refused_by_name() -> None:
    node = helper.make_node("Slice", ["x"], ["y"], name="cut", starts=[0], ends=[1])
    m = make_model([node], [vi("x", F, [2])], [vi("y", F, [1])], opset=9)
    assert error_of(m) == (
        "node 'cut' (Slice-1): operator version 1 is not supported: Slice-1 takes starts, "
        "ends and axes as attributes (afc implements Slice-10 on)"
    )


def test_batchnorm_7_spatial_0_is_refused() -> None:
    names = ["x", "s", "b", "m", "v"]
    node = helper.make_node("BatchNormalization", names, ["y"], name="bn", spatial=0)
    inits = [init(n, np.ones(3, np.float32)) for n in names[1:]]
    m = make_model([node], [vi("x", F, [1, 3, 2])], [vi("y", F, [1, 3, 2])], inits, opset=7)
    assert "attribute spatial=0 is not supported" in error_of(m)
