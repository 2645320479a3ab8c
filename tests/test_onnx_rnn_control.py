"""Recurrent layers (LSTM, GRU, RNN) and control flow (If, Loop, Scan) through the ONNX
importer, the interpreter and the exporter.

* ONNX's backend node cases that use these operators: each passes against the reference
  outputs, or is refused with the reason in `REFUSED`; cases written at opsets before 13
  also run after `onnx.version_converter` brings them to opset 13. Each passing case is
  exported back to ONNX (as the primitive ops it was unrolled into) and run on ONNX Runtime.
* Models built with onnx.helper for what the node cases miss (sequence_lens, initial
  states, peepholes, clip, input_forget, linear_before_reset, activations with alpha and
  beta, a dynamic batch, a Loop whose condition is computed from constants), against ONNX
  Runtime.
* A torch LSTM (two layers, bidirectional, batch-first) exported by torch.onnx.export.
* One-line refusals: a data-dependent If condition, a run-time trip count, a dynamic
  sequence length, an unknown activation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper, version_converter  # noqa: E402
from test_onnx_backend_nodes import _arrays, _cases, _check, _import, check_outputs, run_case  # noqa: E402
from test_onnx_import import compiled_ops  # noqa: E402
from test_onnx_vision_ops import afc_run, f32, one_node_model, run_ort  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import shape_inference as si  # noqa: E402
from autofusion.interpreter import find_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model, origin  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

OPS = frozenset({"LSTM", "GRU", "RNN", "If", "Loop", "Scan"})
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})

# case-name pattern (fullmatch) -> the text of afc's refusal (each a documented limitation)
REFUSED = {
    r"test_if_(seq|opt)": "afc compiles models whose outputs are tensors",
    r"test_loop13_seq": "'seq_empty' is a sequence, not a tensor",
    r"test_loop16_seq_none": "'opt_seq' is an optional, not a tensor",
    r"test_sequence_map_.*": "is a sequence, not a tensor",
}


def refusal(name: str) -> str | None:
    return next((r for p, r in REFUSED.items() if re.fullmatch(p, name)), None)


# cases whose integer inputs feed a subgraph node that needs them as constants (the
# backend suite's `_import` retries only for top-level nodes): they become initializers
CONSTANT_INTS = frozenset(
    {"test_affine_grid_2d_expanded", "test_affine_grid_2d_align_corners_expanded"}
)


def _uses(graph: Any) -> set[str]:
    ops = set()
    for n in graph.node:
        ops.add(n.op_type)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                ops |= _uses(a.g)
    return ops


def _our_cases() -> list[str]:
    return sorted(name for name, (m, _, _) in _cases().items() if _uses(m.graph) & OPS)


def _prepared(name: str) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    """(model, inputs, reference outputs): opset < 13 converted to 13 (but Scan-8), and the integer
    inputs of `CONSTANT_INTS` cases made initializers."""
    model, raw_inputs, raw_outputs = _cases()[name]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    inputs = _arrays(raw_inputs)
    # onnx's converter drops Scan-8's batch axis without rewriting the inputs: afc imports
    # Scan-8 as it is
    old = model.opset_import[0].version < 13 and "Scan" not in _uses(model.graph)
    if old and refusal(name) is None:
        model = version_converter.convert_version(model, 13)
    if name in CONSTANT_INTS:
        kept = [(i, v) for i, v in zip(model.graph.input, inputs) if v.dtype.kind not in "iu"]
        for i, v in zip(model.graph.input, inputs):
            if v.dtype.kind in "iu":
                model.graph.initializer.append(numpy_helper.from_array(v, i.name))
        del model.graph.input[:]
        model.graph.input.extend(i for i, _ in kept)
        inputs = [v for _, v in kept]
    return model, inputs, _arrays(raw_outputs)


def _imported(name: str) -> tuple[Any, Any, dict[str, np.ndarray], list[np.ndarray]]:
    model, inputs, outputs = _prepared(name)
    module, feeds = _import(model, inputs)
    return module, model, feeds, outputs


@pytest.mark.parametrize("name", _our_cases())
def test_backend_case(name: str) -> None:
    reason = refusal(name)
    if reason is not None:
        model, inputs, _ = _prepared(name)
        with pytest.raises(UserError, match=reason):
            _import(model, inputs)
        return
    module, _, feeds, outputs = _imported(name)
    check_outputs(name, module, feeds, outputs)


def test_native_recurrent_cases_pass_the_whole_suite_runner() -> None:
    """The backend suite's own runner passes every LSTM, GRU and RNN case."""
    names = [n for n in _our_cases() if _uses(_cases()[n][0].graph) & {"LSTM", "GRU", "RNN"}]
    assert len(names) == 18
    assert {n: run_case(n)[0] for n in names} == dict.fromkeys(names, "pass")


# ONNX Runtime's CPU provider has no bf16 MatMul
ON_ORT = [n for n in _our_cases() if refusal(n) is None and "bfloat16" not in n]


@pytest.mark.parametrize("name", ON_ORT)
def test_backend_case_exports_as_primitive_ops(name: str) -> None:
    """Exported back to ONNX, a recurrent layer is its node again (the ops it became
    carry its origin; a control-flow node's body names outer values, so it is not
    tagged); with the origins dropped, the unrolled case has no recurrent or
    control-flow node left. ONNX Runtime gives the reference outputs on both."""
    module, _, feeds, outputs = _imported(name)
    original = {n.op_type for n in _cases()[name][0].graph.node}
    model = export_module(module)
    assert {n.op_type for n in model.graph.node} & OPS == original & OPS - CONTROL_FLOW
    # ONNX Runtime refuses batchwise (layout=1) recurrences, the original node included
    batchwise = any(a.name == "layout" and a.i == 1 for n in model.graph.node for a in n.attribute)
    for k, (got, want) in enumerate(zip([] if batchwise else run_ort(model, feeds), outputs)):
        _check(f"{name}:ort{k}", got, want)
    origin.forget(module)
    model = export_module(module)
    assert not {n.op_type for n in model.graph.node} & OPS
    for k, (got, want) in enumerate(zip(run_ort(model, feeds), outputs)):
        _check(f"{name}:parts-ort{k}", got, want)


def test_refusals_name_real_cases() -> None:
    names = _our_cases()
    assert all(any(re.fullmatch(p, n) for n in names) for p in REFUSED)
    assert set(CONSTANT_INTS) <= set(names)


# --------------------------------------------------------------------------------------
# Recurrent layers built with onnx.helper, against ONNX Runtime
# --------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 3
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _recurrent_model(
    op: str, attrs: dict[str, Any], extras: tuple[str, ...], batch: Any = BATCH
) -> tuple[Any, dict[str, np.ndarray]]:
    """One `op` node over X [SEQ, batch, INPUT] with random W, R, B and the optional
    inputs in `extras` (sequence_lens, initial_h, initial_c, P) as initializers."""
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    g = GATES[op]
    arrays = {
        "W": RNG.standard_normal((dirs, g * HIDDEN, INPUT)),
        "R": RNG.standard_normal((dirs, g * HIDDEN, HIDDEN)),
        "B": RNG.standard_normal((dirs, 2 * g * HIDDEN)),
        "initial_h": RNG.standard_normal((dirs, BATCH, HIDDEN)),
        "initial_c": RNG.standard_normal((dirs, BATCH, HIDDEN)),
        "P": RNG.standard_normal((dirs, 3 * HIDDEN)),
    }
    inits = [numpy_helper.from_array((0.5 * arrays[k]).astype(np.float32), k) for k in "WRB"]
    names = ["X", "W", "R", "B", "", "", "", ""]
    if "sequence_lens" in extras:
        lens = np.asarray([SEQ, 2, 4][:BATCH], np.int32)
        inits.append(numpy_helper.from_array(lens, "sequence_lens"))
        names[4] = "sequence_lens"
    for k, key in ((5, "initial_h"), (6, "initial_c"), (7, "P")):
        if key in extras:
            inits.append(numpy_helper.from_array(arrays[key].astype(np.float32), key))
            names[k] = key
    outs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    node = helper.make_node(
        op, names[: 8 if op == "LSTM" else 6], outs, hidden_size=HIDDEN, **attrs
    )
    model = one_node_model(
        node, [f32("X", [SEQ, batch, INPUT])], [f32(o, None) for o in outs], inits, 14
    )
    return model, {"X": RNG.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)}


RECURRENT = {
    "lstm_everything": (
        "LSTM",
        {"direction": "bidirectional", "clip": 1.5},
        ("sequence_lens", "initial_h", "initial_c", "P"),
    ),
    "lstm_input_forget_reverse": (
        "LSTM",
        {"direction": "reverse", "input_forget": 1},
        ("sequence_lens", "initial_c"),
    ),
    "lstm_activations": (
        "LSTM",
        {
            "activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh"],
            "activation_alpha": [0.3, 0.2, 0.7],
            "activation_beta": [0.4, 1.2],
        },
        ("initial_h",),
    ),
    "gru_linear_before_reset": (
        "GRU",
        {"direction": "bidirectional", "linear_before_reset": 1},
        ("sequence_lens", "initial_h"),
    ),
    "gru_activations_clip": (
        "GRU",
        {"activations": ["Softsign", "Elu"], "activation_alpha": [0.5], "clip": 2.0},
        ("initial_h",),
    ),
    "rnn_activations": (
        "RNN",
        {
            "direction": "bidirectional",
            "activations": ["Relu", "Softplus"],
        },
        ("sequence_lens", "initial_h"),
    ),
    "rnn_sigmoid_reverse": ("RNN", {"direction": "reverse", "activations": ["Sigmoid"]}, ()),
}


@pytest.mark.parametrize("case", sorted(RECURRENT))
def test_recurrent_against_ort(case: str) -> None:
    op, attrs, extras = RECURRENT[case]
    model, feeds = _recurrent_model(op, attrs, extras)
    _, got = afc_run(model, feeds)
    want = run_ort(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_recurrent_dynamic_batch_against_ort() -> None:
    """A symbolic batch dim stays symbolic; the zero initial state broadcasts over it."""
    model, feeds = _recurrent_model("LSTM", {"direction": "bidirectional"}, (), batch="N")
    module, got = afc_run(model, feeds)
    ret = find_function(module).function_type.outputs.data
    dyn = si.DYN
    shapes = [list(t.get_shape()) for t in ret]
    assert shapes == [[SEQ, 2, dyn, HIDDEN], [2, dyn, HIDDEN], [2, dyn, HIDDEN]]
    for g, w in zip(got, run_ort(model, feeds)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_recurrent_unrolls_into_fusible_graph_ops() -> None:
    """No recurrent op is left: one matmul by W per direction and one by R per step (the
    first step's, of a constant initial_h, folds to a constant)."""
    model, _ = _recurrent_model("RNN", {}, ("initial_h",))
    module = import_onnx_model(default_context(), model, "m")
    names = [op.name for op in find_function(module).walk()]
    assert names.count("graph.matmul") == 1 + SEQ - 1
    assert names.count("graph.tanh") == SEQ


# --------------------------------------------------------------------------------------
# A torch LSTM
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dynamo", [False, True])
def test_torch_lstm_against_ort(dynamo: bool, tmp_path: Any) -> None:
    torch = pytest.importorskip("torch")

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
            self.head = torch.nn.Linear(10, 3)

        def forward(self, x: Any) -> Any:
            y, _ = self.lstm(x)
            return self.head(y)

    torch.manual_seed(0)
    model_t = Tagger().eval()
    x = torch.randn(2, 7, 6)
    path = tmp_path / "lstm.onnx"
    torch.onnx.export(model_t, (x,), str(path), dynamo=dynamo, input_names=["x"])
    model = onnx.load(str(path))
    assert "LSTM" in _uses(model.graph)
    feeds = {"x": x.numpy()}
    module, got = afc_run(model, feeds)
    with torch.no_grad():
        want_torch = model_t(x).numpy()
    (want_ort,) = run_ort(model, feeds)
    np.testing.assert_allclose(got[0], want_ort, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0], want_torch, rtol=1e-4, atol=1e-5)
    (exported,) = run_ort(export_module(module), feeds)
    np.testing.assert_allclose(exported, want_ort, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dynamo", [False, True])
@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
def test_real_size_torch_recurrence_exports_as_itself(
    layer: str, dynamo: bool, tmp_path: Any
) -> None:
    """A torch recurrent layer of real size (hidden 64: its weights are over the origin
    tag's constant limit) exports back as its ONNX node, its weights referred to by the
    graph.constant the importer made (not copied into the tag), and ONNX Runtime gives the
    original's outputs on it."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model_t = getattr(torch.nn, layer)(80, 64, batch_first=True).eval()
    x = torch.randn(2, 5, 80)
    path = tmp_path / f"{layer}.onnx"
    torch.onnx.export(model_t, (x,), str(path), dynamo=dynamo, input_names=["x"])
    model = onnx.load(str(path))
    if layer not in _uses(model.graph):
        pytest.skip(f"torch.onnx (dynamo={dynamo}) does not export {layer} as an {layer} node")
    weights = [t for t in model.graph.initializer if np.prod(t.dims) > origin.CONSTANT_LIMIT]
    assert weights, "the case must have a weight over the tag's limit"
    feeds = {"x": x.numpy()}
    module = import_onnx_model(default_context(), model, "m")
    exported = export_module(module)
    assert [n.op_type for n in exported.graph.node if n.op_type in OPS] == [layer]
    for got, want in zip(run_ort(exported, feeds), run_ort(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------
# Control flow built with onnx.helper
# --------------------------------------------------------------------------------------

I64, BOOL = TensorProto.INT64, TensorProto.BOOL


def _const(name: str, array: Any) -> Any:
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(array))
    )


def _model(nodes: list[Any], inputs: list[Any], inits: Sequence[Any] = ()) -> Any:
    g = helper.make_graph(nodes, "g", inputs, [f32("y", None)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


def _branch(name: str, op: str) -> Any:
    """A branch computing `op(x)` of the outer scope's x."""
    node = helper.make_node(op, ["x"], [f"{name}_y"])
    return helper.make_graph([node], name, [], [f32(f"{name}_y", None)])


def _if_on_shape() -> Any:
    """If (batch == 2): relu(x) else neg(x); the condition comes from Shape, a constant."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], end=1),
        _const("two", np.asarray([2], np.int64)),
        helper.make_node("Equal", ["s", "two"], ["c"]),
        helper.make_node(
            "If",
            ["c"],
            ["y"],
            then_branch=_branch("then", "Relu"),
            else_branch=_branch("else", "Neg"),
        ),
    ]
    return _model(nodes, [f32("x", [2, 3])])


def _counting_loop() -> Any:
    """No trip count: loop while i < 3 (computed from the iteration number, a constant),
    carrying acc = acc * x + i and scanning out acc."""
    body = helper.make_graph(
        [
            _const("three", np.asarray(2, np.int64)),
            helper.make_node("Less", ["i", "three"], ["go"]),
            helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["acc", "x"], ["ax"]),
            helper.make_node("Add", ["ax", "fi"], ["acc_out"]),
            helper.make_node("Identity", ["acc_out"], ["scan"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("c", BOOL, []),
            f32("acc", [2, 3]),
        ],
        [helper.make_tensor_value_info("go", BOOL, []), f32("acc_out", None), f32("scan", None)],
    )
    nodes = [
        _const("t", np.asarray(True)),
        helper.make_node("Loop", ["", "t", "x"], ["y", "ys"], body=body),
    ]
    g = helper.make_graph(nodes, "g", [f32("x", [2, 3])], [f32("y", None), f32("ys", None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


def _reverse_scan() -> Any:
    """Scan over axis 1 in reverse, a running sum, its outputs stacked on axis 1 reversed."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s", "xt"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["o"]),
        ],
        "body",
        [f32("s", [2]), f32("xt", [2])],
        [f32("s_out", None), f32("o", None)],
    )
    node = helper.make_node(
        "Scan",
        ["s0", "x"],
        ["s", "y"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[1],
        scan_output_axes=[-1],
        scan_output_directions=[1],
    )
    g = helper.make_graph(
        [node], "g", [f32("s0", [2]), f32("x", [2, 4])], [f32("s", None), f32("y", None)]
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


def _batched_scan(lengths: list[int] | None = None) -> Any:
    """Scan-8 over a batch of 2: a running sum and a running product (the second scan
    input read in reverse), their states and outputs per batch row."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s", "xt"], ["s_out"]),
            helper.make_node("Mul", ["p", "zt"], ["p_out"]),
            helper.make_node("Sub", ["s_out", "p_out"], ["o"]),
        ],
        "body",
        [f32("s", [3]), f32("p", [3]), f32("xt", [3]), f32("zt", [3])],
        [f32("s_out", None), f32("p_out", None), f32("o", None)],
    )
    names = ["lens" if lengths else "", "s0", "p0", "x", "z"]
    node = helper.make_node(
        "Scan", names, ["s", "p", "y"], body=body, num_scan_inputs=2, directions=[0, 1]
    )
    inputs = [f32(n, [2, 3]) for n in ("s0", "p0")] + [f32(n, [2, 4, 3]) for n in ("x", "z")]
    inits = [] if lengths is None else [helper.make_tensor("lens", TensorProto.INT64, [2], lengths)]
    outputs = [f32("s", None), f32("p", None), f32("y", None)]
    g = helper.make_graph([node], "g", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], ir_version=7)


CONTROL = {
    "if_on_shape": _if_on_shape,
    "counting_loop": _counting_loop,
    "reverse_scan": _reverse_scan,
    "batched_scan": _batched_scan,
    "batched_scan_full_lengths": lambda: _batched_scan([4, 4]),
}


@pytest.mark.parametrize("case", sorted(CONTROL))
def test_control_flow_against_ort(case: str) -> None:
    model = CONTROL[case]()
    feeds = {
        i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
        for i in model.graph.input
    }
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    module, got = afc_run(model, feeds)
    want = run_ort(model, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    names = {op.name for op in find_function(module).walk()}
    assert not any(n.startswith("graph.if") or n.startswith("graph.loop") for n in names)


def test_loop_runs_its_condition_to_false() -> None:
    _, got = afc_run(_counting_loop(), {"x": np.ones((2, 3), np.float32)})
    assert got[1].shape == (3, 2, 3)  # i = 0, 1, 2 ran; i < 2 was false after i = 2


# --------------------------------------------------------------------------------------
# What is not known at compile time: one line naming the node
# --------------------------------------------------------------------------------------


def _if_on_input() -> Any:
    node = helper.make_node(
        "If", ["c"], ["y"], then_branch=_branch("then", "Relu"), else_branch=_branch("else", "Neg")
    )
    node.name = "choose"
    return _model([node], [helper.make_tensor_value_info("c", BOOL, []), f32("x", [2])])


def _loop_on_input() -> Any:
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Neg", ["a"], ["a_out"])],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("c", BOOL, []),
            f32("a", [2]),
        ],
        [helper.make_tensor_value_info("c_out", BOOL, []), f32("a_out", None)],
    )
    node = helper.make_node("Loop", ["m", "", "x"], ["y"], body=body, name="repeat")
    return _model([node], [helper.make_tensor_value_info("m", I64, []), f32("x", [2])])


def _lstm_dynamic_length() -> Any:
    model, _ = _recurrent_model("LSTM", {}, ())
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "T"
    model.graph.node[0].name = "encoder"
    return model


def _rnn_unknown_activation() -> Any:
    model, _ = _recurrent_model("RNN", {"activations": ["Gelu"]}, ())
    model.graph.node[0].name = "cell"
    return model


def _scan_short_sequences() -> Any:
    model = _batched_scan([4, 2])
    model.graph.node[0].name = "scan8"
    return model


REFUSALS = {
    "scan8_variable_sequence_lengths": (
        _scan_short_sequences,
        r"^node 'scan8' \(Scan-8\): sequence_lens \[4, 2\] is shorter than the scan inputs' "
        r"length \[4\]: variable-length sequences are not supported$",
    ),
    "if_condition_at_run_time": (
        _if_on_input,
        r"^node 'choose' \(If-19\): the condition \(input #0\) must be a constant, but it is "
        r"computed at run time \(afc resolves If only when it is known at compile time\)$",
    ),
    "loop_trip_count_at_run_time": (
        _loop_on_input,
        r"^node 'repeat' \(Loop-19\): the trip count M \(input #0\) must be a constant, but it "
        r"is computed at run time",
    ),
    "lstm_dynamic_sequence_length": (
        _lstm_dynamic_length,
        r"^node 'encoder' \(LSTM-14\): the sequence length \(dim 0 of X.*\) depends on symbolic",
    ),
    "rnn_unknown_activation": (
        _rnn_unknown_activation,
        r"^node 'cell' \(RNN-14\): attribute activations='Gelu' is not supported \(affine, ",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusal_is_one_line_naming_the_node(case: str) -> None:
    build, message = REFUSALS[case]
    with pytest.raises(UserError) as info:
        import_onnx_model(default_context(), build(), "m")
    text = str(info.value)
    assert "\n" not in text
    assert re.search(message, text), text


def test_unrolled_lstm_compiles_and_checks(tmp_path: Any) -> None:
    """`afc compile --check` on an unrolled bidirectional LSTM: the steps fuse into vector
    kernels and the numbers (interpreter, buffer kernels, ONNX Runtime on fused.onnx)
    agree with the original."""
    model, _ = _recurrent_model("LSTM", {"direction": "bidirectional"}, ("initial_h",))
    names = [op.name for op in compiled_ops(tmp_path, model)]
    assert "graph.fusion_group" in names
    assert not any("lstm" in n for n in names)
