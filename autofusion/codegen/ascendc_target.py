"""`-t ascendc` and `emit_ascendc`: the files of a buffer-IR module's Ascend C, the kernels
(ascendc.py's KernelPrinter), their super kernels (super_kernel_ascendc.py) and the CANN
project around them (cann_project.py). Its own module so that the super-kernel printer,
which builds on KernelPrinter, is not imported back by the module it extends.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from autofusion.codegen.ascendc import KernelPrinter
from autofusion.codegen.ascendc_api import API_TABLES, CANN8, AscendCApi
from autofusion.codegen.ascendc_host import HostPrinter
from autofusion.codegen.cann_project import emit_op_host, staged_kernels
from autofusion.codegen.kernel_interface import kernels_of
from autofusion.codegen.super_kernel import super_kernels
from autofusion.codegen.super_kernel_ascendc import (
    SuperContext,
    SuperHostPrinter,
    emit_super_kernels,
)
from autofusion.diagnostics import UserError
from autofusion.dialects.target import resolve_target
from autofusion.dialects.tiling_facts import Divisibility
from autofusion.mlir_io import verify_located


def emit_ascendc(module: ModuleOp, debug: bool = False, api: AscendCApi = CANN8) -> dict[str, str]:
    """Ascend C for every buffer.kernel of `module`: file name -> text.

    Files per kernel: `op_kernel/<k>.cpp`, `op_host/<k>_tiling.h`, `op_host/<k>.cpp`
    (tiling, OpDef); once: the CANN project's build files (cann_project.py). The module
    is verified first (the verifier owns the rules about buffer IR: LocatedVerifyError
    at the op); UserError (one line, naming the op) is for what the printer cannot express.
    """
    verify_located(module)
    kernels = kernels_of(module)
    if not kernels:
        from autofusion.codegen.missing_kernels import no_kernel_reason

        raise UserError(no_kernel_reason(module))

    chip = resolve_target(module, "ascendc")
    facts = Divisibility(module)
    files: dict[str, str] = {}
    sks = super_kernels(module)
    supers = [SuperHostPrinter(sk, SuperContext(module, facts, api, debug)) for sk in sks]
    op_host = emit_op_host(module, api, debug, supers)
    staged = staged_kernels(module) if sks else set()
    for kernel in kernels:
        name = kernel.sym_name.data
        if name in staged:
            continue  # printed inside its super kernel
        printer = KernelPrinter(kernel, chip, facts, api, debug)
        files[f"op_kernel/{name}.cpp"] = printer.print()
        files[f"op_host/{name}_tiling.h"] = HostPrinter(module, kernel, api, debug).header()
        if f"op_host/{name}.cpp" in op_host:
            files[f"op_host/{name}.cpp"] = op_host.pop(f"op_host/{name}.cpp")
    files.update(emit_super_kernels(sks, SuperContext(module, facts, api, debug)))
    files.update(op_host)  # the project's build files
    return files


@dataclass(frozen=True)
class AscendCTarget(Target):
    """`afc-opt -t ascendc`: Ascend C kernels, tiling structs and host tiling functions."""

    name: ClassVar[str] = "ascendc"

    debug: bool = False
    """Comment each statement with the graph op and source location it comes from."""
    dir: str | None = None
    """Write the files into this directory, atomically, and print one line per file."""
    api: str = "cann8"
    """The table of Ascend C API names to print with."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.api not in API_TABLES:
            raise UserError(
                f"unknown Ascend C API table '{self.api}' (known: {', '.join(API_TABLES)})"
            )
        files = emit_ascendc(module, self.debug, API_TABLES[self.api])
        if self.dir is None:
            for name, text in files.items():
                output.write(f"// ===== {name} =====\n{text}")
            return
        write_tree(Path(self.dir), files)
        for name, text in files.items():
            output.write(f"wrote {Path(self.dir) / name} ({len(text.encode())} bytes)\n")


def write_tree(directory: Path, files: dict[str, str]) -> None:
    """Write `files` (relative path -> text) as `directory`, atomically."""
    from autofusion.tools.atomic_output import atomic_directory

    with atomic_directory(directory) as tmp:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if path.suffix == ".sh":  # build.sh
                path.chmod(path.stat().st_mode | 0o111)


__all__ = ["AscendCTarget", "emit_ascendc", "write_tree"]
