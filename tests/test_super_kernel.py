"""Super kernels (codegen/super_kernel*.py, passes/super_kernel.py): a run of launches as
ONE Ascend C launch, stages separated by SyncAll.

The emulated super kernel (one launch, every block side by side, SyncAll real) must
give what the interpreter gives; without its SyncAll the emulator's race check must
fail it; its host code must be what CANN needs (one OpDef, batch mode, a block count
the hard SyncAll allows); its output is deterministic; the report charges one launch.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr

from autofusion.codegen import emulate
from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.codegen.emulate import RegisteredOps, run_function_emulated
from autofusion.codegen.kernel_interface import op_type_of
from autofusion.codegen.super_kernel import SUPER_ATTR, super_kernels
from autofusion.codegen.super_kernel_ascendc import SuperKernelNames
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.driver.compile import CompileOptions, compile_model
from autofusion.driver.report_markdown import compile_report_json
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function

from differential import assert_close

EXAMPLES = Path(__file__).parent.parent / "examples"
CHIP = "Ascend910B1"

needs_gxx = pytest.mark.skipif(shutil.which(emulate.CXX) is None, reason="needs g++")


def lowered(example: str, super_kernel: bool = True) -> tuple[ModuleOp, ModuleOp]:
    """The example imported (graph level) and compiled to buffer IR with super kernels."""
    options = CompileOptions(chip=CHIP, super_kernel=super_kernel)
    c = compile_model(str(EXAMPLES / example), options, stop_after="lower-to-buffer")
    assert c.buffer is not None
    return c.original, c.buffer


def llama_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 32)).astype(np.float16)
    return {"x": x, "positions": np.arange(5)}


def mlp_inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(4).standard_normal((37, 16)).astype(np.float32)}


@needs_gxx
@pytest.mark.parametrize(
    ("example", "inputs", "atol", "stages"),
    [
        ("mlp.afc", mlp_inputs, 1e-5, [["main_kernel0", "main_kernel1"]]),
        (
            "llama_layer.afc",
            llama_inputs,
            2e-2,
            # tables; norm + QKV + ropes, attention; o_proj + add, norm + ffn: the
            # tables' head reshapes (host graph ops) end the first run
            [["main_kernel1", "main_kernel2"], ["main_kernel3", "main_kernel4"]],
        ),
    ],
)
def test_emulated_super_kernel_equals_the_interpreter(
    example: str, inputs: object, atol: float, stages: list[list[str]]
) -> None:
    original, module = lowered(example)
    sks = super_kernels(module)
    assert [[k.sym_name.data for k in sk.kernels] for sk in sks] == stages
    feeds = inputs()  # type: ignore[operator]
    want = run_function(original, feeds)
    assert_close(run_function(module, feeds), want, atol, atol)  # the stages, launch by launch
    assert_close(run_function_emulated(module, feeds), want, atol, atol)  # one launch each


@needs_gxx
def test_super_kernel_without_its_sync_all_fails_the_race_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SyncAll between dependent stages is needed: without it an AIV of stage 1
    reads the workspace another core of stage 0 wrote, unordered."""
    _, module = lowered("mlp.afc")
    emit = emulate.emit_ascendc
    sync = "    SyncAll<false>();\n    // stage 1: @main_kernel1"

    def without_sync(m: ModuleOp, debug: bool = False) -> dict[str, str]:
        files = emit(m, debug)
        text = files["op_kernel/main_super0.cpp"]
        assert sync in text
        files["op_kernel/main_super0.cpp"] = text.replace(sync, "    // stage 1: @main_kernel1")
        return files

    monkeypatch.setattr(emulate, "emit_ascendc", without_sync)
    with pytest.raises(UserError, match=r"reads workspace bytes .* wrote .* without"):
        run_function_emulated(module, mlp_inputs())


@needs_gxx
def test_super_op_host_code_follows_the_op_rules() -> None:
    """The super op registers like any op: an OpDef with its inputs and outputs, a
    TilingFunc that fills every field, sets batch mode (it calls SyncAll), a block count
    no larger than the AIC cores (SyncAll's limit) and a workspace for its
    intermediates and its stages' own."""
    _, module = lowered("llama_layer.afc")
    files = emit_ascendc(module)
    ops = RegisteredOps.build(files)
    chip = get_chip(CHIP)
    for sk in super_kernels(module):
        names = SuperKernelNames(sk)
        described = " ".join(" ".join(line) for line in ops.describe(names.op_type))
        for name in names.gm:
            assert name in described
        shapes = [tuple(2 if d < 0 else d for d in v.type.get_shape()) for v in sk.inputs]  # type: ignore[attr-defined]
        values, launch = ops.tiling(names.op_type, shapes, len(names.fields(sk)))
        fields = dict(zip(names.fields(sk), values))
        assert launch.schedule_mode == 1
        assert 1 <= launch.blocks <= chip.cube_cores
        ratio = chip.vector_cores // chip.cube_cores
        needed = [
            fields[f"s{k}_blocks"]
            if k_.core_type.data != "aiv"
            else -(-fields[f"s{k}_blocks"] // ratio)
            for k, k_ in enumerate(sk.kernels)
        ]
        assert launch.blocks == max(needed)
        offsets = [fields[f"t{i}_offset"] for i in range(len(sk.intermediates))]
        assert offsets == sorted(offsets) and all(o % 512 == 0 for o in offsets)
        assert launch.workspace > max(offsets, default=0)
        # a kernel launched only as a stage is no op of its own
        for kernel in sk.kernels:
            assert f"op_kernel/{kernel.sym_name.data}.cpp" not in files
            with pytest.raises(UserError, match="no OpDef registers"):
                ops.describe(op_type_of(kernel))


def test_super_kernel_output_is_deterministic() -> None:
    _, first = lowered("llama_layer.afc")
    _, second = lowered("llama_layer.afc")
    a, b = emit_ascendc(first), emit_ascendc(second)
    assert any(name.startswith("op_kernel/main_super") for name in a)
    assert a == b


def test_a_marking_across_a_library_op_is_a_one_line_error() -> None:
    """The printer checks the marks it reads: a super kernel spans consecutive
    launches and host scalar code only."""
    _, module = lowered("llama_layer.afc", super_kernel=False)
    launches = [op for op in module.walk() if isinstance(op, buffer.LaunchOp)]
    launches[2].attributes[SUPER_ATTR] = StringAttr("main_super9")  # a split follows it
    launches[3].attributes[SUPER_ATTR] = StringAttr("main_super9")
    with pytest.raises(UserError, match=r"super kernel @main_super9: graph\.\w+ lies between"):
        emit_ascendc(module)


def test_report_charges_one_launch_per_super_kernel() -> None:
    options = CompileOptions(chip=CHIP, super_kernel=True)
    plain = compile_model(str(EXAMPLES / "llama_layer.afc"), CompileOptions(chip=CHIP), None)
    fused = compile_model(str(EXAMPLES / "llama_layer.afc"), options, None)
    a, b = compile_report_json(plain), compile_report_json(fused)
    launch_us = get_chip(CHIP).launch_overhead_us
    assert a["launches"]["super_kernels"] == []
    # 5 kernels, no library op; the reshapes of the rotary tables after the tables'
    # kernel (host graph ops) end a run: runs of 1, 2 and 2 kernels
    assert a["launches"]["launches_after"] == a["launches"]["launches"] == 5
    assert b["launches"]["launches_after"] == 5 - (1 + 1)
    assert b["launches"]["saved_us"] == pytest.approx(2 * launch_us)
    saved = a["totals"]["time_us_after"] - b["totals"]["time_us_after"]
    assert saved == pytest.approx(2 * launch_us, abs=1e-3)
    assert "6.0 us saved" in fused.files["report.md"].decode()


def test_super_kernel_on_a_chip_without_sync_all_is_an_error_and_off_at_O3() -> None:
    path = str(EXAMPLES / "mlp.afc")
    with pytest.raises(UserError, match="Ascend310P3 does not have"):
        compile_model(path, CompileOptions(chip="Ascend310P3", super_kernel=True), None)
    c = compile_model(path, CompileOptions(chip="Ascend310P3", opt_level=3), None)
    assert compile_report_json(c)["launches"]["super_kernels"] == []
    c = compile_model(path, CompileOptions(chip=CHIP, opt_level=3), None)
    assert [s["name"] for s in compile_report_json(c)["launches"]["super_kernels"]] == [
        "main_super0"
    ]


HALF_GRANULE_ROWS = """
input x: f16[R, 8]
input w: f16[8, 16]
y = softmax(x, axis=-1) @ w
output y
"""


@needs_gxx
def test_two_aivs_write_the_halves_of_one_workspace_granule(tmp_path: Path) -> None:
    """A vector stage of 16-byte rows writes its intermediate into the workspace one row
    per AIV: the two AIVs of a block write the two halves of one 32-byte granule.
    DataCopyPad writes exactly its bytes (ascend.md 2.7), so that is no race (the
    emulator's check said it was, in the llama layer's k-rope stage)."""
    path = tmp_path / "half_granule.afc"
    path.write_text(HALF_GRANULE_ROWS)
    options = CompileOptions(chip=CHIP, super_kernel=True)
    c = compile_model(str(path), options, stop_after="lower-to-buffer")
    assert c.buffer is not None
    (sk,) = super_kernels(c.buffer)
    assert [k.core_type.data for k in sk.kernels] == ["aiv", "aic"]
    assert len(sk.intermediates) == 1  # softmax(x) lives in the workspace
    names = SuperKernelNames(sk)
    ops = RegisteredOps.build(emit_ascendc(c.buffer))
    values, _ = ops.tiling(names.op_type, [(20, 8), (8, 16)], len(names.fields(sk)))
    fields = dict(zip(names.fields(sk), values))
    # one f16 row of 8 (16 bytes) per AIV: AIVs 0 and 1 of block 0 write bytes 0-15, 16-31
    assert (fields["s0_cols"], fields["s0_tile_rows"], fields["s0_per_core"]) == (8, 1, 1)
    rng = np.random.default_rng(5)
    feeds = {
        "x": rng.standard_normal((20, 8)).astype(np.float16),
        "w": rng.standard_normal((8, 16)).astype(np.float16),
    }
    want = run_function(c.original, feeds)
    assert_close(run_function_emulated(c.buffer, feeds), want, 2e-2, 2e-2)


HALVES = r"""
#include <string>
#include "kernel_operator.h"
using namespace AscendC;

// the two AIVs of one mix block each copy 8 halves (16 bytes) into one 32-byte workspace
// granule, at half offsets 0 and `second`, unordered
static int64_t second = 8;
alignas(32) static half workspace[32];

static void Halves()
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIV {
        TPipe pipe;
        TBuf<QuePosition::VECOUT> b;
        pipe.InitBuffer(b, 32);
        LocalTensor<half> t = b.Get<half>();
        GlobalTensor<half> g;
        g.SetGlobalBuffer((__gm__ half*)workspace);
        Duplicate(t, static_cast<half>(1.0f), 16);
        PipeBarrier<PIPE_ALL>();
        DataCopyPad(g[GetSubBlockIdx() * second], t, DataCopyExtParams{1, 16, 0, 0, 0});
        PipeBarrier<PIPE_ALL>();
    }
}

int main(int argc, char** argv)
{
    second = std::stoi(argc > 1 ? argv[1] : "8");
    emu::RegisterGm(workspace, sizeof(workspace), true);
    emu::RunBlocks(1, Halves, 2);
    return 0;
}
"""


@needs_gxx
def test_emulated_race_check_is_by_byte_within_a_granule(tmp_path: Path) -> None:
    """The workspace race check compares the bytes two cores touch, not their 32-byte
    granules: disjoint halves of one granule are no race, overlapping bytes are."""
    src, exe = tmp_path / "halves.cpp", tmp_path / "halves"
    src.write_text(HALVES)
    flags = [*emulate.CXXFLAGS, f"-I{emulate.INCLUDE_DIR}"]
    subprocess.run([emulate.CXX, *flags, str(src), "-o", str(exe)], check=True)
    for second in ("8", "16"):  # bytes 16-31 of the first granule; the next granule
        subprocess.run([str(exe), second], capture_output=True, text=True, check=True)
    done = subprocess.run([str(exe), "4"], capture_output=True, text=True, check=False)
    message = r"\(aiv1\): DataCopyPad: the AIV writes workspace bytes AIV 0 wrote on PIPE_MTE3"
    assert done.returncode != 0 and re.search(message, done.stderr), done.stderr
