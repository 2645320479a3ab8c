"""Origin groups (frontends/onnx/origin.py): the operators the importer decomposes export
back as themselves, unless a pass rewrote part of what they became.

For every backend node case of those operators: the exported graph's nodes are the
original ones, and ONNX Runtime gives the original model's outputs on it (where it runs
the original: it has no kernels for some bf16, float8 and int4 cases).
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402
from test_onnx_backend_nodes import _arrays, _cases, _import  # noqa: E402
from xdsl.dialects.builtin import DenseArrayBase, i64  # noqa: E402

from autofusion.mlir_io import default_context, module_to_text, parse_module  # noqa: E402
from autofusion.passes.graph_fusion import GraphFusionPass  # noqa: E402
from frontends.onnx import import_onnx_model, origin  # noqa: E402
from frontends.onnx.export import export_module, serialize  # noqa: E402

# the operators docs/onnx-frontend.md listed as "exported as what they became"
COMPOSITES = frozenset(
    [
        "LessOrEqual",
        "GreaterOrEqual",
        "Xor",
        "LeakyRelu",
        "PRelu",
        "Elu",
        "Selu",
        "ThresholdedRelu",
        "HardSigmoid",
        "HardSwish",
        "Mish",
        "Softplus",
        "Softsign",
        "LogSoftmax",
        "Mean",
        "Sum",
        "Clip",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceSumSquare",
        "GlobalMaxPool",
        "GatherND",
        "Tile",
        "Trilu",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "CastLike",
        "GroupNormalization",
        "InstanceNormalization",
        "MeanVarianceNormalization",
        "LpNormalization",
        "LRN",
        "Einsum",
        "LSTM",
        "GRU",
        "RNN",
    ]
)
# cases whose node became no op (the output is the input): they export as Identity
IDENTITY = {
    "test_clip_default_inbounds",
    "test_clip_default_int8_inbounds",
    "test_einsum_scalar",
    "test_mean_one_input",
    "test_sum_one_input",
}
# Upsample is deprecated from opset 10 on; a model of opset 9 is exported at opset 11
NOT_IN_EXPORT_OPSET = {"test_upsample_nearest"}


def _composite_cases() -> list[str]:
    names = []
    for name, (model, _, _) in sorted(_cases().items()):
        ops = [n.op_type for n in model.graph.node]
        if len(ops) == 1 and ops[0] in COMPOSITES:
            names.append(name)
    return names


CASES = _composite_cases()


def _run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """ONNX Runtime's outputs, or None when it has no kernel for the model (or input)."""
    try:
        sess = ort.InferenceSession(serialize(model), providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        return sess.run(None, {k: np.asarray(v) for k, v in feeds.items() if k in names})
    except Exception:  # onnxruntime's errors have no common base class
        return None


def _same_outputs(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_every_listed_operator_has_cases() -> None:
    ops = {_cases()[n][0].graph.node[0].op_type for n in CASES}
    assert ops == COMPOSITES - {"Upsample"}
    assert len(CASES) > 200


@pytest.mark.parametrize("name", CASES)
def test_backend_case_exports_as_its_operator(name: str) -> None:
    model, inputs, _ = _cases()[name]
    model = onnx.ModelProto.FromString(model.SerializeToString())  # _import edits it
    inputs = _arrays(inputs)
    module, feeds = _import(model, inputs)
    exported = export_module(module)
    types = [n.op_type for n in exported.graph.node]
    if name in IDENTITY:
        assert types == ["Identity"]
    elif name in NOT_IN_EXPORT_OPSET:
        assert types[-1] == "Resize"
    else:
        assert types == [n.op_type for n in model.graph.node]
        # the attributes are the node's own (plus defaults written out)
        given = {a.name: a for a in model.graph.node[0].attribute}
        assert all(given[a.name] == a for a in exported.graph.node[0].attribute if a.name in given)
    # a constant input the case moved into an initializer is the same on both sides
    want = _run_ort(model, {i.name: v for i, v in zip(model.graph.input, inputs)})
    if want is None:
        return
    got = _run_ort(exported, feeds)
    assert got is not None, f"{name}: ONNX Runtime runs the original but not the export"
    _same_outputs(got, want)


def _model(nodes, inputs, outputs, inits=(), opset=18) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)


RNG = np.random.default_rng(0)


def _add_instance_norm() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Add -> InstanceNormalization: AddLayerNormFusionPass fuses the Add with the
    layer_norm the instance norm became, leaving its scale and bias ops."""
    scale = helper.make_tensor("scale", 1, [4], RNG.standard_normal(4).tolist())
    bias = helper.make_tensor("bias", 1, [4], RNG.standard_normal(4).tolist())
    model = _model(
        [
            helper.make_node("Add", ["x", "r"], ["s"]),
            helper.make_node("InstanceNormalization", ["s", "scale", "bias"], ["y"]),
        ],
        [_vi("x", [2, 4, 8]), _vi("r", [2, 4, 8])],
        [_vi("y", [2, 4, 8])],
        [scale, bias],
    )
    feeds = {k: RNG.standard_normal([2, 4, 8]).astype(np.float32) for k in ("x", "r")}
    return model, feeds


def test_group_rewritten_by_fusion_exports_its_parts() -> None:
    model, feeds = _add_instance_norm()
    module = import_onnx_model(default_context(), model, "m")
    assert [n.op_type for n in export_module(module).graph.node] == [
        "Add",
        "InstanceNormalization",
    ]
    GraphFusionPass().apply(default_context(), module)
    exported = export_module(module)
    types = [n.op_type for n in exported.graph.node]
    assert "InstanceNormalization" not in types
    assert types[1:] == ["Mul", "Add"]  # after the call of the fused AddLayerNorm
    _same_outputs(_run_ort(exported, feeds) or [], _run_ort(model, feeds) or [None])


def _hardswish_logsoftmax() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    w = helper.make_tensor("w", 1, [8, 16], (RNG.standard_normal(128) * 0.3).tolist())
    model = _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("HardSwish", ["m"], ["h"]),
            helper.make_node("LogSoftmax", ["h"], ["y"], axis=-1),
        ],
        [_vi("x", [4, 8])],
        [_vi("y", [4, 16])],
        [w],
    )
    return model, {"x": RNG.standard_normal([4, 8]).astype(np.float32)}


def test_origins_survive_printing_and_parsing() -> None:
    model, feeds = _hardswish_logsoftmax()
    module = import_onnx_model(default_context(), model, "m")
    text = module_to_text(default_context(), module)
    assert text.count("onnx.origin") == 12  # the ops of HardSwish and LogSoftmax
    parsed = parse_module(default_context(), text)
    exported = export_module(parsed)
    assert [n.op_type for n in exported.graph.node] == ["MatMul", "HardSwish", "LogSoftmax"]
    assert serialize(exported) == serialize(export_module(parsed))  # deterministic
    _same_outputs(_run_ort(exported, feeds) or [], _run_ort(model, feeds) or [None])


def test_a_member_changed_in_place_exports_the_parts() -> None:
    """A pass that edits a member (here: a property of LogSoftmax's reduce_max) breaks
    its digest; the group is then exported as its parts."""
    model, _ = _hardswish_logsoftmax()
    module = import_onnx_model(default_context(), model, "m")
    reduce_max = next(op for op in module.walk() if op.name == "graph.reduce_max")
    assert "LogSoftmax" in [n.op_type for n in export_module(module).graph.node]
    reduce_max.properties["axes"] = DenseArrayBase.from_list(i64, [1])  # the same axis
    types = [n.op_type for n in export_module(module).graph.node]
    assert "LogSoftmax" not in types and "ReduceMax" in types


def test_forget_exports_what_the_nodes_became() -> None:
    model, feeds = _hardswish_logsoftmax()
    module = import_onnx_model(default_context(), model, "m")
    origin.forget(module)
    exported = export_module(module)
    types = [n.op_type for n in exported.graph.node]
    assert "HardSwish" not in types and "LogSoftmax" not in types
    _same_outputs(_run_ort(exported, feeds) or [], _run_ort(model, feeds) or [None])
