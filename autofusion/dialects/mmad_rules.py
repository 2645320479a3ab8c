"""The buffer verifier's rules for `buffer.mmad` that the IR's row-major model hides but
the chip's fractal layouts do not (docs/codegen.md, "Cube hazards").

* GEMV: an Mmad with m = 1 reads L0A as one contiguous row (Mmad.md 约束说明, GEMV.md),
  while afc's L1 -> L0A loads leave A in Zz fractals. The two agree only when k fits one
  fractal row (k * element width <= 32 bytes), so m must be provably other than 1 unless
  k is such a constant. The lowering pads m to 16 (`arith.maxsi %m, %c16`), as the matmul
  library does (scheduler_norm_base.h:393, GetFixedMadM): the extra rows are computed
  from whatever L0A holds and never copied out.
* Accumulation: an mmad that may accumulate (its flag is not the constant false) reads
  the L0C tile an earlier mmad wrote; Mmad.md (同步优化说明) wants PipeBarrier<PIPE_M>
  between them when (m / 16) * (n / 16) < 10. The verifier asks for a
  `buffer.pipe_barrier "M"` (or "ALL") before the mmad in its block, with no other mmad
  in between: that is on every path from the previous mmad, whichever loop iteration
  it ran in. A `small_mmad` guard must test the mmad's own m and n, and those must not
  change inside the loops that accumulate into the tile (the guard then tests the
  previous mmad's sizes too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from autofusion import dtypes

if TYPE_CHECKING:
    from autofusion.dialects.buffer_ops import KernelOpBase, MmadOp

# one fractal row of L0A is 32 bytes (C0 elements; ascend.md 1.5)
FRACTAL_ROW_BYTES = 32
# pure index arithmetic a loop-invariant size may be computed with
_INDEX_ARITH = (
    arith.ConstantOp,
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.DivUIOp,
    arith.DivSIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
    arith.FloorDivSIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.MinSIOp,
    arith.MaxSIOp,
    arith.MinUIOp,
    arith.MaxUIOp,
    arith.SelectOp,
    arith.CmpiOp,
)


def constant(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def lower_bound(v: SSAValue) -> int | None:
    """A value `v` is never below, from constants, max, min and select; None if unknown."""
    value = constant(v)
    if value is not None:
        return value
    owner = v.owner
    if isinstance(owner, arith.MaxSIOp | arith.MaxUIOp):
        bounds = [b for b in (lower_bound(owner.lhs), lower_bound(owner.rhs)) if b is not None]
        return max(bounds) if bounds else None
    if isinstance(owner, arith.MinSIOp | arith.MinUIOp | arith.SelectOp):
        pair = owner.operands[-2:]
        lhs, rhs = lower_bound(pair[0]), lower_bound(pair[1])
        return None if lhs is None or rhs is None else min(lhs, rhs)
    return None


def _defining_op(v: SSAValue) -> Operation | None:
    owner = v.owner
    return owner.parent_op() if isinstance(owner, Block) else owner


def _invariant(v: SSAValue, loop: Operation) -> bool:
    """Whether `v` has one value during a whole run of `loop` (defined outside it, or
    index arithmetic on such values)."""
    owner = _defining_op(v)
    if owner is None or not loop.is_ancestor(owner):
        return True
    if isinstance(v.owner, Operation) and isinstance(v.owner, _INDEX_ARITH):
        return all(_invariant(o, loop) for o in v.owner.operands)
    return False


def _tile_root(v: SSAValue) -> SSAValue:
    from autofusion.dialects.buffer_ops import ViewOp

    while isinstance(v.owner, ViewOp):
        v = v.owner.base
    return v


def _contains_mmad(op: Operation) -> bool:
    from autofusion.dialects.buffer_ops import MmadOp

    return any(isinstance(o, MmadOp) for o in op.walk())


def _check_gemv(mmad: MmadOp, where: str) -> None:
    low = lower_bound(mmad.m)
    if low is not None and low >= 2:
        return
    width = dtypes.byte_width(cast(MemRefType, mmad.a.type).element_type)
    k = constant(mmad.k)
    if k is not None and k * width <= FRACTAL_ROW_BYTES:
        return  # one fractal row: the GEMV row and the Zz fractal agree
    raise VerifyException(
        f"{where} may run with m = 1, where Mmad reads L0A as one contiguous row (GEMV, "
        "Mmad.md) but the L1 -> L0A load leaves Zz fractals: pad m to 16 "
        "(arith.maxsi %m, %c16), as the matmul library does"
    )


def _check_barrier(mmad: MmadOp, where: str) -> None:
    from autofusion.dialects.buffer_ops import PipeBarrierOp

    if constant(mmad.accumulate) == 0:
        return
    op = mmad.prev_op
    while op is not None and not isinstance(op, PipeBarrierOp):
        if _contains_mmad(op):
            break
        op = op.prev_op
    if not isinstance(op, PipeBarrierOp):
        raise VerifyException(
            f"{where} may accumulate into an L0C tile an earlier mmad wrote, with no "
            'buffer.pipe_barrier "M" between them in its block (Mmad.md: PipeBarrier<PIPE_M> '
            "when (m / 16) * (n / 16) < 10)"
        )
    if not op.sizes:
        return
    if op.sizes[0] is not mmad.m or op.sizes[1] is not mmad.n:
        raise VerifyException(
            f"{where}: the small_mmad guard of the pipe_barrier before it must test this "
            "mmad's own m and n"
        )
    tile = _defining_op(_tile_root(mmad.c))
    loop = mmad.parent_op()
    while loop is not None and not (tile is not None and loop.is_ancestor(tile)):
        if isinstance(loop, scf.ForOp | scf.WhileOp) and not (
            _invariant(mmad.m, loop) and _invariant(mmad.n, loop)
        ):
            raise VerifyException(
                f"{where}: its m or n changes inside a loop that accumulates into the tile, "
                "so a small_mmad guard cannot stand for the previous mmad: use an unguarded "
                'buffer.pipe_barrier "M"'
            )
        loop = loop.parent_op()


def verify_mmads(kernel: KernelOpBase, name: str) -> None:
    """Both rules for every mmad of `kernel` (named `name` in the messages)."""
    from autofusion.dialects.buffer_ops import MmadOp

    for op in kernel.walk():
        if isinstance(op, MmadOp):
            hint = op.m.name_hint
            where = f"{name}: buffer.mmad" + (f" with m = %{hint}" if hint else "")
            _check_gemv(op, where)
            _check_barrier(op, where)
