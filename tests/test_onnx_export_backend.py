"""ONNX's backend node suite exported back to ONNX: every case afc imports, through `-t onnx`.

test_onnx_backend_nodes.py imports and runs each case; here every case it imports and
runs is also exported (`export_module`, which runs onnx.checker with full_check). Each has
one of four outcomes:

* ort: the model passes the checker, and ONNX Runtime gives what afc's interpreter gives
  on the imported module;
* reference: the same, but ONNX Runtime cannot run the model (`ORT_GAPS` names why: a
  kernel it lacks at the opset, or 4- and 2-bit graph inputs its Python API cannot
  bind), so ONNX's reference evaluator runs it instead;
* refused: export raised a one-line UserError, listed in `EXPORT_REFUSED` with its reason;
* fail: anything else, among them a model the checker rejects (ExportInternalError).

A listed case must have its listed outcome, so the tables stay true. `conftest.py`
prints the counts.
"""

from __future__ import annotations

import re
from typing import Any, cast

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator  # noqa: E402
from test_onnx_backend_nodes import (  # noqa: E402
    RANDOM_BY_DESIGN,
    _arrays,
    _cases,
    _import,
    _plain,
    expected_refusal,
)
from test_onnx_export import TOLERANCE, run_ort  # noqa: E402

from autofusion import dtypes  # noqa: E402
from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects.graph_random import RandomOp  # noqa: E402
from autofusion.interpreter import run_function  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402
from frontends.onnx.values import ELEMENT_TYPES  # noqa: E402

# the user property that carries a case's outcome to conftest's summary
OUTCOME = "onnx_export_outcome"

# Case-name pattern (fullmatch) -> the reason export refuses it (a regex its UserError
# matches). Remove an entry when its cases export.
EXPORT_REFUSED: dict[str, str] = {}

# ONNX Runtime's gaps (onnxruntime 1.32's CPU provider): case-name pattern (fullmatch) ->
# a regex of its error. These models run in onnx.reference instead.
_NO_KERNEL = r"NOT_IMPLEMENTED : (Could not find an implementation|Failed to find kernel) for"
SUB_BYTE_IO = "4- or 2-bit graph inputs or outputs"
ORT_GAPS: dict[str, str] = {
    # 4- and 2-bit inputs and outputs: its Python API has no numpy type to bind them with
    r"test_cast(like)?_\w*(INT4|INT2|FLOAT4E2M1)\w*": SUB_BYTE_IO,
    r"test_(de)?quantizelinear_(u?int[24]|float4e2m1)": SUB_BYTE_IO,
    # operator versions and types without a CPU kernel
    r"test_attention_\w*bf16(_expanded)?": _NO_KERNEL + r" (Expand\(13\)|Add\(14\))",
    r"test_bernoulli\w*": _NO_KERNEL + r" RandomUniformLike\(22\)",
    r"test_bitcast_bool_to_uint8": _NO_KERNEL + r" BitCast\(26\)",
    r"test_(de)?quantizelinear(_\w+)?": _NO_KERNEL + r" (Deq|Q)uantizeLinear\(28\)",
    r"test_(max|min)_u?int16": _NO_KERNEL + r" (Max|Min)\(13\)",
    r"test_pow_types_float32_uint(32|64)": _NO_KERNEL + r" Pow\(15\)",
    r"test_roialign_\w+": _NO_KERNEL + r" RoiAlign\(22\)",
    r"test_swiglu\w*": _NO_KERNEL + r" Swish\(24\)",
    r"test_top_k_uint64": _NO_KERNEL + r" TopK\(24\)",
    r"test_celu_bfloat16_expanded": _NO_KERNEL + r" Div\(14\)",
    r"test_onehot_(with_axis|with_negative_axis|without_axis)": _NO_KERNEL + r" OneHot\(28\)",
    # batch-first recurrences (layout = 1)
    r"test_(gru|lstm|simple_rnn)_batchwise": r"Batchwise recurrent operations \(layout == 1\)",
    # run-time refusals of valid models (ONNX Runtime refuses the original too)
    r"test_attention_4d_diff_heads_mask4d_padded_kv": r"attention_helper\.h",
    r"test_reduce_max_empty_set_bool": r"ReduceMax is not defined for empty set with bool type",
    r"test_convinteger_with_padding": r"Non per-tensor quantization is not supported",
}

# Models neither runs: ONNX Runtime cannot (ORT_GAPS) and onnx.reference fails too
# (case-name pattern -> a regex of the evaluator's error). Only onnx.checker checks them.
NO_RUNNER: dict[str, str] = {
    # the evaluator's OneHot takes depth only as a scalar, not as [depth]
    r"test_onehot_(with_axis|with_negative_axis|without_axis)": r"only 0-dimensional arrays",
    # the evaluator's CastLike lacks CastLike-25's round_mode (written out by
    # origin.with_defaults: the checker expands function bodies without defaults)
    r"test_castlike_\w*(INT4|INT2|FLOAT4E2M1)\w*(?<!_expanded)|test_attention_4d_(causal_)?padded_kv_bf16_expanded": (
        r"CastLike_19\._run\(\) got an unexpected keyword argument 'round_mode'"
    ),
}

# Where ONNX Runtime computes otherwise than ONNX's reference (and afc), on the original
# model too (case-name pattern -> why): the exported model must give ORT's numbers for
# the original.
ORT_DIFFERS: dict[str, str] = {
    r"test_resize_downsample_scales_(cubic|linear)_align_corners": "align_corners sampling",
    r"test_maxunpool_export_with_output_shape": "indices into the output_shape",
    r"test_attention_4d_with_past_and_present_qk_matmul_bias_[34]d_mask_causal": (
        "qk_matmul_output before the causal mask"
    ),
}

# case-name pattern (fullmatch) -> (rtol, atol) where ONNX Runtime rounds otherwise
TOLERANCE_OVERRIDE: dict[str, tuple[float, float]] = {
    # float32 FFTs of values up to 470: ORT's and numpy's sums round apart
    r"test_(dft|stft)\w*": (1e-5, 1e-3),
}


def _exported_cases() -> list[str]:
    """The cases the backend suite imports and runs (a random case runs too)."""
    return [n for n in sorted(_cases()) if expected_refusal(n) in (None, RANDOM_BY_DESIGN)]


def _listed(table: dict[str, str], name: str) -> str | None:
    return next((r for p, r in table.items() if re.fullmatch(p, name)), None)


def _reference(model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`model` run by onnx.reference, with afc's plain storage (float32, int8, uint8)
    as the ml_dtypes types ONNX's evaluator takes for bf16 and the narrow types."""
    typed = {}
    for vi in model.graph.input:
        elem = vi.type.tensor_type.elem_type
        typed[vi.name] = feeds[vi.name].astype(onnx.helper.tensor_dtype_to_np_dtype(elem))
    results = ReferenceEvaluator(model).run(None, typed)
    return {vi.name: _plain(np.asarray(r)) for vi, r in zip(model.graph.output, results)}


def _sub_byte_io(model: Any) -> bool:
    for vi in (*model.graph.input, *model.graph.output):
        t = ELEMENT_TYPES.get(vi.type.tensor_type.elem_type)
        if t is not None and dtypes.is_narrow(t) and dtypes.type_name(t) in SUB_BYTE:
            return True
    return False


SUB_BYTE = ("i4", "ui4", "i2", "ui2", "f4E2M1FN")


def _compare(name: str, model: Any, want: dict, got: dict, random: bool) -> None:
    override = [t for p, t in TOLERANCE_OVERRIDE.items() if re.fullmatch(p, name)]
    for vi in model.graph.output:
        w, g = np.asarray(want[vi.name]), np.asarray(got[vi.name])
        assert w.shape == g.shape, f"{name}:{vi.name}: shape {g.shape}, expected {w.shape}"
        if random:  # drawn values: only shapes and types can agree
            continue
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g.astype(w.dtype), w, err_msg=f"{name}:{vi.name}")
            continue
        elem = vi.type.tensor_type.elem_type
        rtol, atol = override[0] if override else TOLERANCE.get(elem, (1e-5, 1e-5))
        np.testing.assert_allclose(
            g.astype(np.float64), w.astype(np.float64), rtol, atol, err_msg=f"{name}:{vi.name}"
        )


def _ort_original(name: str) -> dict[int, np.ndarray]:
    """ONNX Runtime's outputs for case `name`'s original model, by position."""
    model, raw_inputs, _ = _cases()[name]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {vi.name: v for vi, v in zip(model.graph.input, raw_inputs)}
    return dict(enumerate(sess.run(None, feeds)))


def _innermost(e: BaseException) -> str:
    """The message of the error `e` was raised from (the evaluator wraps its errors)."""
    while e.__cause__ is not None or e.__context__ is not None:
        e = cast(BaseException, e.__cause__ or e.__context__)
    return f"{type(e).__name__}: {e}"


def export_case(name: str) -> tuple[str, str]:
    """Import, run, export and run again case `name`: its outcome and the message that
    explains a refusal or a gap ('' otherwise)."""
    model, raw_inputs, _ = _cases()[name]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    module, feeds = _import(model, _arrays(raw_inputs))
    want = run_function(module, feeds)  # type: ignore[arg-type]
    try:
        exported = export_module(module)  # type: ignore[arg-type]
    except UserError as e:
        return "refused", e.message
    shapes = {k: np.shape(v) for k, v in want.items()}
    random = any(isinstance(op, RandomOp) for op in module.walk())  # type: ignore[attr-defined]
    gap = SUB_BYTE_IO if _sub_byte_io(exported) else ""
    if not gap:
        try:
            got = run_ort(exported, feeds, shapes)
        except Exception as e:  # onnxruntime's errors have no common base class
            gap = str(e)
        else:
            if _listed(ORT_DIFFERS, name) is None:
                _compare(name, exported, want, got, random)
                return "ort", ""
            by_position = _ort_original(name)
            outputs = [vi.name for vi in exported.graph.output]
            _compare(
                name, exported, {k: by_position[i] for i, k in enumerate(outputs)}, got, random
            )
            return "ort-original", ""
    try:
        got = _reference(exported, feeds)
    except Exception as e:  # the evaluator's errors have no common base class either
        return "checker", _innermost(e)
    _compare(name, exported, want, got, random)
    return "reference", gap


@pytest.mark.parametrize("name", _exported_cases())
def test_export(name: str, record_property: pytest.RecordProperty) -> None:
    outcome, message = export_case(name)
    record_property(OUTCOME, outcome)
    # each outcome but "ort" must be listed (with a reason its message matches), and a
    # listed case must have its outcome
    tables = {
        "refused": EXPORT_REFUSED,
        "reference": ORT_GAPS,
        "checker": NO_RUNNER,
        "ort-original": ORT_DIFFERS,
    }
    if outcome == "refused":
        assert "\n" not in message, f"{name}: a refusal is one line: {message!r}"
    for kind, table in tables.items():
        reason = _listed(table, name)
        if kind == outcome:
            assert reason is not None, f"{name}: {outcome} but not listed for it: {message}"
            if message:
                assert re.search(reason, message), (
                    f"{name}: {outcome} for another reason: {message}"
                )
        elif outcome != "checker" or kind != "reference":  # a NO_RUNNER case has an ORT gap
            assert reason is None, f"{name}: {outcome}, but listed as {kind} ({reason!r})"


def test_every_pattern_names_cases() -> None:
    """A pattern that matches no exported case is stale (a typo or a renamed case)."""
    names = _exported_cases()
    patterns = [*EXPORT_REFUSED, *ORT_GAPS, *NO_RUNNER, *ORT_DIFFERS, *TOLERANCE_OVERRIDE]
    assert [p for p in patterns if not any(re.fullmatch(p, n) for n in names)] == []
