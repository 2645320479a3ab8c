"""The rules of a kernel's fractal (cube) data and of the copies whose Ascend C form
depends on tiling values, checked by the verifier so that plain `afc-opt` rejects what
`-t ascendc` would.

L1 and L0C hold matrices as 16 x C0 fractals (Nz), L0A/L0B as Zz/Zn (ascend.md 1.5,
2.10); the IR models them as row-major, so each copy or mmad that reads one must read
the matrix the way the last copy or mmad wrote it. `FractalLayouts` tracks what each
buffer holds, in the order the printer prints the kernel (Process, then the stage
methods): the printer reads the same layouts from it. Whether a size is a multiple of a
fractal column, or a DataCopy row of 32 bytes, is decided by `Divisibility`
(tiling_facts.py), from the host code that computes the tiling scalars.

Each failure is one line located at the op, in the words the printer used to say it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue

from autofusion import dtypes
from autofusion.codegen.ascendc_api import CANN8, VECTOR_TYPES
from autofusion.dialects.ascendc_rules import (
    co2_buffers,
    element_name,
    fail,
    layout_key,
    root_of,
    view_offset,
    where,
)
from autofusion.dialects.buffer_ops import CopyOp, KernelOpBase, MmadOp, StageOp
from autofusion.dialects.mmad_rules import constant
from autofusion.dialects.tiling_facts import Divisibility
from autofusion.hardware import ChipSpec

# (rows, row stride) of a fractal matrix; (rows, columns) of Nz fractals in UB
Layout = tuple[SSAValue, SSAValue]


def nz_rows(m: SSAValue) -> SSAValue:
    """The rows whose Nz layout an Mmad of `m` rows leaves in L0C: a padded m,
    max(rows, c) with c <= 16, has the fractal rows of `rows` (mmad_rules.py)."""
    owner = m.owner
    if isinstance(owner, arith.MaxSIOp | arith.MaxUIOp):
        for pad, rows in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            if 1 <= (constant(pad) or 0) <= 16:
                return rows
    return m


def _width(value: SSAValue) -> int:
    return dtypes.byte_width(cast(MemRefType, value.type).element_type)


def printing_order(kernel: KernelOpBase) -> Iterator[Operation]:
    """The kernel's ops in the order the printer prints them: the entry block (Process,
    a stage being a call there), then each stage's body, in the order of the stages."""

    def block_ops(block: Block) -> Iterator[Operation]:
        for op in block.ops:
            yield op
            if isinstance(op, StageOp):
                continue
            for region in op.regions:
                for inner in region.blocks:
                    yield from block_ops(inner)

    yield from block_ops(kernel.body.block)
    for stage in kernel.walk():
        if isinstance(stage, StageOp):
            yield from block_ops(stage.body.block)


class FractalLayouts:
    """What each L1/L0C buffer (or queue) holds as a fractal matrix, and each UB buffer a
    CO1 -> CO2 copy filled as Nz fractals, as the kernel writes them."""

    def __init__(self, kernel: KernelOpBase, facts: Divisibility) -> None:
        self.facts = facts
        self.nz: dict[SSAValue, Layout] = {}
        self.nz_ub: dict[SSAValue, Layout] = {}
        # before the walk, every write: Process is printed before the stages and may read
        # an L0C result a Cube stage computes (the walk records them again, in order, for
        # buffers filled more than once)
        for op in kernel.walk():
            self.record(op)

    def record(self, op: Operation) -> None:
        """Note the layout `op` leaves in the buffer it writes."""
        if isinstance(op, MmadOp):
            self.nz[layout_key(root_of(op.c))] = (nz_rows(op.m), op.n)
        elif isinstance(op, CopyOp) and op.path in (("gm", "l1"), ("ub", "l1")):
            self.nz[layout_key(root_of(op.dest))] = (op.blocks, op.dst_stride)
        elif isinstance(op, CopyOp) and op.path == ("l0c", "ub"):
            self.nz_ub[layout_key(root_of(op.dest))] = (op.blocks, op.length)

    def layout(self, op: Operation, root: SSAValue, what: str) -> Layout:
        """(rows, row stride) of the fractal matrix in `root`, as the IR models it."""
        key = layout_key(root)
        if key not in self.nz:
            fail(
                op,
                f"{where(op)}: the {what} was not written by a copy or mmad in this kernel, "
                "so its fractal layout is unknown",
            )
        return self.nz[key]

    def same(self, a: SSAValue, b: SSAValue) -> bool:
        """`a` and `b` are the same value, or provably equal constants."""
        exact = self.facts.exact(a)
        return a is b or (exact is not None and exact == self.facts.exact(b))

    def aligned(self, value: SSAValue, width: int) -> bool:
        """Whether `value` elements of `width` bytes are a provable multiple of 32 bytes."""
        return self.facts.multiple_of(value, 32 // math.gcd(width, 32))

    def at_offset(self, value: SSAValue) -> bool:
        """Whether `value` is a view at a (possibly) nonzero offset into its buffer."""
        return any(self.facts.exact(o) != 0 for o in view_offset(value))


class FractalRules:
    """The checks, one per copy kind and for mmad, over a kernel in printing order."""

    def __init__(self, kernel: KernelOpBase, chip: ChipSpec, facts: Divisibility) -> None:
        self.kernel = kernel
        self.chip = chip
        self.layouts = FractalLayouts(kernel, facts)
        self.co2_keys = co2_buffers(kernel)

    def run(self) -> None:
        for op in printing_order(self.kernel):
            if isinstance(op, MmadOp):
                for operand, what in (
                    (op.c, "C operand"),
                    (op.a, "A operand"),
                    (op.b, "B operand"),
                ):
                    self.whole(op, operand, what)
            elif isinstance(op, CopyOp):
                self.copy(op)
            self.layouts.record(op)

    def whole(self, op: Operation, value: SSAValue, what: str) -> None:
        if self.layouts.at_offset(value):
            fail(
                op,
                f"{where(op)}: the {what} must be a whole L1/L0 buffer, not a view into one "
                "(fractal layouts have no element offsets)",
            )

    def copy(self, op: CopyOp) -> None:
        path = op.path
        if path == ("ub", "ub"):
            if layout_key(root_of(op.source)) in self.co2_keys:
                self.nz_to_nd(op)
            else:
                self.ub_to_ub(op)
        elif path == ("ub", "l1") and self.chip.l0c_to_ub:
            self.whole(op, op.dest, "destination")
            if not self.layouts.aligned(op.src_stride, _width(op.dest)):
                fail(
                    op,
                    f"{where(op)}: the UB row stride is not a multiple of 32 bytes, so its "
                    "C0-column strips have no DataCopy form",
                )
        elif path in (("gm", "l1"), ("ub", "l1")):
            self.whole(op, op.dest, "destination")
        elif path == ("l0c", "ub"):
            self.co1_to_co2(op)
        elif path in (("l1", "l0a"), ("l1", "l0b")):
            self.load_data(op)
        elif path == ("l0c", "gm"):
            self.whole(op, op.source, "source")
            _, stride = self.layouts.layout(op, root_of(op.source), "L0C source")
            if not self.layouts.same(op.src_stride, stride):
                fail(op, f"{where(op)}: reads L0C with a row stride other than the mmad's n")

    def ub_to_ub(self, op: CopyOp) -> None:
        """DataCopy needs 32-byte rows; otherwise the printer copies with Muls (x * 1)."""
        layouts, w = self.layouts, _width(op.dest)
        one = layouts.facts.exact(op.blocks) == 1
        strides_ok = one or (
            layouts.aligned(op.src_stride, w) and layouts.aligned(op.dst_stride, w)
        )
        elt = element_name(op.dest)
        if (
            not (layouts.aligned(op.length, w) and strides_ok)
            and elt not in VECTOR_TYPES[CANN8.vector_scalar["muls"]]
        ):
            fail(
                op,
                f"{where(op)}: a UB copy of {elt} that is not a 32-byte multiple has no "
                "Ascend C form (DataCopy truncates, Muls does not take the type)",
            )

    def co1_to_co2(self, op: CopyOp) -> None:
        """CO1 -> CO2 (ascend.md 1.7) moves whole 16x16 fractals into a whole UB buffer."""
        _, n_c = self.layouts.layout(op, root_of(op.source), "L0C source")
        if not (self.layouts.same(op.src_stride, n_c) and self.layouts.same(op.length, n_c)):
            fail(
                op,
                f"{where(op)}: CO1 -> CO2 moves whole fractals: the copy must take whole rows "
                "of the mmad's result (length and row stride its n)",
            )
        if self.layouts.at_offset(op.dest):
            fail(
                op,
                f"{where(op)}: CO1 -> CO2 writes a whole UB buffer (its Nz fractals), not a "
                "view into one",
            )

    def nz_to_nd(self, op: CopyOp) -> None:
        """The Nz -> ND reorder reads what CO1 -> CO2 left, into 32-byte rows."""
        layouts = self.layouts
        rows, cols = layouts.nz_ub[layout_key(root_of(op.source))]
        if not (layouts.same(op.blocks, rows) and layouts.same(op.length, cols)):
            fail(
                op,
                f"{where(op)}: reads other rows or columns of the Nz fractals than CO1 -> CO2 "
                "copied there",
            )
        if layouts.at_offset(op.source):
            fail(op, f"{where(op)}: reads the Nz fractals at a view offset")
        if not layouts.aligned(op.dst_stride, _width(op.dest)):
            fail(
                op,
                f"{where(op)}: the destination's row stride is not a multiple of 32 bytes, so "
                "the Nz -> ND reorder has no DataCopy form",
            )

    def load_data(self, op: CopyOp) -> None:
        """L1 (Nz) -> L0A (Zz) / L0B (Zn): LoadData reads whole fractals of the matrix
        written to L1, from a fractal boundary (ascend.md 1.5, 2.10)."""
        layouts = self.layouts
        _, stride_l1 = layouts.layout(op, root_of(op.source), "L1 source")
        if not layouts.same(op.src_stride, stride_l1):
            fail(
                op,
                f"{where(op)}: reads L1 with a row stride other than the one it was "
                "written with, which a fractal layout cannot express",
            )
        self.whole(op, op.dest, "destination")
        if op.path == ("l1", "l0a") and op.transpose is not None and _width(op.dest) == 4:
            # LoadData transposes 16x16 fractals only; a 16x8 float fractal into L0A needs
            # LoadData3DV2's enTranspose with Mmad's kDirectionAlign (asc-devkit
            # load_to_l0a_basic.h), which afc does not emit: load A untransposed
            fail(
                op,
                f"{where(op)}: a transposed float A operand has no LoadData form afc emits "
                "(LoadData3DV2's enTranspose and Mmad's kDirectionAlign): load A untransposed",
            )
        c0 = 32 // _width(op.dest)
        if not layouts.facts.multiple_of(stride_l1, c0):
            fail(
                op,
                f"{where(op)}: the L1 row stride is not a multiple of {c0} elements (one "
                "fractal column), so the matrix has no Nz layout there",
            )
        offsets = view_offset(op.source)
        if offsets and not all(layouts.facts.multiple_of(o, c0) for o in offsets):
            fail(
                op,
                f"{where(op)}: reads L1 at a view offset that is not a multiple of {c0} "
                "elements; fractal reads start at multiples of 16 rows and one fractal column",
            )


def verify_fractal_rules(kernel: KernelOpBase, chip: ChipSpec) -> None:
    """Every rule above, on `kernel`, with the facts of the module it sits in."""
    FractalRules(kernel, chip, Divisibility.of_kernel(kernel)).run()
