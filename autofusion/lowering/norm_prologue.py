"""A matmul kernel's norm prologue: the per-row RMS statistics of its A rows, computed
by the vector side of the same kernel (passes/rules/norm_prologue.py makes the group).

The group is {rstd = rms_norm_stats(x), y = x @ W', rms_norm_apply(y, rstd, 1), ...}:
the statistics read the matmul's own A operand, and only the epilogue reads rstd. On a
split chip (910B), before the tile loop, the AIVs of all blocks compute rstd of every
row of A once (a row kernel over the [rows x K] view of x: whole rows, widened to
float32, squared, reduced; blocks of 8 rows dealt round-robin over the launch's AIVs)
into a float32 GM workspace, then `buffer.sync_all` (SyncAll<false>, every AIC and AIV,
asc-devkit SyncAll.md; blocks <= cube cores, as the matmul's launch is). The epilogue
then streams rstd in per chunk as its per-row operand, from the workspace instead of a
kernel input. The cost over the plain matmul: one more read of A (the norm's own kernel
read it too), rows x 4 bytes written, and the AICs wait for the pass at the SyncAll.

The ffn kernel runs the same pass over its x for graph.ffn's norm_epsilon (ffn_plan.py
plans it with `plan_stats`, ffn_emit.py emits it before its own first SyncAll).

UB: the statistics take a third of it and a quarter of the queue buffers; the epilogue
the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, cast

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.op_facts import vector_weight
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import CUBE_ROOTS
from autofusion.lowering.index_expr import IndexOps
from autofusion.lowering.kernel_builder import KernelBuilder
from autofusion.lowering.row_kernel import RowKernel
from autofusion.lowering.row_plan import RowPlan, plan_for_split
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal

V = TypeVar("V")

# the tiling argument of the rstd workspace: one float32 value per row
RSTD_BYTES = "rstd_bytes"
# the rows of an AIV's block of the statistics pass are a multiple of 8 (float32 values),
# so no 32-byte block of the rstd workspace is written by two cores
BLOCK_ROWS = 8
# the statistics' share of UB and of the queue buffers per position
UB_SHARE = 3
SLOT_SHARE = 4


@dataclass
class NormPrologue:
    """The statistics op, its input x (the matmul's A), its result rstd, and the row
    plan of the statistics over x's [rows x K] view."""

    stats: Operation
    x: SSAValue
    rstd: SSAValue
    rows: RowPlan

    @property
    def k(self) -> int:
        return tensor_shape(self.x)[-1]

    @property
    def stride(self) -> int:
        """A row's UB stride (elements)."""
        return -(-self.k // self.rows.align_elems) * self.rows.align_elems

    @property
    def tile_rows(self) -> int:
        """Rows of one statistics tile (whole rows: the plan checked one fits)."""
        return max(1, self.rows.max_tile_elems // self.stride)


def split_norm_prologue(
    parts: GroupParts, chip: ChipSpec
) -> tuple[GroupParts, NormPrologue | None] | Refusal:
    """The group without its norm prologue (rstd then an input of the epilogue) and the
    prologue's plan; (parts, None) when the group has none."""
    stats = [op for op in parts.ops if isinstance(op, graph.RmsNormStatsOp)]
    roots = [o for o in parts.ops if isinstance(o, CUBE_ROOTS)]
    if not stats or not roots:
        return parts, None  # no prologue, or not a cube group (split_cube_group says so)
    if len(stats) > 1:
        return Refusal("two norm statistics in one cube group")
    op = stats[0]
    if len(roots) != 1 or not isinstance(roots[0], graph.MatmulOp):
        return Refusal(f"{op.name} in a cube group joins a matmul only")
    x, rstd = op.operands[0], op.results[0]
    if roots[0].operands[0] is not x:
        return Refusal(f"{op.name} reads another value than the matmul's A operand")
    if rstd in parts.outputs:
        return Refusal(f"the kernel would write {op.name}'s statistics: they stay inside it")
    if chip.mode != "split":
        return Refusal(
            f"the norm prologue runs on the AIVs of a split chip's mix kernel; {chip.name} "
            "computes the statistics in a kernel of their own"
        )
    shape = tensor_shape(x)
    if si.normalize_axis(graph.Props(op.properties, op.name).integer("axis"), len(shape)) != (
        len(shape) - 1
    ):
        return Refusal(f"{op.name} over more than the matmul's K axis")
    a_batch, out_batch = shape[:-2], tensor_shape(roots[0].results[0])[:-2]
    if tuple(a_batch) != tuple(out_batch[len(out_batch) - len(a_batch) :]) or (
        si.num_elements(a_batch) != si.num_elements(out_batch)
    ):
        return Refusal("the matmul broadcasts A over batch dims: its rows are not the output's")
    prologue = plan_stats(op, chip.ub_bytes // UB_SHARE, queue_slots(chip) // SLOT_SHARE)
    if isinstance(prologue, Refusal):
        return prologue
    rest = [o for o in parts.ops if o is not op]
    return GroupParts(rest, [*parts.inputs, rstd], parts.outputs), prologue


def plan_stats(op: Operation, ub: int, slots: int) -> NormPrologue | Refusal:
    """The prologue of a graph.rms_norm_stats over its input's last axis, its row kernel
    in `ub` bytes and `slots` queue buffers per position."""
    x, rstd = op.operands[0], op.results[0]
    shape = tensor_shape(x)
    parts = GroupParts([op], [x], [rstd])
    plan = plan_for_split(parts, shape, len(shape) - 1, True, ub, slots)
    if isinstance(plan, Refusal):
        return Refusal(f"the norm prologue does not fit UB: {plan.reason}")
    plan.parts = parts
    return NormPrologue(op, x, rstd, plan)


def epilogue_room(prologue: NormPrologue | None, chip: ChipSpec) -> tuple[int, int | None]:
    """(UB bytes, queue buffers per position) the epilogue may take beside the prologue."""
    if prologue is None:
        return chip.ub_bytes, None
    return (
        chip.ub_bytes - chip.ub_bytes // UB_SHARE,
        queue_slots(chip) - queue_slots(chip) // SLOT_SHARE,
    )


@dataclass(frozen=True)
class PrologueCost:
    gm_read: int
    gm_write: int
    vector_work: float
    transfer: int  # bytes of one statistics tile's copy of A rows


def prologue_cost(p: NormPrologue | None, rows: int, col_tiles: int) -> PrologueCost:
    """The AIVs read A's rows once and write rstd (float32); the epilogue reads rstd
    once per N tile."""
    if p is None:
        return PrologueCost(0, 0, 0.0, 0)
    w = byte_width(element_type(p.x))
    a = rows * p.k * w
    work = vector_weight(p.stats) * rows * p.k
    tile = min(rows, p.tile_rows) * p.k * w
    return PrologueCost(a + 4 * rows * col_tiles, 4 * rows, work, tile)


class PrologueEmitter:
    """Emits the prologue into a matmul kernel: the rstd workspace, the statistics' row
    kernel, and the pass of every AIV over its row blocks, then SyncAll."""

    def __init__(self, p: NormPrologue, name: str, chip: ChipSpec) -> None:
        self.p = p
        self.row = RowKernel(p.rows, name, chip.name, chip.cube_cores)

    def attach(self, kb: KernelBuilder, a_gm: SSAValue, ws_bytes: SSAValue) -> None:
        """The workspace and the row kernel's queues (at the kernel's top)."""
        idx = kb.idx
        self.kb = kb
        self.ws = kb.insert(buffer.WorkspaceOp(ws_bytes, f32), "ws_rstd").results[0]
        rt = {"tile_rows": idx.const(self.p.tile_rows), "tile_stride": idx.const(self.p.stride)}
        rt["cols"] = idx.const(self.p.k)
        self.row.attach(kb, {self.p.x: a_gm, self.p.rstd: self.ws}, rt)

    def emit_pass(self, bid: SSAValue, rows: SSAValue, sync: bool = True) -> None:
        """Every AIV takes every (2 * blocks)-th block of rows (a tile's rows rounded up
        to BLOCK_ROWS, in tiles of `tile_rows`), then all cores meet at SyncAll: the
        epilogues read any row's rstd (sync=False: the caller's next SyncAll does)."""
        kb, idx = self.kb, self.kb.idx
        sub = kb.insert(buffer.SubBlockIdxOp(), "sub").results[0]
        blocks = kb.insert(buffer.BlockNumOp(), "blocks").results[0]
        aiv = idx.add(idx.mul(bid, idx.const(2)), sub)
        aivs = idx.mul(blocks, idx.const(2))
        block = idx.const(-(-self.p.tile_rows // BLOCK_ROWS) * BLOCK_ROWS)
        count = idx.ceildiv(rows, block)
        mine = idx.ceildiv(idx.sub(idx.max(count, aiv), aiv), aivs)
        k = idx.const(self.p.k)
        step = idx.const(self.p.tile_rows)
        with kb.loop(idx.const(0), mine, "rb") as q:
            self.row.start_pool(cast(Operation, kb.entry.last_op))
            b0 = idx.mul(idx.add(aiv, idx.mul(q, aivs)), block)
            nb = idx.min(block, idx.sub(rows, b0))
            with kb.loop(idx.const(0), idx.ceildiv(nb, step), "stat") as j:
                r = idx.mul(j, step)
                self.row.emit_tile(idx.add(b0, r), idx.const(0), idx.min(step, idx.sub(nb, r)), k)
        if sync:
            kb.insert(buffer.SyncAllOp())


def rstd_bytes(ops: IndexOps[V], rows: V) -> V:
    """The rstd workspace: one float32 value per row of A, in whole 32-byte blocks."""
    return ops.round_up(ops.mul(rows, ops.const(4)), 32)
