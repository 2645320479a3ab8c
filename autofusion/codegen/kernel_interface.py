"""The C++ names a kernel shares with its host code and the CPU emulator: the tiling
scalars' fields, the GM parameters, the entry function and the workspace layout.

The kernel printer (ascendc.py), the host printer (ascendc_host.py) and the emulator's
driver (emulate.py) must agree on them, so they are computed here, once.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen.cpp_scalar import Namer, camel
from autofusion.dialects import buffer

# names the generated code uses itself; no value gets them
RESERVED = frozenset(
    {"pipe", "tiling", "workspace", "tilingData", "tilingGm", "op", "Init", "Process", "afc"}
)


def tiling_field_names(kernel: buffer.KernelOp) -> list[str]:
    """C++ names of the kernel's tiling scalars (struct fields, Init parameters, members)."""
    namer = Namer(RESERVED)
    return [namer.fresh(arg.name_hint, "param") for arg in kernel.tiling_args]


def workspace_fields(kernel: buffer.KernelOp) -> list[int]:
    """Tiling-scalar indices of the byte counts of the kernel's GM workspaces, in order.

    The workspaces lie one after another in the user workspace, each starting at a
    512-byte boundary (the GM alignment for full bandwidth, ascend.md 1.5)."""
    args = list(kernel.tiling_args)
    return [
        args.index(op.bytes) for op in kernel.body.block.ops if isinstance(op, buffer.WorkspaceOp)
    ]


def entry_name(kernel: buffer.KernelOp) -> str:
    """The C++ name of the kernel's entry function (the kernel's symbol, sanitized)."""
    return Namer(RESERVED).fresh(kernel.sym_name.data, "kernel")


def gm_param_names(kernel: buffer.KernelOp, taken: list[str]) -> list[str]:
    """C++ names of the kernel's GM_ADDR parameters."""
    namer = Namer(RESERVED | set(taken))
    n_in = kernel.num_inputs.value.data
    return [
        namer.fresh(arg.name_hint, "x" if i < n_in else "y") for i, arg in enumerate(kernel.gm_args)
    ]


def kernels_of(module: ModuleOp) -> list[buffer.KernelOp]:
    """The buffer.kernel ops of `module`, in order."""
    return [op for op in module.ops if isinstance(op, buffer.KernelOp)]


def op_type_of(kernel: buffer.KernelOp) -> str:
    """The kernel's CANN op type: the camel case of its entry name (main_kernel0 ->
    MainKernel0, ascend.md 2.2), so that CANN's op-type -> entry-name rule gives the entry
    back (a kernel named after a C++ keyword, @double, has entry double2: Double2)."""
    return camel(entry_name(kernel))
