"""ONNX's whole backend node suite, run through the ONNX importer and afc's interpreter.

Each case is a one-node model (or a function's expanded body) with inputs and reference
outputs computed by ONNX's own numpy reference. The onnx wheel ships the cases as code
(`onnx.backend.test.case.node`), from which `backend-test-tools generate-data` writes
`data/node/test_*/`; when that directory is installed it is used, otherwise the same
cases are built in memory with `collect_testcases()`.

Every case runs; none is selected by hand. A case has one of four outcomes:

* pass: afc imports and runs it and every output matches the reference;
* refused: afc raised its `UserError` (a one-line refusal) at import or run time;
* wrong: an output differs from the reference (always a failure);
* crash: any other exception (always a failure).

A refused case must be listed in `REFUSED` (case-name pattern -> the reason, a text its
error contains), and a listed case must be refused for that reason, so the table stays
true as operators are added. `conftest.py` prints the counts of the four outcomes.
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
from xdsl.dialects.builtin import ModuleOp  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects.graph_random import RandomOp  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402

# the user property that carries a case's outcome to conftest's summary
OUTCOME = "onnx_backend_outcome"


def OP(op_type: str) -> str:
    """The refusal of an operator afc does not convert."""
    return rf"unsupported ONNX operator {op_type}\b"


# element types the graph dialect has no home for
NO_HOME = r"element type (STRING|COMPLEX\d+)\b"
# sequence and optional graph inputs (their length or presence is only known at run time)
NOT_A_TENSOR = r"is (a sequence|an optional), not a tensor"
# sequence and optional graph outputs (afc resolves sequences at compile time, and its
# compiled models return tensors)
NOT_A_TENSOR_OUTPUT = r"graph output '\w+' is (a sequence|an optional); afc compiles models"
# models of the ai.onnx.preview.training and ai.onnx.ml domains only
NO_DEFAULT_DOMAIN = r"the model imports no default-domain \(ai\.onnx\) opset"

# the outcome of a case whose outputs depend on a random op (graph_random.py)
RANDOM_BY_DESIGN = r"^its values are random by design"


class RandomByDesign(Exception):
    """A case whose outputs afc draws at random: only their shapes and types can match."""


# Case-name pattern (fullmatch; the first matching one applies) -> the reason afc
# refuses those cases (a regex its UserError matches). Remove an entry when its cases pass.
REFUSED: dict[str, str] = {
    # element types without a home (strings), sequence and optional inputs and outputs
    r"test_(equal_string|regex|string|strnormalizer).*": NO_HOME,
    r"test_(identity_(opt|sequence)|sequence_map_\w+|optional_get_element_(optional_\w+|sequence))": (
        NOT_A_TENSOR
    ),
    r"test_optional_has_element_(empty_optional|optional|tensor)_input": NOT_A_TENSOR,
    r"test_loop(13_seq|16_seq_none)": NOT_A_TENSOR,
    r"test_sequence_insert_at_(back|front)": NOT_A_TENSOR,
    r"test_if_(seq|opt)|test_split_to_sequence_.*": NOT_A_TENSOR_OUTPUT,
    # training: other domains, training modes and losses
    r"test_(adagrad|adam|momentum|nesterov|ai_onnx_ml)(_.*)?": NO_DEFAULT_DOMAIN,
    r"test_batchnorm_(epsilon|example)_training_mode": r"training_mode=1 is not supported",
    r"test_training_dropout.*": r"training_mode=true is not supported",
    r"test_nllloss_.*(?<!_expanded)|test_sce_.*": OP(
        "(NegativeLogLikelihoodLoss|SoftmaxCrossEntropyLoss)"
    ),
    r"test_flexattention(_\w+)?(?<!_expanded_ver26)": r"operator domain 'ai\.onnx\.preview' is not supported",
    # attributes and inputs of converted operators
    # operators afc does not convert (an `_expanded` case is the operator's function body;
    # an operator with a function body and no converter is converted as that body)
    r"test_attention_local_window_gqa_rank4_mask": r"softmax_precision='DOUBLE' is not supported",
    # random operators: afc imports and runs them, but the expected values come from
    # numpy's RNG, which no other generator reproduces (shapes and types are checked)
    r"test_bernoulli.*": RANDOM_BY_DESIGN,
    r"test_image_decoder_.*": OP("ImageDecoder"),
}

# case-name pattern (fullmatch) -> (rtol, atol) where the reference data is not exact
TOLERANCE_OVERRIDE = {
    # the expected values are written with 4 decimals
    r"test_(averagepool_2d_ceil_last_window_starts_on_pad|gridsample_bicubic|roialign_aligned_(false|true))": (
        1e-3,
        1e-4,
    ),
    # ONNX's reference rounds to bf16 after every step of attention; afc rounds once from
    # float32, which is closer to the exact result (test_attention_4d_causal_bf16 against
    # a float64 computation: 0.0020 for afc, 0.0044 for the reference): up to 2 bf16 ulps apart
    r"test_attention_\w+_bf16(_expanded)?": (2.0**-6, 2.0**-8),
}

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
    """Case data as numpy arrays (types numpy lacks come as TensorProtos; a sequence or
    optional value, which afc refuses at import, becomes an object array)."""
    out = []
    for v in values:
        if isinstance(v, TensorProto):
            out.append(numpy_helper.to_array(v))
        elif isinstance(v, list) or v is None:
            holder = np.empty(0 if v is None else len(v), dtype=object)
            holder[:] = v or []
            out.append(holder)
        else:
            out.append(np.asarray(v))
    # ml_dtypes values (bf16, float8, float4, int4, int2) are held as float32 or int8/uint8
    # in afc (autofusion.dtypes, autofusion.narrow_types)
    return [_plain(v) for v in out]


def _plain(v: np.ndarray) -> np.ndarray:
    if v.dtype.type.__module__ != "ml_dtypes":
        return v
    if "int" in v.dtype.name:
        return v.astype(np.uint8 if v.dtype.name.startswith("u") else np.int8)
    return v.astype(np.float32)


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
            # a node inside a subgraph (If/Loop/Scan body) is not in the main graph
            name = nodes[0].input[int(match[2])] if nodes else ""
            if name in feeds:
                moved = {name}
            else:  # computed from inputs (an expanded function): fix every integer input
                # and the inputs it is computed from
                moved = {k for k, v in feeds.items() if v.dtype.kind in "iub"}
                moved |= _inputs_behind(model, name) & set(feeds)
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


def _inputs_behind(model: onnx.ModelProto, name: str) -> set[str]:
    """The values of the main graph that `name` is computed from (itself included)."""
    producers = {out: n for n in model.graph.node for out in n.output}
    seen: set[str] = set()
    stack = [name]
    while stack:
        value = stack.pop()
        if value not in seen:
            seen.add(value)
            stack.extend(producers[value].input if value in producers else ())
    return seen


def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=name)
        return
    case = name.split(":", maxsplit=1)[0]
    bf16 = "bfloat16" in case or re.search(r"_bf16(_|$)", case) is not None
    default = BF16_TOLERANCE if bf16 else TOLERANCE.get(want.dtype, (1e-5, 1e-6))
    override = [tol for pattern, tol in TOLERANCE_OVERRIDE.items() if re.fullmatch(pattern, case)]
    rtol, atol = override[0] if override else default
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=name
    )


def check_outputs(
    name: str, module: ModuleOp, feeds: dict[str, np.ndarray], outputs: list[np.ndarray]
) -> None:
    """Case `name`'s imported `module` run on `feeds` gives its reference `outputs`."""
    results = run_function(module, feeds)
    assert len(results) == len(outputs)
    for (out_name, got), want in zip(results.items(), outputs):
        _check(f"{name}:{out_name}", got, want)


def expected_refusal(name: str) -> str | None:
    """The reason REFUSED gives for case `name`, or None when it must pass."""
    for pattern, reason in REFUSED.items():
        if re.fullmatch(pattern, name):
            return reason
    return None


def run_case(name: str) -> tuple[str, BaseException | None]:
    """Import and run case `name`: its outcome (pass, refused, wrong or crash) and error."""
    model, raw_inputs, raw_outputs = _cases()[name]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    try:
        inputs, outputs = _arrays(raw_inputs), _arrays(raw_outputs)
        module, feeds = _import(model, inputs)
        results = run_function(module, feeds)  # type: ignore[arg-type]
    except UserError as e:
        return "refused", e
    except Exception as e:  # every other exception is a crash
        return "crash", e
    random = any(isinstance(op, RandomOp) for op in module.walk())  # type: ignore[attr-defined]
    try:
        assert len(results) == len(outputs), f"{len(results)} outputs, expected {len(outputs)}"
        for (out_name, got), want in zip(results.items(), outputs):
            if random:
                drawn, ref = np.asarray(got), np.asarray(want)
                assert (drawn.shape, drawn.dtype) == (ref.shape, ref.dtype), f"{out_name}: {drawn}"
            else:
                _check(f"{name}:{out_name}", got, want)
    except AssertionError as e:
        return "wrong", e
    if random:
        return "refused", RandomByDesign("its values are random by design (shapes, types match)")
    return "pass", None


@pytest.mark.parametrize("name", sorted(_cases()))
def test_node(name: str, record_property: pytest.RecordProperty) -> None:
    outcome, error = run_case(name)
    record_property(OUTCOME, outcome)
    if error is not None and outcome in ("wrong", "crash"):
        raise error
    expected = expected_refusal(name)
    if outcome == "pass":
        assert expected is None, f"{name} passes: remove its REFUSED entry ({expected!r})"
        return
    message = str(error)
    assert expected is not None, f"{name} is refused but not listed in REFUSED: {message}"
    assert re.search(expected, message), (
        f"{name} is refused for another reason than REFUSED's {expected!r}: {message}"
    )


def test_every_refusal_pattern_names_cases() -> None:
    """A REFUSED pattern that matches no case is stale (a typo or a renamed case)."""
    names = list(_cases())
    stale = [p for p in REFUSED if not any(re.fullmatch(p, n) for n in names)]
    assert stale == []
