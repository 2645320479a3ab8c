"""ONNX's fused (Attention, RMSNormalization, RotaryEmbedding), indexing and normalization
operators: every backend node case of these op types through the importer and the
interpreter, and ONNX Runtime on small onnx.helper-built models.

A case passes or is refused with the reason listed in REFUSED; nothing is skipped silently.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_backend_nodes import _arrays, _cases, _check, _import  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402

OP_TYPES = frozenset(
    [
        "Attention",
        "RMSNormalization",
        "RotaryEmbedding",
        "GatherElements",
        "ScatterElements",
        "ScatterND",
        "OneHot",
        "ReverseSequence",
        "Compress",
        "NonZero",
        "Unique",
        "GroupNormalization",
        "InstanceNormalization",
        "MeanVarianceNormalization",
        "LpNormalization",
        "LRN",
    ]
)

# case -> the text of the importer's refusal
REFUSED = {
    # afc's attention computes its softmax in float32, not float64
    "test_attention_local_window_gqa_rank4_mask": "softmax_precision='DOUBLE' is not supported",
}

# graph.flash_attention rounds once from float32; ONNX's reference rounds Q * sqrt(scale),
# the scores and the probabilities to bf16 on the way, which moves results by up to two
# bf16 ulps (2**-7 relative each). afc's result is the closer one: on
# test_attention_4d_causal_bf16 it is within 0.0020 of the float64 attention of the same
# bf16 inputs, the reference within 0.0044.
BF16_ATTENTION = (2.0**-6, 2.0**-8)


def _selected() -> list[str]:
    return sorted(
        name
        for name, (model, _, _) in _cases().items()
        if {n.op_type for n in model.graph.node} & OP_TYPES
    )


@pytest.mark.parametrize("name", _selected())
def test_backend_node(name: str) -> None:
    model, raw_inputs, raw_outputs = _cases()[name]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    inputs, outputs = _arrays(raw_inputs), _arrays(raw_outputs)
    if name in REFUSED:
        with pytest.raises(UserError, match=REFUSED[name].replace("(", r"\(")):
            _import(model, inputs)
        return
    module, feeds = _import(model, inputs)
    results = run_function(module, feeds)  # type: ignore[arg-type]
    assert len(results) == len(outputs)
    for (out_name, got), want in zip(results.items(), outputs):
        if "attention" in name and "bf16" in name:
            np.testing.assert_allclose(got, want, *BF16_ATTENTION, err_msg=name)
        else:
            _check(f"{name}:{out_name}", got, want)


def test_refusals_name_real_cases() -> None:
    assert set(REFUSED) - set(_selected()) == set()


# --------------------------------------------------------------------------------------
# ONNX Runtime on onnx.helper-built models
# --------------------------------------------------------------------------------------

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(node, inputs, outputs, opset):
    g = helper.make_graph([node], "m", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _against_ort(model, feeds, rtol=1e-5, atol=1e-5) -> None:
    module = import_onnx_model(default_context(), model, "m")
    got = run_function(module, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got.values(), want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


RNG = np.random.default_rng(11)


def test_kv_cache_update_scatter_nd_matches_ort() -> None:
    """A cache write: ScatterND replaces the [8, 16] slice of (batch, head) (0, 3) and (1, 1)."""
    node = helper.make_node("ScatterND", ["cache", "pos", "rows"], ["out"])
    model = _model(
        node,
        [_vi("cache", F, [2, 4, 8, 16]), _vi("pos", I64, [2, 1, 2]), _vi("rows", F, [2, 1, 8, 16])],
        [_vi("out", F, [2, 4, 8, 16])],
        18,
    )
    feeds = {
        "cache": RNG.standard_normal((2, 4, 8, 16)).astype(np.float32),
        "pos": np.array([[[0, 3]], [[1, 1]]], np.int64),
        "rows": RNG.standard_normal((2, 1, 8, 16)).astype(np.float32),
    }
    _against_ort(model, feeds)


def test_gather_and_scatter_elements_match_ort() -> None:
    for node, extra in (
        (helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1), None),
        (
            helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="max"),
            "u",
        ),
    ):
        inputs = [_vi("x", F, [3, 5]), _vi("i", I64, [3, 4])]
        feeds = {
            "x": RNG.standard_normal((3, 5)).astype(np.float32),
            "i": RNG.integers(-5, 5, (3, 4)).astype(np.int64),
        }
        if extra:
            inputs.append(_vi("u", F, [3, 4]))
            feeds["u"] = RNG.standard_normal((3, 4)).astype(np.float32)
        shape = [3, 5] if extra else [3, 4]
        _against_ort(_model(node, inputs, [_vi("y", F, shape)], 18), feeds)


def test_attention_with_cache_matches_ort() -> None:
    """Attention-23 decode step: GQA, a KV cache and the causal frontier it offsets."""
    node = helper.make_node(
        "Attention",
        ["q", "k", "v", "", "pk", "pv"],
        ["y", "present_k", "present_v"],
        is_causal=1,
    )
    model = _model(
        node,
        [
            _vi("q", F, [1, 4, 2, 8]),
            _vi("k", F, [1, 2, 2, 8]),
            _vi("v", F, [1, 2, 2, 8]),
            _vi("pk", F, [1, 2, 5, 8]),
            _vi("pv", F, [1, 2, 5, 8]),
        ],
        [
            _vi("y", F, [1, 4, 2, 8]),
            _vi("present_k", F, [1, 2, 7, 8]),
            _vi("present_v", F, [1, 2, 7, 8]),
        ],
        23,
    )
    shapes = {
        "q": (1, 4, 2, 8),
        "k": (1, 2, 2, 8),
        "v": (1, 2, 2, 8),
        "pk": (1, 2, 5, 8),
        "pv": (1, 2, 5, 8),
    }
    feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    _against_ort(model, feeds)


@pytest.mark.parametrize(
    "node, shape",
    [
        (
            helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2),
            [2, 4, 3, 3],
        ),
        (helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"]), [2, 4, 3, 3]),
        (helper.make_node("LRN", ["x"], ["y"], size=3, alpha=0.01), [2, 4, 3, 3]),
    ],
)
def test_normalizations_match_ort(node, shape) -> None:
    inputs = [_vi("x", F, shape)]
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}
    if node.op_type != "LRN":
        inputs += [_vi("s", F, [4]), _vi("b", F, [4])]
        feeds["s"] = RNG.standard_normal(4).astype(np.float32)
        feeds["b"] = RNG.standard_normal(4).astype(np.float32)
    _against_ort(_model(node, inputs, [_vi("y", F, shape)], 21), feeds, 1e-4, 1e-5)


# --------------------------------------------------------------------------------------
# Export back to the same operators
# --------------------------------------------------------------------------------------


def _exported_matches_ort(model, feeds, parts: bool = False) -> onnx.ModelProto:
    """Import `model`, export it again, and compare ONNX Runtime on both; with `parts`,
    the export writes what the nodes became (their origins dropped)."""
    from frontends.onnx import origin
    from frontends.onnx.export import export_module

    module = import_onnx_model(default_context(), model, "m")
    if parts:
        origin.forget(module)
    exported = export_module(module)
    runs = []
    for m in (model, exported):
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        runs.append(sess.run(None, feeds))
    for got, want in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return exported


def test_attention_exports_as_attention() -> None:
    """graph.flash_attention (BSND from 3-D inputs, softcap, a boolean mask) is Attention-23
    again at opset 23."""
    node = helper.make_node(
        "Attention", ["q", "k", "v", "m"], ["y"], q_num_heads=4, kv_num_heads=2, softcap=5.0
    )
    model = _model(
        node,
        [
            _vi("q", F, [2, 3, 32]),
            _vi("k", F, [2, 5, 16]),
            _vi("v", F, [2, 5, 16]),
            _vi("m", TensorProto.BOOL, [3, 5]),
        ],
        [_vi("y", F, [2, 3, 32])],
        23,
    )
    feeds = {
        "q": RNG.standard_normal((2, 3, 32)).astype(np.float32),
        "k": RNG.standard_normal((2, 5, 16)).astype(np.float32),
        "v": RNG.standard_normal((2, 5, 16)).astype(np.float32),
        "m": RNG.random((3, 5)) < 0.7,
    }
    exported = _exported_matches_ort(model, feeds)
    assert [n.op_type for n in exported.graph.node].count("Attention") == 1
    assert not exported.functions


@pytest.mark.parametrize(
    "op_type, attrs",
    [("GatherElements", {"axis": 0}), ("ScatterElements", {"axis": 1, "reduction": "add"})],
)
def test_indexing_exports_as_itself(op_type: str, attrs: dict) -> None:
    scatter = op_type.startswith("Scatter")
    ins = ["x", "i", "u"] if scatter else ["x", "i"]
    node = helper.make_node(op_type, ins, ["y"], **attrs)
    inputs = [_vi("x", F, [4, 3]), _vi("i", I64, [2, 3])]
    feeds = {
        "x": RNG.standard_normal((4, 3)).astype(np.float32),
        "i": RNG.integers(0, 3, (2, 3)).astype(np.int64),
    }
    if scatter:
        inputs.append(_vi("u", F, [2, 3]))
        feeds["u"] = RNG.standard_normal((2, 3)).astype(np.float32)
    out = _vi("y", F, [4, 3] if scatter else [2, 3])
    exported = _exported_matches_ort(_model(node, inputs, [out], 18), feeds)
    assert [n.op_type for n in exported.graph.node] == [op_type]


def test_group_normalization_18_per_group_scale_matches_reference() -> None:
    """GroupNormalization-18 scales per group ([G]); afc gathers them per channel."""
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    shape = [2, 6, 3]
    model = _model(
        node,
        [_vi("x", F, shape), _vi("s", F, [2]), _vi("b", F, [2])],
        [_vi("y", F, shape)],
        18,
    )
    feeds = {
        "x": RNG.standard_normal(shape).astype(np.float32),
        "s": np.array([0.5, 2.0], np.float32),
        "b": np.array([1.0, -1.0], np.float32),
    }
    got = run_function(import_onnx_model(default_context(), model, "m"), feeds)["y"]
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_rms_normalization_with_a_scale_of_another_type() -> None:
    """X f16, scale f32: Y is f32 (the scale's type V), normalized in float32."""
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("RMSNormalization", ["x", "w"], ["y"])
    model = _model(
        node, [_vi("x", TensorProto.FLOAT16, [2, 8]), _vi("w", F, [8])], [_vi("y", F, [2, 8])], 23
    )
    feeds = {
        "x": RNG.standard_normal((2, 8)).astype(np.float16),
        "w": RNG.standard_normal(8).astype(np.float32),
    }
    got = run_function(import_onnx_model(default_context(), model, "m"), feeds)["y"]
    assert got.dtype == np.float32
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    # the reference normalizes in float16 before the float32 scale; afc in float32
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "rank, interleaved", [(4, 0), (4, 1), (3, 0), (3, 1)], ids=["bhsd", "bhsd-il", "3d", "3d-il"]
)
def test_rotary_embedding_exports_as_rotary_embedding(rank: int, interleaved: int) -> None:
    """graph.rope (full-width cos/sin) is RotaryEmbedding-23 again: one call per half of
    each feature pair; a symbolic sequence length stays symbolic."""
    attrs = {"interleaved": interleaved} | ({"num_heads": 2} if rank == 3 else {})
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], **attrs)
    x_shape = [1, 2, "S", 8] if rank == 4 else [1, "S", 16]
    model = _model(
        node,
        [
            _vi("x", F, x_shape),
            _vi("cos", F, [16, 4]),
            _vi("sin", F, [16, 4]),
            _vi("pos", I64, [1, "S"]),
        ],
        [_vi("y", F, x_shape)],
        23,
    )
    s = 5
    angles = RNG.uniform(-3, 3, (16, 4))
    feeds = {
        "x": RNG.standard_normal([1, 2, s, 8] if rank == 4 else [1, s, 16]).astype(np.float32),
        "cos": np.cos(angles).astype(np.float32),
        "sin": np.sin(angles).astype(np.float32),
        "pos": RNG.integers(0, 16, (1, s)).astype(np.int64),
    }
    exported = _exported_matches_ort(model, feeds)
    assert [n.op_type for n in exported.graph.node] == ["RotaryEmbedding"]
    exported = _exported_matches_ort(model, feeds, parts=True)
    assert [n.op_type for n in exported.graph.node].count("RotaryEmbedding") == 2
    assert not exported.functions


def test_constant_indexing_ops_fold_at_import() -> None:
    """Known inputs fold with the interpreter's semantics: NonZero of an initializer
    (a data-dependent dim) becomes a constant of its actual size, feeding a Gather."""
    x = np.array([[0, 3], [5, 0], [0, 7]], np.float32)
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Gather", ["d", "nz"], ["y"], axis=0),
    ]
    graph_ = helper.make_graph(
        nodes,
        "m",
        [_vi("d", F, [3])],
        [_vi("y", F, [2, 3])],
        [onnx.numpy_helper.from_array(x, "x")],
    )
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    module = import_onnx_model(default_context(), model, "m")
    text = str(module)
    assert "graph.non_zero" not in text and "graph.gather" in text
    d = np.array([10, 20, 30], np.float32)
    got = run_function(module, {"d": d})["y"]
    np.testing.assert_array_equal(got, d[np.array(np.nonzero(x))])
