"""The graph_math ops against ONNX: the backend node cases of their operators, and models
built with onnx.helper run on ONNX Runtime as imported (interpreter) and as exported.

Every backend case that uses one of `MATH_OP_TYPES` runs through the importer and the
interpreter (the helpers of test_onnx_backend_nodes.py). A case passes, or it is refused
for the reason `REFUSED` gives for it: a refusal must be a one-line UserError holding
that reason; a refused case that imports must give the right results all the same.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_backend_nodes import _arrays, _cases, _check, _import  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import graph_math as gm  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model, ops_elementwise, ops_search  # noqa: E402
from frontends.onnx.export import export_module, serialize  # noqa: E402

# the operators of ops_elementwise and ops_search, ReduceProd and the composite reductions
MATH_OP_TYPES = frozenset(
    [
        *ops_elementwise.OPS.converters,
        *ops_search.OPS.converters,
        "ReduceProd",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceSumSquare",
    ]
)

_OPSET_9 = "the model uses ONNX opset 9"
_RUN_TIME_TRIP_COUNT = "the trip count M (input #0) must be a constant"

# case -> the reason it is refused (a fragment of the importer's message)
REFUSED: dict[str, str] = {
    # written at opset 11 (and their output is uint8)
    "test_dynamicquantizelinear_expanded": "the model uses ONNX opset 11",
    "test_dynamicquantizelinear_max_adjusted_expanded": "the model uses ONNX opset 11",
    "test_dynamicquantizelinear_min_adjusted_expanded": "the model uses ONNX opset 11",
    # Shrink-9 is the only Shrink; its cases are written at opset 9, below afc's 13
    "test_shrink_hard": _OPSET_9,
    "test_shrink_soft": _OPSET_9,
    # Range's expanded function body is a Loop whose trip count depends on float values
    "test_range_bfloat16_type_positive_delta_expanded": _RUN_TIME_TRIP_COUNT,
    "test_range_float16_type_positive_delta_expanded": _RUN_TIME_TRIP_COUNT,
    "test_range_float_type_positive_delta_expanded": _RUN_TIME_TRIP_COUNT,
}

# bf16 outputs (only the expanded bf16 Attention cases, which use Mod for the causal
# mask): the expansion rounds each of its ~10 steps to bf16, and afc rounds in another
# order than onnx's reference, so probabilities in [0, 1] may differ by one bf16 ulp at
# 0.5 (2**-8) besides one relative ulp (2**-7)
BF16_TOLERANCE = (2.0**-7, 2.0**-8)


def _math_cases() -> list[str]:
    return sorted(
        name
        for name, (model, _, _) in _cases().items()
        if {n.op_type for n in model.graph.node} & MATH_OP_TYPES
    )


@pytest.mark.parametrize("name", _math_cases())
def test_backend_case(name: str) -> None:
    model, raw_inputs, raw_outputs = _cases()[name]
    inputs, outputs = _arrays(raw_inputs), _arrays(raw_outputs)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    try:
        module, feeds = _import(model, inputs)
    except UserError as e:
        if name in REFUSED and REFUSED[name] in e.message:
            assert "\n" not in e.message
            pytest.skip(f"refused: {e.message}")
        raise
    results = run_function(module, feeds)  # type: ignore[arg-type]
    assert len(results) == len(outputs)
    for vi, (out_name, got), want in zip(model.graph.output, results.items(), outputs):
        if vi.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), *BF16_TOLERANCE, err_msg=name
            )
        else:
            _check(f"{name}:{out_name}", got, want)


def test_refusals_name_math_cases() -> None:
    assert set(REFUSED) - set(_math_cases()) == set()


def test_every_graph_math_op_exports() -> None:
    """Each graph_math op has an entry in the exporter's table."""
    from frontends.onnx import export_table

    for op in gm.MATH_OPS:
        assert op in export_table.TABLE, op.name


# --------------------------------------------------------------------------------------
# Models built with onnx.helper, against ONNX Runtime
# --------------------------------------------------------------------------------------


def _value(name: str, elem: int, shape: list[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto],
    opset: int,
) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "math", inputs, outputs, initializers)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(serialize(model), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    return dict(zip(names, sess.run(names, feeds)))


def _compare(want: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> None:
    assert set(want) == set(got)
    for k, w in want.items():
        g = np.asarray(got[k])
        assert g.shape == w.shape, k
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=k)


def _elementwise_model() -> onnx.ModelProto:
    """Float and integer elementwise math on a dynamic batch (opset 24)."""
    f, i = TensorProto.FLOAT, TensorProto.INT32
    nodes = [
        helper.make_node("Celu", ["x"], ["celu"], alpha=0.7),
        helper.make_node("Shrink", ["x"], ["shrink"], lambd=0.4, bias=0.1),
        helper.make_node("Mul", ["x", "three"], ["x3"]),
        helper.make_node("Round", ["x3"], ["round"]),
        helper.make_node("Floor", ["x3"], ["floor"]),
        helper.make_node("Ceil", ["x3"], ["ceil"]),
        helper.make_node("Sign", ["floor"], ["sign"]),
        helper.make_node("Atan", ["x3"], ["atan"]),
        helper.make_node("Sinh", ["x"], ["sinh"]),
        helper.make_node("Tanh", ["x"], ["t"]),
        helper.make_node("Asin", ["t"], ["asin"]),
        helper.make_node("Atanh", ["t"], ["atanh"]),
        helper.make_node("Gelu", ["x"], ["gelu"], approximate="tanh"),
        helper.make_node("Swish", ["x"], ["swish"], alpha=0.5),
        helper.make_node("Div", ["x", "zero"], ["xz"]),
        helper.make_node("IsInf", ["xz"], ["isinf"], detect_negative=0),
        helper.make_node("IsNaN", ["xz"], ["isnan"]),
        helper.make_node("Mod", ["a", "b"], ["mod"]),
        helper.make_node("Mod", ["a", "b"], ["fmod"], fmod=1),
        helper.make_node("BitwiseAnd", ["a", "b"], ["band"]),
        helper.make_node("BitwiseXor", ["a", "b"], ["bxor"]),
        helper.make_node("BitwiseNot", ["a"], ["bnot"]),
    ]
    shape: list[int | str] = ["n", 6]
    outs = [
        _value(n, f, shape)
        for n in ("celu", "shrink", "round", "floor", "ceil", "sign", "atan", "sinh")
    ]
    outs += [_value(n, f, shape) for n in ("asin", "atanh", "gelu", "swish")]
    outs += [_value(n, TensorProto.BOOL, shape) for n in ("isinf", "isnan")]
    outs += [_value(n, i, shape) for n in ("mod", "fmod", "band", "bxor", "bnot")]
    inits = [
        numpy_helper.from_array(np.asarray(3.0, np.float32), "three"),
        numpy_helper.from_array(np.asarray([1, 0, -1, 0, 2, 0], np.float32), "zero"),
        numpy_helper.from_array(np.asarray([3, -3, 5, -7, 2, 9], np.int32), "b"),
    ]
    ins = [_value("x", f, shape), _value("a", i, shape)]
    return _model(nodes, ins, outs, inits, 24)


def _search_model() -> onnx.ModelProto:
    """Arg max/min, top-k, hardmax, scans and a product (opset 26 for CumProd)."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [
        helper.make_node("ArgMax", ["x"], ["argmax"], axis=1, select_last_index=1),
        helper.make_node("ArgMin", ["x"], ["argmin"], axis=0, keepdims=0),
        helper.make_node("TopK", ["x", "k"], ["topv", "topi"], axis=-1, largest=0),
        helper.make_node("Hardmax", ["x"], ["hardmax"], axis=1),
        helper.make_node("CumSum", ["x", "axis"], ["cumsum"], exclusive=1, reverse=1),
        helper.make_node("CumProd", ["x", "axis"], ["cumprod"]),
        helper.make_node("ReduceProd", ["x", "axes"], ["prod"], keepdims=0),
    ]
    outs = [
        _value("argmax", i64, [4, 1]),
        _value("argmin", i64, [6]),
        _value("topv", f, [4, 3]),
        _value("topi", i64, [4, 3]),
        _value("hardmax", f, [4, 6]),
        _value("cumsum", f, [4, 6]),
        _value("cumprod", f, [4, 6]),
        _value("prod", f, [4]),
    ]
    inits = [
        numpy_helper.from_array(np.asarray([3], np.int64), "k"),
        numpy_helper.from_array(np.asarray(1, np.int64), "axis"),
        numpy_helper.from_array(np.asarray([1], np.int64), "axes"),
    ]
    return _model(nodes, [_value("x", f, [4, 6])], outs, inits, 26)


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        dims = [d.dim_value or 5 for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            # a few repeated values exercise the tie rules of ArgMax, TopK and Hardmax
            feeds[vi.name] = rng.integers(-4, 5, dims).astype(np.float32) / 2
        else:
            feeds[vi.name] = rng.integers(-50, 50, dims).astype(np.int32)
    return feeds


MODELS = {"elementwise": _elementwise_model, "search": _search_model}


@pytest.mark.parametrize("which", sorted(MODELS))
def test_imported_model_matches_onnxruntime(which: str) -> None:
    model = MODELS[which]()
    feeds = _feeds(model, 0)
    module = import_onnx_model(default_context(), model, which)
    _compare(_ort(model, feeds), run_function(module, feeds))


@pytest.mark.parametrize("which", sorted(MODELS))
def test_exported_model_matches_onnxruntime(which: str) -> None:
    """Export gives back the same operators, and ONNX Runtime agrees with the interpreter."""
    model = MODELS[which]()
    feeds = _feeds(model, 1)
    module = import_onnx_model(default_context(), model, which)
    exported = export_module(module)
    assert not exported.functions
    original = {n.op_type for n in model.graph.node} - {"Mul", "Div", "Tanh"}
    assert original <= {n.op_type for n in exported.graph.node}
    _compare(run_function(module, feeds), _ort(exported, feeds))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "graph.bitwise_and %a, %a : tensor<4xi32>",
            "ONNX has BitwiseAnd from opset 18 on; the export opset is 17",
        ),
        (
            "graph.mod %f, %f {fmod = false} : tensor<4xf32>",
            "ONNX has Mod with fmod=0 on floating point from opset 28 on",
        ),
        (
            "graph.cum_prod %f {axis = 0, exclusive = false, reverse = false} : tensor<4xf32>",
            "ONNX has CumProd from opset 26 on",
        ),
    ],
)
def test_export_before_the_operator_exists_is_refused(body: str, message: str) -> None:
    from autofusion.mlir_io import parse_module

    t = body.rsplit(": ", 1)[1]
    text = (
        f"func.func @main(%a: tensor<4xi32>, %f: tensor<4xf32>) -> {t} {{\n"
        f"  %r = {body}\n  func.return %r : {t}\n}}"
    )
    module = parse_module(default_context(), text, "refuse.mlir")
    with pytest.raises(UserError, match=message):
        export_module(module, 17)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            helper.make_node("Mod", ["x", "x"], ["y"]),
            r"fmod=0 on f32 inputs is undefined before Mod-28 \(Mod-13",
        ),
        (helper.make_node("Shrink", ["x"], ["y"], lambd=-1.0), "attribute lambd=-1.0"),
        (helper.make_node("BitShift", ["x", "x"], ["y"], direction="UP"), "direction='UP'"),
        (helper.make_node("TopK", ["x", "x"], ["y", "i"]), r"K \(input #1\) must be a constant"),
    ],
)
def test_converter_refusals(node: onnx.NodeProto, message: str) -> None:
    """Attribute values outside the spec and computed shape inputs are one-line errors."""
    x = _value("x", TensorProto.FLOAT, [4])
    outs = [_value(o, TensorProto.FLOAT, []) for o in node.output]
    g = helper.make_graph([node], "bad", [x], outs)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(UserError, match=message) as e:
        import_onnx_model(default_context(), model, "bad")
    assert "\n" not in e.value.message
    assert e.value.message.startswith(f"node '{node.op_type}_0' ({node.op_type}-")


@pytest.mark.parametrize("which", sorted(MODELS))
def test_compile_check_passes(which: str, tmp_path: Path) -> None:
    """`afc compile --check`: the library ops run beside the kernels, and the fused
    graph, the buffer kernels and fused.onnx on ONNX Runtime agree with the original."""
    from autofusion.driver.compile import CompileOptions, compile_model

    path = tmp_path / f"{which}.onnx"
    onnx.save(MODELS[which](), str(path))
    c = compile_model(str(path), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check


def test_constant_inputs_fold_with_the_interpreter_semantics() -> None:
    """Nodes on constants fold at import through the same implementations (no op left)."""
    i64 = TensorProto.INT64
    # Round halves to even: [2, 2, -2] (away from zero would give [3, 2, -2]), [3, 3, -7]
    c = np.asarray([[2.5, 2.4, -1.5], [3.0, 3.0, -7.25]], np.float32)
    nodes = [
        helper.make_node("Round", ["c"], ["r"]),
        # the last maxima: [1, 1]
        helper.make_node("ArgMax", ["r"], ["am"], axis=1, keepdims=0, select_last_index=1),
        # exclusive sums from the end: [1, 0]
        helper.make_node("CumSum", ["am", "axis"], ["cs"], exclusive=1, reverse=1),
        helper.make_node("Add", ["x", "cs"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(c, "c"),
        numpy_helper.from_array(np.asarray(0, np.int64), "axis"),
    ]
    model = _model(nodes, [_value("x", i64, [2])], [_value("y", i64, [2])], inits, 18)
    module = import_onnx_model(default_context(), model, "fold")
    names = {op.name for op in module.walk()}
    assert not names & {"graph.round", "graph.arg_max", "graph.cum_sum"}
    y = run_function(module, {"x": np.asarray([10, 20], np.int64)})["y"]
    np.testing.assert_array_equal(y, [11, 20])


@pytest.mark.parametrize(("opset", "t"), [(17, "f32"), (17, "f16"), (24, "f32"), (24, "f16")])
def test_swish_exports_as_swish_or_its_function(opset: int, t: str) -> None:
    """graph.swish is Swish-24 from opset 24, before it the function ai.afc.Swish."""
    from autofusion.mlir_io import parse_module

    ty = f"tensor<3x?x{t}>"
    text = (
        f"func.func @main(%x: {ty}) -> {ty} {{\n"
        f"  %r = graph.swish %x {{alpha = 0.75}} : {ty}\n  func.return %r : {ty}\n}}"
    )
    module = parse_module(default_context(), text, "swish.mlir")
    exported = export_module(module, opset)
    [node] = exported.graph.node
    assert (node.op_type, node.domain) == ("Swish", "" if opset >= 24 else "ai.afc")
    x = np.linspace(-6, 6, 15, dtype=np.float32).reshape(3, 5)
    x = x.astype(np.float16 if t == "f16" else np.float32)
    want = run_function(module, {"arg0": x})
    got = _ort(exported, {"arg0": x})
    tol = 1e-3 if t == "f16" else 1e-6
    np.testing.assert_allclose(
        got["out0"].astype(np.float64), want["out0"].astype(np.float64), rtol=tol, atol=tol
    )
