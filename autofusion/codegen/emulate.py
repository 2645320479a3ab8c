"""Running the generated Ascend C on the CPU (`afc run --emulate`).

`EmulatedKernels(module)` prints every kernel with `emit_ascendc`, generates a harness
(one extern "C" launcher per kernel, the tiling rules' twins and the registry queries of
afc_emu_op.h), compiles the kernels, every op_host/<k>.cpp and the harness with g++
against the emulation headers in `codegen/include/` (kernel_operator.h, op_def_registry.h
etc.) into a shared library, and loads it with ctypes. Libraries are cached by a hash of
their sources, headers, compiler and flags (`$AFC_CACHE_DIR`, else a per-user directory
under the system temp dir).

`run_function_emulated` interprets a module like `interpreter.run_function`, except that
every `buffer.launch` runs the op as CANN does: the OpDef registered for the kernel's op
type gives InferShape and TilingFunc, which run on the input shapes, and the kernel runs
on the tiling bytes, block count and workspace TilingFunc set. The host code and graph
ops outside kernels still run in the interpreter, and the registered functions must
agree with it. Each launch forks (as CANN's CPU twin does); an emulator assertion, a
crash or a timeout becomes a one-line UserError. The stage launches of a super kernel
(codegen/super_kernel.py) run as its one launch, at its last stage, on every value its
stages' launches had (their results are filled in then).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute, SSAValue

from autofusion import dtypes
from autofusion.codegen.ascendc import kernels_of
from autofusion.codegen.ascendc_api import CANN8
from autofusion.codegen.ascendc_host import HostPrinter, tiling_struct_name
from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.codegen.cann_project import staged_kernels
from autofusion.codegen.cpp_scalar import camel
from autofusion.codegen.kernel_interface import (
    entry_name,
    op_type_of,
    tiling_field_names,
)
from autofusion.codegen.super_kernel import SuperKernel, super_kernels
from autofusion.codegen.super_kernel_ascendc import SuperKernelNames, aivs_per_block
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.dialects.buffer_verifier import (
    DEFAULT_QUEUE_SLOTS,
    QUEUE_SLOTS_PER_POSITION,
    runs_split,
)
from autofusion.hardware import ChipSpec, get_chip

INCLUDE_DIR = Path(__file__).parent / "include"
# CANN's header paths the generated host code includes -> the emulation headers
SHADOW_HEADERS = {
    "register/tilingdata_base.h": "tilingdata_base.h",
    "register/op_def_registry.h": "op_def_registry.h",
    "tiling/platform/platform_ascendc.h": "op_def_registry.h",
}
CXX = os.environ.get("AFC_CXX", "g++")
CXXFLAGS = ("-std=c++17", "-O1", "-Wall", "-Werror", "-fPIC", "-fno-strict-aliasing", "-pthread")
DEFAULT_TIMEOUT_S = 300
MAX_JOBS = 2


def cache_dir() -> Path:
    """Where compiled libraries are kept: $AFC_CACHE_DIR, else <tmp>/afc-emu-<uid>."""
    env = os.environ.get("AFC_CACHE_DIR")
    path = Path(env) if env else Path(tempfile.gettempdir()) / f"afc-emu-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def include_flags(build: Path) -> list[str]:
    """-I flags: the build's shadow `register/` headers, then the emulation headers."""
    return [f"-I{build}", f"-I{INCLUDE_DIR}"]


def write_shadow_headers(build: Path) -> None:
    for path, target in SHADOW_HEADERS.items():
        shadow = build / path
        shadow.parent.mkdir(parents=True, exist_ok=True)
        shadow.write_text(f'#include "{INCLUDE_DIR / target}"\n', encoding="utf-8")


def compiler_version() -> str:
    try:
        done = subprocess.run(
            [CXX, "--version"], capture_output=True, text=True, check=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise UserError(f"--emulate needs a C++17 compiler ({CXX}): {e}") from e
    return done.stdout.splitlines()[0] if done.stdout else CXX


def _first_error(stderr: str, build: Path) -> str:
    """The first compiler diagnostic, with the build directory stripped."""
    lines = [line.replace(f"{build}/", "") for line in stderr.splitlines()]
    for line in lines:
        if "error" in line:
            return line.strip()
    return lines[0].strip() if lines else "unknown error"


def run_compiler(jobs: Sequence[list[str]], build: Path) -> None:
    """Run compiler command lines, at most MAX_JOBS at a time; the first failure is a
    one-line UserError."""
    pending = list(jobs)
    running: list[subprocess.Popen[str]] = []
    failure: str | None = None
    while pending or running:
        while pending and len(running) < MAX_JOBS and failure is None:
            running.append(
                subprocess.Popen(
                    pending.pop(0),
                    cwd=build,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        proc = running.pop(0)
        _, stderr = proc.communicate()
        if proc.returncode != 0 and failure is None:
            failure = _first_error(stderr, build)
        if failure is not None and not running:
            pending.clear()
    if failure is not None:
        raise UserError(f"emulation build failed: {failure}")


# ---------------------------------------------------------------------------------------
# The harness
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelInfo:
    """What the Python side needs to call one kernel's launcher."""

    name: str
    gm_types: tuple[Attribute, ...]
    fields: tuple[str, ...]
    rule_arity: tuple[int, int] | None  # (arguments, results) of the plain tiling rule
    has_tiling_func: bool
    num_inputs: int
    chip: ChipSpec
    op_type: str  # what its OpDef registers
    syncs_all: bool  # it calls SyncAll<false>: its TilingFunc must set batch mode
    entry: str  # its extern "C" entry
    aivs: int  # AIVs per block of a mix kernel on a split chip, else 0


def _chip_config(chip: ChipSpec) -> list[str]:
    """C++ statements filling `AscendC::emu::ChipConfig chip` from the chip's spec."""
    space = "static_cast<int>(AscendC::emu::Space::{})"
    lines = [
        "AscendC::emu::ChipConfig chip = AscendC::emu::DefaultChipConfig();",
        f'chip.name = "{chip.name}";',
        f"chip.arch = {chip.arch};",
    ]
    for key in ("ub", "l1", "l0a", "l0b", "l0c"):
        lines.append(f"chip.capacity[{space.format(key.upper())}] = {chip.capacity(key)};")
        lines.append(f"chip.alignment[{space.format(key.upper())}] = {chip.alignment(key)};")
    slots = QUEUE_SLOTS_PER_POSITION.get(chip.arch, DEFAULT_QUEUE_SLOTS)
    lines += [
        f"chip.queueBuffersPerPosition = {slots};",
        f"chip.maxBuffersPerPipe = {chip.max_queue_buffers};",
        f"chip.dataCopyPad = {'true' if chip.data_copy_pad else 'false'};",
        f"chip.bf16 = {'true' if chip.bf16 else 'false'};",
        f"chip.getTilingData = {'true' if CANN8.has_get_tiling_data(chip) else 'false'};",
        f"chip.coupled = {'true' if chip.mode == 'coupled' else 'false'};",
        "chip.strictTruncation = strict != 0;",
        "chip.checkRaces = true;",
        f"chip.cubeCores = {chip.cube_cores};",
    ]
    return lines


def syncs_all(kernel: buffer.KernelOp) -> bool:
    """Whether the kernel synchronizes all its cores (SyncAll): its blocks run together."""
    return any(isinstance(op, buffer.SyncAllOp) for op in kernel.walk())


def mix_aivs(kernel: buffer.KernelOp, chip: ChipSpec) -> int:
    """AIVs per block of a mix kernel on a split chip (its blocks run as AIC + AIVs), else 0."""
    if not runs_split(kernel):
        return 0
    return max(1, chip.vector_cores // max(chip.cube_cores, 1))


# the registry queries every library has (afc_emu_op.h): InferShape, TilingFunc and the
# OpDef of an op type, as CANN's runtime finds them before a launch
OP_QUERIES = r"""
extern "C" int afc_infer_shape(const char* type, const int64_t* dims, const int64_t* ranks, int64_t inputs,
                               int64_t* outDims, int64_t outCapacity, int64_t* outRanks, int64_t outputs,
                               char* error, int64_t errorLen)
{
    std::vector<gert::Shape> shapes;
    const size_t len = static_cast<size_t>(errorLen);
    if (ops::emu::InferShapes(type, ops::emu::ShapesOf(dims, ranks, inputs), shapes, error, len) != 0) {
        return 1;
    }
    if (static_cast<int64_t>(shapes.size()) != outputs) {
        std::snprintf(error, len, "InferShape of op %s gave %zu shapes for %lld outputs", type, shapes.size(),
                      static_cast<long long>(outputs));
        return 1;
    }
    int64_t at = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
        outRanks[i] = static_cast<int64_t>(shapes[i].GetDimNum());
        for (size_t d = 0; d < shapes[i].GetDimNum(); ++d) {
            if (at >= outCapacity) {
                std::snprintf(error, len, "InferShape of op %s gave outputs of too many dims", type);
                return 1;
            }
            outDims[at++] = shapes[i].GetDim(d);
        }
    }
    return 0;
}

extern "C" int afc_tiling_func(const char* type, const int64_t* dims, const int64_t* ranks, int64_t inputs,
                               int64_t* values, int64_t fields, int64_t* launch, char* error, int64_t errorLen)
{
    ops::emu::TilingRun run;
    const size_t len = static_cast<size_t>(errorLen);
    if (ops::emu::RunTiling(type, ops::emu::ShapesOf(dims, ranks, inputs), run, error, len) != 0) {
        return 1;
    }
    if (run.dataSize != static_cast<size_t>(fields) * sizeof(int64_t)) {
        std::snprintf(error, len, "TilingFunc of op %s set %zu bytes of tiling data for %lld int64 fields", type,
                      run.dataSize, static_cast<long long>(fields));
        return 1;
    }
    std::memcpy(values, run.data.data(), run.dataSize);
    launch[0] = run.blockDim;
    launch[1] = static_cast<int64_t>(run.workspace);
    launch[2] = run.scheduleMode;
    return 0;
}

extern "C" int afc_op_def(const char* type, char* out, int64_t len)
{
    const ops::OpDef* op = ops::emu::FindOpDef(type);
    if (op == nullptr) {
        return 1;
    }
    const std::string text = ops::emu::DescribeOpDef(*op);
    std::snprintf(out, static_cast<size_t>(len), "%s", text.c_str());
    return static_cast<int64_t>(text.size()) < len ? 0 : 2;
}
"""


def generate_harness(module: ModuleOp) -> tuple[str, list[KernelInfo]]:
    """The launcher source for every kernel of `module`, and the kernels' descriptions.

    A launcher looks the kernel's op type up among the registered OpDefs, runs its
    TilingFunc on the input shapes and launches the kernel on the tiling bytes it wrote,
    with its block count and workspace size."""
    out = [
        '// afc_emu_harness.cpp: extern "C" launchers for ctypes, generated by afc',
        "#include <cstdint>",
        "#include <vector>",
        '#include "afc_emu_launch.h"',
        '#include "afc_emu_op.h"',
        OP_QUERIES,
    ]
    infos: list[KernelInfo] = []
    staged = staged_kernels(module)
    for kernel in kernels_of(module):
        if kernel.sym_name.data in staged:
            continue  # it runs inside its super kernel
        name = kernel.sym_name.data
        chip = get_chip(kernel.chip.data)
        fields = tiling_field_names(kernel)
        host = HostPrinter(module, kernel, CANN8, False)
        rule = host.rule_signature()
        info = KernelInfo(
            name,
            tuple(cast(Any, a.type).element_type for a in kernel.gm_args),
            tuple(fields),
            None,
            host.launch is not None,
            kernel.num_inputs.value.data,
            chip,
            op_type_of(kernel),
            syncs_all(kernel),
            entry_name(kernel),
            mix_aivs(kernel, chip),
        )
        if rule is not None:
            out += ["namespace optiling {", f"{rule};", "}  // namespace optiling"]
        out += _launcher(info)
        if rule is not None and host.rule is not None:
            n_args = len(host.rule.function_type.inputs.data)
            n_res = len(host.rule.function_type.outputs.data)
            info = replace(info, rule_arity=(n_args, n_res))
            args = ", ".join(f"args[{i}]" for i in range(n_args))
            out += [
                "",
                f'extern "C" void afc_tiling_{name}(const int64_t* args, int64_t* results)',
                "{",
                f"    int64_t r[{n_res}];",
                f"    optiling::{camel(host.rule.sym_name.data)}({args}{', ' if args else ''}r);",
                f"    for (int i = 0; i < {n_res}; ++i) {{",
                "        results[i] = r[i];",
                "    }",
                "}",
            ]
        out.append("")
        infos.append(info)
    for sk in super_kernels(module):
        names = SuperKernelNames(sk)
        info = KernelInfo(
            sk.name,
            tuple(cast(TensorType, v.type).element_type for v in [*sk.inputs, *sk.outputs]),
            tuple(names.fields(sk)),
            None,
            True,
            len(sk.inputs),
            sk.chip,
            names.op_type,
            True,
            names.entry,
            aivs_per_block(sk),
        )
        out += [*_launcher(info), ""]
        infos.append(info)
    return "\n".join(out) + "\n", infos


def _launcher(info: KernelInfo) -> list[str]:
    """The entry's declaration and `afc_launch_<name>`, which runs the registered
    TilingFunc of its op type and launches the entry on what it set."""
    n_gm = len(info.gm_types)
    params = ", ".join(["GM_ADDR"] * (n_gm + 2))
    gm_args = ", ".join(f"gm[{i}]" for i in range(n_gm))
    return [
        f'extern "C" __global__ __aicore__ void {info.entry}({params});',
        "",
        f"static void Run_{info.name}(uint8_t* const* gm, uint8_t* workspace, uint8_t* tiling)",
        "{",
        f"    {info.entry}({gm_args}{', ' if gm_args else ''}workspace, tiling);",
        "}",
        "",
        f'extern "C" int afc_launch_{info.name}(void* const* gm, const int64_t* gmBytes, '
        "const int64_t* dims, const int64_t* ranks, int64_t inputs, unsigned timeout, "
        "int strict, char* error, int64_t errorLen)",
        "{",
        *(f"    {line}" for line in _chip_config(info.chip)),
        "    ops::emu::TilingRun run;",
        f'    if (ops::emu::RunTiling("{info.op_type}", ops::emu::ShapesOf(dims, ranks, inputs), '
        "run, error, static_cast<size_t>(errorLen)) != 0) {",
        "        return 8;",
        "    }",
        f"    return AscendC::emu::LaunchForked(chip, run.blockDim, {info.aivs}, "
        f"{n_gm}, gm, gmBytes, run.workspace, run.data.data(), run.dataSize, Run_{info.name}, "
        "timeout, error, static_cast<size_t>(errorLen), "
        f"{'true' if info.syncs_all else 'false'});",
        "}",
    ]


# ---------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------


def kernels_unit(kernels: Sequence[str]) -> str:
    """One translation unit with every kernel: each file inside its own namespace (their
    `namespace afc` helpers stay apart), with its tiling data type, as an op project's
    build gives GET_TILING_DATA its struct. Sharing the header's templates makes the
    build several times faster than one unit per kernel."""
    lines = [
        "// afc_emu_kernels.cpp: the generated kernels, one unit, generated by afc",
        '#include "kernel_operator.h"',
        *(f'#include "op_host/{name}_tiling.h"' for name in kernels),
    ]
    for name in kernels:
        lines += [
            f"#define AFC_TILING_DATA_TYPE ::optiling::{tiling_struct_name(name)}",
            f"namespace afc_kernel_{name} {{",
            f'#include "op_kernel/{name}.cpp"',
            f"}}  // namespace afc_kernel_{name}",
            "#undef AFC_TILING_DATA_TYPE",
        ]
    return "\n".join(lines) + "\n"


def build_library(files: Mapping[str, str], harness: str, kernels: Sequence[str]) -> Path:
    """Compile the generated files and the harness into a shared library (cached).

    Concurrent builds of the same library (parallel test workers) wait for each other
    on a lock file instead of compiling it twice.
    """
    headers = sorted(INCLUDE_DIR.glob("*.h"))
    digest = hashlib.sha256()
    for part in (compiler_version(), " ".join(CXXFLAGS), harness):
        digest.update(part.encode())
        digest.update(b"\0")
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    for h in headers:
        digest.update(h.name.encode() + b"\0" + h.read_bytes() + b"\0")
    root = cache_dir()
    stem = f"afc-emu-{digest.hexdigest()[:24]}"
    library = root / f"{stem}.so"
    if library.exists():
        return library
    with open(root / f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not library.exists():
            _build(files, harness, kernels, root, library)
    return library


def _build(
    files: Mapping[str, str], harness: str, kernels: Sequence[str], root: Path, library: Path
) -> None:
    with tempfile.TemporaryDirectory(prefix="build-", dir=root) as tmp:
        build = Path(tmp)
        write_shadow_headers(build)
        for name, text in files.items():
            path = build / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (build / "afc_emu_harness.cpp").write_text(harness, encoding="utf-8")
        (build / "afc_emu_kernels.cpp").write_text(kernels_unit(kernels), encoding="utf-8")
        base = [CXX, *CXXFLAGS, *include_flags(build), f"-I{build / 'op_host'}"]
        units = [
            *(["afc_emu_kernels.cpp"] if kernels else []),  # none: the host side alone
            *(n for n in files if n.startswith("op_host/") and n.endswith(".cpp")),
            "afc_emu_harness.cpp",
        ]
        objects = [u.replace("/", "_").removesuffix(".cpp") + ".o" for u in units]
        run_compiler([[*base, "-c", u, "-o", o] for u, o in zip(units, objects)], build)
        run_compiler([[CXX, "-shared", "-pthread", "-o", "lib.so", *objects]], build)
        os.replace(build / "lib.so", library)


def compile_check(files: Mapping[str, str], name: str) -> None:
    """Compile one generated kernel file on its own (syntax and warnings only), as a
    build of that kernel alone would; a failure is a one-line UserError."""
    with tempfile.TemporaryDirectory(prefix="check-", dir=cache_dir()) as tmp:
        build = Path(tmp)
        write_shadow_headers(build)
        for path, text in files.items():
            (build / path).parent.mkdir(parents=True, exist_ok=True)
            (build / path).write_text(text, encoding="utf-8")
        kernel = Path(name).stem
        run_compiler(
            [
                [
                    CXX,
                    *CXXFLAGS,
                    *include_flags(build),
                    "-include",
                    f"op_host/{kernel}_tiling.h",
                    f"-DAFC_TILING_DATA_TYPE=optiling::{camel(kernel)}TilingData",
                    "-fsyntax-only",
                    name,
                ]
            ],
            build,
        )


# ---------------------------------------------------------------------------------------
# Host <-> device data
# ---------------------------------------------------------------------------------------


def to_device(value: np.ndarray, element: Attribute) -> np.ndarray:
    """A storage-form array as the bytes the kernel reads (bf16 as its 16-bit pattern)."""
    name = dtypes.type_name(element)
    flat = np.ascontiguousarray(np.asarray(value)).reshape(-1)
    if name == "bf16":
        return dtypes.f32_to_bf16_bits(flat.astype(np.float32))
    if name == "i1":
        return flat.astype(np.uint8)
    return flat.astype(dtypes.storage_dtype(element))


def from_device(data: np.ndarray, element: Attribute, shape: tuple[int, ...]) -> np.ndarray:
    name = dtypes.type_name(element)
    if name == "bf16":
        out = dtypes.bf16_bits_to_f32(data)
    elif name == "i1":
        out = data != 0
    else:
        out = data
    return out.reshape(shape)


def poisoned_output(element: Attribute, count: int) -> np.ndarray:
    """An output buffer the kernel must overwrite: NaN for floats (as the interpreter)."""
    name = dtypes.type_name(element)
    if name == "bf16":
        return np.full(count, 0x7FC0, np.uint16)
    if name == "i1":
        return np.zeros(count, np.uint8)
    dt = dtypes.storage_dtype(element)
    return np.full(count, np.nan if np.issubdtype(dt, np.floating) else 0, dt)


class EmulatedKernels:
    """The compiled kernels of a buffer-level module, callable from Python."""

    def __init__(self, module: ModuleOp, strict: bool = True) -> None:
        self.files = emit_ascendc(module, debug=False)
        harness, infos = generate_harness(module)
        self.kernels = {info.name: info for info in infos}
        # each stage launch of a super kernel -> its super kernel and stage index
        self.stages: dict[buffer.LaunchOp, tuple[SuperKernel, int]] = {
            launch: (sk, k) for sk in super_kernels(module) for k, launch in enumerate(sk.launches)
        }
        self.strict = strict
        self.library = build_library(self.files, harness, list(self.kernels))
        self.lib = ctypes.CDLL(str(self.library))
        self.ops = RegisteredOps(self.lib)
        self.timeout = int(os.environ.get("AFC_EMU_TIMEOUT", DEFAULT_TIMEOUT_S))

    def launch(
        self, name: str, buffers: Sequence[np.ndarray], shapes: Sequence[Sequence[int]]
    ) -> None:
        """Launch kernel `name` as CANN does: its registered TilingFunc on the input
        `shapes`, then the kernel on the tiling bytes, block count and workspace size it
        set. `buffers` (device form, inputs then outputs) are updated."""
        arrays = [np.ascontiguousarray(b) for b in buffers]
        pointers = (ctypes.c_void_p * max(1, len(arrays)))(
            *(a.ctypes.data_as(ctypes.c_void_p) for a in arrays)
        )
        sizes = (ctypes.c_int64 * max(1, len(arrays)))(*(a.nbytes for a in arrays))
        dims, ranks = _flat_shapes(shapes)
        error = ctypes.create_string_buffer(2048)
        fn = getattr(self.lib, f"afc_launch_{name}")
        fn.restype = ctypes.c_int
        rc = fn(
            pointers,
            sizes,
            dims,
            ranks,
            ctypes.c_int64(len(shapes)),
            ctypes.c_uint(self.timeout),
            ctypes.c_int(1 if self.strict else 0),
            error,
            ctypes.c_int64(len(error)),
        )
        for target, a in zip(buffers, arrays):
            if target is not a:
                target[...] = a
        if rc != 0:
            raise UserError(f"emulated kernel @{name}: {error.value.decode(errors='replace')}")

    def tiling_rule(self, name: str, args: Sequence[int]) -> list[int]:
        """The C++ twin of the kernel's tiling rule on `args`."""
        info = self.kernels[name]
        if info.rule_arity is None:
            raise UserError(f"kernel @{name} has no tiling rule")
        n_args, n_res = info.rule_arity
        a = (ctypes.c_int64 * max(1, n_args))(*args)
        r = (ctypes.c_int64 * n_res)()
        getattr(self.lib, f"afc_tiling_{name}")(a, r)
        return list(r)

    def tiling_func(self, name: str, shapes: Sequence[Sequence[int]]) -> tuple[list[int], int]:
        """The registered TilingFunc of kernel `name` on input shapes: (tiling fields,
        block count)."""
        values, launch = self.registered_tiling(name, shapes)
        return values, launch.blocks

    def registered_tiling(
        self, name: str, shapes: Sequence[Sequence[int]]
    ) -> tuple[list[int], TilingLaunch]:
        """The registered TilingFunc of kernel `name` on input shapes, checked as CANN's
        runtime would need it: a kernel that calls SyncAll runs in batch mode."""
        info = self.kernels[name]
        values, launch = self.ops.tiling(info.op_type, shapes, len(info.fields))
        if info.syncs_all and launch.schedule_mode != 1:
            raise UserError(
                f"TilingFunc of @{name} does not set batch mode (SetScheduleMode(1)), but the "
                "kernel calls SyncAll<false>, which can then deadlock when several streams "
                "run (asc-devkit SyncAll.md)"
            )
        return values, launch

    def output_shapes(self, name: str, shapes: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
        """The registered InferShape of kernel `name` on input shapes."""
        info = self.kernels[name]
        return self.ops.infer_shapes(info.op_type, shapes, len(info.gm_types) - info.num_inputs)


def _flat_shapes(shapes: Sequence[Sequence[int]]) -> tuple[Any, Any]:
    """Shapes as the C side takes them: all dims in one int64 array, and the ranks."""
    dims = [int(d) for s in shapes for d in s]
    flat = (ctypes.c_int64 * max(1, len(dims)))(*dims)
    ranks = (ctypes.c_int64 * max(1, len(shapes)))(*(len(s) for s in shapes))
    return flat, ranks


@dataclass(frozen=True)
class TilingLaunch:
    """What a TilingFunc asked of the launch besides the tiling data."""

    blocks: int
    workspace: int
    schedule_mode: int


class RegisteredOps:
    """The ops that the op_host sources of a module register (OP_ADD), compiled with g++
    against the emulation headers, queried as CANN's runtime queries them."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib

    @classmethod
    def build(cls, files: Mapping[str, str]) -> RegisteredOps:
        """Compile only the host side (op_host/*.cpp) of `files` (fast: no kernels)."""
        harness = "\n".join(
            ["#include <cstdint>", "#include <vector>", '#include "afc_emu_op.h"', OP_QUERIES]
        )
        return cls(ctypes.CDLL(str(build_library(files, harness, []))))

    def describe(self, op_type: str) -> list[list[str]]:
        """The registered OpDef of `op_type`, one word list per line (DescribeOpDef), or a
        UserError when nothing registers it."""
        out = ctypes.create_string_buffer(1 << 16)
        if self.lib.afc_op_def(op_type.encode(), out, ctypes.c_int64(len(out))) != 0:
            raise UserError(f"no OpDef registers op type {op_type}")
        return [line.split() for line in out.value.decode().splitlines()]

    def infer_shapes(
        self, op_type: str, shapes: Sequence[Sequence[int]], outputs: int
    ) -> list[tuple[int, ...]]:
        dims, ranks = _flat_shapes(shapes)
        capacity = 64 * max(1, outputs)
        out_dims = (ctypes.c_int64 * capacity)()
        out_ranks = (ctypes.c_int64 * max(1, outputs))()
        error = ctypes.create_string_buffer(1024)
        rc = self.lib.afc_infer_shape(
            op_type.encode(),
            dims,
            ranks,
            ctypes.c_int64(len(shapes)),
            out_dims,
            ctypes.c_int64(capacity),
            out_ranks,
            ctypes.c_int64(outputs),
            error,
            ctypes.c_int64(len(error)),
        )
        if rc != 0:
            raise UserError(error.value.decode(errors="replace"))
        result, at = [], 0
        for r in list(out_ranks)[:outputs]:
            result.append(tuple(out_dims[at : at + r]))
            at += r
        return result

    def tiling(
        self, op_type: str, shapes: Sequence[Sequence[int]], fields: int
    ) -> tuple[list[int], TilingLaunch]:
        """The registered TilingFunc on input shapes: the int64 tiling fields it wrote and
        the launch it asked for."""
        dims, ranks = _flat_shapes(shapes)
        values = (ctypes.c_int64 * max(1, fields))()
        launch = (ctypes.c_int64 * 3)()
        error = ctypes.create_string_buffer(1024)
        rc = self.lib.afc_tiling_func(
            op_type.encode(),
            dims,
            ranks,
            ctypes.c_int64(len(shapes)),
            values,
            ctypes.c_int64(fields),
            launch,
            error,
            ctypes.c_int64(len(error)),
        )
        if rc != 0:
            raise UserError(error.value.decode(errors="replace"))
        return list(values)[:fields], TilingLaunch(*list(launch))


# ---------------------------------------------------------------------------------------
# The interpreter with emulated launches
# ---------------------------------------------------------------------------------------


@register_impls
class EmulatedLaunchFunctions(InterpreterFunctions):
    """`buffer.launch` through the compiled kernels instead of the buffer interpreter."""

    def __init__(self, kernels: EmulatedKernels) -> None:
        super().__init__()
        self.kernels = kernels
        self.pending: dict[str, _PendingSuper] = {}

    @impl(buffer.LaunchOp)
    def run_launch(
        self, interp: Interpreter, op: buffer.LaunchOp, args: PythonValues
    ) -> PythonValues:
        """The launch as CANN runs the op: InferShape and TilingFunc of its registered
        OpDef on the input shapes, then the kernel. What they compute must be what the
        interpreted host code computed (else the generated host code is wrong)."""
        if op in self.kernels.stages:
            return self._run_stage(op, args)
        name = op.kernel.root_reference.data
        info = self.kernels.kernels[name]
        n_in, n_tiling = len(op.inputs), len(op.tiling)
        inputs = args[1 : 1 + n_in]
        tiling = [int(v) for v in args[1 + n_in : 1 + n_in + n_tiling]]
        shapes = _result_shapes(op, args)
        in_shapes = [tuple(np.shape(x)) for x in inputs]
        self._agree(name, "InferShape", self.kernels.output_shapes(name, in_shapes), shapes)
        values, launch = self.kernels.registered_tiling(name, in_shapes)
        self._agree(name, "TilingFunc", (values, launch.blocks), (tiling, int(args[0])))
        buffers = [to_device(x, t) for x, t in zip(inputs, info.gm_types)]
        for s, r in zip(shapes, op.outputs):
            element = cast(TensorType, r.type).element_type
            buffers.append(poisoned_output(element, int(np.prod(s))))
        self.kernels.launch(name, buffers, in_shapes)
        return tuple(
            dtypes.to_storage(
                from_device(b, cast(TensorType, r.type).element_type, s),
                cast(TensorType, r.type).element_type,
            )
            for b, s, r in zip(buffers[n_in:], shapes, op.outputs)
        )

    def _run_stage(self, op: buffer.LaunchOp, args: PythonValues) -> PythonValues:
        """A stage of a super kernel. Its results are arrays the super kernel fills: at
        its last stage, the one launch runs (InferShape and TilingFunc of the super op on
        its inputs' shapes, then its kernel), with the values every stage's launch had."""
        sk, k = self.kernels.stages[op]
        pending = self.pending.setdefault(sk.name, _PendingSuper())
        n_in, n_tiling = len(op.inputs), len(op.tiling)
        pending.values.update(zip(op.inputs, args[1 : 1 + n_in]))
        pending.tiling += [int(args[0]), *(int(v) for v in args[1 + n_in : 1 + n_in + n_tiling])]
        results = []
        for shape, r in zip(_result_shapes(op, args), op.outputs):
            element = cast(TensorType, r.type).element_type
            poisoned = from_device(poisoned_output(element, int(np.prod(shape))), element, shape)
            results.append(dtypes.to_storage(poisoned, element))
        pending.values.update(zip(op.outputs, results))
        if k == len(sk.launches) - 1:
            del self.pending[sk.name]
            self._run_super(sk, pending)
        return tuple(results)

    def _run_super(self, sk: SuperKernel, pending: _PendingSuper) -> None:
        inputs = [pending.values[v] for v in sk.inputs]
        outputs = [pending.values[v] for v in sk.outputs]
        in_shapes = [tuple(np.shape(x)) for x in inputs]
        shapes = [tuple(np.shape(x)) for x in outputs]
        self._agree(sk.name, "InferShape", self.kernels.output_shapes(sk.name, in_shapes), shapes)
        values, _ = self.kernels.registered_tiling(sk.name, in_shapes)
        # the stages' blocks and fields, as each stage's launch had them
        names = SuperKernelNames(sk)
        fields = dict(zip(names.fields(sk), values))
        registered = []
        for k in range(len(sk.launches)):
            registered += [fields[f"s{k}_blocks"], *(fields[f] for f in names.stage_fields[k])]
        self._agree(sk.name, "TilingFunc", registered, pending.tiling)
        gm_types = self.kernels.kernels[sk.name].gm_types
        buffers = [to_device(x, t) for x, t in zip([*inputs, *outputs], gm_types)]
        self.kernels.launch(sk.name, buffers, in_shapes)
        for v, out, b, s in zip(sk.outputs, outputs, buffers[len(inputs) :], shapes):
            element = cast(TensorType, v.type).element_type
            out[...] = dtypes.to_storage(from_device(b, element, s), element)

    @staticmethod
    def _agree(name: str, what: str, registered: object, interpreted: object) -> None:
        if registered != interpreted:
            raise UserError(
                f"emulated kernel @{name}: the registered {what} computed {registered}, "
                f"the host code {interpreted}"
            )


@dataclass
class _PendingSuper:
    """What the stage launches of a super kernel had, until its last stage runs it."""

    values: dict[SSAValue, Any] = field(default_factory=dict)
    tiling: list[int] = field(default_factory=list)  # per stage: blocks, then fields


def _result_shapes(op: buffer.LaunchOp, args: PythonValues) -> list[tuple[int, ...]]:
    """The launch's result shapes, their dynamic dims from its `dims` operands."""
    dims = [int(d) for d in args[1 + len(op.inputs) + len(op.tiling) :]]
    return [
        tuple(d if d >= 0 else dims.pop(0) for d in cast(TensorType, r.type).get_shape())
        for r in op.outputs
    ]


def run_function_emulated(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    entry: str | None = None,
    kernels: EmulatedKernels | None = None,
) -> dict[str, np.ndarray]:
    """`interpreter.run_function`, with every buffer.launch run by the compiled kernels."""
    from autofusion.interpreter import bind_arguments, find_function, run_function

    if not kernels_of(module):
        from autofusion.codegen.missing_kernels import no_kernel_reason

        raise UserError(f"--emulate runs buffer-level IR, and {no_kernel_reason(module)}")
    bind_arguments(find_function(module, entry), inputs)  # bad inputs fail before g++ runs
    emulated = kernels if kernels is not None else EmulatedKernels(module)
    return run_function(module, inputs, entry, overrides=[EmulatedLaunchFunctions(emulated)])


__all__ = [
    "EmulatedKernels",
    "EmulatedLaunchFunctions",
    "RegisteredOps",
    "build_library",
    "generate_harness",
    "run_function_emulated",
]
