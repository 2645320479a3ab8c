"""afc compile and afc explain: outputs, options, determinism, failures, numerics check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autofusion.driver.compile import CompileOptions, compile_model
from autofusion.driver.explain import explain

AFC = str(Path(sys.executable).parent / "afc")

# a residual add + layer norm + gelu: graph fusion makes it add_layer_norm, UB fusion one
# vector kernel; the scale is read from an .npz so the model computes real numbers
NORM_MODEL = """\
input x: f32[8, 64]
input r: f32[8, 64]
weight g: f32[64] from "norm.npz"
const eps: f32[] = 1e-5
h = x + r
m = reduce_mean(h, axes=[-1], keepdims=true)
d = h - m
v = reduce_mean(d * d, axes=[-1], keepdims=true)
y = d / sqrt(v + eps) * g
output out = gelu(y, approximate="none")
"""


@pytest.fixture
def norm_model(tmp_path: Path) -> Path:
    np.savez(tmp_path / "norm.npz", g=np.linspace(0.5, 1.5, 64, dtype=np.float32))
    path = tmp_path / "norm.afc"
    path.write_text(NORM_MODEL)
    return path


def afc(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AFC, *args], capture_output=True, text=True, check=False, cwd=cwd, env=env, timeout=600
    )


def test_compile_writes_every_output(norm_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = afc("compile", str(norm_model), "-o", str(out), "--check")
    assert done.returncode == 0, done.stderr
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [
        "buffer.mlir",
        "check.json",
        "fused.mlir",
        "fused.onnx",
        "fusion_result.json",
        "graph.dot",
        "kernels/CMakeLists.txt",
        "kernels/CMakePresets.json",
        "kernels/build.sh",
        "kernels/op_host/CMakeLists.txt",
        "kernels/op_host/main_kernel0.cpp",
        "kernels/op_host/main_kernel0_tiling.h",
        "kernels/op_kernel/CMakeLists.txt",
        "kernels/op_kernel/main_kernel0.cpp",
        "report.json",
        "report.md",
    ]
    # the summary: one screen, naming what was fused and what it saves
    summary = done.stdout.splitlines()
    assert len(summary) <= 24
    assert summary[0].startswith(f"afc compile {norm_model} -> {out} (Ascend910B1, -O2")
    assert any("AddLayerNormFusionPass x1" in line for line in summary)
    assert any(line.strip().startswith("check       pass") for line in summary)
    # x, r and out (8 x 64 f32) and g (64 f32) once: the L2 keeps what the kernel re-reads
    assert (
        "  HBM traffic 0.006 MB -> 0.006 MB (LRU L2 192 MB; after fusion 0.006 MB to "
        "0.006 MB, fused is 1.00x)" in summary
    )
    # progress: one line per stage on stderr
    stages = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert [s.split()[1] for s in stages] == [
        "import",
        "graph-fusion",
        "split-fusion",
        "ub-fusion",
        "export",
        "lower-to-buffer",
        "ascend",
        "reports",
        "graph.dot",
        "check",
    ]
    report = json.loads((out / "report.json").read_text())
    totals = report["totals"]
    assert totals["kernels_after"] == 1 and totals["ops_before"] == 10
    assert totals["gm_bytes_after"] < totals["gm_bytes_before"]
    assert totals["gm_bytes_lower_bound"] == 3 * 8 * 64 * 4 + 64 * 4
    hbm = ("hbm_bytes_after", "hbm_bytes_after_optimistic", "hbm_bytes_after_pessimistic")
    assert [totals[k] for k in hbm] == [totals["gm_bytes_lower_bound"]] * 3
    assert totals["hbm_bytes_before"] >= totals["hbm_bytes_after"]
    assert totals["l2_bytes"] == 192 * 1024 * 1024
    assert report["graph_rewrites"] == {"AddLayerNormFusionPass": 1, "LayerNormFusionPass": 1}
    (kernel,) = report["kernels"]
    assert kernel["ops"][0].startswith("graph.add_layer_norm @ h+m+d+v+y")
    # reads x, r and g from HBM; out stays dirty in L2 until the end (no per-kernel write)
    assert (kernel["hbm_read_bytes"], kernel["hbm_write_bytes"]) == (2 * 8 * 64 * 4 + 64 * 4, 0)
    stats = json.loads((out / "fusion_result.json").read_text())["session_and_graph_id_0_0"]
    assert stats["graph_fusion"]["LayerNormFusionPass"]["effect_times"] == "1"
    assert stats["ub_fusion"]["AutomaticUbFusion"]["effect_times"] == "1"
    md = (out / "report.md").read_text()
    assert "| after fusion | 1 |" in md and "graph.gelu @ out" in md
    assert "| HBM traffic | x lower bound |" in md and "| HBM read | HBM write |" in md
    assert "| 0.008 MB | 1.28x | 0.006 MB | 1.00x |" in md
    dot = (out / "graph.dot").read_text()
    assert "subgraph cluster_b {" in dot and "subgraph cluster_ak0 {" in dot
    assert 'label="kernel 0 (rows)"; style=filled; fillcolor="#8dd3c7";' in dot
    check = json.loads((out / "check.json").read_text())
    assert check["ok"] and len(check["comparisons"]) == 3
    assert (
        'extern "C" __global__ __aicore__ void'
        in (out / "kernels/op_kernel/main_kernel0.cpp").read_text()
    )


def test_fused_onnx_runs_in_onnx_runtime_with_shapes(norm_model: Path, tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from autofusion.interpreter import run_function
    from autofusion.mlir_io import default_context
    from autofusion.tools.model_input import load_model

    out = tmp_path / "out"
    assert afc("compile", str(norm_model), "-o", str(out), "-q").returncode == 0
    model = onnx.load(str(out / "fused.onnx"))
    onnx.checker.check_model(model, full_check=True)
    typed = {v.name for v in [*model.graph.value_info, *model.graph.input, *model.graph.output]}
    produced = {o for node in model.graph.node for o in node.output}
    assert produced <= typed, f"tensors without value_info: {sorted(produced - typed)}"
    rng = np.random.default_rng(3)
    feeds = {k: rng.standard_normal((8, 64)).astype(np.float32) for k in ("x", "r")}
    session = ort.InferenceSession(str(out / "fused.onnx"), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, feeds)
    want = run_function(load_model(default_context(), str(norm_model)), feeds)["out"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_compile_is_byte_identical_across_runs(norm_model: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert afc("compile", str(norm_model), "-o", str(tmp_path / name), "-q").returncode == 0
    files = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chip", "Ascend999"], "unknown chip 'Ascend999'"),
        (["--opt-level", "7"], "--opt-level must be one of [0, 1, 2, 3]"),
        (["--fusion-switch", "missing.cfg"], "missing.cfg"),
        (["--dynamic-size", "0"], "--dynamic-size must be at least 1, got 0"),
    ],
)
def test_bad_options_leave_no_output(
    norm_model: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "out"
    done = afc("compile", str(norm_model), "-o", str(out), "-q", *args, cwd=tmp_path)
    assert done.returncode == 1
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_failed_compile_keeps_the_previous_output(norm_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert afc("compile", str(norm_model), "-o", str(out), "-q").returncode == 0
    before = (out / "report.json").read_bytes()
    bad = tmp_path / "bad.afc"
    bad.write_text("input x: f32[4]\noutput y = frobnicate(x)\n")
    done = afc("compile", str(bad), "-o", str(out), "-q")
    assert done.returncode == 1 and "frobnicate" in done.stderr
    assert (out / "report.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


def test_chip_is_the_module_target_of_every_stage(norm_model: Path, tmp_path: Path) -> None:
    """--chip (afc import, afc compile) is the module's afc.target; every stage and report
    uses it, a compile of an imported module keeps it, and another --chip contradicts it."""
    imported = tmp_path / "norm.mlir"
    done = afc("import", str(norm_model), "--chip", "ascend310p3", "-o", str(imported))
    assert done.returncode == 0, done.stderr
    assert 'builtin.module attributes {afc.target = #afc.target<"Ascend310P3">}' in (
        imported.read_text()
    )
    out = tmp_path / "out"
    done = afc("compile", str(imported), "-o", str(out), "-q")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert '#afc.target<"Ascend310P3">' in (out / "fused.mlir").read_text()
    lowered = (out / "buffer.mlir").read_text()
    assert 'chip = "Ascend310P3"' in lowered and "Ascend910B1" not in lowered
    assert json.loads((out / "report.json").read_text())["chip"] == "Ascend310P3"
    other = afc("compile", str(imported), "--chip", "Ascend910B1", "-o", str(tmp_path / "x"))
    assert other.returncode == 1 and len(other.stderr.strip().splitlines()) == 1
    assert "chip Ascend910B1 contradicts the module's afc.target" in other.stderr
    assert not (tmp_path / "x").exists()


def test_compile_without_chip_says_it_uses_the_default(norm_model: Path) -> None:
    done = afc("compile", str(norm_model), "-o", str(norm_model.parent / "out"), "-q")
    assert done.returncode == 0
    assert done.stderr.count("using the default Ascend910B1") == 1, done.stderr
    buffer_text = (norm_model.parent / "out" / "buffer.mlir").read_text()
    assert '#afc.target<"Ascend910B1">' in buffer_text


def test_opt_level_zero_fuses_nothing(norm_model: Path) -> None:
    c = compile_model(str(norm_model), CompileOptions(opt_level=0))
    assert c.statistics.applications == []
    assert c.after is not None and c.before is not None
    assert len(c.after.kernels) == len(c.before.kernels) == 10
    assert all(len(k.ops) == 1 for k in c.after.kernels)


def test_before_and_after_count_bytes_alike_and_dynamic_size_sizes_them(tmp_path: Path) -> None:
    """The before-fusion baseline plans each op with the kernel templates, as the fused
    kernels are: at -O0 before and after agree to the byte. --dynamic-size is what a
    dynamic dimension weighs in the report."""
    path = tmp_path / "mm.afc"
    path.write_text("input x: f16[B, 256]\nweight w: f16[256, 512]\noutput y = relu(x @ w)\n")
    sizes = {}
    for n in (1, 64):
        c = compile_model(str(path), CompileOptions(opt_level=0, dynamic_size=n))
        assert c.before is not None and c.after is not None
        before, after = c.before.totals(), c.after.totals()
        assert before["gm_bytes_after"] == after["gm_bytes_after"]
        assert before["kernels"] == after["kernels"] == 2
        sizes[n] = after["gm_bytes_lower_bound"]
    weight = 256 * 512 * 2
    assert sizes[1] == weight + (256 + 512) * 2
    assert sizes[64] == weight + 64 * (256 + 512) * 2


def test_fusion_switch_turns_a_rule_off(norm_model: Path, tmp_path: Path) -> None:
    switch = tmp_path / "switch.cfg"
    switch.write_text('{"Switch": {"GraphFusion": {"AddLayerNormFusionPass": "off"}}}')
    c = compile_model(str(norm_model), CompileOptions(fusion_switch=str(switch)))
    assert {a.rule for a in c.statistics.applications} == {"LayerNormFusionPass"}
    fused = c.files["fused.mlir"].decode()
    assert "graph.layer_norm" in fused and "graph.add_layer_norm" not in fused


def test_check_fills_shape_only_weights(tmp_path: Path) -> None:
    path = tmp_path / "shape_only.afc"
    path.write_text(NORM_MODEL.replace(' from "norm.npz"', ""))
    c = compile_model(str(path), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check
    assert any("filled 1 shape-only weights" in n for n in c.notes)


def test_svg_when_dot_is_on_path(norm_model: Path, tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    script = fake / "dot"
    script.write_text('#!/bin/sh\necho "<svg>$(wc -l)</svg>"\n')
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    out = tmp_path / "out"
    assert afc("compile", str(norm_model), "-o", str(out), "-q", env=env).returncode == 0
    assert (out / "graph.svg").read_text().startswith("<svg>")


def test_explain_names_the_rule_and_the_kernel(norm_model: Path) -> None:
    c = compile_model(str(norm_model), CompileOptions(), stop_after="ub-fusion")
    lines = explain(c, "m")
    assert lines[0] == f"m: graph.reduce_mean in {norm_model}"
    assert any(
        line.startswith("  graph fusion: LayerNormFusionPass rewrote it together with ")
        and all(n in line for n in ("d", "v", "y", "eps"))
        for line in lines
    ), lines
    assert any("AddLayerNormFusionPass rewrote it" in line for line in lines)
    assert any("is in kernel0 (rows)" in line and "graph.gelu @ out" in line for line in lines)


def test_explain_cli_and_unknown_names(norm_model: Path) -> None:
    done = afc("explain", str(norm_model), "--op", "out")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("out: graph.gelu")
    bad = afc("explain", str(norm_model), "--op", "dd")
    assert bad.returncode == 1
    assert "no op named 'dd' in the model; did you mean d" in bad.stderr


def test_debug_maps_generated_statements_to_source(norm_model: Path) -> None:
    plain = compile_model(str(norm_model), CompileOptions())
    debug = compile_model(str(norm_model), CompileOptions(debug=True))
    kernel = "kernels/op_kernel/main_kernel0.cpp"
    assert f'"h" at {norm_model}:5:' not in plain.files[kernel].decode()
    text = debug.files[kernel].decode()
    # the residual add (line 5) is part of graph.add_layer_norm; the gelu is line 10
    assert f'// graph.add_layer_norm "h" at {norm_model}:5:' in text
    assert f'// graph.gelu "out" at {norm_model}:10:' in text


def test_make_run_example_compiles_and_checks(tmp_path: Path) -> None:
    """`make run`: the bundled Llama-style layer, every kernel generated, numbers checked."""
    example = Path(__file__).resolve().parents[1] / "examples" / "llama_layer.afc"
    c = compile_model(str(example), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check["verdict"]
    rewrites = {a.rule for a in c.statistics.applications}
    assert {"FlashAttentionFusionPass", "RmsNormFusionPass", "SwiGluFusionPass"} <= rewrites
    assert c.after is not None
    templates = {k.template for k in c.after.kernels}
    assert {"attention", "matmul", "rows"} <= templates
    # attention reads q, k, v as the projections write them (BSND), with GQA native and
    # the causal mask by position in the kernel: no head transposes, repeat_kv or mask
    # ops are left around it as library kernels
    # the q/k/v split folds into its readers' views (dynamic B and S), and the int64
    # positions are widened by the rotary tables' kernel (A2's Cast int64 -> float32):
    # no library op is left at all
    library = [op for k in c.after.kernels if k.kind == "library" for op in k.ops]
    assert library == []
    cpp = [f for f in c.files if f.startswith("kernels/op_kernel/") and f.endswith(".cpp")]
    assert len(cpp) == sum(1 for k in c.after.kernels if k.kind == "fused")
