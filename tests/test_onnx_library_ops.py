"""NonMaxSuppression, BitCast, integer Pow, Det and MaxPool with Indices (graph_library
ops): the interpreter against ONNX Runtime and ONNX's reference, the export back to the
same operators, the IR, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from test_onnx_import import (  # noqa: E402
    check_against_ort,
    do_import,
    error_of,
    init,
    make_model,
    ops,
    ort_run,
    vi,
)

from autofusion.interpreter import run_function  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(5)


def nms_model(center: int, limits: dict[str, float]) -> onnx.ModelProto:
    names = ["boxes", "scores", "", "", ""]
    inits = []
    for k, (name, dtype) in enumerate(
        [("max", np.int64), ("iou", np.float32), ("score", np.float32)], start=2
    ):
        if name in limits:
            names[k] = name
            inits.append(init(name, np.array([limits[name]], dtype)))
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    inputs = [vi("boxes", F, [2, 12, 4]), vi("scores", F, [2, 3, 12])]
    return make_model([node], inputs, [vi("y", TensorProto.INT64, None)], inits, opset=11)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize(
    "limits",
    [{"max": 4, "iou": 0.3}, {"max": 12, "iou": 0.5, "score": 0.4}, {"max": 0}, {}],
    ids=["iou", "score", "none", "defaults"],
)
def test_non_max_suppression_matches_onnxruntime(center: int, limits: dict) -> None:
    boxes = RNG.uniform(0, 1, (2, 12, 4)).astype(np.float32)
    scores = np.round(RNG.uniform(0, 1, (2, 3, 12)), 1).astype(np.float32)  # with ties
    m = nms_model(center, limits)
    module = check_against_ort(m, {"boxes": boxes, "scores": scores})
    assert ops(module) == ["graph.non_max_suppression"]
    exported = export_module(module)
    assert [n.op_type for n in exported.graph.node if n.op_type != "Constant"] == [
        "NonMaxSuppression"
    ]
    feeds = {"boxes": boxes, "scores": scores}
    np.testing.assert_array_equal(ort_run(exported, feeds)[0], ort_run(m, feeds)[0])


@pytest.mark.parametrize(
    ("source", "target", "values"),
    [
        (TensorProto.FLOAT, TensorProto.INT32, np.array([[1.5, -0.0], [3e38, -1]], np.float32)),
        (TensorProto.INT64, TensorProto.DOUBLE, np.array([1, -2, 2**62], np.int64)),
        (TensorProto.FLOAT16, TensorProto.UINT16, np.array([0.5, -65504], np.float16)),
        (TensorProto.INT8, TensorProto.BOOL, np.array([0, 1, 1, 0], np.int8)),
    ],
)
def test_bit_cast_matches_reference_and_exports(source: int, target: int, values) -> None:
    node = helper.make_node("BitCast", ["x"], ["y"], to=target)
    m = make_model([node], [vi("x", source, list(values.shape))], [vi("y", target, None)], opset=26)
    module = do_import(m)
    got = run_function(module, {"x": values})["y"]
    want = ReferenceEvaluator(m).run(None, {"x": values})[0]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    exported = export_module(module, opset=26)
    assert [n.op_type for n in exported.graph.node] == ["BitCast"]


def test_refusals() -> None:
    node = helper.make_node("BitCast", ["x"], ["y"], name="bits", to=TensorProto.INT64)
    m = make_model([node], [vi("x", F, [2])], [vi("y", TensorProto.INT64, None)], opset=26)
    assert (
        error_of(m) == "node 'bits' (BitCast-26): BitCast needs types of one width, got f32 and i64"
    )
    node = helper.make_node("NonMaxSuppression", ["b", "s", "m"], ["y"], name="nms")
    inputs = [vi("b", F, [1, 3, 4]), vi("s", F, [1, 1, 3]), vi("m", TensorProto.INT64, [1])]
    m = make_model([node], inputs, [vi("y", TensorProto.INT64, None)], opset=11)
    assert error_of(m).startswith(
        "node 'nms' (NonMaxSuppression-11): max_output_boxes_per_class (input #2) must be a "
        "constant"
    )


@pytest.mark.parametrize(
    ("base", "exponent"),
    [
        (np.array([[1, -2, 3], [4, 5, -6]], np.int32), np.array([3, 2, 0], np.int32)),
        (np.array([2, 3, -5], np.int64), np.array([[10], [3]], np.int64)),
        (np.array([2, 3, 9], np.int64), np.array([0.5, 2.0, 1.5], np.float32)),
    ],
)
def test_int_pow_matches_onnxruntime(base: np.ndarray, exponent: np.ndarray) -> None:
    types = {np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}
    types[np.dtype(np.float32)] = F
    inputs = [vi("x", types[base.dtype], list(base.shape))]
    inputs.append(vi("y", types[exponent.dtype], list(exponent.shape)))
    node = helper.make_node("Pow", ["x", "y"], ["z"])
    m = make_model([node], inputs, [vi("z", types[base.dtype], None)], opset=15)
    module = check_against_ort(m, {"x": base, "y": exponent})
    assert ops(module) == ["graph.int_pow"]
    exported = export_module(module)
    feeds = {"x": base, "y": exponent}
    np.testing.assert_array_equal(ort_run(exported, feeds)[0], ort_run(m, feeds)[0])


def test_int_pow_negative_exponent_truncates() -> None:
    from autofusion.interpreter.graph_library import int_pow

    got = int_pow(np.array([2, 1, -1, -1], np.int32), np.array([-1, -3, -3, -2], np.int32))
    np.testing.assert_array_equal(got, np.array([0, 1, -1, 1], np.int32))


def test_det_matches_onnxruntime_and_exports() -> None:
    node = helper.make_node("Det", ["x"], ["y"])
    m = make_model([node], [vi("x", F, [2, 3, 4, 4])], [vi("y", F, None)], opset=22)
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    module = check_against_ort(m, {"x": x})
    assert ops(module) == ["graph.det"]
    assert [n.op_type for n in export_module(module).graph.node] == ["Det"]


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ([2, 3, 7, 6], {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 1]}),
        ([1, 2, 6, 7], {"kernel_shape": [2, 3], "dilations": [2, 1], "storage_order": 1}),
        ([1, 2, 5, 5], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
        ([2, 3, 9], {"kernel_shape": [3], "pads": [1, 1], "strides": [2]}),
    ],
    ids=["pads", "column_major", "ceil", "1d"],
)
def test_max_pool_indices_match_onnxruntime_and_export(shape: list[int], attrs: dict) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    outputs = [vi("y", F, None), vi("i", TensorProto.INT64, None)]
    m = make_model([node], [vi("x", F, shape)], outputs, opset=12)
    # integers in a small range, so windows hold ties (the first maximum wins)
    x = RNG.integers(-3, 3, shape).astype(np.float32)
    module = check_against_ort(m, {"x": x})
    assert "graph.max_pool2d_with_indices" in ops(module)
    exported = export_module(module)
    assert [n.op_type for n in exported.graph.node if n.op_type == "MaxPool"] == ["MaxPool"]
    for got, want in zip(ort_run(exported, {"x": x}), ort_run(m, {"x": x})):
        np.testing.assert_array_equal(got, want)


def test_max_pool_indices_refusals() -> None:
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2, 2, 2])
    outputs = [vi("y", F, None), vi("i", TensorProto.INT64, None)]
    m = make_model([node], [vi("x", F, [1, 1, 4, 4, 4])], outputs, opset=12)
    assert error_of(m) == (
        "node 'mp' (MaxPool-12): the Indices output of a 3-D MaxPool is not supported"
    )
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2, 2])
    node.attribute.append(helper.make_attribute("storage_order", 2))
    m = make_model([node], [vi("x", F, [1, 1, 4, 4])], outputs, opset=12)
    assert "storage_order" in error_of(m)


@pytest.mark.parametrize(
    ("cache", "update", "attrs", "start"),
    [
        ([2, 3, 6, 4], [2, 3, 2, 4], {}, [0, 4]),
        ([2, 3, 6, 4], [2, 3, 3, 4], {"mode": "circular"}, [5, 2]),
        ([3, 5, 2], [3, 5, 2], {"axis": 1}, None),
        ([2, 5, 3, 2], [2, 2, 3, 2], {"axis": 1, "mode": "circular"}, [4, 1]),
    ],
    ids=["linear", "circular", "no_indices", "axis1"],
)
def test_tensor_scatter_matches_reference_and_exports(
    cache: list[int], update: list[int], attrs: dict, start: list[int] | None
) -> None:
    names = ["past", "update"] + ([] if start is None else ["where"])
    node = helper.make_node("TensorScatter", names, ["present"], **attrs)
    inputs = [vi("past", F, cache), vi("update", F, update)]
    feeds = {"past": RNG.standard_normal(cache).astype(np.float32)}
    feeds["update"] = RNG.standard_normal(update).astype(np.float32)
    if start is not None:
        inputs.append(vi("where", TensorProto.INT64, [len(start)]))
        feeds["where"] = np.array(start, np.int64)
    m = make_model([node], inputs, [vi("present", F, None)], opset=24)
    module = do_import(m)
    assert ops(module) == ["graph.tensor_scatter"]
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    np.testing.assert_array_equal(ort_run(m, feeds)[0], want)
    np.testing.assert_array_equal(run_function(module, feeds)["present"], want)
    exported = export_module(module, opset=24)
    assert [n.op_type for n in exported.graph.node] == ["TensorScatter"]
    np.testing.assert_array_equal(ort_run(exported, feeds)[0], want)


def test_tensor_scatter_refusals() -> None:
    from xdsl.utils.exceptions import InterpretationError

    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"], name="ts", mode="ring")
    inputs = [vi("c", F, [2, 4, 3]), vi("u", F, [2, 1, 3]), vi("w", TensorProto.INT64, [2])]
    m = make_model([node], inputs, [vi("y", F, None)], opset=24)
    assert "mode" in error_of(m) and "ring" in error_of(m)
    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"], name="ts")
    m = make_model([node], inputs, [vi("y", F, None)], opset=24)
    feeds = {"c": np.zeros((2, 4, 3), np.float32), "u": np.ones((2, 1, 3), np.float32)}
    feeds["w"] = np.array([1, 4], np.int64)  # linear: position 4 is past the cache
    with pytest.raises(InterpretationError, match="leaves the cache's 4 positions"):
        run_function(do_import(m), feeds)


TFIDF_POOL = {  # unigrams 2, 3, 5, 4; bigrams (5, 6), (7, 8), (6, 7); trigram (3, 3, 7)
    "ngram_counts": [0, 4, 10],
    "ngram_indexes": [0, 1, 2, 3, 4, 5, 6, 7],
    "pool_int64s": [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 3, 3, 7],
}


@pytest.mark.parametrize(
    ("attrs", "tokens"),
    [
        ({"mode": "TF", "min_gram_length": 1, "max_gram_length": 3, "max_skip_count": 2}, 64),
        ({"mode": "IDF", "min_gram_length": 2, "max_gram_length": 3, "max_skip_count": 1}, 64),
        (
            {"mode": "TFIDF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 3},
            32,
        ),
        (
            {"mode": "IDF", "min_gram_length": 1, "max_gram_length": 3, "max_skip_count": 0},
            32,
        ),
    ],
    ids=["tf_trigrams", "idf_unweighted", "tfidf_weighted", "idf_weighted"],
)
def test_tfidf_vectorizer_matches_onnxruntime_and_exports(attrs: dict, tokens: int) -> None:
    elem = TensorProto.INT64 if tokens == 64 else TensorProto.INT32
    weighted = attrs["mode"] != "TF" and tokens == 32
    weights = {"weights": [0.5, 1.0, 2.0, 0.25, 3.0, 1.5, 0.75, 4.0]} if weighted else {}
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs, **TFIDF_POOL, **weights)
    m = make_model([node], [vi("x", elem, [3, 10])], [vi("y", F, None)], opset=9)
    x = RNG.integers(2, 9, (3, 10)).astype(np.int64 if tokens == 64 else np.int32)
    module = check_against_ort(m, {"x": x})
    assert ops(module) == ["graph.tfidf_vectorizer"]
    exported = export_module(module)
    assert [n.op_type for n in exported.graph.node] == ["TfIdfVectorizer"]
    np.testing.assert_array_equal(ort_run(exported, {"x": x})[0], ort_run(m, {"x": x})[0])


def test_tfidf_vectorizer_refusals() -> None:
    attrs = {"mode": "BM25", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0}
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attrs, **TFIDF_POOL)
    m = make_model([node], [vi("x", TensorProto.INT64, [4])], [vi("y", F, None)], opset=9)
    assert error_of(m) == (
        "node 'tfidf' (TfIdfVectorizer-9): mode 'BM25' is not one of TF, IDF, TFIDF"
    )
