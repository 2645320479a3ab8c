"""The ONNX importer: real models against ONNX Runtime, and unit cases for each feature.

Numerics: the interpreter's outputs of the imported graph are compared with ONNX
Runtime (all graph optimizations off) with `assert_allclose(rtol=1e-4, atol=1e-5)`: a
1e-4 relative error, and an absolute floor of 1e-5 for values near zero (outputs are
O(1): layer-normed hidden states, logits, softmax), where float32 reassociation in the
interpreter's reductions differs from ORT's by a few ulp of the larger terms.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.ir import Operation  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import graph  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context, module_to_text  # noqa: E402
from frontends.onnx import import_onnx_file, import_onnx_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_corpus  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
F = TensorProto.FLOAT
I64 = TensorProto.INT64


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto] = (),  # type: ignore[assignment]
    opset: int = 18,
) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    # IR version 8 is what opsets 13-18 came with (onnxruntime rejects the newest)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name: str, elem: int, shape: list[int | str | None] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def do_import(model: onnx.ModelProto, **kw: object) -> ModuleOp:
    return import_onnx_model(default_context(), model, "test", **kw)  # type: ignore[arg-type]


def error_of(model: onnx.ModelProto, **kw: object) -> str:
    with pytest.raises(UserError) as info:
        do_import(model, **kw)
    message = str(info.value)
    assert "\n" not in message
    return message


def ort_run(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = model if isinstance(model, str) else model.SerializeToString()
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)  # type: ignore[return-value]


def check_against_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> ModuleOp:
    module = do_import(model)
    got = list(run_function(module, feeds).values())
    want = ort_run(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return module


def compiled_ops(tmp_path: Path, model: onnx.ModelProto) -> list[Operation]:
    """The ops of the fused module of `afc compile --check` on `model` (the check passed:
    interpreter, buffer kernels and fused.onnx on ONNX Runtime against the original)."""
    from autofusion.driver.compile import CompileOptions, compile_model

    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    c = compile_model(str(path), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check["verdict"]
    assert c.fused is not None
    return list(c.fused.walk())


def ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------------------
# the real-model corpus
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "exporter"), model_corpus.entries())
def test_corpus_matches_onnxruntime(model: str, exporter: str) -> None:
    path = model_corpus.model_path(model, exporter)
    feeds = model_corpus.model_inputs(model)
    module = import_onnx_file(default_context(), path)
    model_corpus.assert_matches_ort(module, path, feeds, (RTOL, ATOL), f"{model}/{exporter}")


def test_corpus_resnet_variants_differ_in_batch_norm() -> None:
    """`resnet` keeps BatchNormalization under both exporters; `resnet_fused` has none."""
    for exporter in model_corpus.EXPORTERS:
        with_bn = import_onnx_file(default_context(), model_corpus.model_path("resnet", exporter))
        fused = import_onnx_file(
            default_context(), model_corpus.model_path("resnet_fused", exporter)
        )
        assert "graph.batch_norm" in ops(with_bn)
        assert "graph.batch_norm" not in ops(fused)


@pytest.mark.parametrize("exporter", model_corpus.EXPORTERS)
def test_corpus_llama_uses_grouped_query_attention(exporter: str) -> None:
    """Llama's 2 k/v heads are repeated for its 4 query heads (repeat_kv: expand+reshape)."""
    path = model_corpus.model_path("llama", exporter)
    module = import_onnx_file(default_context(), path)
    expands = [op for op in module.walk() if isinstance(op, graph.ExpandOp)]
    shapes = [list(op.output.type.get_shape()) for op in expands]  # type: ignore[attr-defined]
    assert [2, 2, 2, 8, 8] in shapes  # [batch, kv_heads, n_rep, seq, head_dim]


# --------------------------------------------------------------------------------------
# module structure: names, locations, opset, constants
# --------------------------------------------------------------------------------------


def test_names_locations_and_opset() -> None:
    m = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="act")],
        [vi("x", F, [2, 3])],
        [vi("y", F, [2, 3])],
        opset=17,
    )
    module = do_import(m)
    assert module.attributes["graph.opset"].value.data == 17  # type: ignore[attr-defined]
    text = module_to_text(default_context(), module)
    assert '%x: tensor<2x3xf32> {graph.name = "x"}' in text
    assert '(tensor<2x3xf32> {graph.name = "y"})' in text
    relu = next(op for op in module.walk() if isinstance(op, graph.ReluOp))
    assert str(relu.location) == 'loc("act")'


def test_unnamed_node_location_uses_type_and_index() -> None:
    m = make_model(
        [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
    )
    neg = next(op for op in do_import(m).walk() if isinstance(op, graph.NegOp))
    assert str(neg.location) == 'loc("Neg_1")'


def test_initializers_become_named_resource_constants() -> None:
    w = randn(3, 4)
    m = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [vi("x", F, [2, 3])],
        [vi("y", F, [2, 4])],
        [init("w", w)],
    )
    module = check_against_ort(m, {"x": randn(2, 3)})
    text = module_to_text(default_context(), module)
    assert 'graph.constant {name = "w"} dense_resource<w' in text


def test_initializer_listed_as_input_is_a_constant() -> None:
    """Older exporters (keep_initializers_as_inputs) list weights among the inputs."""
    m = make_model(
        [helper.make_node("Add", ["x", "b"], ["y"])],
        [vi("x", F, [2]), vi("b", F, [2])],
        [vi("y", F, [2])],
        [init("b", np.array([1.0, 2.0], np.float32))],
    )
    module = check_against_ort(m, {"x": randn(2)})
    f = next(op for op in module.walk() if op.name == "func.func")
    assert len(f.body.block.args) == 1  # type: ignore[attr-defined]


def test_weight_input_without_initializer_is_an_argument() -> None:
    """A weight given only as a typed graph input (shape, no values) is an argument."""
    m = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [vi("x", F, [2, 3]), vi("w", F, [3, 5])],
        [vi("y", F, [2, 5])],
    )
    module = do_import(m)
    text = module_to_text(default_context(), module)
    assert '%w: tensor<3x5xf32> {graph.name = "w"}' in text
    x, w = randn(2, 3), randn(3, 5)
    np.testing.assert_allclose(run_function(module, {"x": x, "w": w})["y"], x @ w, rtol=1e-5)


def test_external_data(tmp_path: Path) -> None:
    w = randn(16, 16)
    m = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [vi("x", F, [1, 16])],
        [vi("y", F, [1, 16])],
        [init("w", w)],
    )
    path = tmp_path / "m.onnx"
    onnx.save_model(
        m, str(path), save_as_external_data=True, location="m.weights", size_threshold=0
    )
    assert (tmp_path / "m.weights").exists()
    x = randn(1, 16)
    module = import_onnx_file(default_context(), path)
    np.testing.assert_allclose(run_function(module, {"x": x})["y"], x @ w, rtol=1e-5)
    (tmp_path / "m.weights").unlink()
    with pytest.raises(UserError, match=r"initializer 'w': external data file .* not found"):
        import_onnx_file(default_context(), path)


def test_import_is_deterministic(tmp_path: Path) -> None:
    """Two separate runs give byte-identical MLIR (resource handles are process-global)."""
    path = model_corpus.model_path("gpt2", "dynamo")
    outs = []
    for k in range(2):
        out = tmp_path / f"o{k}.mlir"
        afc("import", str(path), "-o", str(out))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# --------------------------------------------------------------------------------------
# folding
# --------------------------------------------------------------------------------------


def test_shape_arithmetic_folds_to_a_static_reshape() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters emit it, folds."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
        helper.make_node("Concat", ["b1", "tail"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = [
        init("zero", np.array(0, np.int64)),
        init("axes0", np.array([0], np.int64)),
        init("tail", np.array([3, -1], np.int64)),
    ]
    m = make_model(nodes, [vi("x", F, [2, 6])], [vi("y", F, [2, 3, 2])], inits)
    module = check_against_ort(m, {"x": randn(2, 6)})
    assert ops(module) == ["graph.reshape"]
    assert "shape = [2, 3, -1]" in module_to_text(default_context(), module)


def test_constant_subgraph_folds_with_interpreter_semantics() -> None:
    """Add/Mul/Cast on constants fold (through the interpreter) into one constant."""
    nodes = [
        helper.make_node("Add", ["a", "b"], ["c"]),
        helper.make_node("Cast", ["c"], ["ci"], to=I64),
        helper.make_node("Cast", ["ci"], ["cf"], to=F),
        helper.make_node("Mul", ["x", "cf"], ["y"]),
    ]
    inits = [init("a", np.full(12, 1.75, np.float32)), init("b", np.full(12, -3.5, np.float32))]
    m = make_model(nodes, [vi("x", F, [12])], [vi("y", F, [12])], inits)
    module = check_against_ort(m, {"x": randn(12)})
    assert ops(module) == ["graph.constant", "graph.mul"]
    const = next(op for op in module.walk() if isinstance(op, graph.ConstantOp))
    from autofusion import resources

    np.testing.assert_array_equal(resources.constant_array(const.value), np.full(12, -1.0))


def test_range_constant_of_shape_trilu_fold() -> None:
    """Causal-mask construction from shape-only ops folds to a constant mask."""
    nodes = [
        helper.make_node(
            "ConstantOfShape", ["shape"], ["ones"], value=init("v", np.ones(1, np.float32))
        ),
        helper.make_node("Trilu", ["ones"], ["tri"], upper=0),
        helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=F),
        helper.make_node("Mul", ["tri", "rf"], ["mask"]),
        helper.make_node("Add", ["x", "mask"], ["y"]),
    ]
    inits = [
        init("shape", np.array([4, 4], np.int64)),
        init("r0", np.array(0, np.int64)),
        init("r1", np.array(4, np.int64)),
        init("r2", np.array(1, np.int64)),
    ]
    m = make_model(nodes, [vi("x", F, [4, 4])], [vi("y", F, [4, 4])], inits)
    module = check_against_ort(m, {"x": randn(4, 4)})
    assert ops(module) == ["graph.constant", "graph.add"]


# --------------------------------------------------------------------------------------
# opset-dependent signatures
# --------------------------------------------------------------------------------------


def test_reduce_mean_axes_attribute_and_input() -> None:
    """ReduceMean takes axes as an attribute before opset 18 and as an input from 18."""
    x = randn(2, 3, 4)
    old = make_model(
        [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
        [vi("x", F, [2, 3, 4])],
        [vi("y", F, [2, 4])],
        opset=13,
    )
    new = make_model(
        [helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)],
        [vi("x", F, [2, 3, 4])],
        [vi("y", F, [2, 4])],
        [init("axes", np.array([1], np.int64))],
        opset=18,
    )
    check_against_ort(old, {"x": x})
    check_against_ort(new, {"x": x})


def test_reduce_sum_noop_with_empty_axes() -> None:
    m = make_model(
        [helper.make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)],
        [vi("x", F, [2, 3])],
        [vi("y", F, [2, 3])],
        opset=13,
    )
    assert ops(check_against_ort(m, {"x": randn(2, 3)})) == []


@pytest.mark.parametrize("opset", [13, 18])
def test_split_sizes_and_num_outputs(opset: int) -> None:
    """Split-13 takes sizes as an input; Split-18 may give num_outputs (last part smaller)."""
    if opset == 13:
        node = helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1)
        inits = [init("sizes", np.array([2, 3], np.int64))]
        shapes = ([4, 2], [4, 3])
    else:
        node = helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)
        inits = []
        shapes = ([4, 3], [4, 2])
    m = make_model(
        [node], [vi("x", F, [4, 5])], [vi("a", F, shapes[0]), vi("b", F, shapes[1])], inits, opset
    )
    check_against_ort(m, {"x": randn(4, 5)})


def test_squeeze_unsqueeze_axes_inputs() -> None:
    nodes = [
        helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
        helper.make_node("Squeeze", ["u", "ax"], ["s"]),
        helper.make_node("Squeeze", ["one"], ["y0"]),  # no axes: every size-1 dim
        helper.make_node("Add", ["s", "y0"], ["y"]),
    ]
    inits = [init("ax", np.array([0, -1], np.int64)), init("one", np.ones((1, 3, 1), np.float32))]
    m = make_model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], inits, opset=13)
    check_against_ort(m, {"x": randn(2, 3)})


def test_clip_bounds_as_inputs_and_relu6() -> None:
    nodes = [
        helper.make_node("Clip", ["x", "lo", "hi"], ["a"]),
        helper.make_node("Clip", ["a", "", "hi2"], ["b"]),
        helper.make_node("Clip", ["b", "dyn_lo"], ["y"]),
    ]
    inits = [
        init("lo", np.array(0, np.float32)),
        init("hi", np.array(6, np.float32)),
        init("hi2", np.array(5, np.float32)),
    ]
    m = make_model(
        nodes, [vi("x", F, [8]), vi("dyn_lo", F, [])], [vi("y", F, [8])], inits, opset=13
    )
    x = randn(8) * 8
    module = check_against_ort(m, {"x": x, "dyn_lo": np.array(1.0, np.float32)})
    assert "max = 6.000000e+00, min = 0.000000e+00" in module_to_text(default_context(), module)


@pytest.mark.parametrize("opset", [13, 18])
def test_pad_with_and_without_axes(opset: int) -> None:
    if opset == 18:
        node = helper.make_node("Pad", ["x", "pads", "cv", "axes"], ["y"], mode="constant")
        inits = [init("pads", np.array([1, 2], np.int64)), init("axes", np.array([-1], np.int64))]
    else:
        node = helper.make_node("Pad", ["x", "pads", "cv"], ["y"], mode="constant")
        inits = [init("pads", np.array([0, 1, 0, 2], np.int64))]
    inits.append(init("cv", np.array(0.5, np.float32)))
    m = make_model([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 6])], inits, opset)
    check_against_ort(m, {"x": randn(2, 3)})


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps"),
    [
        ([1], [100], [1], [1]),
        ([-1], [-1000], [1], [-1]),  # reversed to the front: ONNX clamps end to -1
        ([-100], [-200], [0], [-1]),  # start below the range with a negative step
        ([0, 5], [2, 0], [0, 1], [1, -2]),
    ],
)
def test_slice_clamping(starts: list, ends: list, axes: list, steps: list) -> None:
    inits = [
        init("s", np.array(starts, np.int64)),
        init("e", np.array(ends, np.int64)),
        init("a", np.array(axes, np.int64)),
        init("t", np.array(steps, np.int64)),
    ]
    x = randn(3, 6)
    want = ort_run(
        make_model(
            [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
            [vi("x", F, [3, 6])],
            [vi("y", F, None)],
            inits,
        ),
        {"x": x},
    )[0]
    m = make_model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
        [vi("x", F, [3, 6])],
        [vi("y", F, list(want.shape))],
        inits,
    )
    check_against_ort(m, {"x": x})


def test_conv_auto_pad_same_and_1d() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Conv", ["x1", "w1", "b1"], ["c1"], pads=[1, 1], group=2),
    ]
    inits = [init("w", randn(4, 3, 3, 3)), init("w1", randn(4, 1, 3)), init("b1", randn(4))]
    m = make_model(
        nodes,
        [vi("x", F, [1, 3, 7, 7]), vi("x1", F, [1, 2, 9])],
        [vi("c", F, [1, 4, 4, 4]), vi("c1", F, [1, 4, 9])],
        inits,
    )
    check_against_ort(m, {"x": randn(1, 3, 7, 7), "x1": randn(1, 2, 9)})


def test_gather_nd_with_constant_indices() -> None:
    idx = np.array([[0, 1], [1, 0], [1, 2]], np.int64)
    m = make_model(
        [helper.make_node("GatherND", ["x", "i"], ["y"])],
        [vi("x", F, [2, 3, 4])],
        [vi("y", F, [3, 4])],
        [init("i", idx)],
    )
    check_against_ort(m, {"x": randn(2, 3, 4)})


NEWEST_OPSET = onnx.defs.onnx_opset_version()


def test_opset_newer_than_onnx_is_refused() -> None:
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])])
    m.opset_import[0].version = NEWEST_OPSET + 1
    assert f"ONNX opset {NEWEST_OPSET + 1}, newer than the installed onnx" in error_of(m)


@pytest.mark.parametrize("opset", range(13, NEWEST_OPSET + 1))
def test_every_opset_from_13_imports(opset: int) -> None:
    """A model at any opset the installed onnx knows imports (Relu-14, Add-14 on)."""
    m = make_model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
        opset=opset,
    )
    module = do_import(m)
    assert module.attributes["graph.opset"].value.data == opset  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------
# pooling windows larger than their input (ceil_mode)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "shape", "attrs"),
    [
        # transformers EfficientNet's pooler: AvgPool2d(1280, ceil_mode=True) on a 2x2 map
        ("AveragePool", [1, 16, 2, 2], {"kernel_shape": [640, 640], "strides": [640, 640]}),
        ("AveragePool", [1, 3, 2, 3], {"kernel_shape": [4, 5], "strides": [3, 4]}),
        (
            "AveragePool",
            [1, 2, 2, 2],
            {
                "kernel_shape": [5, 5],
                "strides": [2, 2],
                "pads": [1, 1, 1, 1],
                "count_include_pad": 1,
            },
        ),
        ("AveragePool", [1, 2, 3, 7], {"kernel_shape": [4, 3], "strides": [3, 3]}),
        ("MaxPool", [1, 16, 2, 2], {"kernel_shape": [640, 640], "strides": [640, 640]}),
        ("MaxPool", [1, 2, 2, 3], {"kernel_shape": [3, 2], "strides": [4, 2], "dilations": [2, 2]}),
        ("AveragePool", [1, 4, 6], {"kernel_shape": [9], "strides": [9]}),
    ],
)
def test_ceil_mode_window_larger_than_input(op: str, shape: list[int], attrs: dict) -> None:
    """ONNX, ONNX Runtime and PyTorch give such a window one output: the input it covers."""
    node = helper.make_node(op, ["x"], ["y"], ceil_mode=1, **attrs)
    m = make_model([node], [vi("x", F, shape)], [vi("y", F, None)], opset=19)
    check_against_ort(m, {"x": randn(*shape)})  # values and shapes


@pytest.mark.parametrize(
    ("elem", "dtype"), [(TensorProto.UINT8, np.uint8), (TensorProto.INT8, np.int8)]
)
def test_integer_max_pool(elem: int, dtype: type) -> None:
    """MaxPool on 8-bit integers: padding (the type's lowest value) never wins the max."""
    node = helper.make_node(
        "MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1
    )
    m = make_model([node], [vi("x", elem, [1, 2, 5, 6])], [vi("y", elem, None)], opset=13)
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (1, 2, 5, 6), endpoint=True).astype(dtype)
    x[0, 0] = info.min  # an all-lowest channel: the pad must not exceed it
    check_against_ort(m, {"x": x})


def test_floor_mode_window_larger_than_input_is_refused() -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[3, 3])
    m = make_model([node], [vi("x", F, [1, 1, 2, 2])], [vi("y", F, None)], opset=19)
    assert error_of(m) == (
        "node 'pool' (AveragePool-19): window of extent 3 does not fit input extent 2 + pad 0"
    )


# --------------------------------------------------------------------------------------
# element types
# --------------------------------------------------------------------------------------

# ONNX integer types -> the graph dialect's element type and numpy dtype
INTEGER_TYPES = [
    (TensorProto.UINT8, "ui8", np.uint8),
    (TensorProto.INT8, "i8", np.int8),
    (TensorProto.INT16, "i16", np.int16),
    (TensorProto.UINT16, "ui16", np.uint16),
    (TensorProto.UINT32, "ui32", np.uint32),
    (TensorProto.UINT64, "ui64", np.uint64),
]


@pytest.mark.parametrize(("elem", "name", "dtype"), INTEGER_TYPES)
def test_integer_types_against_onnxruntime(elem: int, name: str, dtype: type) -> None:
    """Each integer type is a real element type: arithmetic wraps as in ONNX Runtime, and
    casts from and to float and bool convert values."""
    c = numpy_helper.from_array(np.array([1, 2, 100], dtype), "c")
    nodes = [
        helper.make_node("Add", ["x", "c"], ["s"]),
        helper.make_node("Mul", ["s", "x"], ["y"]),
        helper.make_node("Cast", ["y"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["f"], ["z"], to=elem),
        helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BOOL),
    ]
    m = make_model(
        nodes,
        [vi("x", elem, [2, 3])],
        [
            vi("y", elem, [2, 3]),
            vi("f", F, [2, 3]),
            vi("z", elem, [2, 3]),
            vi("b", TensorProto.BOOL, [2, 3]),
        ],
        [c],
        opset=21,
    )
    module = check_against_ort(m, {"x": np.array([[0, 1, 2], [3, 100, 127]], dtype)})
    assert f"tensor<2x3x{name}>" in module_to_text(default_context(), module)


@pytest.mark.parametrize(
    ("elem", "where"),
    [
        (TensorProto.STRING, "input 'x'"),
        (TensorProto.FLOAT6E2M3, "input 'x'"),
        (TensorProto.COMPLEX64, "input 'x'"),
    ],
)
def test_element_types_without_a_home_are_refused(elem: int, where: str) -> None:
    m = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [vi("x", elem, [2])],
        [vi("y", elem, [2])],
        opset=21,
    )
    name = TensorProto.DataType.Name(elem)
    assert error_of(m).startswith(f"{where} has element type {name}, which afc does not support")


def test_arithmetic_on_float8_is_refused_naming_the_node_and_type() -> None:
    node = helper.make_node("Add", ["x", "x"], ["y"], name="add8")
    e5m2 = TensorProto.FLOAT8E5M2
    m = make_model([node], [vi("x", e5m2, [2])], [vi("y", e5m2, [2])], opset=21)
    assert error_of(m).startswith(
        "node 'add8' (Add-14): 'graph.add': graph.add does not take f8E5M2"
    )


def test_float8_initializer_is_imported_and_cast() -> None:
    w = helper.make_tensor("w8", TensorProto.FLOAT8E4M3FN, [3], [1.0, 2.0, 500.0])
    m = make_model(
        [helper.make_node("Cast", ["w8"], ["y"], to=TensorProto.FLOAT)],
        [],
        [vi("y", F, [3])],
        [w],
        opset=21,
    )
    # make_tensor saturates 500 to E4M3FN's largest value, 448
    np.testing.assert_array_equal(run_function(do_import(m), {})["y"], [1.0, 2.0, 448.0])


def test_version_tables_cover_every_converter_and_version() -> None:
    """Every converter lists, for each version its op reaches from opset 7 (LEGACY_OPSET)
    to the newest, whether it implements it (`OPS.versions`) or what differs (`OPS.refused`)."""
    from frontends.onnx.converters import converters, operator_versions
    from frontends.onnx.importer import LEGACY_OPSET

    implemented, refused = operator_versions()
    assert set(implemented) == set(converters())
    for op, versions in implemented.items():
        reached = set()
        for opset in range(LEGACY_OPSET, NEWEST_OPSET + 1):
            try:
                reached.add(onnx.defs.get_schema(op, opset, "").since_version)
            except onnx.defs.SchemaError:  # the op is newer than this opset
                continue
        known = set(versions) | {v for (o, v) in refused if o == op}
        assert reached <= known, f"{op}: versions {sorted(reached - known)} are not in the tables"
        assert not set(versions) & {v for (o, v) in refused if o == op}


def test_unimplemented_operator_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A version missing from the converter's table is refused in one line naming the
    node, the operator and its version (here Relu-14, as if afc implemented only Relu-13, and
    Relu-6 from ops_legacy)."""
    from frontends.onnx import ops_math

    monkeypatch.setitem(ops_math.OPS.versions, "Relu", (13,))
    m = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="act")],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
        opset=14,
    )
    assert error_of(m) == (
        "node 'act' (Relu-14): operator version 14 is not supported: afc implements versions "
        "6, 13 of Relu, and version 14 is newer than the ones it was checked against"
    )
    monkeypatch.setitem(ops_math.OPS.refused, ("Relu", 14), "it adds integer types")
    assert error_of(m) == (
        "node 'act' (Relu-14): operator version 14 is not supported: it adds integer types"
    )


# --------------------------------------------------------------------------------------
# symbolic dims
# --------------------------------------------------------------------------------------


def _dynamic_reshape_model() -> onnx.ModelProto:
    """x[batch, seq, 6] -> reshape to [batch, seq, 2, 3] through Shape arithmetic."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "st", "en"], ["bs"]),
        helper.make_node("Concat", ["bs", "tail"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Flatten", ["r"], ["y"], axis=1),
    ]
    inits = [
        init("st", np.array([0], np.int64)),
        init("en", np.array([2], np.int64)),
        init("tail", np.array([2, 3], np.int64)),
    ]
    return make_model(
        nodes, [vi("x", F, ["batch", "seq", 6])], [vi("y", F, ["batch", None])], inits
    )


def test_symbolic_dims_use_copy_and_infer_dims() -> None:
    m = _dynamic_reshape_model()
    module = do_import(m)
    text = module_to_text(default_context(), module)
    assert "%x: tensor<?x?x6xf32>" in text
    assert "graph.reshape %x {shape = [0, 0, 2, 3]}" in text
    assert "shape = [0, -1]}" in text  # flatten: batch copied, the rest inferred
    x = randn(3, 5, 6)
    np.testing.assert_allclose(run_function(module, {"x": x})["y"], x.reshape(3, 30))


def test_input_shape_makes_symbolic_dims_static() -> None:
    module = do_import(_dynamic_reshape_model(), input_shapes={"x": (3, 5, 6)})
    text = module_to_text(default_context(), module)
    assert "%x: tensor<3x5x6xf32>" in text and "?" not in text.split("{-#")[0]


def test_symbolic_dims_that_cannot_be_expressed_are_errors() -> None:
    """Range over a symbolic length has no graph form: the user must fix the shape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["pf"], to=F),
        helper.make_node("Add", ["x", "pf"], ["y"]),
    ]
    inits = [init("zero", np.array(0, np.int64)), init("one", np.array(1, np.int64))]
    m = make_model(nodes, [vi("x", F, [2, "seq"])], [vi("y", F, [2, "seq"])], inits)
    message = error_of(m)
    assert "node 'Range_2' (Range-11)" in message
    assert "symbolic input dims" in message and "--input-shape" in message
    module = do_import(m, input_shapes={"x": [2, 4]})
    x = randn(2, 4)
    np.testing.assert_allclose(run_function(module, {"x": x})["y"], x + np.arange(4))


def test_input_shape_errors() -> None:
    m = _dynamic_reshape_model()
    assert "unknown input 'nope'" in error_of(m, input_shapes={"nope": (1,)})
    assert "rank 2" in error_of(m, input_shapes={"x": (1, 2)})
    assert "declares batchxseqx6" in error_of(m, input_shapes={"x": (1, 2, 7)})


# --------------------------------------------------------------------------------------
# bad input: one line, naming the node
# --------------------------------------------------------------------------------------


def test_unsupported_operator() -> None:
    m = make_model(
        [helper.make_node("SoftmaxCrossEntropyLoss", ["x"], ["y"], name="mix")],
        [vi("x", F, [2, 2])],
        [vi("y", F, [2, 2])],
    )
    assert error_of(m) == "node 'mix': unsupported ONNX operator SoftmaxCrossEntropyLoss (opset 18)"


def test_unsupported_domain() -> None:
    m = make_model(
        [helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft", name="f")],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
    )
    assert error_of(m) == (
        "node 'f' (com.microsoft.FusedGemm): operator domain 'com.microsoft' is not supported "
        "(afc imports the default ONNX domain only)"
    )


def test_operator_newer_than_the_model_opset() -> None:
    """Gelu exists from opset 20: at opset 18 it has no version."""
    m = make_model(
        [helper.make_node("Gelu", ["x"], ["y"], name="act")], [vi("x", F, [2])], [vi("y", F, [2])]
    )
    assert error_of(m) == (
        "node 'act': ONNX operator Gelu does not exist in opset 18 (the model's); it was "
        "introduced in opset 20"
    )


def test_unknown_operator_name() -> None:
    m = make_model(
        [helper.make_node("Frobnicate", ["x"], ["y"], name="u")],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
    )
    assert error_of(m) == "node 'u': Frobnicate is not an ONNX operator (opset 18)"


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (
            helper.make_node("Softmax", ["x"], ["y"], name="sm", axes=[0]),
            "node 'sm' (Softmax-13): attribute 'axes' is not in the spec (its attributes are axis)",
        ),
        (
            helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=0.5),
            "node 'sm' (Softmax-13): attribute 'axis' must be INT, got FLOAT",
        ),
        (
            helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=3),
            "node 'sm' (Softmax-13): axis 3 is out of range for rank 1",
        ),
        (
            helper.make_node("GatherElements", ["x", "p"], ["y"], name="ge", axis=-2),
            "node 'ge' (GatherElements-13): axis -2 is out of range for rank 1",
        ),
        (
            helper.make_node("Pad", ["x", "p"], ["y"], name="pad", mode="mirror"),
            "node 'pad' (Pad-18): attribute mode='mirror' is not supported (constant, reflect, edge)",
        ),
        (
            helper.make_node("Cast", ["x"], ["y"], name="c"),
            "node 'c' (Cast-13): required attribute 'to' is missing",
        ),
    ],
)
def test_attribute_outside_the_spec(node: onnx.NodeProto, expected: str) -> None:
    m = make_model([node], [vi("x", F, [2])], [vi("y", F, None)], [init("p", np.array([1, 1]))])
    assert error_of(m) == expected


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (
            helper.make_node("MatMul", ["x"], ["y"], name="mm"),
            "node 'mm' (MatMul-13): required input #1 ('B') is missing",
        ),
        (
            helper.make_node("Gemm", ["x", "", "x"], ["y"], name="g"),
            "node 'g' (Gemm-13): required input #1 ('B') is missing",
        ),
        (
            helper.make_node("Concat", [], ["y"], name="cat", axis=0),
            "node 'cat' (Concat-13): has 0 inputs; it takes at least 1",
        ),
        (
            helper.make_node("Relu", ["x", "x"], ["y"], name="r"),
            "node 'r' (Relu-14): has 2 inputs; it takes at most 1",
        ),
    ],
)
def test_missing_or_extra_inputs(node: onnx.NodeProto, expected: str) -> None:
    m = make_model([node], [vi("x", F, [2, 2])], [vi("y", F, None)])
    assert error_of(m) == expected


def test_undefined_input() -> None:
    m = make_model(
        [helper.make_node("Add", ["x", "missing_bias"], ["y"], name="add")],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
    )
    assert error_of(m) == (
        "node 'add' (Add): value 'missing_bias' is not defined (no initializer, graph input "
        "or earlier node output)"
    )


def test_inconsistent_shapes_name_the_node() -> None:
    m = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
        [vi("x", F, [2, 3])],
        [vi("y", F, [2, 4])],
        [init("w", randn(5, 4))],
    )
    message = error_of(m)
    assert message.startswith("node 'proj' (MatMul-13): matmul contracting dimensions differ")


def test_batch_norm_training_mode_rejected() -> None:
    inits = [init(n, np.ones(2, np.float32)) for n in ("s", "b", "m", "v")]
    m = make_model(
        [
            helper.make_node(
                "BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn", training_mode=1
            )
        ],
        [vi("x", F, [1, 2, 3, 3])],
        [vi("y", F, [1, 2, 3, 3])],
        inits,
        opset=15,
    )
    assert error_of(m) == (
        "node 'bn' (BatchNormalization-15): attribute training_mode=1 is not supported "
        "(only inference, training_mode=0)"
    )


def test_bad_auto_pad_rejected() -> None:
    m = make_model(
        [
            helper.make_node(
                "MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], auto_pad="FANCY"
            )
        ],
        [vi("x", F, [1, 1, 4, 4])],
        [vi("y", F, None)],
    )
    assert "attribute auto_pad='FANCY' is not supported" in error_of(m)


def test_unknown_attribute_rejected() -> None:
    m = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="r", alpha=0.5)],
        [vi("x", F, [2])],
        [vi("y", F, [2])],
    )
    assert error_of(m) == (
        "node 'r' (Relu-14): attribute 'alpha' is not in the spec (it has no attributes)"
    )


def test_declared_output_shape_is_checked() -> None:
    m = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2, 3])], [vi("y", F, [3, 2])]
    )
    assert "output 'y' is declared with shape 3x2 but the graph computes 2x3" in error_of(m)


def _write_bad_files(tmp_path: Path) -> dict[str, Path]:
    good = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])]
    ).SerializeToString()
    files = {
        "truncated": good[: len(good) // 2],
        "garbled": b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01garbage" * 3,
        "unsupported": make_model(
            [helper.make_node("SoftmaxCrossEntropyLoss", ["x"], ["y"], name="mix")],
            [vi("x", F, [2])],
            [vi("y", F, [2])],
        ).SerializeToString(),
        "domain": make_model(
            [helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft", name="f")],
            [vi("x", F, [2])],
            [vi("y", F, [2])],
        ).SerializeToString(),
        "version": make_model(
            [helper.make_node("Gelu", ["x"], ["y"], name="act")],
            [vi("x", F, [2])],
            [vi("y", F, [2])],
        ).SerializeToString(),
        "attribute": make_model(
            [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=0.5)],
            [vi("x", F, [2])],
            [vi("y", F, [2])],
        ).SerializeToString(),
        "input": make_model(
            [helper.make_node("MatMul", ["x"], ["y"], name="mm")],
            [vi("x", F, [2])],
            [vi("y", F, [2])],
        ).SerializeToString(),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.onnx"
        paths[name].write_bytes(data)
    return paths


def test_truncated_and_garbled_files(tmp_path: Path) -> None:
    paths = _write_bad_files(tmp_path)
    for name in ("truncated", "garbled"):
        with pytest.raises(UserError, match="not a valid ONNX model"):
            import_onnx_file(default_context(), paths[name])


# --------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------


def afc(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("AFC_TRACEBACK", None)
    result = subprocess.run(
        [str(Path(sys.executable).parent / "afc"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("truncated", "not a valid ONNX model"),
        ("garbled", "not a valid ONNX model"),
        ("unsupported", "node 'mix': unsupported ONNX operator SoftmaxCrossEntropyLoss (opset 18)"),
        ("domain", "node 'f' (com.microsoft.FusedGemm): operator domain 'com.microsoft'"),
        ("version", "node 'act': ONNX operator Gelu does not exist in opset 18"),
        ("attribute", "node 'sm' (Softmax-13): attribute 'axis' must be INT, got FLOAT"),
        ("input", "node 'mm' (MatMul-13): required input #1 ('B') is missing"),
    ],
)
def test_cli_bad_model(tmp_path: Path, case: str, expected: str) -> None:
    path = _write_bad_files(tmp_path)[case]
    out = tmp_path / "out.mlir"
    result = afc("import", str(path), "-o", str(out), check=False)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert expected in result.stderr and "error:" in result.stderr
    assert not out.exists()


def test_cli_input_shape(tmp_path: Path) -> None:
    path = tmp_path / "dyn.onnx"
    onnx.save_model(_dynamic_reshape_model(), str(path))
    result = afc("import", str(path), "--input-shape", "x=2,3,6")
    assert "%x: tensor<2x3x6xf32>" in result.stdout
    bad = afc("import", str(path), "--input-shape", "x=2,a", check=False)
    assert bad.returncode == 1 and "dims must be integers" in bad.stderr


def test_cli_run_onnx_model(tmp_path: Path) -> None:
    """`afc run model.onnx --inputs in.npz` imports through the frontend registry."""
    path = model_corpus.model_path("mlp", "legacy")
    feeds = model_corpus.model_inputs("mlp")
    np.savez(tmp_path / "in.npz", **feeds)  # type: ignore[arg-type]
    afc("run", str(path), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"))
    with np.load(tmp_path / "out.npz") as out:
        got = [out[k] for k in out.files]
    want = ort_run(str(path), feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL)


def _export_dynamic(model: str, path: Path) -> dict[str, np.ndarray]:
    """Export a corpus model with the legacy exporter and symbolic batch (and seq) dims."""
    import contextlib
    import io
    import warnings

    torch = pytest.importorskip("torch")
    spec = model_corpus.MODELS[model]
    feeds = spec.inputs()
    dims = {
        n: {0: "batch", 1: "seq"} if v.dtype == np.int64 else {0: "batch"} for n, v in feeds.items()
    }
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            spec.build(),
            tuple(torch.from_numpy(v) for v in feeds.values()),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=list(feeds),
            output_names=["out"],
            dynamic_axes={**dims, "out": {0: "batch"}},
        )
    return feeds


@pytest.mark.parametrize("model", ["mlp", "resnet_fused"])
def test_real_model_with_symbolic_batch(tmp_path: Path, model: str) -> None:
    path = tmp_path / "dyn.onnx"
    feeds = _export_dynamic(model, path)
    module = import_onnx_file(default_context(), path)
    assert "tensor<?x" in module_to_text(default_context(), module).split("{-#")[0]
    got = run_function(module, feeds)["out"]
    np.testing.assert_allclose(got, ort_run(str(path), feeds)[0], rtol=RTOL, atol=ATOL)


def test_real_model_with_symbolic_seq_needs_static_shapes(tmp_path: Path) -> None:
    """BERT slices its position-id buffer to the symbolic sequence length: no graph form
    for that, so the import names the node and asks for --input-shape; with it, it runs."""
    path = tmp_path / "bert.onnx"
    feeds = _export_dynamic("bert", path)
    with pytest.raises(UserError, match=r"node '/model/embeddings/Slice' .*--input-shape"):
        import_onnx_file(default_context(), path)
    shapes = {k: v.shape for k, v in feeds.items()}
    module = import_onnx_file(default_context(), path, shapes)
    got = run_function(module, feeds)["out"]
    np.testing.assert_allclose(got, ort_run(str(path), feeds)[0], rtol=RTOL, atol=ATOL)
