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
        import ascendnpuir  # type: ignore[import-not-found]

        path = Path(ascendnpuir.__file__).parent / "bin" / name
        if path.is_file():
            return path
    except ImportError:
        pass
    found = shutil.which(name)
    return Path(found) if found else None


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


def compile_to_hivm(text: str, workdir: Path | None = None) -> CompileResult:
    """bishengir-compile `text` up to the HIVM stage (--save-temps into a directory)."""
    tool = bishengir_tool("bishengir-compile")
    if tool is None:
        raise FileNotFoundError("bishengir-compile not found (pip install 'afc[hfusion]')")
    with tempfile.TemporaryDirectory(prefix="afc-bishengir-") as tmp:
        work = workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        source = work / "input.mlir"
        source.write_text(text)
        temps = work / "temps"
        proc = subprocess.run(
            [
                str(tool),
                str(source),
                *COMPILE_FLAGS,
                f"--save-temps={temps}",
                "-o",
                str(work / "out.o"),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        return CompileResult((temps / HIVM_STAGE).is_file(), proc.stdout + proc.stderr)


_KIND = re.compile(r"func\.func @([\w.$]+)\(.*hfusion\.fusion_kind = #hfusion\.fusion_kind<(\w+)>")


def inferred_kinds(text: str) -> dict[str, str]:
    """Per function, the fusion kind `hfusion-infer-func-fusion-kind` gives it."""
    tool = bishengir_tool("bishengir-opt")
    if tool is None:
        raise FileNotFoundError("bishengir-opt not found (pip install 'afc[hfusion]')")
    proc = subprocess.run(
        [
            str(tool),
            "-",
            f"--hacc-append-device-spec=target={TARGET}",
            "--hfusion-infer-func-fusion-kind",
        ],
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bishengir-opt failed: {proc.stderr.strip().splitlines()[:1]}")
    return {m.group(1): m.group(2) for m in _KIND.finditer(proc.stdout)}
