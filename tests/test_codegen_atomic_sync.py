"""Atomic adds (SetAtomicAdd<T>) and the all-core sync (SyncAll<false>) in Ascend C:
generated from the hand-written buffer kernels of tests/test_buffer_interpreter.py,
compiled with g++ against the emulation header and run; they give the interpreter's
numbers, and the emulator reports what would hang or race on the device.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_buffer_interpreter import (
    ATOMIC_TYPES,
    COUPLED_ATOMICS,
    FLAG_ACROSS_SYNC,
    SPLIT_K,
    UNREACHED_SYNCS,
    atomic_sum_text,
    coupled_double_text,
    parse,
    rotate_input,
    rotate_text,
    small_ints,
    split_k_inputs,
    split_k_reference,
    without_sync,
)
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen.emulate import EmulatedKernels, run_function_emulated
from autofusion.diagnostics import UserError
from autofusion.interpreter import run_function

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")

_KERNELS: dict[str, tuple[ModuleOp, EmulatedKernels]] = {}


def compiled(text: str) -> tuple[ModuleOp, EmulatedKernels]:
    """The module of `text` and its compiled kernels (one build per text)."""
    if text not in _KERNELS:
        module = parse(text)
        _KERNELS[text] = (module, EmulatedKernels(module))
    return _KERNELS[text]


def both(text: str, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(interpreter, emulator) results of `text`'s main on `feeds`."""
    module, kernels = compiled(text)
    want = run_function(module, feeds)["out0"]
    got = run_function_emulated(module, feeds, kernels=kernels)["out0"]
    return want, got


def kernel_code(text: str) -> str:
    _, kernels = compiled(text)
    (code,) = (
        v for k, v in kernels.files.items() if k.startswith("op_kernel/") and k.endswith(".cpp")
    )
    return code


# ---------------------------------------------------------------------------------------
# The interpreter's numbers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("elt", sorted(ATOMIC_TYPES))
@pytest.mark.parametrize("blocks", [1, 3, 24])
def test_emulated_atomic_copies_add_up(elt: str, blocks: int) -> None:
    x = small_ints((blocks, 16), elt, seed=blocks)
    want, got = both(atomic_sum_text(elt), {"arg0": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, x.sum(axis=0, dtype=np.float64).astype(got.dtype))


def test_emulated_atomic_add_rounds_in_the_destination_type() -> None:
    """SetAtomicAdd<half>: one rounding to half per add, in the interpreter's order."""
    for rows, expected in (((2048, 1, 1), 2048), ((1, 1, 2048), 2050)):
        x = np.repeat(np.array(rows, np.float16)[:, None], 16, axis=1)
        want, got = both(atomic_sum_text("f16"), {"arg0": x})
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, np.full(16, expected, np.float16))


@pytest.mark.parametrize("blocks", [1, 4])
def test_emulated_atomic_fixpipe_adds_the_partial_products(blocks: int) -> None:
    feeds = split_k_inputs(blocks, seed=blocks)
    want, got = both(SPLIT_K, feeds)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, split_k_reference(feeds))


@pytest.mark.parametrize(("blocks", "rounds"), [(1, 1), (4, 1), (4, 3), (24, 1)])
def test_emulated_sync_all_orders_gm_between_cores(blocks: int, rounds: int) -> None:
    x = rotate_input(blocks)
    want, got = both(rotate_text(rounds), {"arg0": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.roll(x, -rounds, axis=0))


@pytest.mark.parametrize(("chip", "elt"), COUPLED_ATOMICS)
def test_emulated_atomic_adds_on_coupled_chips(chip: str, elt: str) -> None:
    """One AI Core adds from UB: DataCopy (Ascend910 has no DataCopyPad) under
    SetAtomicAdd<T> adds; the plain copy before it overwrites the poisoned output."""
    x = small_ints((3, 16), elt, seed=5)
    want, got = both(coupled_double_text(chip, elt), {"arg0": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, 2 * x)


# ---------------------------------------------------------------------------------------
# The generated Ascend C
# ---------------------------------------------------------------------------------------


def atomic_sections(code: str) -> list[list[str]]:
    """The statements between each SetAtomicAdd<T>() and the SetAtomicNone() after it."""
    sections = []
    for m in re.finditer(r"SetAtomicAdd<\w+>\(\);\n(.*?)SetAtomicNone\(\);", code, re.S):
        sections.append([line.strip() for line in m.group(1).splitlines() if line.strip()])
    return sections


def method_of(code: str, needle: str) -> str:
    """The name of the kernel class method whose body has `needle`."""
    head = code[: code.index(needle)]
    return re.findall(r"__aicore__ inline void (\w+)\(", head)[-1]


@pytest.mark.parametrize(
    ("elt", "ctype"),
    [("f32", "float"), ("f16", "half"), ("bf16", "bfloat16_t"), ("i32", "int32_t")],
)
def test_atomic_copy_is_wrapped_in_set_atomic_add(elt: str, ctype: str) -> None:
    """SetAtomicAdd<T>() right before the atomic copy and SetAtomicNone() right after
    it; the zeroing copy before the sync overwrites."""
    code = kernel_code(atomic_sum_text(elt))
    assert code.count(f"SetAtomicAdd<{ctype}>();") == 1
    assert code.count("SetAtomicAdd<") == 1 and code.count("SetAtomicNone();") == 1
    (section,) = atomic_sections(code)
    copies = [s for s in section if s.startswith(("DataCopy(", "DataCopyPad("))]
    assert copies == [s for s in section if "(yGm[" in s] and len(copies) == 1, section
    assert copies[0].startswith("DataCopyPad(yGm[mine], t,"), section
    # Process zeroes y, syncs, then adds (the copies are in stage methods)
    process = code[code.index("void Process()") : code.index("private:")]
    zeroing = process.index(method_of(code, "DataCopyPad(yGm[mine], zeros,") + "(")
    adding = process.index(method_of(code, "SetAtomicAdd<") + "(")
    assert zeroing < process.index("SyncAll<false>();") < adding


def test_atomic_fixpipe_is_wrapped_in_set_atomic_add() -> None:
    code = kernel_code(SPLIT_K)
    (section,) = atomic_sections(code)
    assert [s for s in section if s.startswith("Fixpipe(")] == ["Fixpipe(yGm, c, fixpipeParams);"]
    assert "SetAtomicAdd<float>();" in code and code.count("SetAtomicNone();") == 1


def test_kernels_without_atomic_copies_never_set_atomic_add() -> None:
    code = kernel_code(rotate_text(1))
    assert "SetAtomicAdd" not in code and "SetAtomicNone" not in code


def test_sync_all_is_printed_on_every_core() -> None:
    """buffer.sync_all is SyncAll<false>() (mix kernels) in Process, where every core
    runs it: not inside an `if ASCEND_IS_AIC/AIV` nor in a stage method."""
    for text, count in ((atomic_sum_text("f32"), 1), (rotate_text(2), 2), (SPLIT_K, 1)):
        code = kernel_code(text)
        assert code.count("SyncAll<false>();") == count
        assert len(re.findall(r"\bSyncAll\b", code)) == count  # no SyncAll<true> / SyncAll()
        process = code[code.index("void Process()") : code.index("private:")]
        assert process.count("SyncAll<false>();") == count
        for m in re.finditer(r"\n( *)SyncAll<false>\(\);", process):
            before = process[: m.start()].splitlines()
            opener = next(
                line for line in reversed(before) if len(line) - len(line.lstrip()) < len(m[1])
            )
            assert "ASCEND_IS_" not in opener, opener


def host_code(text: str) -> str:
    _, kernels = compiled(text)
    # op_host/<k>.cpp holds the host tiling function (with the OpDef), as msOpGen lays it out
    (code,) = (
        v
        for k, v in kernels.files.items()
        if k.startswith("op_host/") and k.endswith(".cpp") and "TilingFunc" in v
    )
    return code


def test_sync_all_kernels_ask_for_batch_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that calls SyncAll<false> puts its launch in batch mode in TilingFunc
    (SetScheduleMode(1); asc-devkit SyncAll.md: without it SyncAll can deadlock when
    several streams run); others do not. The emulated TilingFunc refuses a SyncAll
    kernel whose TilingFunc forgets it."""
    text = atomic_sum_text("f32")
    code = host_code(text)
    assert code.count("context->SetScheduleMode(1);") == 1
    assert code.index("SetBlockDim") < code.index("SetScheduleMode") < code.index("SaveToBuffer")
    assert "SetScheduleMode" not in host_code(coupled_double_text("Ascend910B1", "f32"))
    module, kernels = compiled(text)
    assert kernels.tiling_func("atomic_sum", [[3, 16]]) == ([16], 3)

    from autofusion.codegen import emulate

    printed = emulate.emit_ascendc

    def forgetful(module: ModuleOp, debug: bool = False) -> dict[str, str]:
        files = printed(module, debug)
        return {k: v.replace("context->SetScheduleMode(1);\n", "") for k, v in files.items()}

    monkeypatch.setattr(emulate, "emit_ascendc", forgetful)
    forgot = EmulatedKernels(module)
    assert not any("SetScheduleMode" in v for v in forgot.files.values())
    with pytest.raises(UserError, match=r"does not set batch mode \(SetScheduleMode\(1\)\)"):
        forgot.tiling_func("atomic_sum", [[3, 16]])


# ---------------------------------------------------------------------------------------
# What the emulator reports
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("chip", "cube_cores"), [("Ascend910B1", 24), ("Ascend910B3", 20)])
def test_emulated_sync_all_launch_is_at_most_the_cube_cores(chip: str, cube_cores: int) -> None:
    text = atomic_sum_text("f32", chip)
    module, kernels = compiled(text)
    x = small_ints((cube_cores, 16), "f32")
    got = run_function_emulated(module, {"arg0": x}, kernels=kernels)["out0"]
    np.testing.assert_array_equal(got, x.sum(axis=0))
    x = small_ints((cube_cores + 1, 16), "f32")
    message = (
        rf"emulated kernel @atomic_sum: a kernel that calls SyncAll launched on {cube_cores + 1} "
        rf"blocks, more than the {cube_cores} cube cores of {chip}: the blocks that wait for a "
        r"free core would never start"
    )
    with pytest.raises(UserError, match=message):
        run_function_emulated(module, {"arg0": x}, kernels=kernels)


@pytest.mark.parametrize("case", sorted(UNREACHED_SYNCS))
def test_emulated_sync_all_some_core_never_reaches(case: str) -> None:
    old, new = UNREACHED_SYNCS[case]
    module, kernels = compiled(atomic_sum_text("f32").replace(old, new))
    with pytest.raises(
        UserError,
        match=r"SyncAll: a core of the launch returned without reaching it, so the others "
        r"would wait forever",
    ):
        run_function_emulated(module, {"arg0": small_ints((2, 16), "f32")}, kernels=kernels)


def test_emulated_flag_set_only_after_the_sync_all_is_a_deadlock() -> None:
    old, new = FLAG_ACROSS_SYNC
    module, kernels = compiled(atomic_sum_text("f32").replace(old, new))
    with pytest.raises(
        UserError, match=r"CrossCoreWaitFlag\(0\) without a matching CrossCoreSetFlag"
    ):
        run_function_emulated(module, {"arg0": small_ints((2, 16), "f32")}, kernels=kernels)


@pytest.mark.parametrize(
    ("which", "rounds", "message"),
    [
        # AIV 1 writes the half AIV 0 already read (before it was written)
        (0, 1, r"\(aiv1\): DataCopyPad: the AIV writes workspace bytes AIV 0 read on PIPE_MTE2"),
        # AIV 1 reads its half after AIV 0 rewrote it in round 2
        (1, 2, r"\(aiv1\): DataCopyPad: the AIV reads workspace bytes AIV 0 wrote on PIPE_MTE3"),
    ],
)
def test_emulated_missing_sync_all_is_a_race(which: int, rounds: int, message: str) -> None:
    """Without either sync_all the AIVs of one block touch each other's workspace
    halves unordered: the emulator reports the race (with it, see above, it does not)."""
    module, kernels = compiled(rotate_text(rounds, without_sync(which)))
    with pytest.raises(UserError, match=message):
        run_function_emulated(module, {"arg0": rotate_input(1)}, kernels=kernels)


API = r"""
#include <cstdio>
#include <string>
#include "kernel_operator.h"
using namespace AscendC;

// a UB tile of 8 floats (or halves) copied to GM `twice`, the second time under `atomic`
template <typename T, typename A>
static void Copies(GM_ADDR y, bool atomic, bool none)
{
    TPipe pipe; TBuf<QuePosition::VECOUT> b;
    pipe.InitBuffer(b, 32);
    LocalTensor<T> t = b.Get<T>();
    GlobalTensor<T> g; g.SetGlobalBuffer((__gm__ T*)y);
    for (int i = 0; i < 8; ++i) { t.SetValue(i, static_cast<T>(i + 1)); }
    PipeBarrier<PIPE_ALL>();
    DataCopy(g, t, 32 / sizeof(T));
    PipeBarrier<PIPE_ALL>();
    if (atomic) { SetAtomicAdd<A>(); }
    if (none) { SetAtomicNone(); }
    DataCopy(g, t, 32 / sizeof(T));
    SetAtomicNone();
    PipeBarrier<PIPE_ALL>();
}

static void Sync() { SyncAll<false>(); }
static void SyncAivOnly() { SyncAll<true>(); }

static void Chip(const char* name, int arch)
{
    emu::ChipConfig c = emu::DefaultChipConfig();
    c.name = name; c.arch = arch; c.coupled = arch != 2201; c.dataCopyPad = arch == 2201;
    emu::SetChipConfig(c);
}

int main(int argc, char** argv)
{
    const std::string name = argc > 1 ? argv[1] : "";
    alignas(32) float y[8] = {};
    alignas(32) half h[16] = {};
    emu::RegisterGm(y, sizeof(y));
    emu::RegisterGm(h, sizeof(h));
    if (name == "add" || name == "none" || name == "plain") {
        emu::RunBlocks(1, [&]() { Copies<float, float>(reinterpret_cast<GM_ADDR>(y), name != "plain", name == "none"); });
        for (float v : y) { std::printf("%g ", v); }
        return 0;
    }
    if (name == "on910") {
        Chip("Ascend910", 1001);
        emu::RunBlocks(1, [&]() { Copies<float, float>(reinterpret_cast<GM_ADDR>(y), true, false); });
        for (float v : y) { std::printf("%g ", v); }
        return 0;
    }
    if (name == "half_on910") {
        Chip("Ascend910", 1001);
        emu::RunBlocks(1, [&]() { Copies<half, half>(reinterpret_cast<GM_ADDR>(h), true, false); });
        return 0;
    }
    if (name == "mismatch") {
        emu::RunBlocks(1, [&]() { Copies<half, float>(reinterpret_cast<GM_ADDR>(h), true, false); });
        return 0;
    }
    if (name == "sync") { emu::RunBlocks(3, Sync, 2, true); return 0; }
    if (name == "sync_not_together") { emu::RunBlocks(2, Sync, 2, false); return 0; }
    if (name == "sync_aiv_only") { emu::RunBlocks(2, SyncAivOnly, 2, true); return 0; }
    if (name == "sync_vector_kernel") { emu::RunBlocks(2, Sync, 0, true); return 0; }
    if (name == "sync_on_910") { Chip("Ascend910", 1001); emu::RunBlocks(1, Sync, 2, true); return 0; }
    if (name == "sync_too_many") { emu::RunBlocks(25, Sync, 2, true); return 0; }
    return 2;
}
"""


def test_emulated_atomic_and_sync_apis_check_their_use(tmp_path: Path) -> None:
    """SetAtomicAdd<T> makes the copies to GM add until SetAtomicNone; a type the chip
    does not add, a copy of another type while it is on, and SyncAll where the device
    would hang or has none abort the emulation with one clear line."""
    from autofusion.codegen import emulate

    src, exe = tmp_path / "api.cpp", tmp_path / "api"
    src.write_text(API)
    subprocess.run(
        [emulate.CXX, *emulate.CXXFLAGS, f"-I{emulate.INCLUDE_DIR}", str(src), "-o", str(exe)],
        check=True,
    )
    ones = [str(i + 1) for i in range(8)]
    twice = [str(2 * (i + 1)) for i in range(8)]
    for case, want in (("add", twice), ("on910", twice), ("none", ones), ("plain", ones)):
        done = subprocess.run([str(exe), case], capture_output=True, text=True, check=True)
        assert done.stdout.split() == want, (case, done.stdout)
    subprocess.run([str(exe), "sync"], capture_output=True, text=True, check=True)
    for case, message in (
        ("half_on910", r"SetAtomicAdd<half>: Ascend910 has no atomic add of half"),
        (
            "mismatch",
            r"DataCopy: copies half to GM while SetAtomicAdd<float> is on: the hardware would "
            r"add the bytes as float",
        ),
        (
            "sync_not_together",
            r"SyncAll: the emulation runs all-core syncs only in mix kernels whose launch runs "
            r"every block side by side",
        ),
        (
            "sync_aiv_only",
            r"SyncAll<true> synchronizes the AIVs only: a mix kernel needs SyncAll<false>",
        ),
        (
            "sync_vector_kernel",
            r"SyncAll: the emulation runs all blocks side by side only for mix kernels on split chips",
        ),
        ("sync_on_910", r"SyncAll: the hard all-core sync is for Atlas A2/A3, not Ascend910"),
        (
            "sync_too_many",
            r"a kernel that calls SyncAll launched on 25 blocks, more than the 24 cube cores of "
            r"Ascend910B1",
        ),
    ):
        done = subprocess.run([str(exe), case], capture_output=True, text=True, check=False)
        assert done.returncode != 0 and re.search(message, done.stderr), (case, done.stderr)
