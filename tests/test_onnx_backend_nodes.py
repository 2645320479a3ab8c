"""ONNX's backend node tests, run through the ONNX importer and afc's interpreter.

This is how the interpreter (and the importer's folding) is checked against ONNX
semantics: each case is a one-node model (or a function's expanded body) with inputs
and reference outputs computed by ONNX's own numpy reference.

The onnx wheel ships the node cases as code (`onnx.backend.test.case.node`), from which
`backend-test-tools generate-data` writes `data/node/test_*/`; when that directory is
installed it is used, otherwise the same cases are built in memory with
`collect_testcases()`.

Cases are selected by the op types of their nodes (`OP_TYPES`, explicitly listed); cases
whose nodes use an op outside `SUPPORTED` are not collected. A selected case is skipped
only for a reason stated in `SKIP` (by name) or because its model needs an opset the
importer does not take (< 13, or an op whose spec changed after 18).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, numpy_helper  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402

# ops whose node tests run (each converts to graph ops, or is folded at import)
OP_TYPES = frozenset(
    [
        "Abs",
        "Add",
        "And",
        "AveragePool",
        "BatchNormalization",
        "Cast",
        "CastLike",
        "Clip",
        "Concat",
        "Constant",
        "ConstantOfShape",
        "Conv",
        "Cos",
        "Div",
        "Dropout",
        "Elu",
        "Equal",
        "Erf",
        "Exp",
        "Expand",
        "Flatten",
        "Gather",
        "GatherND",
        "Gemm",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "Greater",
        "GreaterOrEqual",
        "HardSigmoid",
        "HardSwish",
        "Identity",
        "LayerNormalization",
        "LeakyRelu",
        "Less",
        "LessOrEqual",
        "Log",
        "LogSoftmax",
        "MatMul",
        "Max",
        "MaxPool",
        "Mean",
        "Min",
        "Mish",
        "Mul",
        "Neg",
        "Not",
        "Or",
        "PRelu",
        "Pad",
        "Pow",
        "Range",
        "Reciprocal",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceMax",
        "ReduceMean",
        "ReduceMin",
        "ReduceSum",
        "ReduceSumSquare",
        "Relu",
        "Reshape",
        "Selu",
        "Shape",
        "Sigmoid",
        "Sin",
        "Size",
        "Slice",
        "Softmax",
        "Softplus",
        "Softsign",
        "Split",
        "Sqrt",
        "Squeeze",
        "Sub",
        "Sum",
        "Tanh",
        "ThresholdedRelu",
        "Tile",
        "Transpose",
        "Trilu",
        "Unsqueeze",
        "Where",
        "Xor",
    ]
)
SUPPORTED = OP_TYPES

# case name -> why it does not run (each is a documented limitation of afc)
SKIP: dict[str, str] = {
    "test_batchnorm_epsilon_training_mode": "training_mode=1: afc imports inference graphs",
    "test_batchnorm_example_training_mode": "training_mode=1: afc imports inference graphs",
    "test_training_dropout": "training_mode=true: afc imports inference graphs",
    "test_training_dropout_default": "training_mode=true: afc imports inference graphs",
    "test_training_dropout_default_mask": "training_mode=true: afc imports inference graphs",
    "test_training_dropout_mask": "training_mode=true: afc imports inference graphs",
    "test_training_dropout_zero_ratio": "training_mode=true: afc imports inference graphs",
    "test_training_dropout_zero_ratio_mask": "training_mode=true: afc imports inference graphs",
    "test_pow_types_int32_int32": "graph.pow is defined on floating-point bases only",
    "test_pow_types_int64_int64": "graph.pow is defined on floating-point bases only",
    "test_pow_types_int32_float32": "graph.pow is defined on floating-point bases only",
    "test_pow_types_int64_float32": "graph.pow is defined on floating-point bases only",
    "test_gathernd_example_int32_batch_dim1": "GatherND batch_dims=1 is not supported",
    "test_maxpool_with_argmax_2d_precomputed_pads": "MaxPool's Indices output",
    "test_maxpool_with_argmax_2d_precomputed_strides": "MaxPool's Indices output",
    "test_reshape_allowzero_reordered": "allowzero=1 with a 0 dim (zero-sized tensors)",
    "test_reduce_max_empty_set": "the interpreter rejects reductions of empty sets",
    "test_reduce_max_empty_set_bool": "the interpreter rejects reductions of empty sets",
    "test_reduce_min_empty_set": "the interpreter rejects reductions of empty sets",
    "test_identity_opt": "optional types are not tensors",
    "test_identity_sequence": "sequence types are not tensors",
    "test_wrap_pad": "Pad mode 'wrap' is Pad-19",
    "test_averagepool_3d_default": "3-D pooling (graph has 1-D/2-D windows)",
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False": "3-D pooling",
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True": "3-D pooling",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False": "3-D pooling",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True": "3-D pooling",
    "test_averagepool_3d_dilations_small": "3-D pooling",
    "test_maxpool_3d_default": "3-D pooling",
    "test_maxpool_3d_dilations": "3-D pooling",
    "test_maxpool_3d_dilations_use_ref_impl": "3-D pooling",
    "test_maxpool_3d_dilations_use_ref_impl_large": "3-D pooling",
}

# element types outside the graph dialect: cases using them are skipped by rule
UNSUPPORTED_TYPES = frozenset(
    t
    for t in TensorProto.DataType.values()
    if t
    not in (
        TensorProto.FLOAT,
        TensorProto.FLOAT16,
        TensorProto.BFLOAT16,
        TensorProto.DOUBLE,
        TensorProto.INT64,
        TensorProto.INT32,
        TensorProto.INT8,
        TensorProto.BOOL,
    )
)

# case -> (rtol, atol) where the reference data is not exact
TOLERANCE_OVERRIDE = {
    # the expected values are written with 4 decimals
    "test_averagepool_2d_ceil_last_window_starts_on_pad": (1e-3, 1e-4),
}

MIN_OPSET, MAX_OPSET = 13, 18

# (rtol, atol) by numpy dtype of the reference output
TOLERANCE = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float64): (1e-7, 1e-9),
}
# bf16 references arrive as float32 (see _arrays); one bf16 ulp is 2**-7 relative, and
# afc rounds intermediate results of expanded functions to bf16 as onnx's reference does,
# so allow one ulp of disagreement from a different rounding order.
BF16_TOLERANCE = (2.0**-7, 1e-6)


def _data_dir() -> Path:
    return Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "node"


def _read_pb(path: Path) -> np.ndarray:
    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def _arrays(values: list) -> list[np.ndarray]:
    """Case data as numpy arrays (types numpy lacks come as TensorProtos)."""
    out = [
        numpy_helper.to_array(v) if isinstance(v, TensorProto) else np.asarray(v) for v in values
    ]
    # bf16 (ml_dtypes) values are float32 holding bf16 values in afc (autofusion.dtypes)
    return [v.astype(np.float32) if v.dtype.name == "bfloat16" else v for v in out]


@functools.cache
def _cases() -> dict[str, tuple[onnx.ModelProto, list[np.ndarray], list[np.ndarray]]]:
    """Every node case: name -> (model, inputs, reference outputs) of its first data set."""
    out: dict[str, tuple[onnx.ModelProto, list[np.ndarray], list[np.ndarray]]] = {}
    directory = _data_dir()
    if directory.is_dir():
        for case in sorted(directory.glob("test_*")):
            model = onnx.load(str(case / "model.onnx"))
            data = case / "test_data_set_0"
            inputs = [_read_pb(p) for p in sorted(data.glob("input_*.pb"))]
            outputs = [_read_pb(p) for p in sorted(data.glob("output_*.pb"))]
            out[case.name] = (model, inputs, outputs)
        return out
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for case in node.collect_testcases(None):
            if case.model is None or not case.data_sets:
                continue
            inputs, outputs = case.data_sets[0]
            out[case.name] = (case.model, list(inputs), list(outputs))
    return out


def _selected() -> list[str]:
    names = []
    for name, (model, _, _) in sorted(_cases().items()):
        ops = {n.op_type for n in model.graph.node}
        if ops and ops <= SUPPORTED and ops & OP_TYPES:
            names.append(name)
    return names


def _opset_problem(model: onnx.ModelProto) -> str | None:
    """Why the model cannot be imported at its opset; lowers opsets above 18 to 18.

    Most node cases are written at the newest opset, and most op versions after 18 only
    add element types (bf16, float8, int4, ...). The importer takes opsets 13-18, so a
    newer model whose ops all exist at 18 is imported as opset 18; an attribute that
    opset 18 does not have is dropped when it holds the newer version's default, else
    the case is skipped. Converters reject attributes they do not know, and the
    reference outputs decide whether the lowering changed what the model computes.
    """
    default = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not default:
        return "no default-domain opset"
    version = default[0].version
    if version < MIN_OPSET:
        return f"opset {version} < {MIN_OPSET}"
    if version <= MAX_OPSET:
        return None
    for n in model.graph.node:
        try:
            old = onnx.defs.get_schema(n.op_type, MAX_OPSET)
        except onnx.defs.SchemaError:
            return f"{n.op_type} does not exist at opset {MAX_OPSET}"
        new = onnx.defs.get_schema(n.op_type, version)
        for attr in list(n.attribute):
            if attr.name in old.attributes:
                continue
            default_value = new.attributes[attr.name].default_value
            if default_value.name and onnx.helper.get_attribute_value(
                default_value
            ) == onnx.helper.get_attribute_value(attr):
                n.attribute.remove(attr)
                continue
            return f"{n.op_type} attribute '{attr.name}' is newer than opset {MAX_OPSET}"
    default[0].version = MAX_OPSET
    return None


def _type_problem(model: onnx.ModelProto) -> str | None:
    """An element type outside the graph dialect on an input, output or Cast target."""
    used = [
        (v.name, v.type.tensor_type.elem_type)
        for v in (*model.graph.input, *model.graph.output)
        if v.type.HasField("tensor_type")
    ]
    for n in model.graph.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to":
                used.append((n.name, a.i))
            if a.type == onnx.AttributeProto.TENSOR:
                used.append((n.name, a.t.data_type))
    for name, t in used:
        if t in UNSUPPORTED_TYPES:
            return (
                f"element type {TensorProto.DataType.Name(t)} ({name}) is not in the graph dialect"
            )
    return None


def _import(model: onnx.ModelProto, inputs: list[np.ndarray]) -> tuple[object, dict]:
    """Import with the case's inputs as arguments. An input the importer needs as a
    constant (a shape, axes, pads, ...) is named in its error as `node 'N' ... (input #k)`;
    it is then turned into an initializer and the import retried."""
    feeds = {i.name: v for i, v in zip(model.graph.input, inputs)}
    for _ in range(len(inputs) + 1):
        try:
            return import_onnx_model(default_context(), model, "case"), feeds
        except UserError as e:
            match = re.match(r"node '([^']*)' .*\(input #(\d+)\)", e.message)
            if match is None or "must be a constant" not in e.message:
                raise
            nodes = [
                n
                for k, n in enumerate(model.graph.node)
                if (n.name or f"{n.op_type}_{k}") == match[1]
            ]
            name = nodes[0].input[int(match[2])]
            if name in feeds:
                moved = {name}
            else:  # computed from inputs (an expanded function): fix every integer input
                moved = {k for k, v in feeds.items() if v.dtype.kind in "iub"}
                if not moved:
                    raise
            types = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
            for k in sorted(moved):
                value = feeds.pop(k)
                if types[k] == TensorProto.BFLOAT16:  # fed as float32 (see _arrays)
                    tensor = onnx.helper.make_tensor(
                        k, TensorProto.BFLOAT16, value.shape, value.reshape(-1).tolist()
                    )
                else:
                    tensor = numpy_helper.from_array(value, k)
                model.graph.initializer.append(tensor)
            keep = [i for i in model.graph.input if i.name not in moved]
            del model.graph.input[:]
            model.graph.input.extend(keep)
    raise AssertionError("unreachable")


def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=name)
        return
    case = name.split(":", maxsplit=1)[0]
    default = BF16_TOLERANCE if "bfloat16" in case else TOLERANCE.get(want.dtype, (1e-5, 1e-6))
    rtol, atol = TOLERANCE_OVERRIDE.get(case, default)
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=name
    )


@pytest.mark.parametrize("name", _selected())
def test_node(name: str) -> None:
    if name in SKIP:
        pytest.skip(SKIP[name])
    model, raw_inputs, raw_outputs = _cases()[name]
    inputs, outputs = _arrays(raw_inputs), _arrays(raw_outputs)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    problem = _type_problem(model) or _opset_problem(model)
    if problem is not None:
        pytest.skip(problem)
    module, feeds = _import(model, inputs)
    results = run_function(module, feeds)  # type: ignore[arg-type]
    assert len(results) == len(outputs)
    for (out_name, got), want in zip(results.items(), outputs):
        _check(f"{name}:{out_name}", got, want)


def test_every_listed_op_has_cases() -> None:
    """OP_TYPES names no op without node tests (a typo would silently test nothing)."""
    covered = {n.op_type for m, _, _ in _cases().values() for n in m.graph.node}
    assert OP_TYPES - covered == set()


def test_skip_list_names_real_cases() -> None:
    assert set(SKIP) - set(_selected()) == set()
