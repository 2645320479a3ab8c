"""afc compile on a model suite, next to ONNX Runtime's offline optimizer.

For every corpus model (tests/model_corpus.py, both torch exporters) and the 28-layer
Qwen2.5-7B-shaped text model, `afc compile` runs in-process and the table gives each
stage's time, the kernel count before and after fusion, and GM traffic before and after
next to the lower bound (afc's fusion report).

For the ONNX models, the same run also gives the model to ONNX Runtime's offline
optimizer (ORT_ENABLE_ALL, the optimized model written to a file) and counts the nodes
and traffic of three ONNX files with one rule: the original, ORT's optimized model and
afc's fused.onnx. The rule: every top-level node is one kernel (a call of an afc
fusion-group function is one node), Constant nodes excepted; a kernel moves the bytes of
all its inputs and outputs once. Tensor sizes are read off a run of the model on the
corpus inputs, so no shape inference (which ORT's contrib ops lack) is needed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))

CHIP = "Ascend910B1"
STAGES = ("import", "graph-fusion", "split-fusion", "ub-fusion", "lower-to-buffer", "ascend c")


def onnx_node_traffic(model: object, feeds: dict[str, np.ndarray]) -> tuple[int, int]:
    """(kernels, bytes) of an ONNX model (a ModelProto with its weights loaded) under the
    one-node-one-kernel rule."""
    import onnx
    import onnxruntime as ort

    assert isinstance(model, onnx.ModelProto)
    model = onnx.ModelProto.FromString(model.SerializeToString())  # a copy to extend
    sizes: dict[str, int] = {t.name: _tensor_bytes(t) for t in model.graph.initializer}
    # every tensor a node produces becomes a graph output, so one run gives all sizes
    produced = [o for node in model.graph.node for o in node.output if o]
    known = {o.name for o in model.graph.output}
    for name in produced:
        if name not in known:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    inputs = {i.name: feeds[i.name] for i in session.get_inputs()}
    for name, value in zip(names, session.run(names, inputs)):
        sizes[name] = np.asarray(value).nbytes
    sizes.update({k: v.nbytes for k, v in inputs.items()})
    kernels = 0
    traffic = 0
    for node in model.graph.node:
        if node.op_type == "Constant":
            continue
        kernels += 1
        traffic += sum(sizes.get(t, 0) for t in [*node.input, *node.output] if t)
    return kernels, traffic


def _tensor_bytes(t: object) -> int:
    from onnx import helper

    dims = list(t.dims)  # type: ignore[attr-defined]
    elem = helper.tensor_dtype_to_np_dtype(t.data_type)  # type: ignore[attr-defined]
    return int(np.prod(dims, dtype=np.int64)) * np.dtype(elem).itemsize


def ort_optimized(path: Path) -> object:
    """ORT's offline optimizer output (ORT_ENABLE_ALL) for the model at `path`."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ort_optimized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = str(out)
        options.log_severity_level = 3
        # weights inline (external data would be looked up beside the optimized file)
        inline = onnx.load(str(path)).SerializeToString()
        ort.InferenceSession(inline, options, providers=["CPUExecutionProvider"])
        return onnx.load(str(out))


def _mb(n: float) -> str:
    return f"{n / 1e6:9.2f}"


def _cells(counted: tuple[int, int] | None) -> str:
    return f"{counted[0]:6d} {_mb(counted[1])}" if counted else f"{'-':>6} {'-':>9}"


IREE_FAILURES: list[tuple[str, str]] = []  # (model, why IREE gave no dispatches)


def _iree_cells(label: str, model: object) -> str:
    """IREE's dispatch count and MB for one model; a failure is noted, not raised."""
    from iree_dispatches import IreeError, dispatch_traffic

    try:
        return _cells(dispatch_traffic(model))
    except IreeError as e:
        IREE_FAILURES.append((label, str(e)))
        return f"{'fail':>6} {'-':>9}"


def qwen_layer_row(tmp: Path) -> str:
    """The Qwen2.5-7B decoder layer (seq 2048, f16, batch 1) in the one-rule table.

    Its ONNX is afc's export of the imported layer (shape-only weights become graph
    inputs); it is too big to run, so tensors are sized by shape inference.
    """
    import make_qwen2_5_7b
    import onnx
    from onnx_shape_traffic import shape_traffic

    from autofusion.driver.compile import CompileOptions, compile_model
    from autofusion.mlir_io import default_context
    from frontends.onnx.export import export_module, serialize
    from frontends.text import parse_text_model

    label = "qwen2.5-7b layer"
    text = make_qwen2_5_7b.decoder_layer_text()
    module = parse_text_model(default_context(), text, "qwen_layer.afc", chip=CHIP)
    exported = export_module(module)
    path = tmp / "qwen_layer.onnx"
    path.write_bytes(serialize(exported))
    start = time.perf_counter()
    ort_model = ort_optimized(path)
    ort_seconds = time.perf_counter() - start
    (tmp / "qwen_layer.afc").write_text(text)
    c = compile_model(str(tmp / "qwen_layer.afc"), CompileOptions(chip=CHIP, dynamic_size=1))
    fused = shape_traffic(onnx.load_from_string(c.files["fused.onnx"]))
    original = shape_traffic(exported)
    ort = shape_traffic(ort_model)
    return (
        f"{label:20} {original[0]:6d} {_mb(original[1])} {ort[0]:6d} {_mb(ort[1])} "
        f"{ort_seconds * 1000:7.0f} {_cells(fused)} {_iree_cells(label, exported)}"
    )


def compile_row(label: str, path: Path, dynamic_size: int = 128) -> tuple[list[str], object | None]:
    """Compile one model; return its table cells and the compilation (None on error)."""
    from autofusion.diagnostics import UserError
    from autofusion.driver.compile import CompileOptions, compile_model

    try:
        c = compile_model(str(path), CompileOptions(chip=CHIP, dynamic_size=dynamic_size))
    except UserError as e:
        return [f"{label:20} error: {e}"], None
    times = {s.name: s.seconds for s in c.stages}
    assert c.before is not None and c.after is not None
    before, after = c.before.totals(), c.after.totals()
    cells = " ".join(f"{times.get(s, 0.0) * 1000:8.0f}" for s in STAGES)
    line = (
        f"{label:20} {cells} {before['kernels']:6d} {after['kernels']:6d} "
        f"{_mb(before['gm_bytes_after'])} {_mb(after['gm_bytes_after'])} "
        f"{_mb(after['gm_bytes_lower_bound'])} "
        f"{after['gm_bytes_after'] / max(after['gm_bytes_lower_bound'], 1):6.2f} "
        f"{_mb(before['hbm_bytes_after'])} {_mb(after['hbm_bytes_after'])} "
        f"{after['hbm_bytes_after'] / max(after['gm_bytes_lower_bound'], 1):6.2f}"
    )
    return [line], c


def main() -> None:
    try:
        import onnx
        import onnxruntime  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print(f"model_suite: skipped ({e.name} is not installed)")
        return
    import make_qwen2_5_7b

    import model_corpus

    print()
    print(
        f"afc compile on {CHIP} (stage times in ms; traffic in MB from afc's report: "
        "logical GM, what the kernels' copies request, and HBM behind the L2 model)"
    )
    header = " ".join(f"{s[:8]:>8}" for s in STAGES)
    print(
        f"{'model':20} {header} {'k.bef':>6} {'k.aft':>6} {'GM bef':>9} {'GM aft':>9} "
        f"{'bound':>9} {'x bnd':>6} {'HBM bef':>9} {'HBM aft':>9} {'x bnd':>6}"
    )
    ort_rows: list[str] = []
    for model, exporter in model_corpus.entries():
        path = model_corpus.model_path(model, exporter)
        label = f"{model}-{exporter}"
        lines, c = compile_row(label, path)
        print("\n".join(lines))
        feeds = model_corpus.model_inputs(model)
        original = onnx_node_traffic(onnx.load(str(path)), feeds)
        start = time.perf_counter()
        ort_model = ort_optimized(path)
        ort_seconds = time.perf_counter() - start
        ort = onnx_node_traffic(ort_model, feeds)
        fused = (
            onnx_node_traffic(onnx.load_from_string(c.files["fused.onnx"]), feeds)  # type: ignore[attr-defined]
            if c is not None
            else None
        )
        ort_rows.append(
            f"{label:20} {original[0]:6d} {_mb(original[1])} {ort[0]:6d} {_mb(ort[1])} "
            f"{ort_seconds * 1000:7.0f} {_cells(fused)} {_iree_cells(label, onnx.load(str(path)))}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        qwen = Path(tmp) / "qwen2_5_7b.afc"
        qwen.write_text(make_qwen2_5_7b.model_text())
        # its batch dim is dynamic: batch 1, as bench/qwen_fusion.py's decoder layer
        lines, _ = compile_row("qwen2.5-7b 28L, B=1", qwen, dynamic_size=1)
        print("\n".join(lines))
        ort_rows.append(qwen_layer_row(Path(tmp)))
    print()
    print("Same rule for every ONNX file: one node = one kernel; it moves its inputs and outputs")
    print(
        "and IREE's flow dispatches (iree-compile --compile-to=flow, llvm-cpu): each reads its "
        "operands and writes its results once"
    )
    print(
        f"{'model':20} {'nodes':>6} {'MB':>9} {'ORT':>6} {'ORT MB':>9} {'ORT ms':>7} "
        f"{'afc':>6} {'afc MB':>9} {'IREE':>6} {'IREE MB':>9}"
    )
    print("\n".join(ort_rows))
    if IREE_FAILURES:
        print("IREE failed on:")
        print("\n".join(f"  {label}: {reason}" for label, reason in IREE_FAILURES))


if __name__ == "__main__":
    main()
