"""Operators converted as their ONNX function body (frontends/onnx/functions.py): afc's
interpreter against ONNX's reference evaluator, the export of the inlined body against
the reference on the original, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def model(node: onnx.NodeProto, inputs: dict[str, np.ndarray], opset: int, inits=()):
    infos = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for k, v in inputs.items()
    ]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output]
    g = helper.make_graph([node], "g", infos, outs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def check(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """afc's import, and its export run by the reference, agree with the reference."""
    want = ReferenceEvaluator(m).run(None, feeds)
    module = import_onnx_model(default_context(), m, "f")
    got = list(run_function(module, feeds).values())
    exported = ReferenceEvaluator(export_module(module)).run(None, feeds)
    assert len(got) == len(want) == len(exported)
    for g, e, w in zip(got, exported, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e, w, rtol=1e-5, atol=1e-6)


def test_static_function_with_attribute_default() -> None:
    """HannWindow-17: periodic (default 1) and output_datatype are attribute references."""
    size = numpy_helper.from_array(np.array(10, np.int64), "n")
    for attrs in ({}, {"periodic": 0}):
        node = helper.make_node("HannWindow", ["n"], ["y"], **attrs)
        check(model(node, {}, 17, [size]), {})


def test_swiglu_with_alpha() -> None:
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"], alpha=1.5)
    feeds = {k: RNG.standard_normal((3, 4)).astype(np.float32) for k in "ab"}
    check(model(node, feeds, 28), feeds)


def test_context_dependent_function_with_axes() -> None:
    """CenterCropPad-18: the body depends on the axes attribute and the input's rank."""
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0, 2])
    x = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    shape = numpy_helper.from_array(np.array([3, 7], np.int64), "s")
    check(model(node, {"x": x}, 18, [shape]), {"x": x})


def test_omitted_optional_input() -> None:
    """CausalConvWithState-27 without bias and past state: those inputs are omitted in
    the body too."""
    node = helper.make_node("CausalConvWithState", ["x", "w"], ["y", "state"], activation="silu")
    feeds = {
        "x": RNG.standard_normal((1, 2, 5)).astype(np.float32),
        "w": RNG.standard_normal((2, 1, 3)).astype(np.float32),
    }
    check(model(node, feeds, 27), feeds)


def test_loss_is_not_inlined() -> None:
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"], name="loss")
    feeds = {"x": np.zeros((2, 3), np.float32), "t": np.zeros(2, np.int64)}
    with pytest.raises(UserError) as info:
        import_onnx_model(default_context(), model(node, feeds, 22), "f")
    assert str(info.value) == (
        "node 'loss': unsupported ONNX operator SoftmaxCrossEntropyLoss (opset 22)"
    )


def test_bad_attribute_of_a_function_operator_names_the_node() -> None:
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"], name="glu", beta=1.0)
    feeds = {k: np.zeros((2, 2), np.float32) for k in "ab"}
    with pytest.raises(UserError) as info:
        import_onnx_model(default_context(), model(node, feeds, 28), "f")
    assert str(info.value).startswith("node 'glu' (SwiGLU-28): attribute 'beta' is not in the spec")
