"""The fusion report (`afc-opt -t report`): bytes and totals on cases computed by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autofusion.fusion.cost import kernel_time, op_cost
from autofusion.hardware import get_chip
from autofusion.interpreter import find_function
from autofusion.mlir_io import default_context, parse_module
from autofusion.report import build_report

from differential import apply_pipeline

AFC_OPT = str(Path(sys.executable).parent / "afc-opt")

# two f32 [8, 256] inputs (8 KiB each), one output: add then relu
CHAIN = """
func.func @main(%a: tensor<8x256xf32>, %b: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %s = graph.add %a, %b : (tensor<8x256xf32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = graph.relu %s : tensor<8x256xf32>
  func.return %r : tensor<8x256xf32>
}
"""
KIB8 = 8 * 256 * 4


def report(text: str, pipeline: str | None, chip: str = "Ascend910B1") -> dict:
    module = parse_module(default_context(), text, "test.mlir")
    if pipeline:
        apply_pipeline(module, pipeline)
    return build_report(module, get_chip(chip)).to_json()


def test_unfused_graph_is_one_library_kernel_per_op() -> None:
    got = report(CHAIN, None)
    totals = got["totals"]
    # add reads 2 x 8 KiB and writes 8 KiB; relu reads and writes 8 KiB
    assert totals["gm_bytes_before"] == totals["gm_bytes_after"] == 5 * KIB8
    assert totals["gm_bytes_lower_bound"] == 3 * KIB8  # a, b and r once
    assert [k["kind"] for k in got["kernels"]] == ["library", "library"]
    module = parse_module(default_context(), CHAIN, "chain.mlir")
    chip = get_chip("Ascend910B1")
    want_us = sum(
        kernel_time(op_cost(op, chip), chip).total_us
        for op in find_function(module).body.block.ops
        if op.name != "func.return"
    )
    assert abs(totals["time_us_after"] - want_us) < 1e-3


def test_fused_chain_moves_the_lower_bound() -> None:
    got = report(CHAIN, "ub-fusion")
    totals = got["totals"]
    assert totals["kernels"] == 1 and totals["kernels_before"] == 2
    assert totals["gm_bytes_before"] == 5 * KIB8
    assert totals["gm_bytes_after"] == totals["gm_bytes_lower_bound"] == 3 * KIB8
    (kernel,) = got["kernels"]
    assert kernel["template"] == "rows"
    assert kernel["ops"] == ["graph.add %s", "graph.relu %r"]
    assert (kernel["gm_read_bytes"], kernel["gm_write_bytes"]) == (2 * KIB8, KIB8)
    # double-buffered tiles of a, b and r fit the usable UB
    assert 0 < kernel["ub_bytes"] <= get_chip("Ascend910B1").ub_bytes
    assert totals["time_us_after"] < totals["time_us_before"]


def test_buffer_level_report_matches_graph_level() -> None:
    """lower-to-buffer records each group's entry on its launch."""
    graph_level = report(CHAIN, "ub-fusion")
    buffer_level = report(CHAIN, "ub-fusion,lower-to-buffer")
    assert buffer_level["totals"] == graph_level["totals"]
    assert [k["ops"] for k in buffer_level["kernels"]] == [k["ops"] for k in graph_level["kernels"]]


def test_splat_constants_count_only_when_a_cube_op_reads_them() -> None:
    text = """
    func.func @main(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
      %one = graph.constant dense<1.0> : tensor<4x64xf32>
      %w = graph.constant dense<0.5> : tensor<64x32xf32>
      %y = graph.add %x, %one : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
      %z = graph.matmul %y, %w : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
      func.return %z : tensor<4x32xf32>
    }
    """
    # x, the weight w and z; the splat `one` is a scalar in a vector kernel
    assert report(text, None)["totals"]["gm_bytes_lower_bound"] == 4 * (4 * 64 + 64 * 32 + 4 * 32)


def _afc_opt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AFC_OPT, *args], capture_output=True, text=True, check=False)


def test_afc_opt_report_reads_the_module_target(tmp_path: Path) -> None:
    """The report on kernels grouped for Ascend310P3 gives 310P3 figures (it used to take
    its own chip option, default 910B1, whatever ub-fusion had planned for)."""
    src = tmp_path / "chain.mlir"
    src.write_text(CHAIN)
    times = {}
    for chip in ("Ascend310P3", "Ascend910B1"):
        done = _afc_opt(str(src), "-p", f"set-target{{chip={chip}}},ub-fusion", "-t", "report")
        assert done.returncode == 0 and not done.stderr, done.stderr
        got = json.loads(done.stdout)
        assert got["chip"] == chip
        assert got["totals"]["gm_bytes_after"] == 3 * KIB8
        times[chip] = got["totals"]["time_us_after"]
        assert (
            times[chip]
            == report(CHAIN, f"set-target{{chip={chip}}},ub-fusion", chip)["totals"][
                "time_us_after"
            ]
        )
    assert times["Ascend310P3"] != times["Ascend910B1"]
    # without a target: the default chip, said once on stderr
    default = _afc_opt(str(src), "-t", "report")
    assert default.returncode == 0
    assert json.loads(default.stdout)["chip"] == "Ascend910B1"
    assert default.stderr.count("using the default Ascend910B1") == 1


def test_report_chip_option_is_gone(tmp_path: Path) -> None:
    src = tmp_path / "chain.mlir"
    src.write_text(CHAIN)
    old = _afc_opt(str(src), "-t", "report{chip=Ascend310P3}")
    # a bad -t is a usage error: exit status 2, as argparse gives
    assert old.returncode == 2 and old.stdout == ""
    assert old.stderr.count("\n") == 1 and "set-target{chip=...}" in old.stderr, old.stderr
    bad = _afc_opt(str(src), "-p", "set-target{chip=Ascend999}", "-t", "report")
    assert bad.returncode == 1
    assert "unknown chip 'Ascend999'" in bad.stderr and "Ascend910B1" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_report_is_deterministic(tmp_path: Path) -> None:
    src = tmp_path / "chain.mlir"
    src.write_text(CHAIN)
    runs = [
        subprocess.run(
            [AFC_OPT, str(src), "-p", "ub-fusion", "-t", "report"],
            capture_output=True,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_report_names_are_the_same_under_any_hash_seed() -> None:
    """The report's kernel-local tensor names (`l<j>`) follow program order: the output is
    byte-identical whatever PYTHONHASHSEED is (seeds 1 and 2 named the norms.mlir rows
    kernel's hot tensors in opposite orders before)."""
    source = Path(__file__).parent / "filecheck/passes/graph-fusion/norms.mlir"
    pipeline = "set-target{chip=Ascend910B1},graph-fusion,split-fusion,ub-fusion,lower-to-buffer"
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [AFC_OPT, str(source), "-p", pipeline],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        outputs.add(run.stdout)
    assert len(outputs) == 1
