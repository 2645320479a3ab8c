"""Whole-kernel checks of the buffer dialect: capacity per memory space, queue limits,
chip-dependent data paths, the kernel signature, the mmad hazards (mmad_rules.py) and
the types and buffer uses Ascend C allows (ascendc_rules.py).

A capacity failure names the kernel, the space, the bytes needed and the bytes the chip
has, e.g. `kernel @fused_3 needs 204800 bytes of ub, Ascend910B1 has 188160`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import ArrayAttr, IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from autofusion.diagnostics import UserError
from autofusion.dialects.ascendc_rules import verify_ascendc_rules
from autofusion.dialects.fractal_rules import verify_fractal_rules
from autofusion.dialects.host_rules import verify_host_code
from autofusion.dialects.mmad_rules import verify_mmads
from autofusion.dialects.target import TARGET_KEY, TargetAttr

if TYPE_CHECKING:
    from autofusion.dialects.buffer_ops import KernelOpBase
    from autofusion.hardware import ChipSpec

# TQue slots per TPosition (hardware event IDs): 8 on A2/A3/310P/310B, 4 on 910 (A1)
# (asc-devkit TQue简介.md)
QUEUE_SLOTS_PER_POSITION = {1001: 4}
DEFAULT_QUEUE_SLOTS = 8


def round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def footprint(kernel: KernelOpBase) -> dict[str, int]:
    """Bytes each memory space needs: every queue slot and scratch buffer, aligned."""
    from autofusion.dialects.buffer_ops import POSITIONS, AllocBufOp, AllocQueueOp
    from autofusion.hardware import get_chip

    chip = get_chip(kernel.chip.data)
    need: dict[str, int] = defaultdict(int)
    for op in kernel.walk():
        if isinstance(op, AllocQueueOp):
            space = POSITIONS[op.position]
            size = round_up(op.max_bytes.value.data, chip.alignment(space))
            need[space] += op.buffers.value.data * size
        elif isinstance(op, AllocBufOp):
            space = POSITIONS[op.position.data]
            need[space] += round_up(op.max_bytes.value.data, chip.alignment(space))
    return dict(need)


def verify_kernel(kernel: KernelOpBase) -> None:
    from autofusion.dialects.buffer_ops import CHIP_DEPENDENT_PATHS, AllocQueueOp, CopyOp, space_of
    from autofusion.hardware import get_chip

    name = f"kernel @{kernel.sym_name.data}"
    try:
        chip = get_chip(kernel.chip.data)
    except UserError as e:
        raise VerifyException(f"{name}: {e.message}") from e
    _verify_module_target(kernel, name, chip)
    if kernel.core_type.data not in kernel.CORE_TYPES:
        raise VerifyException(f"{name}: core_type must be one of {kernel.CORE_TYPES}")
    n_gm = kernel.num_inputs.value.data + kernel.num_outputs.value.data
    args = kernel.body.block.args
    if len(args) < n_gm:
        raise VerifyException(f"{name} declares {n_gm} GM arguments but takes {len(args)}")
    for i, arg in enumerate(args):
        if i < n_gm:
            if not isinstance(arg.type, MemRefType) or space_of(arg.type) != "gm":
                raise VerifyException(f"{name}: argument #{i} must be a GM memref, got {arg.type}")
        elif not isinstance(arg.type, IndexType):
            raise VerifyException(f"{name}: tiling argument #{i} must be an index, got {arg.type}")
    _verify_l2_bypass(kernel, name, chip)

    for space, needed in sorted(footprint(kernel).items()):
        available = chip.capacity(space)
        if available is not None and needed > available:
            raise VerifyException(
                f"{name} needs {needed} bytes of {space}, {chip.name} has {available}"
            )

    slots_per_position = QUEUE_SLOTS_PER_POSITION.get(chip.arch, DEFAULT_QUEUE_SLOTS)
    slots: dict[str, int] = defaultdict(int)
    for op in kernel.walk():
        if isinstance(op, AllocQueueOp):
            slots[op.position] += op.buffers.value.data
        elif isinstance(op, CopyOp) and op.path in CHIP_DEPENDENT_PATHS and not chip.l0c_to_ub:
            raise VerifyException(
                f"{name}: {chip.name} has no {op.path[0]} -> {op.path[1]} path (cube and "
                "vector cores exchange data only through GM)"
            )
    for position, count in sorted(slots.items()):
        if count > slots_per_position:
            raise VerifyException(
                f"{name} uses {count} {position} queue buffers, {chip.name} allows "
                f"{slots_per_position} per position"
            )
    _verify_atomics_and_syncs(kernel, name, chip)
    from autofusion.dialects.buffer_ops import MAX_BUFFERS_PER_PIPE, AllocBufOp

    total = sum(slots.values()) + sum(1 for op in kernel.walk() if isinstance(op, AllocBufOp))
    if total > MAX_BUFFERS_PER_PIPE:
        raise VerifyException(f"{name} uses {total} buffers, a TPipe allows {MAX_BUFFERS_PER_PIPE}")
    verify_cores(kernel, name, chip.mode == "split")
    verify_mmads(kernel, name)
    verify_ascendc_rules(kernel, name, chip)
    verify_fractal_rules(kernel, chip)
    verify_host_code(kernel)


def _verify_module_target(kernel: KernelOpBase, name: str, chip: ChipSpec) -> None:
    """A kernel is for its module's target chip (the one the module was lowered for)."""
    module = kernel.parent_op()
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    target = module.attributes.get(TARGET_KEY) if module is not None else None
    if isinstance(target, TargetAttr) and target.chip.data != chip.name:
        raise VerifyException(
            f"{name} is for {chip.name}, but the module targets {target.chip.data}"
        )


def _verify_l2_bypass(kernel: KernelOpBase, name: str, chip: ChipSpec) -> None:
    """`l2_bypass`: ascending GM input indices, on a chip with the L2 cache hint."""
    from autofusion.dialects.buffer_ops import L2_BYPASS_ATTR

    attr = kernel.attributes.get(L2_BYPASS_ATTR)
    if attr is None:
        return
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, IntegerAttr) for a in attr):
        raise VerifyException(f"{name}: {L2_BYPASS_ATTR} must be an array of input indices")
    indices = [cast(IntegerAttr, a).value.data for a in attr]
    n_in = kernel.num_inputs.value.data
    if not indices or indices != sorted(set(indices)) or not 0 <= indices[0] <= indices[-1] < n_in:
        raise VerifyException(
            f"{name}: {L2_BYPASS_ATTR} {indices} must name GM inputs (0..{n_in - 1}) once "
            "each, in ascending order"
        )
    if not chip.l2_cache_hint:
        raise VerifyException(
            f"{name}: {chip.name} cannot read past L2 (GlobalTensor::SetL2CacheHint is "
            f"for Atlas A2/A3), but {L2_BYPASS_ATTR} is set"
        )


def _verify_atomics_and_syncs(kernel: KernelOpBase, name: str, chip: ChipSpec) -> None:
    """Atomic-add copies only on the paths and types the chip adds (ATOMIC_ADD_BY_ARCH);
    buffer.sync_all only in mix kernels on split chips (the hard SyncAll<false>)."""
    from autofusion.dialects.buffer_ops import (
        ATOMIC_ADD_BY_ARCH,
        ATOMIC_ADD_TYPES,
        ATOMIC_PATHS,
        CopyOp,
        SyncAllOp,
        atomic_type_name,
    )

    paths, types = ATOMIC_ADD_BY_ARCH.get(chip.arch, (ATOMIC_PATHS, ATOMIC_ADD_TYPES))
    for op in kernel.walk():
        if isinstance(op, CopyOp) and op.atomic is not None:
            elt = atomic_type_name(cast(MemRefType, op.dest.type).element_type)
            if op.path not in paths or elt not in types:
                raise VerifyException(
                    f"{name}: {chip.name} has no atomic add of {elt} on {op.path[0]} -> "
                    f"{op.path[1]} (SetAtomicAdd: {', '.join(types)} from "
                    f"{', '.join(sorted(p[0] for p in paths))})"
                )
        elif isinstance(op, SyncAllOp) and not (
            chip.mode == "split" and kernel.core_type.data == "mix"
        ):
            raise VerifyException(
                f"{name}: buffer.sync_all needs a mix kernel on a split chip (the hard "
                f"SyncAll<false> of Atlas A2/A3), not in this {kernel.core_type.data} kernel "
                f"on {chip.name}"
            )


def runs_split(kernel: KernelOpBase) -> bool:
    """Whether the kernel runs on an AIC and its AIVs (a mix kernel on a split chip)."""
    from autofusion.hardware import get_chip

    return kernel.core_type.data == "mix" and get_chip(kernel.chip.data).mode == "split"


def owner_core(op: Operation) -> str | None:
    """The core whose on-chip buffers `op` touches in a split mix kernel: "aic" for
    L1/L0, "aiv" for UB, None for ops on GM and scalars only (views, allocations and
    workspaces are bookkeeping every core does)."""
    from autofusion.dialects.buffer_ops import (
        POSITIONS,
        AllocBufOp,
        AllocQueueOp,
        QueueType,
        SpaceAttr,
        ViewOp,
        WorkspaceOp,
        space_of,
    )

    if isinstance(op, AllocBufOp | AllocQueueOp | ViewOp | WorkspaceOp):
        return None
    spaces = {
        space_of(v.type)
        for v in (*op.operands, *op.results)
        if isinstance(v.type, MemRefType) and isinstance(v.type.memory_space, SpaceAttr)
    }
    for v in (*op.operands, *op.results):
        if isinstance(v.type, QueueType):
            spaces.add(POSITIONS[v.type.position.data])
    if spaces & {"l1", "l0a", "l0b", "l0c"}:
        return "aic"
    if "ub" in spaces:
        return "aiv"
    return None


def verify_cores(kernel: KernelOpBase, name: str, split: bool) -> None:
    """A mix kernel on a split chip states where each op runs: ops on on-chip buffers sit
    in a stage of the core that owns the buffers, and only such kernels have sub-blocks
    and cross-core flags."""
    from autofusion.dialects.buffer_ops import CrossCoreOp, StageOp, SubBlockIdxOp

    mix_split = split and kernel.core_type.data == "mix"
    for op in kernel.walk():
        if isinstance(op, CrossCoreOp | SubBlockIdxOp) and not mix_split:
            raise VerifyException(
                f"{name}: {op.name} exists only in mix kernels on split chips (AIC + AIV)"
            )
        if not mix_split or isinstance(op, StageOp | CrossCoreOp):
            continue
        core = owner_core(op)
        if core is None:
            continue
        stage = op.parent_op()
        while stage is not None and not isinstance(stage, StageOp):
            stage = stage.parent_op()
        if stage is None:
            raise VerifyException(
                f"{name}: {op.name} touches {core.upper()} buffers outside a buffer.stage; in "
                "a mix kernel on a split chip every such op is in a stage of its core"
            )
        if stage.core != core:
            raise VerifyException(
                f"{name}: {op.name} touches {core.upper()} buffers inside a {stage.stage.data!r} "
                f"stage, which runs on the {stage.core.upper()}"
            )
