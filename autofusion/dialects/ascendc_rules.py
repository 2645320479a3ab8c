"""The buffer-IR rules Ascend C imposes on a kernel, checked by the verifier so that plain
`afc-opt` rejects what `-t ascendc` would: the element types each vector and cube API
takes (ascend.md 2.8, 2.10), where workspaces and allocations sit, which buffers a
Compare mask and a CO1 -> CO2 copy may feed, which fractal transposes LoadData does.
(The op verifiers in buffer.py own the rest: data paths, what a copy converts, ReLU on
Fixpipe, Gather's i32 offsets.) The API names and type tables are the printer's data
(codegen/ascendc_api.py), read here so both sides agree.

Each failure is one line located at the op, in the words the printer used to say it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, cast

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, StringAttr
from xdsl.ir import Operation, SSAValue

from autofusion import dtypes
from autofusion.codegen.ascendc_api import CANN8, VECTOR_TYPES, cast_modes
from autofusion.codegen.cpp_scalar import describe_location
from autofusion.diagnostics import LocatedVerifyError, op_location

if TYPE_CHECKING:
    from autofusion.dialects.buffer_ops import CopyOp, KernelOpBase
    from autofusion.hardware import ChipSpec

# Mmad's (A, B, C) element types on A2 (ascend.md 2.10)
MMAD_TYPES = frozenset(
    {("f16", "f16", "f32"), ("bf16", "bf16", "f32"), ("f32", "f32", "f32"), ("i8", "i8", "i32")}
)


def where(op: Operation) -> str:
    """The op's name, with the source location it carries (`loc(...)`), if any."""
    loc = describe_location(op.location)
    return f"{op.name} ({loc})" if loc else op.name


def element_name(value: SSAValue) -> str:
    return dtypes.type_name(cast(MemRefType, value.type).element_type)


def layout_key(root: SSAValue) -> SSAValue:
    """What a matrix layout belongs to: a queue for its slots (the tensor AllocTensor
    returns and the one DeQue returns are the same buffer), else the buffer."""
    from autofusion.dialects.buffer_ops import DequeOp, QueueAllocOp

    owner = root.owner
    if isinstance(owner, QueueAllocOp | DequeOp):
        return owner.queue
    return root


def root_of(value: SSAValue) -> SSAValue:
    """The buffer a (chain of) buffer.view(s) points into."""
    from autofusion.dialects.buffer_ops import ViewOp

    while isinstance(value.owner, ViewOp):
        value = value.owner.base
    return value


def view_offset(value: SSAValue) -> list[SSAValue]:
    """The offsets (elements) of the views from the root to `value`."""
    from autofusion.dialects.buffer_ops import ViewOp

    offsets: list[SSAValue] = []
    while isinstance(value.owner, ViewOp):
        offsets.append(value.owner.offset)
        value = value.owner.base
    return offsets


def fail(op: Operation, message: str) -> NoReturn:
    raise LocatedVerifyError(message, op_location(op))


def kernel_expression_ops() -> tuple[type[Operation], ...]:
    """The ops the kernel printer prints as pure C++ expressions: ScalarPrinter's index
    and float arithmetic, views and the core indices."""
    from autofusion.codegen.cpp_scalar import ScalarPrinter
    from autofusion.dialects.buffer_ops import BlockIdxOp, BlockNumOp, SubBlockIdxOp, ViewOp

    return (*ScalarPrinter.INLINE_OPS, ViewOp, BlockIdxOp, BlockNumOp, SubBlockIdxOp)


def verify_ascendc_rules(kernel: KernelOpBase, name: str, chip: ChipSpec) -> None:
    """Every rule below, on every op of `kernel`."""
    _check_placement(kernel, name, chip)
    init_ops(kernel)
    _check_masks(kernel)
    _check_co2_buffers(kernel)
    for op in kernel.walk():
        _check_op(op, chip)


def _check_placement(kernel: KernelOpBase, name: str, chip: ChipSpec) -> None:
    """bf16 only where the chip has it; workspaces and allocations at the kernel's top
    level (TPipe::InitBuffer runs in Init); no host ops inside."""
    from autofusion.dialects.buffer_ops import (
        AllocBufOp,
        AllocQueueOp,
        DimOp,
        KernelOpBase,
        LaunchOp,
        WorkspaceOp,
    )

    top = kernel.body.block
    for op in kernel.walk():
        if op is kernel:
            continue
        if isinstance(op, func.ReturnOp | LaunchOp | DimOp | KernelOpBase):
            fail(op, f"{where(op)} cannot appear inside a buffer.kernel")
        if not chip.bf16 and any(
            isinstance(v.type, MemRefType) and element_name(v) == "bf16"
            for v in (*op.operands, *op.results)
        ):
            fail(op, f"{name}: {where(op)} uses bf16, which {chip.name} does not have")
        if isinstance(op, WorkspaceOp) and op.parent is not top:
            fail(op, f"{where(op)}: a workspace is declared at the kernel's top level")
        if isinstance(op, AllocQueueOp | AllocBufOp) and op.parent is not top:
            fail(
                op,
                f"{where(op)}: buffers are allocated once, at the kernel's top level "
                "(TPipe::InitBuffer in Init)",
            )


def init_ops(kernel: KernelOpBase) -> set[Operation]:
    """What Init runs: the allocations (TPipe::InitBuffer) and the ops that compute the
    sizes they take, which must be pure expressions of tiling scalars and constants."""
    from xdsl.dialects import arith

    from autofusion.dialects.buffer_ops import AllocBufOp, AllocQueueOp

    pure = kernel_expression_ops()
    work: list[Operation] = [
        op for op in kernel.body.block.ops if isinstance(op, AllocQueueOp | AllocBufOp)
    ]
    init: set[Operation] = set(work)
    while work:
        for v in work.pop().operands:
            owner = v.owner
            if not isinstance(owner, Operation) or owner in init:
                continue
            if not (
                (isinstance(owner, pure) and len(owner.results) == 1)
                or isinstance(owner, arith.ConstantOp)
            ):
                fail(
                    owner,
                    f"{where(owner)}: a buffer size depends on it, but only index arithmetic "
                    "can run in Init",
                )
            init.add(owner)
            work.append(owner)
    return init


def _check_masks(kernel: KernelOpBase) -> None:
    """Compare writes a bitmask (ascend.md 2.8): the IR's byte-per-element mask may be
    read only by Select, which reads the same bitmask."""
    from autofusion.dialects.buffer_ops import VCompareOp, ViewOp, VSelectOp

    masks = {root_of(op.dst) for op in kernel.walk() if isinstance(op, VCompareOp)}
    if not masks:
        return
    for op in kernel.walk():
        if isinstance(op, VCompareOp | ViewOp):
            continue
        for i, v in enumerate(op.operands):
            if not isinstance(v.type, MemRefType) or root_of(v) not in masks:
                continue
            if isinstance(op, VSelectOp) and i == 1:
                continue
            fail(
                op,
                f"{where(op)} reads a buffer.vcompare mask: Ascend C's Compare "
                "writes a bitmask that only Select can read",
            )


def co2_buffers(kernel: KernelOpBase) -> set[SSAValue]:
    """The layout keys of the UB buffers an l0c -> ub (CO1 -> CO2) copy fills."""
    from autofusion.dialects.buffer_ops import CopyOp

    return {
        layout_key(root_of(op.dest))
        for op in kernel.walk()
        if isinstance(op, CopyOp) and op.path == ("l0c", "ub")
    }


def _check_co2_buffers(kernel: KernelOpBase) -> None:
    """A UB buffer an l0c -> ub copy writes holds Nz fractals in Ascend C (CO1 -> CO2
    moves whole 16x16 fractals): only a ub -> ub copy may read it (printed as the
    Nz -> ND reorder), and only such copies may write it."""
    from autofusion.dialects.buffer_ops import CopyOp, EnqueOp, QueueFreeOp, ViewOp

    keys = co2_buffers(kernel)
    if not keys:
        return
    for op in kernel.walk():
        if isinstance(op, ViewOp | EnqueOp | QueueFreeOp):
            continue
        for v in op.operands:
            if not isinstance(v.type, MemRefType) or layout_key(root_of(v)) not in keys:
                continue
            if isinstance(op, CopyOp) and (
                (op.path == ("l0c", "ub") and v is op.dest)
                or (op.path == ("ub", "ub") and v is op.source)
            ):
                continue
            fail(
                op,
                f"{where(op)} uses a UB buffer an l0c -> ub copy fills: CO1 -> CO2 leaves "
                "Nz fractals there, which only a ub -> ub copy can read (as rows)",
            )


# ---- per op -------------------------------------------------------------------------------


def require_types(op: Operation, api_name: str, values: list[SSAValue]) -> None:
    """`values` share one element type, one that the Ascend C API `api_name` accepts."""
    names = {element_name(v) for v in values}
    if len(names) != 1:
        fail(
            op,
            f"{where(op)}: {api_name} needs operands of one element type, got "
            f"{', '.join(sorted(names))}",
        )
    (elt,) = names
    allowed = VECTOR_TYPES.get(api_name)
    if allowed is not None and elt not in allowed:
        fail(
            op,
            f"{where(op)}: {api_name} does not take {elt} (it takes "
            f"{', '.join(sorted(allowed))}; ascend.md 2.8)",
        )


def _kind(table: dict[str, str]) -> Callable[[Operation], str]:
    return lambda op: table[cast(StringAttr, op.properties["kind"]).data]


def _named(api_name: str) -> Callable[[Operation], str]:
    return lambda op: api_name


# vector op -> (the Ascend C API it prints as, the operands that share its element type)
TYPED_OPERANDS: dict[str, tuple[Callable[[Operation], str], tuple[str, ...]]] = {
    "buffer.vbinary": (_kind(CANN8.vector_binary), ("dst", "lhs", "rhs")),
    "buffer.vunary": (_kind(CANN8.vector_unary), ("dst", "src")),
    "buffer.vscalar": (_kind(CANN8.vector_scalar), ("dst", "src")),
    "buffer.vreduce": (_kind(CANN8.reduce), ("dst", "src", "tmp")),
    "buffer.vdup": (_named("Duplicate"), ("dst",)),
    "buffer.vcompare": (_named("Compare"), ("lhs", "rhs")),
    "buffer.vselect": (_named("Select"), ("dst", "lhs", "rhs")),
    "buffer.vgather": (_named(CANN8.gather), ("dst", "src")),
}


def _check_op(op: Operation, chip: ChipSpec) -> None:
    """The element types the op's Ascend C API takes, and the op's own limits."""
    from autofusion.dialects.buffer_ops import CopyOp, MmadOp, VCastOp, VCompareOp

    typed = TYPED_OPERANDS.get(op.name)
    if typed is not None:
        api_name, operands = typed
        require_types(op, api_name(op), [getattr(op, name) for name in operands])
    if isinstance(op, VCastOp):
        src, dst, mode = element_name(op.src), element_name(op.dst), op.round.data
        if mode not in cast_modes(src, dst, chip.arch):
            fail(
                op,
                f"{where(op)}: Cast from {src} to {dst} with round mode {mode!r} is not an "
                f"Ascend C Cast on {chip.name} (ascend.md 2.8)",
            )
    elif isinstance(op, VCompareOp) and element_name(op.dst) not in ("i1", "i8"):
        fail(op, f"{where(op)}: Compare writes its mask into a u8/i8 (or i1) buffer")
    elif op.name == "buffer.vselect" and chip.arch == 1001:
        fail(
            op,
            f"{where(op)}: {chip.name} has only Select mode VSEL_CMPMASK_SPR "
            "(ascend.md 2.8); tensor-tensor Select needs A2",
        )
    elif isinstance(op, CopyOp):
        _check_copy(op)
    elif isinstance(op, MmadOp):
        ta, tb, tc = element_name(op.a), element_name(op.b), element_name(op.c)
        if (ta, tb, tc) not in MMAD_TYPES:
            fail(
                op,
                f"{where(op)}: Mmad of {ta} x {tb} -> {tc} is not a cube type pair on A2 "
                "(half/bf16/float -> float, int8 -> int32; ascend.md 2.10)",
            )


def _check_copy(op: CopyOp) -> None:
    """CO1 -> CO2 of the f32 accumulator; LoadData's fractal transposes for the types
    afc prints (ascend.md 2.10; asc-devkit Load2D.md, LoadDataWithTranspose.md)."""
    elt = element_name(op.dest)
    if op.path == ("l0c", "ub") and element_name(op.source) != "f32":
        fail(op, f"{where(op)}: afc prints CO1 -> CO2 of the f32 accumulator only")
    if op.path not in (("l1", "l0a"), ("l1", "l0b")):
        return
    to_b = op.path == ("l1", "l0b")
    # a plain copy into L0B and a `transpose` copy into L0A transpose each fractal
    if to_b == (op.transpose is not None):
        return
    if elt not in ("f16", "bf16", "f32"):
        fail(
            op,
            f"{where(op)}: this load transposes each fractal, which afc prints for "
            "half, bfloat16_t and float only (asc-devkit Load2D.md, LoadDataWithTranspose.md)",
        )
