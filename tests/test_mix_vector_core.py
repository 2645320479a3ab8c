"""310P runs pure vector kernels as KERNEL_TYPE_MIX_VECTOR_CORE (its AI Cores and Vector
Cores together). A pure kernel forced to a MIX type needs a workspace of more than 0
bytes (asc-devkit 设置Kernel类型.md, 约束说明): TilingFunc asks for one, and the emulator
fails a MIX_VECTOR_CORE launch without one (issue 12, point 5)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from test_codegen import DEBUG_INPUT
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen import emulate
from autofusion.codegen.ascendc_api import CANN8
from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.codegen.emulate import run_function_emulated
from autofusion.diagnostics import UserError
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")

FEEDS = {
    "arg0": np.random.default_rng(0).standard_normal((5, 40)).astype(np.float32),
    "arg1": np.ones(40, np.float32),
}


def lowered(chip: str) -> ModuleOp:
    module = parse_module(default_context(), DEBUG_INPUT, "in.mlir")
    return apply_pipeline(module, f"set-target{{chip={chip}}},lower-to-buffer")


def test_310p_vector_kernels_ask_for_a_workspace() -> None:
    """The 310P TilingFunc of a pure vector kernel asks for `forced_mix_workspace` bytes;
    910B's AIV-only kernel asks for none."""
    host = emit_ascendc(lowered("Ascend310P3"))["op_host/main_kernel0.cpp"]
    assert (
        "KERNEL_TYPE_MIX_VECTOR_CORE"
        in emit_ascendc(lowered("Ascend310P3"))["op_kernel/main_kernel0.cpp"]
    )
    assert f"workspaceSizes[0] = {CANN8.forced_mix_workspace};" in host
    assert CANN8.forced_mix_workspace > 0
    host_910 = emit_ascendc(lowered("Ascend910B1"))["op_host/main_kernel0.cpp"]
    assert "workspaceSizes[0] = 0;" in host_910


def test_the_emulator_runs_it_with_the_workspace() -> None:
    module = lowered("Ascend310P3")
    want, got = run_function(module, FEEDS), run_function_emulated(module, FEEDS)
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-5, atol=1e-5)


def test_the_emulator_fails_a_mix_vector_core_launch_without_a_workspace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check can fail: the same kernel whose TilingFunc asks for 0 bytes."""
    module = lowered("Ascend310P3")
    host = emit_ascendc(module)["op_host/main_kernel0.cpp"]
    wrong = re.sub(r"workspaceSizes\[0\] = \d+;", "workspaceSizes[0] = 0;", host)
    assert wrong != host

    def tampered(m: ModuleOp, debug: bool = False) -> dict[str, str]:
        return {**emit_ascendc(m, debug), "op_host/main_kernel0.cpp": wrong}

    monkeypatch.setattr(emulate, "emit_ascendc", tampered)
    with pytest.raises(UserError, match=r"MIX_VECTOR_CORE.*workspace of more than 0 bytes"):
        run_function_emulated(module, FEEDS)
