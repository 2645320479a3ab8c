"""The random ONNX operators (RandomNormal, RandomUniform, their -Like forms, Bernoulli,
Multinomial):
import, inferred shapes and types, the interpreter's deterministic draws and their
statistics, export back as themselves, ONNX Runtime on the export, and --check's skip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper  # noqa: E402
from xdsl.dialects.builtin import ModuleOp, TensorType  # noqa: E402

from autofusion import dtypes  # noqa: E402
from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import graph_random as gr  # noqa: E402
from autofusion.driver.compile import CompileOptions, compile_model  # noqa: E402
from autofusion.interpreter import find_function, run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402
from frontends.onnx.export import export_module, serialize  # noqa: E402

N = 10_000


def model(node: Any, out_type: int, out_shape: list[int], x_type: int = T.FLOAT) -> Any:
    """A one-node model with input x (f32[100, 100], or x_type) and output y."""
    x = helper.make_tensor_value_info("x", x_type, [100, 100])
    y = helper.make_tensor_value_info("y", out_type, out_shape)
    inputs = [x] if node.input else []
    g = helper.make_graph([node], "g", inputs, [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def imported(m: Any) -> ModuleOp:
    return import_onnx_model(default_context(), m, "case")


def draw(m: Any, x: np.ndarray | None = None) -> np.ndarray:
    feeds = {} if x is None else {"x": x}
    return np.asarray(next(iter(run_function(imported(m), feeds).values())))


def out_type(module: ModuleOp) -> TensorType:
    t = find_function(module).function_type.outputs.data[0]
    assert isinstance(t, TensorType)
    return t


HALF = np.full((100, 100), 0.3, np.float32)
CASES = {
    "normal": (
        helper.make_node("RandomNormal", [], ["y"], shape=[100, 100], mean=2.0, scale=3.0),
        T.FLOAT,
        (2.0, 3.0),
    ),
    "uniform": (
        helper.make_node("RandomUniform", [], ["y"], shape=[100, 100], low=-1.0, high=3.0),
        T.FLOAT,
        (1.0, 4.0 / np.sqrt(12.0)),
    ),
    "normal_like": (
        helper.make_node("RandomNormalLike", ["x"], ["y"], dtype=T.DOUBLE, mean=-1.0),
        T.DOUBLE,
        (-1.0, 1.0),
    ),
    "uniform_like": (helper.make_node("RandomUniformLike", ["x"], ["y"]), T.FLOAT, (0.5, 0.289)),
    "bernoulli": (
        helper.make_node("Bernoulli", ["x"], ["y"], dtype=T.INT32),
        T.INT32,
        (0.3, 0.458),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_shape_type_statistics(name: str) -> None:
    node, elem, (mean, std) = CASES[name]
    m = model(node, elem, [100, 100])
    t = out_type(imported(m))
    assert tuple(t.get_shape()) == (100, 100)
    y = draw(m, HALF if node.input else None)
    assert y.shape == (100, 100) and y.dtype == dtypes.storage_dtype(t.element_type)
    # the mean of N draws is within 5 standard errors; the spread within 5%
    assert abs(float(y.mean()) - mean) < 5 * std / np.sqrt(N), (y.mean(), mean)
    assert abs(float(y.std()) - std) < 0.05 * std, (y.std(), std)


def test_like_takes_the_input_type() -> None:
    node = helper.make_node("RandomUniformLike", ["x"], ["y"])
    t = out_type(imported(model(node, T.FLOAT16, [100, 100], T.FLOAT16)))
    assert dtypes.type_name(t.element_type) == "f16"


def test_draws_are_deterministic_and_follow_the_seed() -> None:
    def normal(**seed: float) -> np.ndarray:
        node = helper.make_node("RandomNormal", [], ["y"], shape=[100, 100], **seed)
        return draw(model(node, T.FLOAT, [100, 100]))

    assert np.array_equal(normal(), normal())  # DEFAULT_SEED
    assert np.array_equal(normal(seed=7.0), normal(seed=7.0))
    assert not np.array_equal(normal(seed=7.0), normal(seed=8.0))
    assert not np.array_equal(normal(seed=7.0), normal())


def test_a_draw_on_a_constant_is_not_folded() -> None:
    x = helper.make_tensor("x", T.FLOAT, [2], [0.5, 0.5])
    node = helper.make_node("Bernoulli", ["x"], ["y"])
    g = helper.make_graph(
        [node], "g", [], [helper.make_tensor_value_info("y", T.FLOAT, [2])], initializer=[x]
    )
    module = imported(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    assert [op.name for op in find_function(module).body.ops][-2] == "graph.bernoulli"


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            helper.make_node("RandomUniform", [], ["y"], name="u", shape=[4], low=1.0, high=0.0),
            "node 'u' (RandomUniform-1): high 0.0 is below low 1.0",
        ),
        (
            helper.make_node("RandomNormal", [], ["y"], name="n", shape=[4], dtype=T.INT32),
            "node 'n' (RandomNormal-1): dtype 'i32' is not one of f16, bf16, f32, f64",
        ),
        (
            helper.make_node("RandomNormal", [], ["y"], name="n", shape=[4], scale=-1.0),
            "node 'n' (RandomNormal-1): scale -1.0 must be >= 0",
        ),
    ],
)
def test_bad_attributes_are_refused_naming_the_node(node: Any, message: str) -> None:
    with pytest.raises(UserError) as e:
        imported(model(node, T.FLOAT, [4]))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_export_is_the_same_operator_and_runs_in_ort(name: str) -> None:
    node, elem, _ = CASES[name]
    node.attribute.append(helper.make_attribute("seed", 5.0))
    exported = export_module(imported(model(node, elem, [100, 100])))
    (out,) = [n for n in exported.graph.node if n.op_type == node.op_type]
    attrs = {a.name: helper.get_attribute_value(a) for a in out.attribute}
    for a in node.attribute:
        assert attrs[a.name] == pytest.approx(helper.get_attribute_value(a)), a.name
    assert attrs["dtype"] == elem
    sess = ort.InferenceSession(serialize(exported), providers=["CPUExecutionProvider"])
    feeds = {i.name: HALF for i in sess.get_inputs()}
    (y,) = sess.run(None, feeds)
    assert y.shape == (100, 100) and y.dtype == helper.tensor_dtype_to_np_dtype(elem)


def test_random_ops_are_the_random_family() -> None:
    assert {op.name for op in gr.RANDOM_OPS} == {
        "graph.random_normal",
        "graph.random_uniform",
        "graph.random_normal_like",
        "graph.random_uniform_like",
        "graph.bernoulli",
        "graph.multinomial",
    }


def test_check_skips_a_model_that_draws(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("RandomUniformLike", ["x"], ["u"], name="noise"),
        helper.make_node("Add", ["x", "u"], ["y"], name="add"),
    ]
    x = helper.make_tensor_value_info("x", T.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", T.FLOAT, [4, 8])
    g = helper.make_graph(nodes, "g", [x], [y])
    path = tmp_path / "noise.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    c = compile_model(str(path), CompileOptions(check=True))
    assert c.check is not None and c.check["comparisons"] == []
    assert c.check["verdict"] == (
        "skipped: the model draws random values (graph.random_uniform_like), "
        "which no two runtimes draw alike"
    )


def multinomial_model(**attrs: Any) -> Any:
    node = helper.make_node("Multinomial", ["x"], ["y"], name="m", **attrs)
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", attrs.get("dtype", T.INT32), [2, N])
    g = helper.make_graph([node], "g", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


LOGITS = np.log(np.array([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], np.float32))


@pytest.mark.parametrize("dtype", [T.INT32, T.INT64])
def test_multinomial_frequencies_and_export(dtype: int) -> None:
    m = multinomial_model(sample_size=N, dtype=dtype, seed=2.0)
    y = draw(m, LOGITS)
    assert y.shape == (2, N) and y.dtype == helper.tensor_dtype_to_np_dtype(dtype)
    freq = np.stack([np.bincount(row, minlength=3) / N for row in y])
    assert np.abs(freq - np.exp(LOGITS)).max() < 0.03, freq
    exported = export_module(imported(m))
    (out,) = exported.graph.node
    attrs = {a.name: helper.get_attribute_value(a) for a in out.attribute}
    assert (out.op_type, attrs) == ("Multinomial", {"dtype": dtype, "seed": 2.0, "sample_size": N})
    sess = ort.InferenceSession(serialize(exported), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": LOGITS})
    assert got.shape == (2, N) and got.dtype == y.dtype


def test_multinomial_refusals_name_the_node() -> None:
    with pytest.raises(UserError, match=r"node 'm' .*: sample_size 0 must be >= 1$"):
        imported(multinomial_model(sample_size=0))
    with pytest.raises(UserError, match=r"node 'm' .*: dtype 'f32' is not one of i32, i64$"):
        imported(multinomial_model(dtype=T.FLOAT))
