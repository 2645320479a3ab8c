"""Super kernels (CANN's SuperKernel, pipeline fusion): a run of launches as ONE launch.

The `super-kernel` pass (passes/super_kernel.py) marks runs of consecutive
`buffer.launch`es of a host function with `afc.super_kernel = "<name>"`; the printer
(super_kernel_ascendc.py) emits each run as one Ascend C op whose kernel runs the
stages in order, and the emulator runs it as one launch. This module is what they
share: which launches may join a run, and what a marked run reads, writes and keeps
in its workspace.

A run spans launches of generated kernels only. Between two of its launches the host
may compute scalars (`arith`, `buffer.dim`, calls of tiling rules) and define
constants; anything else (a library op: a graph op left outside kernels, a return)
ends the run, since it would have to run between two stages of one launch.

Stages hand their tensors over in GM (the super op's outputs or its workspace); a
stage that reads what an earlier stage wrote after the last all-core sync waits at
`SyncAll<false>` first (asc-devkit SyncAll.md: every core's GM writes are visible to
every core after it). SyncAll is the hard sync of Atlas A2/A3, so super kernels exist
on split chips of arch 2201 only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from autofusion.codegen.kernel_interface import kernels_of
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.hardware import ChipSpec, get_chip

SUPER_ATTR = "afc.super_kernel"
# the core types of split chips' kernels: each runs inside a MIX_AIC_1_2 launch
STAGE_CORE_TYPES = ("aiv", "aic", "mix")

# the host ops a run may span: scalar host code and constants (no kernel runs for them)
HOST_SCALAR_OPS: tuple[type[Operation], ...] = (buffer.DimOp, func.CallOp, graph.ConstantOp)


def syncs_all_chip(chip: ChipSpec) -> bool:
    """Whether the chip has the hard all-core SyncAll<false> a super kernel needs
    (Atlas A2/A3: split AIC/AIV cores, arch 2201; asc-devkit SyncAll.md)."""
    return chip.mode == "split" and chip.arch == 2201


def is_host_scalar_op(op: Operation) -> bool:
    """An op a run of launches may span: it computes host scalars or defines a constant."""
    return isinstance(op, HOST_SCALAR_OPS) or op.dialect_name() == "arith"


def stage_refusal(kernel: buffer.KernelOp) -> str | None:
    """Why kernel @k cannot be a stage of a super kernel, or None.

    A stage that runs on fewer blocks than the super launch has must still reach every
    SyncAll of its kernel on the idle blocks, so its SyncAlls must be straight-line
    code of the kernel body (a fixed count)."""
    chip = get_chip(kernel.chip.data)
    if not syncs_all_chip(chip):
        return f"{chip.name} has no hard SyncAll (Atlas A2/A3 only)"
    if kernel.core_type.data not in STAGE_CORE_TYPES:
        return f"it is a {kernel.core_type.data} kernel (a stage runs on AIVs, AICs or both)"
    for op in kernel.walk():
        if isinstance(op, buffer.SyncAllOp) and op.parent is not kernel.body.block:
            return "it calls SyncAll inside control flow"
    return None


def sync_count(kernel: buffer.KernelOp) -> int:
    """The SyncAlls the kernel's every core reaches (stage_refusal: straight-line code)."""
    return sum(1 for op in kernel.body.block.ops if isinstance(op, buffer.SyncAllOp))


def launch_runs(block: Block, kernels: dict[str, buffer.KernelOp]) -> list[list[buffer.LaunchOp]]:
    """The maximal runs of launches in `block` that may form super kernels (two or more
    launches, only host scalar ops between them, every kernel a possible stage)."""
    runs: list[list[buffer.LaunchOp]] = []
    current: list[buffer.LaunchOp] = []
    for op in block.ops:
        if isinstance(op, buffer.LaunchOp):
            kernel = kernels.get(op.kernel.root_reference.data)
            if kernel is not None and stage_refusal(kernel) is None:
                current.append(op)
                continue
        elif is_host_scalar_op(op):
            continue
        runs.append(current)
        current = []
    runs.append(current)
    return [run for run in runs if len(run) >= 2]


@dataclass
class SuperKernel:
    """A marked run of launches: the stages of one super kernel @name."""

    name: str
    launches: list[buffer.LaunchOp]
    kernels: list[buffer.KernelOp]
    inputs: list[SSAValue] = field(default_factory=list)  # tensors it reads from outside
    outputs: list[SSAValue] = field(default_factory=list)  # stage results used outside
    intermediates: list[SSAValue] = field(default_factory=list)  # in its workspace
    sync_before: list[bool] = field(default_factory=list)  # SyncAll before stage k

    @property
    def chip(self) -> ChipSpec:
        return get_chip(self.kernels[0].chip.data)

    def stage_of(self, value: SSAValue) -> int | None:
        """The stage whose launch produced `value`, or None for a value from outside."""
        for k, launch in enumerate(self.launches):
            if value.owner is launch:
                return k
        return None


def _outside_use(value: SSAValue, launches: list[buffer.LaunchOp]) -> bool:
    """Whether something besides the run's launches reads the tensor's data (a
    buffer.dim reads only its shape, which the host knows)."""
    return any(
        u.operation not in launches and not isinstance(u.operation, buffer.DimOp)
        for u in value.uses
    )


def describe(
    name: str, launches: list[buffer.LaunchOp], kernels: list[buffer.KernelOp]
) -> SuperKernel:
    """The super kernel of a run: its inputs, outputs, intermediates and syncs."""
    sk = SuperKernel(name, launches, kernels)
    produced: set[SSAValue] = set()
    written: set[SSAValue] = set()  # written since the last SyncAll
    for launch in launches:
        reads = list(launch.inputs)
        sk.sync_before.append(any(v in written for v in reads))
        if sk.sync_before[-1]:
            written = set()
        for v in reads:
            if v not in produced and v not in sk.inputs:
                sk.inputs.append(v)
        for r in launch.outputs:
            produced.add(r)
            written.add(r)
            if _outside_use(r, launches):
                sk.outputs.append(r)
            else:
                sk.intermediates.append(r)
    return sk


def super_kernels(module: ModuleOp) -> list[SuperKernel]:
    """The super kernels the module's launches are marked with, in program order; a
    marking that breaks the rules above is a one-line error at the launch."""
    kernels = {k.sym_name.data: k for k in kernels_of(module)}
    result: list[SuperKernel] = []
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        runs: dict[str, list[buffer.LaunchOp]] = {}
        for op in f.body.block.ops:
            attr = op.attributes.get(SUPER_ATTR)
            if attr is None:
                continue
            if not isinstance(op, buffer.LaunchOp) or not isinstance(attr, StringAttr):
                raise UserError(f"{op.name}: {SUPER_ATTR} marks buffer.launch ops, by name", op)
            runs.setdefault(attr.data, []).append(op)
        for name, launches in runs.items():
            result.append(_checked(name, launches, kernels))
    names = [sk.name for sk in result]
    for sk in result:
        if names.count(sk.name) > 1 or sk.name in kernels:
            raise UserError(f"super kernel @{sk.name}: the name is taken", sk.launches[0])
    return result


def _checked(
    name: str, launches: list[buffer.LaunchOp], kernels: dict[str, buffer.KernelOp]
) -> SuperKernel:
    first, last = launches[0], launches[-1]
    block = cast(Block, first.parent_block())
    span = list(block.ops)
    between = span[span.index(first) : span.index(last) + 1]
    for op in between:
        if op in launches or is_host_scalar_op(op):
            continue
        what = "a launch of another super kernel" if isinstance(op, buffer.LaunchOp) else op.name
        raise UserError(
            f"super kernel @{name}: {what} lies between its stages; one launch cannot run it "
            "in between (a super kernel spans consecutive launches and host scalar code)",
            op,
        )
    if len(launches) < 2:
        raise UserError(f"super kernel @{name}: one launch is no super kernel", first)
    stage_kernels: list[buffer.KernelOp] = []
    for launch in launches:
        kname = launch.kernel.root_reference.data
        kernel = kernels.get(kname)
        if kernel is None:
            raise UserError(f"super kernel @{name}: no buffer.kernel @{kname}", launch)
        why = stage_refusal(kernel)
        if why is not None:
            raise UserError(f"super kernel @{name}: @{kname} cannot be a stage: {why}", launch)
        stage_kernels.append(kernel)
    return describe(name, launches, stage_kernels)


__all__ = [
    "SUPER_ATTR",
    "SuperKernel",
    "describe",
    "is_host_scalar_op",
    "launch_runs",
    "stage_refusal",
    "super_kernels",
    "sync_count",
    "syncs_all_chip",
]
