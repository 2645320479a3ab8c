"""bishengir's own partition of each corpus model next to afc's plan exported to bishengir.

bishengir (pip `ascendnpu-ir`, the `hfusion` extra) partitions a whole model on its
torch-onnx path (shared/reference/bishengir.md): `iree-import-onnx` (the `bench` extra),
`--torch-onnx-to-torch-backend-pipeline`, `--torch-backend-to-named-op-backend-pipeline`,
the graph function marked a HOST entry, then `--lower-hfusion-pipeline=enable-multi-kernel`;
its kernels are the DEVICE functions in the IR printed after hfusion-eliminate-duplicate-funcs.
Where a stage fails, the row says which and why (stock bishengir 1.2.0 takes few graphs).

afc's side is `-t hfusion` on afc's plan: device functions, host calls (library ops, bool
parts) and how many device functions bishengir-compile takes to HIVM (module.hivm.opt.mlir).

    python bench/hfusion_partition.py [MODEL ...]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODELS = ("mlp", "bert", "gpt2", "llama", "vit", "resnet_fused", "mobilenet")
TIMEOUT_S = 900
HOST = "hacc.entry, hacc.function_kind = #hacc.function_kind<HOST>"
# bishengir's compute ops in an outlined kernel (what makes it a single-op kernel or not)
_COMPUTE_OP = re.compile(r"=\s+(linalg|hfusion)\.(?!fill\b)\w+")
_DEVICE_FUNC = re.compile(
    r"func\.func @[\w.$]+\(.*hacc\.function_kind = #hacc\.function_kind<DEVICE>"
)


@dataclass(frozen=True)
class Partition:
    """bishengir's kernels of one model, or the stage where it stopped."""

    kernels: int = 0
    single_op: int = 0
    failure: str = ""
    hivm: str = ""  # whether bishengir-compile takes its own partition to HIVM, and if not why


class StageError(Exception):
    pass


def _first_error(stderr: str) -> str:
    errors = [ln for ln in stderr.splitlines() if "error" in ln.lower()]
    first = (errors or ["no message"])[0].strip()
    return re.sub(r"^((loc\(.*?\)|\S+:\d+:\d+):\s*)+", "", first)[:140]


def _run(cmd: list[str], stage: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise StageError(f"{stage}: {_first_error(proc.stderr)}")
    return proc


def _mark_host(text: str) -> str:
    """The imported graph function as bishengir's HOST entry (multi-kernel mode)."""
    head = re.search(r"func\.func @\w+\([^\n]*\)[^\n]*?(attributes \{)?[^\n]*\{\n", text)
    if head is None:
        raise StageError("mark host: no graph function")
    line = head.group(0)
    if head.group(1):
        marked = line.replace("attributes {", f"attributes {{{HOST}, ", 1)
    else:
        marked = line[: line.rstrip().rfind("{")] + f"attributes {{{HOST}}} {{\n"
    return text.replace(line, marked, 1)


def kernel_count(dump: str) -> Partition:
    """Device functions (and single-op ones) in bishengir's printed IR after outlining."""
    lines = dump.splitlines()
    kernels = single = 0
    i = 0
    while i < len(lines):
        if _DEVICE_FUNC.search(lines[i]):
            kernels += 1
            ops = 0
            i += 1
            while i < len(lines) and not lines[i].startswith("  }"):
                ops += bool(_COMPUTE_OP.search(lines[i]))
                i += 1
            single += ops == 1
        i += 1
    return Partition(kernels, single)


def bishengir_partition(onnx_path: Path) -> Partition:
    """bishengir's own multi-kernel partition of an ONNX model."""
    from iree_dispatches import tool

    from autofusion.codegen.hfusion_bishengir import TARGET, bishengir_tool

    opt, importer = bishengir_tool("bishengir-opt"), tool("iree-import-onnx")
    if opt is None or importer is None:
        return Partition(failure="bishengir-opt or iree-import-onnx is not installed")
    with tempfile.TemporaryDirectory(prefix="afc-bsg-") as tmp:
        d = Path(tmp)
        try:
            _run([importer, str(onnx_path), "-o", str(d / "a.mlir")], "iree-import-onnx")
            _run(
                [
                    str(opt),
                    str(d / "a.mlir"),
                    "--torch-onnx-to-torch-backend-pipeline",
                    "-o",
                    str(d / "b.mlir"),
                ],
                "torch-onnx-to-torch",
            )
            _run(
                [
                    str(opt),
                    str(d / "b.mlir"),
                    "--torch-backend-to-named-op-backend-pipeline",
                    "-o",
                    str(d / "c.mlir"),
                ],
                "torch-to-named-ops",
            )
            (d / "host.mlir").write_text(_mark_host((d / "c.mlir").read_text()))
            proc = subprocess.run(
                [
                    str(opt),
                    str(d / "host.mlir"),
                    f"--hacc-append-device-spec=target={TARGET}",
                    "--lower-hfusion-pipeline=enable-multi-kernel=true",
                    "--mlir-print-ir-after=hfusion-eliminate-duplicate-funcs",
                    "-o",
                    str(d / "d.mlir"),
                ],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
            if "IR Dump After" not in proc.stderr:
                raise StageError(f"hfusion partition: {_first_error(proc.stderr)}")
            counted = kernel_count(proc.stderr.split("IR Dump After", 1)[1])
            return Partition(counted.kernels, counted.single_op, hivm=_to_hivm(d / "host.mlir"))
        except StageError as e:
            return Partition(failure=str(e))


def _to_hivm(host: Path) -> str:
    """'yes', or bishengir-compile's first error on the whole model in multi-kernel mode."""
    from autofusion.codegen.hfusion_bishengir import COMPILE_FLAGS, HIVM_STAGE, bishengir_tool

    tool = bishengir_tool("bishengir-compile")
    temps = host.parent / "temps"
    flags = [*COMPILE_FLAGS, "--enable-multi-kernel", f"--save-temps={temps}"]
    proc = subprocess.run(
        [str(tool), str(host), *flags, "-o", str(host.parent / "out.o")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if (temps / HIVM_STAGE).is_file():
        return "yes"
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower() and "hivmc" not in ln]
    errors = [ln for ln in errors if "Failed to run BiSheng" not in ln]
    return "no: " + _first_error("\n".join(errors))


@dataclass(frozen=True)
class AfcExport:
    groups: int
    devices: int
    host_calls: int
    reach_hivm: int


def afc_export(onnx_path: Path) -> AfcExport:
    from autofusion.codegen.hfusion_bishengir import compile_to_hivm
    from autofusion.codegen.hfusion_export import export_module
    from autofusion.codegen.hfusion_ir import HostCall, device_module_text
    from autofusion.driver.compile import CompileOptions, compile_model

    c = compile_model(str(onnx_path), CompileOptions(chip="Ascend910B1"), None, "ub-fusion")
    assert c.fused is not None and c.ub_result is not None
    program = export_module(c.fused).program
    reached = sum(compile_to_hivm(device_module_text(f)).reached_hivm for f in program.devices)
    calls = [i for i in program.host_body if isinstance(i, HostCall) and i.reason]
    return AfcExport(len(c.ub_result.groups), len(program.devices), len(calls), reached)


def main(models: tuple[str, ...] = MODELS) -> None:
    from autofusion.codegen.hfusion_bishengir import bishengir_tool

    print("\n## bishengir's own partition vs afc's plan exported to bishengir (Ascend910B1)\n")
    if bishengir_tool("bishengir-opt") is None:
        print("skipped: bishengir is not installed (pip install -e '.[hfusion]')")
        return
    try:
        import model_corpus
    except ImportError as e:
        print(f"skipped: the corpus needs torch ({e})")
        return
    print(
        "| model | bishengir kernels | of them single-op | bishengir to HIVM | afc kernels "
        "| afc device functions | afc host calls | afc device functions to HIVM |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        path = model_corpus.model_path(model, "dynamo")
        own = bishengir_partition(path)
        afc = afc_export(path)
        theirs = (
            f"{own.kernels} | {own.single_op} | {own.hivm}"
            if not own.failure
            else f"fails at {own.failure} | | "
        )
        print(
            f"| {model} | {theirs} | {afc.groups} | {afc.devices} | "
            f"{afc.host_calls} | {afc.reach_hivm}/{afc.devices} |",
            flush=True,
        )
    print(
        "\nbishengir's partition is its own torch-onnx path in multi-kernel mode (stock 1.2.0, "
        "no rewrites); afc's is `-t hfusion` on afc's plan, each device function compiled "
        "alone (single-kernel mode). Host calls are library ops (convolution, pooling, "
        "gather, attention) and parts with bool tensors at their boundary (docs/hfusion.md)."
    )


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or MODELS)
