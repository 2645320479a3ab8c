"""The emulation header's cube rules, on hand-written Ascend C (compiled with g++).

* GEMV: an Mmad with m = 1 reads L0A as one contiguous row (asc-devkit Mmad.md 约束说明,
  GEMV.md), not as Zz fractals.
* PipeBarrier<PIPE_M>: an Mmad that accumulates into L0C bytes a small Mmad wrote
  ((m / 16) * (n / 16) < 10, Mmad.md 同步优化说明) without the barrier between is a pipe
  race, reported with the file and line of both calls.
* Parameter structs default-construct to the real headers' values (asc-devkit
  kernel_struct_mm.h, kernel_struct_data_copy.h, kernel_struct_fixpipe.h), and the counts
  the docs call a NOP when 0 (LoadData_2D.md repeatTimes, ND2NZ ndNum) move nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from autofusion.codegen import emulate

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")

CUBE = r"""
#include <cstdio>
#include <string>
#include "kernel_operator.h"
using namespace AscendC;

// what the real headers default to
constexpr LoadData2DParams kLoad{};
static_assert(kLoad.startIndex == 0 && kLoad.repeatTimes == 0 && kLoad.srcStride == 0 &&
              kLoad.dstGap == 0 && !kLoad.ifTranspose, "LoadData2DParams: kernel_struct_mm.h:57");
constexpr LoadData2dTransposeParams kTranspose{};
static_assert(kTranspose.repeatTimes == 0 && kTranspose.srcStride == 0, "kernel_struct_mm.h:118");
constexpr Nd2NzParams kNd{};
static_assert(kNd.ndNum == 0 && kNd.nValue == 0 && kNd.dValue == 0 && kNd.srcDValue == 0 &&
              kNd.dstNzC0Stride == 0 && kNd.dstNzNStride == 0 && kNd.dstNzMatrixStride == 0,
              "Nd2NzParams: kernel_struct_data_copy.h:277");
constexpr MmadParams kMmad{};
static_assert(kMmad.m == 0 && kMmad.n == 0 && kMmad.k == 0 && kMmad.cmatrixInitVal &&
              !kMmad.cmatrixSource && !kMmad.isBias && kMmad.unitFlag == 0, "kernel_struct_mm.h:414");
constexpr FixpipeParamsV220 kFix{};
static_assert(kFix.nSize == 0 && kFix.mSize == 0 && kFix.srcStride == 0 && kFix.dstStride == 0 &&
              kFix.ndNum == 1 && !kFix.reluEn, "kernel_struct_fixpipe.h:106");
constexpr DataCopyParams kCopy{};
static_assert(kCopy.blockCount == 1 && kCopy.blockLen == 0 && kCopy.srcStride == 0 &&
              kCopy.dstStride == 0, "DataCopyParams: kernel_struct_data_copy.h:65");

static void Fill(LocalTensor<half> t, int n, float value)
{
    for (int i = 0; i < n; ++i) {
        t.SetValue(i, static_cast<half>(value));
    }
}

// L0A holds ones in elements 0..31 and zeros after: read as a GEMV row of k = 32 that is
// 32 ones, read as Zz fractals (row 0 of fractals 0 and 1: elements 0..15, 256..271) 16
static void Gemv(int m)
{
    TPipe pipe; TBuf<QuePosition::A2> a; TBuf<QuePosition::B2> b; TBuf<QuePosition::CO1> c;
    pipe.InitBuffer(a, 2048); pipe.InitBuffer(b, 2048); pipe.InitBuffer(c, 4096);
    LocalTensor<half> l0a = a.Get<half>(), l0b = b.Get<half>();
    Fill(l0a, 1024, 0.0f);
    Fill(l0a, 32, 1.0f);
    Fill(l0b, 1024, 1.0f);
    PipeBarrier<PIPE_ALL>();
    LocalTensor<float> l0c = c.Get<float>();
    MmadParams p; p.m = static_cast<uint16_t>(m); p.n = 16; p.k = 32;
    Mmad(l0c, l0a, l0b, p);
    PipeBarrier<PIPE_ALL>();
    std::printf("%g\n", static_cast<double>(l0c.GetValue(0)));
}

// two K steps into one tile, with or without PipeBarrier<PIPE_M> between them
static void Accumulate(int size, bool barrier)
{
    TPipe pipe; TBuf<QuePosition::A2> a; TBuf<QuePosition::B2> b; TBuf<QuePosition::CO1> c;
    pipe.InitBuffer(a, 8192); pipe.InitBuffer(b, 8192); pipe.InitBuffer(c, 16384);
    LocalTensor<half> l0a = a.Get<half>(), l0b = b.Get<half>();
    Fill(l0a, 4096, 1.0f);
    Fill(l0b, 4096, 1.0f);
    PipeBarrier<PIPE_ALL>();
    MmadParams p; p.m = static_cast<uint16_t>(size); p.n = static_cast<uint16_t>(size); p.k = 16;
    Mmad(c.Get<float>(), l0a, l0b, p);
    if (barrier) {
        PipeBarrier<PIPE_M>();
    }
    p.cmatrixInitVal = false;
    Mmad(c.Get<float>(), l0a, l0b, p);
    PipeBarrier<PIPE_ALL>();
    std::printf("%g\n", static_cast<double>(c.Get<float>().GetValue(0)));
}

// default-constructed counts are NOPs: nothing is written
static void Defaults()
{
    TPipe pipe; TBuf<QuePosition::A1> l1; TBuf<QuePosition::A2> a;
    pipe.InitBuffer(l1, 2048); pipe.InitBuffer(a, 2048);
    LocalTensor<half> src = l1.Get<half>(), dst = a.Get<half>();
    Fill(src, 1024, 2.0f);
    Fill(dst, 1024, 5.0f);
    PipeBarrier<PIPE_ALL>();
    LoadData(dst, src, LoadData2DParams{});
    static half gm[256];
    GlobalTensor<half> g; g.SetGlobalBuffer(gm, 256);
    DataCopy(src, g, Nd2NzParams{});
    PipeBarrier<PIPE_ALL>();
    std::printf("%g %g\n", static_cast<double>(dst.GetValue(0)), static_cast<double>(src.GetValue(0)));
}

int main(int argc, char** argv)
{
    const std::string name = argc > 1 ? argv[1] : "";
    if (name == "gemv") { emu::RunBlocks(1, []() { Gemv(1); }); }
    if (name == "fractal") { emu::RunBlocks(1, []() { Gemv(16); }); }
    if (name == "race") { emu::RunBlocks(1, []() { Accumulate(32, false); }); }
    if (name == "barrier") { emu::RunBlocks(1, []() { Accumulate(32, true); }); }
    if (name == "large") { emu::RunBlocks(1, []() { Accumulate(64, false); }); }
    if (name == "defaults") { emu::RunBlocks(1, Defaults); }
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cube_rules")
    src, exe = tmp / "cube_rules.cpp", tmp / "cube_rules"
    src.write_text(CUBE)
    subprocess.run(
        [emulate.CXX, *emulate.CXXFLAGS, f"-I{emulate.INCLUDE_DIR}", src.name, "-o", str(exe)],
        check=True,
        cwd=tmp,
    )
    return exe


def run(program: Path, case: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program), case], capture_output=True, text=True, check=False)


def test_mmad_with_one_row_reads_l0a_as_a_row(program: Path) -> None:
    assert run(program, "gemv").stdout.split() == ["32"]
    assert run(program, "fractal").stdout.split() == ["16"]


def test_accumulating_mmad_without_pipe_m_barrier_is_a_race(program: Path) -> None:
    done = run(program, "race")
    assert done.returncode != 0
    assert re.search(
        r"Mmad at cube_rules\.cpp:(\d+): pipe race: accumulates into L0C address 0, which the "
        r"Mmad at cube_rules\.cpp:(\d+) wrote with \(m / 16\) \* \(n / 16\) = 4 < 10, with no "
        r"PipeBarrier<PIPE_M> between them",
        done.stderr,
    ), done.stderr
    assert run(program, "barrier").stdout.split() == ["32"]
    assert run(program, "large").stdout.split() == ["32"]  # 16 tiles: the cube orders them


def test_parameter_structs_default_to_the_real_headers(program: Path) -> None:
    """The static_asserts hold (the program compiled); zero counts move nothing."""
    assert run(program, "defaults").stdout.split() == ["5", "2"]
