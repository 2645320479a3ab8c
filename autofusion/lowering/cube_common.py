"""What the cube templates (matmul, conv, attention, ffn) share: their dtypes, queue,
Mmad and cross-core helpers, the kernel builder base and host-side dims; the vector
epilogue and the group's split into root and epilogue are cube_epilogue.py's.

A cube group is one cube op (the *root*) whose operands are all group inputs (no
prologue: the cube reads GM), followed by elementwise/broadcast ops run by the vector
unit on the root's output tiles (the *epilogue*). The epilogue is a `RowKernel`
embedded in the cube kernel over the [rows x cols] view of the root's output (matmul:
batch*M x N; conv: N*Cout x OH*OW; attention: B*H*Sq x Dv). The root's raw product
enters that row kernel as a pseudo value (`raw`, a detached block argument of the
output's shape): read by the row kernel's copy-in from a UB stage the template copies
L0C into (coupled chips: CO2 is UB, ascend.md 1.7; `copy_l0c_rows_to_co2`) or from a
GM workspace (split chips: AIC and AIV exchange data only through GM, ascend.md 1.1),
or preset in UB (attention). The root's own bias, scaling
and activation are applied by a custom emitter, in float32, then rounded once to the
root's element type, exactly as the graph interpreter computes the op.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from autofusion import dtypes
from autofusion.dialects import buffer, graph
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IndexOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder
from autofusion.lowering.row_plan import RowPlan
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal

V = TypeVar("V")

# one cube fractal is 16 x 16 (ascend.md 1.4, 1.5): M, N and K tiles are multiples of it
FRACTAL = 16
CUBE_ROOTS: tuple[type[Operation], ...] = (
    graph.MatmulOp,
    graph.GemmOp,
    graph.Conv2dOp,
    graph.FlashAttentionOp,
    graph.FfnOp,
)


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def detached_value(element_type: Attribute, dims: Sequence[int], name: str) -> SSAValue:
    """A value no op defines: the cube root's raw product, or a reshaped operand."""
    v = Block(arg_types=[TensorType(element_type, list(dims))]).args[0]
    v.name_hint = name
    return v


def cube_dtype_refusal(root: Operation, chip: ChipSpec) -> Refusal | None:
    """Cube ops take f16, bf16 (where the chip has it) and f32 (ascend.md 2.10 type pairs).

    Coupled chips have no float32 cube: 310P's Mmad takes int8/uint8 -> int32 and half ->
    half/float only, and its LoadData2D no 32-bit types (CANN 8.1 dav_m200 MmadCal,
    CheckLoadData2DType); aclnnMm computes float inputs in float16 on the Atlas training
    and inference series (cubeMathType: KEEP_DTYPE is unsupported there), and 910's
    dav_c100 has no LoadData3DV2, the float B operand's load."""
    names = {dtypes.type_name(element_type(v)) for v in root.operands[:2]}
    if not names <= {"f32", "f16", "bf16"}:
        return Refusal(f"{root.name} on {'/'.join(sorted(names))}: the cube template takes floats")
    if "bf16" in names and not chip.bf16:
        return Refusal(f"{chip.name} has no bf16 cube")
    if "f32" in names and chip.mode == "coupled":
        return Refusal(f"{chip.name} has no float32 cube (its Mmad takes half and int8)")
    return None


def blended_transfer(parts: Sequence[tuple[float, float]]) -> int:
    """One transfer size for traffic moved in transfers of different sizes: with the cost
    model's DataCopy efficiency t / (t + T_half), moving b_i bytes in t_i-byte transfers
    takes as long as moving sum(b_i) in transfers of sum(b_i) / sum(b_i / t_i) bytes."""
    total = sum(b for b, _ in parts)
    weighted = sum(b / max(t, 1.0) for b, t in parts)
    return max(1, int(total / weighted)) if weighted else 1


# ---- emission helpers -------------------------------------------------------------------


def fill_queue_slot(
    kb: KernelBuilder,
    queue: SSAValue,
    element_type: Attribute,
    fill: Callable[[SSAValue], None],
    name: str,
) -> SSAValue:
    """AllocTensor, fill, EnQue, DeQue: the slot as its consumer sees it."""
    slot = kb.insert(buffer.QueueAllocOp(queue, element_type), name).results[0]
    fill(slot)
    kb.insert(buffer.EnqueOp(queue, slot))
    return kb.insert(buffer.DequeOp(queue, element_type), name).results[0]


def free_queue_slot(kb: KernelBuilder, queue: SSAValue, slot: SSAValue) -> None:
    kb.insert(buffer.QueueFreeOp(queue, slot))


def alloc_co2_stage(kb: KernelBuilder, nbytes: SSAValue, max_bytes: int) -> SSAValue:
    """The UB buffer a coupled chip's L0C -> UB copy lands in. Ascend C's CO1 -> CO2
    DataCopy (BLOCK_MODE_MATRIX) moves whole 16x16 fractals, so the f32 product arrives
    there as Nz; the ub -> ub copy that reads it (the row kernel's copy-in) lays it out
    as rows (docs/codegen.md). Sized for the fractals: rows and columns rounded up to 16."""
    return kb.tbuf(nbytes, max_bytes, f32, "c_ub")


def copy_l0c_rows_to_co2(
    kb: KernelBuilder,
    result: SSAValue,
    stage: SSAValue,
    rows: SSAValue,
    cols: SSAValue,
    stage_stride: SSAValue,
) -> None:
    """`rows` whole rows (`cols`, the mmad's n, each) of an L0C result (a view at a row
    that is a multiple of 16) into the CO1 -> CO2 stage, rows `stage_stride` apart.
    The template emits it, not the row kernel's copy-in: the copy's Ascend C needs the
    mmad's row count (the Nz column height in L0C), which only the tile loop knows."""
    kb.copy(result, stage, rows, cols, cols, stage_stride)


@contextmanager
def sub_block_chunk_loop(
    kb: KernelBuilder, chunks: SSAValue, aivs_per_tile: int
) -> Iterator[SSAValue]:
    """for e in [0, chunks), split over the `aivs_per_tile` vector cores of a cube core.

    On split chips each AIC has two AIVs (ascend.md 1.1), which run the same code: the
    AIV with `buffer.sub_block_idx` sb takes chunks sb, sb + 2, ..."""
    idx = kb.idx
    if aivs_per_tile == 1:
        with kb.loop(idx.const(0), chunks, "chunk") as e:
            yield e
        return
    n = idx.const(aivs_per_tile)
    sb = kb.insert(buffer.SubBlockIdxOp(), "sub").results[0]
    mine = idx.ceildiv(idx.sub(idx.max(chunks, sb), sb), n)
    with kb.loop(idx.const(0), mine, "chunk") as e2:
        yield idx.add(idx.mul(e2, n), sb)


# Cross-core flags of the workspace hand-over on split chips (CrossCoreSetFlag mode 2):
# the AIC says a tile is in its workspace slot, the AIVs say they have read a slot
TILE_READY, SLOT_FREE = 0, 1
WORKSPACE_SLOTS = 2


# the fewest rows of an epilogue chunk read back from a GM workspace (RowPlan.chunk_rows)
WORKSPACE_CHUNK_ROWS = 8


@dataclass(frozen=True)
class TilingBounds:
    """What bounds a cube kernel's runtime tiling besides its static tiles: the cube
    cores, the epilogue's UB row alignment and largest tile (elements), and the bytes per
    element of its output workspace (0: none); `col_step`: what an N tile is a multiple
    of (a fractal; whole heads under a rope epilogue); `row_step`: what an epilogue
    chunk's rows are a multiple of (RowPlan.chunk_rows)."""

    cores: int
    align: int
    max_tile_elems: int
    ws_width: int
    col_step: int = FRACTAL
    row_step: int = FRACTAL


def tiling_bounds(
    rows: RowPlan | None, chip: ChipSpec, tile_elems: int, ws_width: int
) -> TilingBounds:
    """The bounds of a kernel whose epilogue plan is `rows` (none: the output tile of
    `tile_elems` elements is one chunk, rows 8 elements aligned)."""
    align = rows.align_elems if rows is not None else 8
    max_tile = rows.max_tile_elems if rows is not None else tile_elems
    step = rows.chunk_rows if rows is not None else FRACTAL
    return TilingBounds(chip.cube_cores, align, max_tile, ws_width, row_step=step)


@dataclass(frozen=True)
class TileSpread(Generic[V]):
    """How a cube kernel's output tiles spread over its cores: `blocks` cores of
    `per_core` tiles, and per tile the epilogue's UB row `stride`, its chunks of `er`
    rows, and `ws` bytes of output workspace (two slots per core)."""

    blocks: V
    per_core: V
    stride: V
    er: V
    ws: V


def spread_tiles(
    ops: IndexOps[V], tiles: V, tile: tuple[V, V], bounds: TilingBounds
) -> TileSpread[V]:
    """The spread of `tiles` output tiles of `tile` = (tm, tn) within `bounds`."""
    c = ops.const
    tm, tn = tile
    blocks = ops.max(c(1), ops.min(tiles, c(bounds.cores)))
    per_core = ops.ceildiv(tiles, blocks)
    stride = ops.round_up(tn, bounds.align)
    step = bounds.row_step
    er = ops.min(
        tm, ops.max(c(step), ops.round_down(ops.floordiv(c(bounds.max_tile_elems), stride), step))
    )
    ws = ops.mul(ops.mul(blocks, c(2 * bounds.ws_width)), ops.mul(tm, tn))
    return TileSpread(blocks, per_core, stride, er, ws)


@dataclass(frozen=True)
class TileTurn:
    """Where an output tile falls in its core's tile loop: the tile, the core's first and
    end tiles, and the block index (the workspace hand-over's slot and flags use them)."""

    tile: SSAValue
    first: SSAValue
    last: SSAValue
    bid: SSAValue


def signal_tile_written(kb: KernelBuilder) -> None:
    """On the AIC after the Fixpipe into the workspace: the tile is there for the AIVs."""
    kb.insert(buffer.CrossCoreSetOp(TILE_READY, "aic", "fix"))


def wait_tile_written(kb: KernelBuilder) -> None:
    """On each AIV before reading a tile from the workspace."""
    kb.insert(buffer.CrossCoreWaitOp(TILE_READY, "aiv"))


def signal_slot_read(kb: KernelBuilder, tile: SSAValue, last: SSAValue) -> None:
    """On each AIV after its last read of tile `tile`'s slot: free it for the tile two
    ahead, if this core has one (so every set has its wait)."""
    ahead = kb.idx.add(tile, kb.idx.const(WORKSPACE_SLOTS))
    with kb.when(kb.less(ahead, last)):
        kb.insert(buffer.CrossCoreSetOp(SLOT_FREE, "aiv", "mte2"))


def wait_slot_read(kb: KernelBuilder, tile: SSAValue, first: SSAValue) -> None:
    """On the AIC before writing tile `tile`'s slot: the AIVs have read the tile that
    used it two tiles before (the first two tiles find their slots free)."""
    idx = kb.idx
    done = idx.sub(tile, first)
    with kb.when(kb.less(idx.const(WORKSPACE_SLOTS - 1), done)):
        kb.insert(buffer.CrossCoreWaitOp(SLOT_FREE, "aic"))


def aivs_per_tile(chip: ChipSpec, through_workspace: bool) -> int:
    """Vector cores per cube core that share a tile's epilogue (2 on 2201, else 1)."""
    if not through_workspace:
        return 1
    return max(1, chip.vector_cores // max(chip.cube_cores, 1))


@dataclass(frozen=True)
class L0Feed:
    """How a K step's operands reach L0A and L0B: their queues, their element type, and
    the functions that fill a slot of each."""

    queues: tuple[SSAValue, SSAValue]
    element_type: Attribute
    fills: tuple[Callable[[SSAValue], None], Callable[[SSAValue], None]]


def mmad_k_step(
    kb: KernelBuilder,
    feed: L0Feed,
    c: SSAValue,
    dims: tuple[SSAValue, SSAValue, SSAValue],
    k_step: SSAValue,
) -> None:
    """One K step of a cube tile: load A and B into L0A/L0B through their queues, Mmad
    into `c` (accumulating unless `k_step` is the first), free both slots."""
    queues, element_type, fills = feed.queues, feed.element_type, feed.fills
    qa2, qb2 = queues
    a2 = fill_queue_slot(kb, qa2, element_type, fills[0], "a2")
    b2 = fill_queue_slot(kb, qb2, element_type, fills[1], "b2")
    emit_mmad(kb, (c, a2, b2), dims, is_nonzero(kb, k_step))
    free_queue_slot(kb, qa2, a2)
    free_queue_slot(kb, qb2, b2)


def emit_mmad(
    kb: KernelBuilder,
    operands: tuple[SSAValue, SSAValue, SSAValue],
    dims: tuple[SSAValue, SSAValue, SSAValue],
    accumulate: SSAValue,
) -> None:
    """Mmad C (+)= A @ B of `dims` (rows, cols, k), as the chip needs it (mmad_rules.py):
    m is at least 16, never 1 (an Mmad with m = 1 reads L0A as a GEMV row; the extra rows
    are computed and never copied out), and an Mmad that may accumulate waits for the
    previous one when the tile is small (PipeBarrier<PIPE_M>, Mmad.md)."""
    c, a, b = operands
    nrows, ncols, klen = dims
    m = kb.idx.max(nrows, kb.idx.const(FRACTAL))
    if isinstance(m.owner, arith.MaxSIOp):
        m.name_hint = "mmad_m"
    if IrOps.constant_value(accumulate) != 0:
        kb.insert(buffer.PipeBarrierOp("M", [m, ncols]))
    kb.insert(buffer.MmadOp(c, a, b, m, ncols, klen, accumulate))


def is_nonzero(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """v != 0 as an i1 (Mmad's accumulate flag: false on the first K step)."""
    op = arith.CmpiOp(v, kb.idx.const(0), "ne")
    return kb.insert(op, "acc").results[0]


def kernel_entry_block(
    gm: Sequence[tuple[str, Attribute]], params: Sequence[str]
) -> tuple[Block, list[SSAValue], dict[str, SSAValue]]:
    """The entry block of a kernel: GM memrefs, then index tiling parameters."""
    types: list[Attribute] = [buffer.memref(t, "gm") for _, t in gm]
    types += [IndexType()] * len(params)
    entry = Block(arg_types=types)
    for a, n in zip(entry.args, [*(n for n, _ in gm), *params]):
        a.name_hint = n
    return entry, list(entry.args[: len(gm)]), dict(zip(params, entry.args[len(gm) :]))


class CubeKernel(ABC):
    """The buffer.kernel builder of a cube template: GM memrefs for its inputs and
    outputs, then its tiling parameters (kernel_entry_block); subclasses emit the body, with
    `gm` (value -> its GM memref), `t` (tiling parameters) and `kb` set."""

    template: ClassVar[str]
    name: str
    chip: ChipSpec
    kernel_inputs: list[SSAValue]
    gm: dict[SSAValue, SSAValue]
    t: dict[str, SSAValue]
    kb: KernelBuilder

    @abstractmethod
    def outputs(self) -> list[SSAValue]:
        """The values the kernel writes to GM, in order."""

    @abstractmethod
    def params(self) -> Sequence[str]:
        """The names of its tiling parameters, in order."""

    def core_type(self) -> str:
        return "mix"

    @abstractmethod
    def _body(self) -> None:
        """Emit the kernel's ops with `self.kb`."""

    def build(self) -> buffer.KernelOp:
        outs = self.outputs()
        gm = [(f"in{i}", element_type(v)) for i, v in enumerate(self.kernel_inputs)]
        gm += [(f"out{i}", element_type(v)) for i, v in enumerate(outs)]
        entry, gm_args, self.t = kernel_entry_block(gm, self.params())
        self.gm = dict(zip([*self.kernel_inputs, *outs], gm_args))
        self.kb = KernelBuilder(entry)
        self._body()
        self.kb.insert(buffer.ReturnOp())
        self.kb.finish()
        return buffer.KernelOp(
            self.name,
            [a.type for a in entry.args],
            Region(entry),
            self.chip.name,
            self.template,
            self.core_type(),
            len(self.kernel_inputs),
            len(outs),
        )


def launch_dim_size(
    b: Builder,
    candidates: Sequence[tuple[SSAValue | None, int]],
    static: int,
) -> SSAValue | int:
    """A dimension's size: static, else `buffer.dim` of the first (tensor, axis) that
    has it dynamic (the tensors are the launch's operands; None: not a launch operand)."""
    if static != DYN:
        return static
    for tensor, axis in candidates:
        if tensor is not None and tensor_shape(tensor)[axis] == DYN:
            return b.insert(buffer.DimOp(tensor, axis)).results[0]
    raise ValueError("no operand carries the dynamic dimension")


def output_dynamic_dims(
    outputs: Sequence[SSAValue], anchor_dims: Sequence[SSAValue], anchor_rank: int
) -> list[SSAValue]:
    """The sizes of the outputs' dynamic dims, in order (outputs are right-aligned to the
    anchor: full tiles or one value per row)."""
    out: list[SSAValue] = []
    for v in outputs:
        dims = tensor_shape(v)
        shift = anchor_rank - len(dims)
        out += [anchor_dims[p + shift] for p, d in enumerate(dims) if d == DYN]
    return out
