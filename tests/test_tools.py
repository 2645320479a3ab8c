"""afc-opt and afc: pipeline syntax, atomic outputs, npz I/O, resources, the xdsl plugin."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32

from autofusion import resources
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.tools.afc_opt import AfcOptMain
from autofusion.tools.atomic_output import atomic_directory, atomic_file, split_output_flag
from autofusion.tools.pipeline_spec import mlir_pipeline_to_xdsl

BIN = Path(sys.executable).parent
MLP = Path(__file__).resolve().parents[1] / "examples" / "mlp.mlir"


def tool(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], capture_output=True, text=True, check=check, timeout=120
    )


@pytest.mark.parametrize(
    ("mlir", "xdsl"),
    [
        ("builtin.module(a,b)", "a,b"),
        ("a, b", "a,b"),
        ("builtin.module(func.func(a{x=1 y=2}),b)", "a{x=1 y=2},b"),
        ('builtin.module(a{s="x,y)"})', 'a{s="x,y)"}'),
        ("builtin.module()", ""),
        (
            "set-target{chip=Ascend910B1},ub-fusion{max-ops=64}",
            "set-target{chip=Ascend910B1},ub-fusion{max-ops=64}",
        ),
        (
            "graph-fusion{switch-file=/tmp/s.cfg log=true}",
            'graph-fusion{switch-file="/tmp/s.cfg" log=true}',
        ),
        ("a{only=A,B ratio=0.25 n=-3}", "a{only=A,B ratio=0.25 n=-3}"),
        ('a{file="x y.onnx"}', 'a{file="x y.onnx"}'),
    ],
)
def test_pipeline_translation(mlir: str, xdsl: str) -> None:
    assert mlir_pipeline_to_xdsl(mlir) == xdsl


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("builtin.module(a", "unexpected end"),
        ("a{x=1", "unterminated '{'"),
        ('a{s="x}', "unterminated string"),
        ("gpu.module(a)", "unsupported anchor 'gpu.module'"),
        ("a b", "expected ','"),
        (",a", "expected a pass name"),
    ],
)
def test_pipeline_translation_errors(spec: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        mlir_pipeline_to_xdsl(spec)


def test_split_output_flag() -> None:
    assert split_output_flag(["a.mlir", "-o", "x", "-p", "dce"]) == (["a.mlir", "-p", "dce"], "x")
    assert split_output_flag(["--output-file=y", "a"]) == (["a"], "y")
    assert split_output_flag(["-oz", "a"]) == (["a"], "z")
    assert split_output_flag(["a"]) == (["a"], None)


def test_atomic_file_and_directory_leave_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_file(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with atomic_file(target) as tmp:
        tmp.write_text("whole")
    assert target.read_text() == "whole"
    outdir = tmp_path / "build"
    with pytest.raises(RuntimeError), atomic_directory(outdir) as d:
        (d / "a").write_text("x")
        raise RuntimeError("boom")
    assert not outdir.exists()
    with atomic_directory(outdir) as d:
        (d / "a").write_text("x")
    assert (outdir / "a").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "out.txt"]


def test_afc_opt_in_process_registers_only_afc_constructs() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        AfcOptMain(args=[str(MLP), "--pass-pipeline=builtin.module(cse)"]).run()
    assert "graph.softmax" in out.getvalue()
    main = AfcOptMain(args=[str(MLP)])
    assert "graph" in main.ctx.registered_dialect_names
    assert "onnx" in main.available_targets
    assert "mlir" in main.available_frontends
    assert "onnx" in main.available_frontends


def test_stock_xdsl_opt_sees_graph_dialect_through_universe() -> None:
    result = tool("xdsl-opt", str(MLP))
    assert result.returncode == 0, result.stderr
    assert 'graph.gelu %hb {approximate = "none"}' in result.stdout


def test_afc_run_npz_round_trip(tmp_path: Path) -> None:
    inputs = tmp_path / "in.npz"
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    np.savez(inputs, x=x)
    out = tmp_path / "out.npz"
    tool("afc", "run", str(MLP), "--inputs", str(inputs), "-o", str(out), check=True)
    with np.load(out) as data:
        assert data.files == ["probs"]
        probs = data["probs"]
    assert probs.shape == (4, 8)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "missing input(s): x"),
        ("garbled", "not a readable .npz file"),
        ("wrong_shape", "input 'x' has shape 3x16, expected 4x16"),
        ("wrong_kind", "input 'x' has dtype bool, but @main takes tensor<4x16xf32> (store it"),
        ("wider", "input 'x' has dtype float64, but @main takes tensor<4x16xf32> (store it"),
    ],
)
def test_afc_run_bad_inputs(tmp_path: Path, setup: str, message: str) -> None:
    inputs = tmp_path / "in.npz"
    if setup == "missing":
        np.savez(inputs, y=np.zeros(3))
    elif setup == "garbled":
        inputs.write_bytes(b"PK\x03\x04 not really a zip")
    elif setup == "wrong_shape":
        np.savez(inputs, x=np.zeros((3, 16), np.float32))
    elif setup == "wider":
        np.savez(inputs, x=np.zeros((4, 16)))
    else:
        np.savez(inputs, x=np.zeros((4, 16), bool))
    out = tmp_path / "out.npz"
    result = tool("afc", "run", str(MLP), "--inputs", str(inputs), "-o", str(out))
    assert result.returncode == 1
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not out.exists()


def test_resource_blobs_survive_print_and_parse(tmp_path: Path) -> None:
    """A module with dense_resource weights prints its blobs and runs in a new process."""
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects import func

    rng = np.random.default_rng(2)
    w = rng.standard_normal((3, 5)).astype(np.float16)
    wt = TensorType(f16, [3, 5])
    f = func.FuncOp("main", ((TensorType(f16, [2, 3]),), (TensorType(f16, [2, 5]),)))
    with ImplicitBuilder(f.body) as (x,):
        c = graph.ConstantOp(resources.add_blob("layer.weight", w, wt))
        m = graph.MatmulOp.make([x, c.result])
        func.ReturnOp(m.results[0])
    module = ModuleOp([f])
    text = module_to_text(default_context(), module)
    assert "dense_resource<layer.weight>" in text and "dialect_resources" in text
    path = tmp_path / "m.mlir"
    path.write_text(text)
    x = rng.standard_normal((2, 3)).astype(np.float16)
    np.savez(tmp_path / "in.npz", arg0=x)
    tool(
        "afc",
        "run",
        str(path),
        "--inputs",
        str(tmp_path / "in.npz"),
        "-o",
        str(tmp_path / "o.npz"),
        check=True,
    )
    with np.load(tmp_path / "o.npz") as data:
        want = (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(data["out0"], want)


def test_bf16_blob_round_trip() -> None:
    values = np.array([1.0, -2.5, 3.140625, 1e-3], np.float32)
    attr = resources.add_blob("bf", values, TensorType(graph.tensor([4], f32).element_type, [4]))
    assert np.array_equal(resources.blob_array(attr), values)


def test_interpreting_a_shape_only_weight_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2x2xf16>) -> tensor<2x2xf16> {\n"
        '  %w = graph.constant {name = "wq"} shape_only : tensor<2x2xf16>\n'
        "  %y = graph.add %x, %w : tensor<2x2xf16>\n"
        "  func.return %y : tensor<2x2xf16>\n}\n"
    )
    result = tool("afc", "run", str(path), "--random-inputs", "0")
    assert result.returncode == 1
    assert 'graph.constant "wq" of type tensor<2x2xf16> is a shape-only weight' in result.stderr


def test_located_verifier_errors_respect_split_chunks(tmp_path: Path) -> None:
    path = tmp_path / "split.mlir"
    path.write_text(
        "func.func @a() {\n  func.return\n}\n// -----\n"
        "func.func @b(%x: tensor<2xf32>) -> tensor<3xf32> {\n"
        "  %y = graph.relu %x : (tensor<2xf32>) -> tensor<3xf32>\n"
        "  func.return %y : tensor<3xf32>\n}\n"
    )
    result = tool("afc-opt", str(path), "--split-input-file")
    assert f"{path}:6:3: error: 'graph.relu' result #0 has type tensor<3xf32>" in result.stderr
    # the same line, as an `expected-error` annotation of the second chunk
    text = path.read_text().replace("  %y =", "  // expected-error @+1 {{result #0}}\n  %y =")
    path.write_text(text)
    result = tool("afc-opt", str(path), "--split-input-file", "--verify-diagnostics")
    assert result.returncode == 0, result.stderr


def test_parse_module_reports_bad_utf8() -> None:
    with pytest.raises(UserError, match="not UTF-8"):
        parse_module(default_context(), b"\xff\xfe", "bad.mlir")


def test_afc_reports_unknown_model_kind(tmp_path: Path) -> None:
    path = tmp_path / "model.xyz"
    path.write_text("x")
    result = tool("afc", "import", str(path))
    assert result.returncode == 1
    assert "unknown model file type '.xyz'" in result.stderr


def test_a_second_parse_of_the_same_resources_keeps_its_blobs(tmp_path: Path) -> None:
    """xDSL renames a handle seen before in the process; the blob must follow the rename."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    wt = TensorType(f32, [2, 3])
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects import func

    f = func.FuncOp("main", ((), (wt,)))
    with ImplicitBuilder(f.body):
        c = graph.ConstantOp(resources.add_blob("same_name", w, wt))
        func.ReturnOp(c.result)
    text = module_to_text(default_context(), ModuleOp([f]))
    from autofusion.interpreter import run_function

    for _ in range(2):
        module = parse_module(default_context(), text, "r.mlir")
        np.testing.assert_array_equal(run_function(module, {})["out0"], w)


def test_printed_handles_do_not_depend_on_process_history() -> None:
    """Blobs are process-wide, so a second `w` with other values is registered as `w_0`;
    printing restores the asked-for names per module, and the text is the same as in a
    fresh process."""
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects import func

    wt = TensorType(f32, [2, 3])

    def model(values: np.ndarray) -> str:
        f = func.FuncOp("main", ((), (wt, wt)))
        with ImplicitBuilder(f.body):
            a = graph.ConstantOp(resources.add_blob("history_w", values, wt))
            b = graph.ConstantOp(resources.add_blob("history_w", values + 1, wt))
            func.ReturnOp(a.result, b.result)
        return module_to_text(default_context(), ModuleOp([f]))

    first = model(np.zeros((2, 3), np.float32))
    second = model(np.full((2, 3), 5.0, np.float32))  # both handles renamed in the registry
    assert "dense_resource<history_w>" in second and "dense_resource<history_w_1>" in second
    assert [line.split(":")[0] for line in first.splitlines() if "0x" in line] == [
        line.split(":")[0] for line in second.splitlines() if "0x" in line
    ]
    module = parse_module(default_context(), second, "again.mlir")
    from autofusion.interpreter import run_function

    got = run_function(module, {})
    np.testing.assert_array_equal(got["out0"], np.full((2, 3), 5.0))
    np.testing.assert_array_equal(got["out1"], np.full((2, 3), 6.0))
    assert module_to_text(default_context(), module) == second


@pytest.mark.parametrize("elt", ["f16", "bf16", "f32"])
def test_non_finite_constants_survive_print_and_parse(elt: str) -> None:
    """xDSL prints inf/nan as hex but reads hex in dense<[...]> as integers; the
    constant op prints the raw-bytes form instead."""
    text = (
        "func.func @main() -> tensor<3x" + elt + "> {\n"
        f"  %c = graph.constant dense<[1.0, 0xFF80, 2.0]> : tensor<3x{elt}>\n"
        f"  func.return %c : tensor<3x{elt}>\n}}\n"
    )
    from autofusion.interpreter import run_function

    for value in ("-inf", "nan"):
        module = parse_module(default_context(), text, "c.mlir")
        const = next(op for op in module.walk() if isinstance(op, graph.ConstantOp))
        arr = resources.constant_array(const.value)
        assert arr is not None
        arr = arr.copy()
        arr[1] = float(value)
        const.value = resources.dense_attr(arr, const.result.type)  # type: ignore[assignment]
        printed = module_to_text(default_context(), module)
        assert 'dense<"0x' in printed
        again = run_function(parse_module(default_context(), printed, "p.mlir"), {})["out0"]
        np.testing.assert_array_equal(again, arr)
