"""`afc compile --check`: run the original and the fused model on the same random inputs.

The random inputs are seeded; an integer input's range follows its use (input_ranges.py).
Each named dynamic dim (the frontends' `B`, `S`, ONNX's dim_params) gets its own size, so
that a kernel which swaps two of them fails the check.
Three comparisons against the original model run by the reference interpreter: the
fused graph (interpreter), the buffer-level kernels (interpreter), and fused.onnx in
ONNX Runtime when it is installed (for an .onnx model, ONNX Runtime also runs the
original file, so the two runtimes are compared like for like). Each reports the
largest absolute and relative error over all outputs; the verdict compares them with a
tolerance that follows the model's narrowest float type.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.utils.exceptions import InterpretationError

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects.graph_random import RandomOp
from autofusion.driver.input_ranges import integer_input_ranges
from autofusion.driver.pipeline import fuse_and_lower
from autofusion.interpreter import find_function, random_inputs, run_function, symbol_sizes

if TYPE_CHECKING:
    from autofusion.driver.pipeline import Compilation

# (rtol, atol) by the narrowest float element type among the model's inputs and outputs
TOLERANCE = {"f64": (1e-9, 1e-9), "f32": (1e-4, 1e-4), "f16": (1e-2, 1e-2), "bf16": (4e-2, 4e-2)}
NARROWEST_FIRST = ("bf16", "f16", "f32", "f64")
# shape-only weights are filled for --check up to this many bytes
MATERIALIZE_LIMIT_BYTES = 256 << 20
# the standard deviation of filled weights (as transformer initialisers use)
WEIGHT_SCALE = 0.05
# the size of the first named dynamic dim; the next named ones are one larger each
DYNAMIC_SIZE = 4


def _tolerance(module: ModuleOp) -> tuple[str, tuple[float, float]]:
    f = find_function(module)
    names = {
        dtypes.type_name(t.element_type)
        for t in (*f.function_type.inputs.data, *f.function_type.outputs.data)
        if isinstance(t, TensorType) and dtypes.is_float(t.element_type)
    }
    for name in NARROWEST_FIRST:
        if name in names:
            return name, TOLERANCE[name]
    return "f32", TOLERANCE["f32"]


def compare(
    want: dict[str, np.ndarray], got: dict[str, np.ndarray], rtol: float, atol: float
) -> dict[str, Any]:
    """Largest errors over all outputs, and whether every element is within tolerance."""
    worst_abs, worst_rel, where, ok = 0.0, 0.0, "", True
    for name, w in want.items():
        if name not in got:
            return {"max_abs_err": None, "max_rel_err": None, "output": name, "ok": False}
        a = np.asarray(got[name], np.float64)
        b = np.asarray(w, np.float64)
        if a.shape != b.shape:
            return {"max_abs_err": None, "max_rel_err": None, "output": name, "ok": False}
        same_nan = np.isnan(a) & np.isnan(b)
        same_inf = np.isinf(a) & (a == b)
        err = np.where(same_nan | same_inf, 0.0, np.abs(a - b))
        err = np.nan_to_num(err, nan=np.inf)
        rel = err / np.maximum(np.abs(np.nan_to_num(b)), np.finfo(np.float64).tiny)
        if err.size:
            if float(err.max()) >= worst_abs:
                worst_abs, where = float(err.max()), name
            worst_rel = max(worst_rel, float(np.where(err == 0, 0.0, rel).max()))
            ok = ok and bool(np.all(err <= atol + rtol * np.abs(np.nan_to_num(b))))
    return {"max_abs_err": worst_abs, "max_rel_err": worst_rel, "output": where, "ok": ok}


def _row(what: str, result: dict[str, Any]) -> dict[str, Any]:
    if result["max_abs_err"] is None:
        text = f"MISMATCH: output {result['output']} is missing or has another shape"
    else:
        text = (
            f"max |err| {result['max_abs_err']:.3g} (rel {result['max_rel_err']:.3g})"
            f"{' on ' + result['output'] if result['output'] else ''}"
            f"{'' if result['ok'] else ' -- over tolerance'}"
        )
    return {"what": what, **result, "result": text}


def _has_shape_only_weights(module: ModuleOp) -> bool:
    return any(isinstance(op, graph.ConstantOp) and op.is_shape_only for op in module.walk())


def _ort_run(model: bytes | str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
    return dict(zip(names, session.run(names, feeds)))


def _ort_comparisons(
    c: Compilation,
    original: ModuleOp,
    fused: ModuleOp,
    inputs: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    tol: tuple[float, float],
) -> tuple[list[dict[str, Any]], list[str]]:
    """fused.onnx (of the checked fused module) in ONNX Runtime against the interpreter,
    and against the original .onnx file run by ONNX Runtime when that is the input."""
    try:
        import onnxruntime  # noqa: F401

        from frontends.onnx.export import export_module, serialize
    except ImportError:
        return [], ["ONNX Runtime: not compared (pip install onnx onnxruntime)"]
    if _bf16_args(original):
        return [], ["ONNX Runtime: not compared (bf16 inputs; numpy has no bfloat16)"]
    rows: list[dict[str, Any]] = []
    try:
        got = _ort_run(serialize(export_module(fused)), inputs)
    except Exception as e:  # ONNX Runtime's own exception types (Fail, InvalidGraph, ...)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        failed = {"max_abs_err": None, "max_rel_err": None, "output": "", "ok": False}
        return [{"what": "ONNX Runtime: fused.onnx", **failed, "result": f"rejected: {first}"}], []
    if Path(c.model).suffix == ".onnx" and original is c.original:
        want = _ort_run(str(c.model), inputs)
        rows.append(_row("ONNX Runtime: fused.onnx vs original .onnx", compare(want, got, *tol)))
    rows.append(_row("ONNX Runtime: fused.onnx vs interpreter", compare(reference, got, *tol)))
    return rows, []


def _bf16_args(module: ModuleOp) -> set[str]:
    from autofusion.interpreter import argument_names

    f = find_function(module)
    return {
        name
        for name, t in zip(argument_names(f), f.function_type.inputs.data)
        if isinstance(t, TensorType) and dtypes.type_name(t.element_type) == "bf16"
    }


def _materialized(module: ModuleOp) -> tuple[ModuleOp, int, int] | None:
    """A copy of `module` whose shape-only weights hold random values (seeded by their
    names, scaled like a weight initialiser), with their count and bytes; None when they
    would take more than MATERIALIZE_LIMIT_BYTES."""
    from autofusion.passes.matching import make_constant

    weights = [op for op in module.walk() if isinstance(op, graph.ConstantOp) and op.is_shape_only]
    total = sum(
        int(np.prod(t.get_shape(), dtype=np.int64)) * dtypes.byte_width(t.element_type)
        for t in (cast(TensorType, w.result.type) for w in weights)
    )
    if total > MATERIALIZE_LIMIT_BYTES:
        return None
    copy = module.clone()
    for op in [op for op in copy.walk() if isinstance(op, graph.ConstantOp) and op.is_shape_only]:
        t = cast(TensorType, op.result.type)
        name = op.attributes.get("name")
        key = name.data if isinstance(name, StringAttr) else str(t)
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        shape = t.get_shape()
        values: np.ndarray
        if dtypes.is_float(t.element_type):
            values = rng.standard_normal(shape) * WEIGHT_SCALE
        else:
            values = rng.integers(0, 8, shape)
        new = make_constant(values, t, key)
        assert op.parent is not None
        op.parent.insert_op_before(new, op)
        op.result.replace_all_uses_with(new.result)
        op.detach()
        op.erase()
    return copy, len(weights), total


def _random_draw(module: ModuleOp) -> str | None:
    """Why --check cannot compare `module`'s outputs: the first random op it draws with."""
    for op in module.walk():
        if isinstance(op, RandomOp):
            return (
                f"skipped: the model draws random values ({op.name}), which no two runtimes "
                "draw alike"
            )
    return None


def _modules_to_check(c: Compilation) -> tuple[ModuleOp, ModuleOp, ModuleOp, list[str]] | str:
    """(original, fused, lowered) with values, and notes; or why there are none."""
    assert c.fused is not None and c.buffer is not None
    if (why := _random_draw(c.original)) is not None:
        return why
    if not _has_shape_only_weights(c.original):
        return c.original, c.fused, c.buffer, []
    made = _materialized(c.original)
    if made is None:
        return (
            f"skipped: the shape-only weights exceed {MATERIALIZE_LIMIT_BYTES >> 20} MB "
            "(too large to fill with random values)"
        )
    original, count, total = made
    fused = original.clone()
    lowered = fuse_and_lower(c.ctx, fused, c.options)
    note = (
        f"--check filled {count} shape-only weights ({total / 1e6:.1f} MB) with random "
        "values and compiled that copy the same way"
    )
    return original, fused, lowered, [note]


def _reference_run(
    original: ModuleOp, seed: int, ranges: Mapping[str, tuple[int, int]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str | None]:
    """The inputs and the original's outputs: each named dynamic dim its own size (B = 4,
    S = 5, ...: a kernel that swaps two dynamic dims then computes other numbers), or,
    where the model ties its dims (it does not run with them apart), every dynamic dim
    DYNAMIC_SIZE; the note saying so in that case."""
    f = find_function(original)
    sizes = symbol_sizes(f, DYNAMIC_SIZE)
    if len(sizes) > 1:
        inputs = random_inputs(f, seed, DYNAMIC_SIZE, ranges, sizes)
        try:
            return inputs, run_function(original, inputs), None
        except (UserError, InterpretationError, ValueError) as e:
            note = (
                f"the dynamic dims {', '.join(sizes)} do not run apart ({str(e).splitlines()[0]}): "
                f"every dynamic dim is {DYNAMIC_SIZE}"
            )
            inputs = random_inputs(f, seed, DYNAMIC_SIZE, ranges)
            return inputs, run_function(original, inputs), note
    inputs = random_inputs(f, seed, DYNAMIC_SIZE, ranges)
    return inputs, run_function(original, inputs), None


def check_numerics(c: Compilation) -> dict[str, Any]:
    """check.json: the inputs' seed and shapes, each comparison, and a verdict."""
    modules = _modules_to_check(c)
    if isinstance(modules, str):
        return {
            "seed": c.options.seed,
            "comparisons": [],
            "notes": [],
            "verdict": modules,
            "ok": True,
        }
    original, fused, lowered, notes = modules
    dtype_name, tol = _tolerance(original)
    f = find_function(original)
    ranges = integer_input_ranges(f, c.options.input_ranges)
    inputs, reference, same = _reference_run(original, c.options.seed, ranges)
    if same is not None:
        notes.append(same)
    rows = [
        _row("interpreter: fused graph", compare(reference, run_function(fused, inputs), *tol)),
        _row(
            "interpreter: buffer kernels", compare(reference, run_function(lowered, inputs), *tol)
        ),
    ]
    ort_rows, ort_notes = _ort_comparisons(c, original, fused, inputs, reference, tol)
    rows += ort_rows
    notes += ort_notes
    ok = all(r["ok"] for r in rows)
    worst = max((r["max_abs_err"] or 0.0) for r in rows)
    verdict = (
        f"{'pass' if ok else 'FAIL'}: largest error {worst:.3g} "
        f"({dtype_name} tolerance rtol={tol[0]:g} atol={tol[1]:g})"
    )
    return {
        "seed": c.options.seed,
        "inputs": {k: list(v.shape) for k, v in inputs.items()},
        "integer_ranges": {k: list(v) for k, v in ranges.items()},
        "comparisons": rows,
        "notes": notes,
        "verdict": verdict,
        "ok": ok,
    }
