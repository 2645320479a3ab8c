"""Quantization operators through the ONNX importer, the interpreter and the exporter.

* ONNX's backend node cases of these op types: each passes against the reference outputs
  (the float8, float4, 4-bit and 2-bit ones too: autofusion/narrow_types.py). Cases
  written at opsets 10 and 11 (before afc's 13) are converted to opset 13 by
  onnx.version_converter first: none of these operators changed in between.
* Each passing case exported back to ONNX is the same operator, and ONNX Runtime agrees.
* Models built with onnx.helper (per-row/column/channel zero points, dynamic dims,
  padding and groups) against ONNX Runtime on the original model.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper, version_converter  # noqa: E402
from test_onnx_backend_nodes import _arrays, _cases, _check, _import  # noqa: E402
from test_onnx_import import compiled_ops  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import shape_inference as si  # noqa: E402
from autofusion.interpreter import find_function, run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

QUANT_OPS = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "MatMulInteger",
        "ConvInteger",
        "QLinearMatMul",
        "QLinearConv",
    }
)

# cases on the storage-only types: ONNX Runtime's Python API has no numpy type for them,
# and they need a newer opset than 21 (float4: 23, int2: 25)
NARROW = r"test_(de)?quantizelinear_(e4m3fn|e5m2|float4e2m1|u?int[24])(_.*)?"


def _quant_cases() -> list[str]:
    return sorted(
        name
        for name, (model, _, _) in _cases().items()
        if {n.op_type for n in model.graph.node} & QUANT_OPS
    )


def _model(name: str) -> Any:
    """The case's model, converted to opset 13 if it was written before."""
    model = onnx.ModelProto.FromString(_cases()[name][0].SerializeToString())
    version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return version_converter.convert_version(model, 13) if version < 13 else model


def run_ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds))


PASSING = _quant_cases()


def test_cases_are_found() -> None:
    """Every op type has backend cases (a renamed case would silently test nothing)."""
    names = _quant_cases()
    assert len(names) >= 45
    for op in ("quantizelinear", "dequantizelinear", "qlinearmatmul", "qlinearconv"):
        assert any(n.startswith(f"test_{op}") for n in names), op


@pytest.mark.parametrize("name", PASSING)
def test_backend_case(name: str) -> None:
    _, raw_inputs, raw_outputs = _cases()[name]
    module, feeds = _import(_model(name), _arrays(raw_inputs))
    results = run_function(module, feeds)
    outputs = _arrays(raw_outputs)
    assert len(results) == len(outputs)
    for (out_name, got), want in zip(results.items(), outputs):
        assert got.dtype == want.dtype, f"{out_name}: {got.dtype}, expected {want.dtype}"
        _check(f"{name}:{out_name}", got, want)


# ONNX Runtime has no ConvInteger with a per-channel w_zero_point
NOT_ON_ORT = r"test_convinteger_with_padding"


@pytest.mark.parametrize("name", PASSING)
def test_backend_case_exports_to_the_same_operator(name: str) -> None:
    """The exported case has the same quantization operators; afc on it (and ONNX
    Runtime, where it has the kernel) gives the reference outputs."""
    original = _model(name)
    _, raw_inputs, raw_outputs = _cases()[name]
    module, feeds = _import(original, _arrays(raw_inputs))
    narrow = re.fullmatch(NARROW, name) is not None
    # ONNX Runtime runs (De)QuantizeLinear to 21
    exported = export_module(module, 25 if narrow else 21)
    assert {n.op_type for n in original.graph.node} & QUANT_OPS <= {
        n.op_type for n in exported.graph.node
    }
    outputs = _arrays(raw_outputs)
    again = run_function(import_onnx_model(default_context(), exported, "again"), feeds)
    for k, (got, want) in enumerate(zip(again.values(), outputs)):
        _check(f"{name}:again{k}", got, want)
    if not re.fullmatch(NOT_ON_ORT, name) and not narrow:
        for k, (got, want) in enumerate(zip(run_ort(exported, feeds), outputs)):
            _check(f"{name}:ort{k}", got, want)


# --------------------------------------------------------------------------------------
# Models built with onnx.helper, against ONNX Runtime
# --------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)


def _init(name: str, array: np.ndarray) -> Any:
    return numpy_helper.from_array(array, name)


def _info(name: str, elem: int, shape: list[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _model_of(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any]) -> Any:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _u8(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(0, 256, shape).astype(np.uint8)


def _against_ort(model: Any, feeds: dict[str, np.ndarray]) -> Any:
    module = import_onnx_model(default_context(), model, "m")
    got = list(run_function(module, feeds).values())
    want = run_ort(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return module


def test_matmul_integer_per_column_zero_point_against_ort() -> None:
    a, b = _u8((2, 3, 5)), RNG.integers(-128, 128, (5, 4)).astype(np.int8)
    inits = [_init("azp", np.uint8(3)), _init("bzp", RNG.integers(-9, 9, (4,)).astype(np.int8))]
    node = helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])
    inputs = [_info("a", TensorProto.UINT8, ["n", 3, 5]), _info("b", TensorProto.INT8, [5, 4])]
    model = _model_of([node], inputs, [_info("y", TensorProto.INT32, None)], inits)
    module = _against_ort(model, {"a": a, "b": b})
    assert [list(t.get_shape()) for t in find_function(module).function_type.outputs.data] == [
        [si.DYN, 3, 4]
    ]


def test_matmul_integer_per_row_zero_point() -> None:
    """A per-row a_zero_point (ONNX Runtime only takes a scalar one) is exact in i32."""
    a, b = _u8((3, 5)), _u8((5, 2))
    azp, bzp = _u8((3,)), _u8((2,))
    node = helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])
    inputs = [_info("a", TensorProto.UINT8, [3, 5]), _info("b", TensorProto.UINT8, [5, 2])]
    inits = [_init("azp", azp), _init("bzp", bzp)]
    model = _model_of([node], inputs, [_info("y", TensorProto.INT32, None)], inits)
    module = import_onnx_model(default_context(), model, "m")
    (got,) = run_function(module, {"a": a, "b": b}).values()
    want = (a.astype(np.int64) - azp[:, None]) @ (b.astype(np.int64) - bzp)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("group", [1, 2])
def test_conv_integer_against_ort(group: int) -> None:
    x, w = _u8((1, 4, 7, 6)), _u8((6, 4 // group, 3, 3))
    inits = [_init("w", w), _init("xzp", np.uint8(7)), _init("wzp", np.uint8(120))]
    node = helper.make_node(
        "ConvInteger",
        ["x", "w", "xzp", "wzp"],
        ["y"],
        pads=[1, 0, 1, 2],
        strides=[2, 1],
        group=group,
    )
    inputs = [_info("x", TensorProto.UINT8, [1, 4, 7, 6])]
    _against_ort(_model_of([node], inputs, [_info("y", TensorProto.INT32, None)], inits), {"x": x})


def test_qlinear_conv_per_channel_with_bias_against_ort() -> None:
    x, w = _u8((2, 3, 6, 6)), RNG.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    inits = [
        _init("xs", np.float32(0.05)),
        _init("xzp", np.uint8(128)),
        _init("w", w),
        _init("ws", RNG.uniform(0.01, 0.03, 4).astype(np.float32)),
        _init("wzp", np.zeros(4, np.int8)),
        _init("ys", np.float32(0.4)),
        _init("yzp", np.uint8(100)),
        _init("b", RNG.integers(-500, 500, 4).astype(np.int32)),
    ]
    names = ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"]
    node = helper.make_node("QLinearConv", names, ["y"], auto_pad="SAME_UPPER")
    inputs = [_info("x", TensorProto.UINT8, ["n", 3, 6, 6])]
    _against_ort(_model_of([node], inputs, [_info("y", TensorProto.UINT8, None)], inits), {"x": x})


def test_dynamic_quantize_then_integer_matmul_against_ort() -> None:
    """The dynamically quantized MatMul ONNX Runtime's quantizer writes."""
    w = RNG.integers(-128, 128, (8, 5)).astype(np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
        helper.make_node("MatMulInteger", ["q", "w", "z"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["accf", "s"], ["y"]),
    ]
    inputs = [_info("x", TensorProto.FLOAT, ["n", 8])]
    outputs = [_info(n, e, None) for n, e in (("y", 1), ("q", 2), ("s", 1), ("z", 2))]
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    _against_ort(_model_of(nodes, inputs, outputs, [_init("w", w)]), {"x": x})


def test_quantize_dequantize_per_axis_dynamic_batch_against_ort() -> None:
    inits = [
        _init("s", np.asarray([0.1, 0.02, 0.5], np.float32)),
        _init("z", np.asarray([-3, 0, 17], np.int8)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
    ]
    inputs = [_info("x", TensorProto.FLOAT, ["n", 3, 4])]
    outputs = [_info("q", TensorProto.INT8, None), _info("y", TensorProto.FLOAT, None)]
    x = (RNG.standard_normal((2, 3, 4)) * 8).astype(np.float32)
    _against_ort(_model_of(nodes, inputs, outputs, inits), {"x": x})


REFUSALS = {
    "float6 output_dtype": (
        {"output_dtype": TensorProto.FLOAT6E2M3},
        ["x", "s"],
        "output_dtype has element type FLOAT6E2M3",
    ),
    "precision": ({"precision": TensorProto.FLOAT16}, ["x", "s", "z"], "attribute precision=10"),
    "scale shape": ({"axis": 0}, ["x", "s3", "z3"], "per-axis scale along axis 0"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_name_node_and_attribute(case: str) -> None:
    attrs, ins, message = REFUSALS[case]
    node = helper.make_node("QuantizeLinear", ins, ["y"], name="n0", **attrs)
    inits = [
        _init("s", np.float32(0.5)),
        _init("z", np.uint8(0)),
        _init("s3", np.ones(3, np.float32)),
        _init("z3", np.zeros(3, np.uint8)),
    ]
    g = helper.make_graph(
        [node], "g", [_info("x", TensorProto.FLOAT, [2, 3])], [_info("y", 0, None)], inits
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
    with pytest.raises(UserError, match=f"node 'n0' .*{message}"):
        import_onnx_model(default_context(), model, "m")


def test_quant_ops_compile_as_library_kernels(tmp_path: Any) -> None:
    """No kernel template takes the opaque quantization ops: `afc compile --check` keeps
    each as a library kernel and checks the numbers against the original."""
    w = RNG.integers(-128, 128, (6, 4)).astype(np.int8)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("DynamicQuantizeLinear", ["r"], ["q", "s", "z"]),
        helper.make_node("MatMulInteger", ["q", "w", "z"], ["acc"]),
        helper.make_node("DequantizeLinear", ["acc", "s"], ["d"]),
        helper.make_node("Sigmoid", ["d"], ["y"]),
    ]
    inputs = [_info("x", TensorProto.FLOAT, [3, 6])]
    model = _model_of(nodes, inputs, [_info("y", TensorProto.FLOAT, None)], [_init("w", w)])
    names = [op.name for op in compiled_ops(tmp_path, model)]
    for op in ("graph.dynamic_quantize_linear", "graph.matmul_integer", "graph.dequantize_linear"):
        assert op in names
