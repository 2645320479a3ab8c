"""Running Huawei's bishengir (pip `ascendnpu-ir`, the `hfusion` extra) on exported device
functions: the fusion kind it infers, and how far bishengir-compile gets without CANN.

Without CANN, bishengir-compile stops after writing `module.hivm.opt.mlir` (the HIVM stage
before CANN's `hivmc`), with "External hivmc run fails" (shared/reference/bishengir.md);
reaching that file is the success criterion here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

TARGET = "Ascend910B1"
COMPILE_FLAGS = ("--enable-hfusion-compile", "--enable-hivm-compile", f"--target={TARGET}")
HIVM_STAGE = "module.hivm.opt.mlir"
TIMEOUT_S = 300


def bishengir_tool(name: str) -> Path | None:
    """`bishengir-opt`/`bishengir-compile` from the ascendnpu-ir wheel, else from PATH."""
    try:
        import ascendnpuir

        path = Path(ascendnpuir.__file__).parent / "bin" / name
        if path.is_file():
            return path
    except ImportError:
        pass
    found = shutil.which(name)
    return Path(found) if found else None


def _run(
    cmd: list[str], cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """A tool run with its output captured (its exit code is the caller's to judge)."""
    return subprocess.run(
        cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


@dataclass(frozen=True)
class CompileResult:
    """What bishengir-compile did with one module."""

    reached_hivm: bool
    log: str

    @property
    def first_error(self) -> str:
        """The first error line that is not the missing CANN toolchain."""
        for line in self.log.splitlines():
            if "error" in line.lower() and not re.search(r"hivmc|Failed to run BiSheng", line):
                return line.strip()
        return ""


def compile_to_hivm(
    text: str, workdir: Path | None = None, extra: tuple[str, ...] = ()
) -> CompileResult:
    """bishengir-compile `text` up to the HIVM stage (--save-temps into a directory), with
    `extra` flags (an --mlir-print-ir-after=PASS puts that IR in the log)."""
    tool = bishengir_tool("bishengir-compile")
    if tool is None:
        raise FileNotFoundError("bishengir-compile not found (pip install 'afc[hfusion]')")
    with tempfile.TemporaryDirectory(prefix="afc-bishengir-") as tmp:
        work = workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        source = work / "input.mlir"
        source.write_text(text)
        temps = work / "temps"
        flags = [*COMPILE_FLAGS, *extra, f"--save-temps={temps}", "-o", str(work / "out.o")]
        proc = _run([str(tool), str(source), *flags])
        return CompileResult((temps / HIVM_STAGE).is_file(), proc.stdout + proc.stderr)


_KIND = re.compile(r"func\.func @([\w.$]+)\(.*hfusion\.fusion_kind = #hfusion\.fusion_kind<(\w+)>")


def inferred_kinds(text: str) -> dict[str, str]:
    """Per function, the fusion kind `hfusion-infer-func-fusion-kind` gives it."""
    tool = bishengir_tool("bishengir-opt")
    if tool is None:
        raise FileNotFoundError("bishengir-opt not found (pip install 'afc[hfusion]')")
    spec = f"--hacc-append-device-spec=target={TARGET}"
    proc = _run([str(tool), "-", spec, "--hfusion-infer-func-fusion-kind"], stdin=text)
    if proc.returncode != 0:
        raise RuntimeError(f"bishengir-opt failed: {proc.stderr.strip().splitlines()[:1]}")
    return {m.group(1): m.group(2) for m in _KIND.finditer(proc.stdout)}


# ---- numerics on the CPU: bishengir's cpu-runner lowering + MLIR 19's mlir-cpu-runner -------

# The four runtime functions bishengir's `main_wrapper` calls (shared/reference/bishengir.md):
# inputs are 3 sin(0.37 i + 0.1 (i mod 7)) per buffer, inputs and outputs are printed to
# in.txt and out.txt in parameter and result order. `afc_poisoned_malloc` replaces the
# program's malloc: every buffer starts as NaN bytes, so a read before a write shows as NaN
# on every run instead of as heap garbage that differs from run to run.
SHIM_C = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
void *afc_poisoned_malloc(size_t n) { void *p = malloc(n); if (p) memset(p, 0xff, n); return p; }
typedef struct { int64_t rank; void *desc; } Unranked;
typedef struct { float *alloc, *aligned; int64_t offset, rest[]; } Ranked;
static int64_t numel(Unranked *m) { Ranked *r = m->desc; int64_t n = 1;
  for (int64_t i = 0; i < m->rank; i++) n *= r->rest[i]; return n; }
void _mlir_ciface_getDataF32(Unranked *m) { Ranked *r = m->desc;
  for (int64_t i = 0; i < numel(m); i++)
    r->aligned[r->offset + i] = (float)(3.0 * sin(0.37 * i + 0.1 * (i % 7))); }
static int calls = 0;
FILE *getFileHandle(char *name) {
  return fopen(name ? name : (calls++ == 0 ? "in.txt" : "out.txt"), "w"); }
void _mlir_ciface_printDataF32(FILE *f, Unranked *m) { Ranked *r = m->desc;
  for (int64_t i = 0; i < numel(m); i++) fprintf(f, "%.9g\n", r->aligned[r->offset + i]); }
void closeFileHandle(FILE *f) { fclose(f); }
"""
CPU_RUNNER_FLAGS = (
    "--enable-hfusion-compile",
    "--enable-multi-kernel",
    "--enable-manage-host-resources",
    f"--target={TARGET}",
)
# the pass the CPU lowering branches off before: after HFusion's whole pipeline (fusion,
# auto-schedule, tiling), or before its auto-schedule (the normalized, untiled program)
SCHEDULED = "convert-hfusion-to-hivm"
UNSCHEDULED = "hfusion-auto-schedule"
HOST_ENTRY = (
    "hacc.entry, hacc.function_kind = #hacc.function_kind<HOST>, "
    "hacc.host_func_type = #hacc.host_func_type<host_entry>"
)
# attributes mlir-cpu-runner's MLIR does not know: bishengir's module spec and hacc/hfusion
_FOREIGN_ATTR = re.compile(
    r"(hacc\.\w+( = (#hacc\.\w+<[^>]*>|\d+ : i64))?"
    r"|hfusion\.fusion_kind = #hfusion\.fusion_kind<\w+>|enable_auto_mark_buffer_size)"
)
ENTRY = """  llvm.func @entry() {
    %0 = llvm.mlir.zero : !llvm.ptr
    llvm.call @main_wrapper(%0, %0) : (!llvm.ptr, !llvm.ptr) -> ()
    llvm.return
  }
}
"""


def cpu_runner() -> Path | None:
    """MLIR 19's mlir-cpu-runner (Debian mlir-19-tools, LLVM 19.1.7 like bishengir)."""
    for name in ("mlir-cpu-runner-19", "mlir-cpu-runner"):
        found = shutil.which(name)
        if found:
            return Path(found)
    path = Path("/usr/lib/llvm-19/bin/mlir-cpu-runner")
    return path if path.is_file() else None


def _runnable(lowered: str) -> str:
    """bishengir's LLVM-dialect output as mlir-cpu-runner input, with an `entry`, its
    allocations through the shim's `afc_poisoned_malloc`."""
    head, _, rest = lowered.partition("\n")
    if not head.startswith("module"):
        raise RuntimeError("bishengir's cpu-runner output does not start with a module")
    text = _FOREIGN_ATTR.sub("", "module {\n" + rest)
    text = re.sub(r"attributes \{[ ,]*\}", "", text)
    text = re.sub(r"\{(\s*,)+\s*", "{", text)
    text = re.sub(r"(,\s*)+\}", "}", text)
    text = re.sub(r",(\s*,)+", ",", text)
    text = re.sub(r"@malloc\b", "@afc_poisoned_malloc", text)
    return text.rstrip().removesuffix("}") + ENTRY


def run_on_cpu(
    device_text: str, work: Path, before: str = SCHEDULED
) -> tuple[list[float], list[float]]:
    """Run one device function (its module text) through bishengir's HFusion pipeline up to
    the pass `before`, lowered for the CPU: (the flat inputs main_wrapper generated, the
    flat outputs it printed)."""
    compiler, runner = bishengir_tool("bishengir-compile"), cpu_runner()
    if compiler is None or runner is None:
        raise FileNotFoundError("bishengir-compile and mlir-cpu-runner (mlir-19-tools) are needed")
    work.mkdir(parents=True, exist_ok=True)
    host = device_text.replace(
        "hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>", HOST_ENTRY
    )
    (work / "group.mlir").write_text(host)
    lowered = work / "lowered.mlir"
    stage = f"--enable-cpu-runner-before={before},wrapper-name=main_wrapper"
    cmd = [str(compiler), "group.mlir", *CPU_RUNNER_FLAGS, stage, "-o", lowered.name]
    proc = _run(cmd, work)
    if not lowered.is_file():
        raise RuntimeError(
            f"bishengir cpu-runner lowering failed: {CompileResult(False, proc.stderr).first_error}"
        )
    (work / "run.mlir").write_text(_runnable(lowered.read_text()))
    (work / "shim.c").write_text(SHIM_C)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", "libshim.so", "shim.c", "-lm"], cwd=work, check=True
    )
    flags = ["-e", "entry", "-entry-point-result=void", "-shared-libs=./libshim.so"]
    proc = _run([str(runner), "run.mlir", *flags], work)
    if proc.returncode != 0:
        raise RuntimeError(f"mlir-cpu-runner failed: {proc.stderr.strip()[:300]}")
    return _numbers(work / "in.txt"), _numbers(work / "out.txt")


def _numbers(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()]
