"""What the cube templates (matmul, conv, attention) share: group legality, the vector
epilogue on the row kernel, queue helpers for the cube path, and cost pieces.

A cube group is one cube op (the *root*) whose operands are all group inputs (no
prologue: the cube reads GM), followed by elementwise/broadcast ops run by the vector
unit on the root's output tiles (the *epilogue*). The epilogue is a `RowKernel`
embedded in the cube kernel over the [rows x cols] view of the root's output (matmul:
batch*M x N; conv: N*Cout x OH*OW; attention: B*H*Sq x Dv). The root's raw product
enters that row kernel as a pseudo value (`raw`, a detached block argument of the
output's shape): read by the row kernel's copy-in from a UB stage the template copies
L0C into (coupled chips: CO2 is UB, ascend.md 1.7; `copy_l0c_rows_to_co2`) or from a GM workspace (split chips: AIC and AIV exchange data only
through GM, ascend.md 1.1), or preset in UB (attention). The root's own bias, scaling
and activation are applied by a custom emitter, in float32, then rounded once to the
root's element type, exactly as the graph interpreter computes the op.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.buffer_verifier import footprint
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.kernel_builder import KernelBuilder
from autofusion.lowering.row_ops import Emitter, activation_loc
from autofusion.lowering.row_plan import (
    ELEMENTWISE,
    ROW_APPLIES,
    RowPlan,
    _aligned_transfers,
    _budget,
    _plan_for_split,
)
from autofusion.lowering.row_vector_math import Loc, RowVectorMath, scalar_op
from autofusion.lowering.rows_template import VECTOR_OP_WEIGHT, queue_slots
from autofusion.lowering.template import GroupParts, NotApplicable
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal

# one cube fractal is 16 x 16 (ascend.md 1.4, 1.5): M, N and K tiles are multiples of it
FRACTAL = 16
CUBE_ROOTS: tuple[type[Operation], ...] = (
    graph.MatmulOp,
    graph.GemmOp,
    graph.Conv2dOp,
    graph.FlashAttentionOp,
    graph.FfnOp,
)
# epilogue ops: the vector template's elementwise ops, except rope (it needs whole rows),
# and the norm applies: y[r, c] = f(x[r, c], stats[r], scale[c]) needs only its row's
# statistics and its columns' parameters, which any tile of rows x columns has, provided
# the apply normalizes the view's columns (its axis is the view's split: checked by the
# row plan, _row_apply_ok)
EPILOGUE_OPS = (*(t for t in ELEMENTWISE if t is not graph.RopeOp), *ROW_APPLIES)
ACTIVATION_WEIGHT = {"relu": 1.0, "clip": 2.0, "gelu": 22.0, "gelu_tanh": 22.0}


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def detached_value(element_type: Attribute, dims: Sequence[int], name: str) -> SSAValue:
    """A value no op defines: the cube root's raw product, or a reshaped operand."""
    v = Block(arg_types=[TensorType(element_type, list(dims))]).args[0]
    v.name_hint = name
    return v


def split_cube_group(
    parts: GroupParts, root_type: type[Operation] | tuple[type[Operation], ...], what: str
) -> tuple[Operation, list[Operation]] | Refusal:
    """(root, epilogue ops) of a cube group, or why the group is not one for `what`."""
    cube = [op for op in parts.ops if isinstance(op, CUBE_ROOTS)]
    if not any(isinstance(op, root_type) for op in cube):
        return NotApplicable(f"no {what} root in the group")
    if len(cube) > 1:
        return Refusal(f"two cube ops ({cube[0].name}, {cube[1].name}) cannot share a kernel")
    root = cube[0]
    inside = {r for op in parts.ops for r in op.results}
    for v in root.operands:
        if v in inside:
            owner = cast(Operation, v.owner)
            return Refusal(
                f"a prologue op ({owner.name}) feeds the {root.name}: cube ops read their "
                "operands from GM"
            )
    epilogue = [op for op in parts.ops if op is not root]
    for op in epilogue:
        if not isinstance(op, EPILOGUE_OPS):
            return Refusal(
                f"{op.name} after a cube op: cube templates take elementwise/broadcast "
                "epilogues only"
            )
        for v in (*op.operands, *op.results):
            if dtypes.type_name(element_type(v)) not in ("f32", "f16", "bf16"):
                return Refusal(
                    f"{op.name} works on {dtypes.type_name(element_type(v))} in a cube epilogue"
                )
    if any(o in parts.inputs for o in parts.outputs):
        return Refusal("the group yields one of its inputs unchanged")
    return root, epilogue


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


def activation_of(op: Operation) -> tuple[str | None, float | None, float | None]:
    p = graph.Props(op.properties, op.name)
    if not p.has("activation"):
        return None, None, None
    return p.text("activation"), p.opt_real("clip_min"), p.opt_real("clip_max")


def plan_epilogue(
    root: Operation,
    raw: SSAValue,
    extra: Sequence[SSAValue],
    epilogue: Sequence[Operation],
    parts: GroupParts,
    split: int,
    ub_bytes: int,
    chip: ChipSpec,
    resident: Sequence[SSAValue] = (),
    slots: int | None = None,
    preset: bool = False,
) -> RowPlan | Refusal:
    """The row plan of the vector side: root (raw -> result) + epilogue ops on the view of
    the root's output split at `split` (rows = output dims before it, cols = the rest).

    `extra` are the root's operands the vector side reads (bias, gemm's C); `resident`
    ones are kept whole in UB and indexed per row even where a stream would do (a conv
    bias on chips without DataCopyPad). `slots`: queue buffers per position left for the
    epilogue (default: the chip's). `preset`: the raw value is already in UB (no queue)."""
    anchor = tensor_shape(root.results[0])
    inputs = [raw, *extra]
    for v in parts.inputs:
        if v not in inputs and any(v in op.operands for op in epilogue):
            inputs.append(v)
    plan = _plan_for_split(
        [root, *epilogue],
        inputs,
        parts.outputs,
        anchor,
        split,
        False,
        ub_bytes,
        queue_slots(chip) if slots is None else slots,
    )
    if isinstance(plan, Refusal):
        return Refusal(f"the epilogue does not fit the output's view: {plan.reason}")
    for v in resident:
        info = plan.values[v]
        if info.kind == "column":
            info.kind = "mapped_column"
    if preset:
        plan.values[raw].is_input = False  # its buffer is the host kernel's, not a queue
    if resident or preset:
        _budget(plan, ub_bytes)
        if plan.max_tile_elems < plan.align_elems:
            return Refusal("not even one padded row segment of the epilogue's buffers fits UB")
    if not chip.data_copy_pad:
        # without DataCopyPad every GM block is a 32-byte multiple: the row plan's rule,
        # except that a resident operand moves whole, once
        held = [v for v in resident if v in plan.values]
        for v in held:
            n = si.num_elements(plan.values[v].outer_shape) or 0
            if (n * byte_width(element_type(v))) % 32:
                return Refusal(
                    f"a per-channel operand of {n} values is not a 32-byte multiple and the "
                    "chip has no DataCopyPad"
                )
        saved = {v: plan.values.pop(v) for v in held}
        aligned = _aligned_transfers(plan)
        plan.values.update(saved)
        if isinstance(aligned, Refusal):
            return aligned
    plan.parts = parts
    return plan


def root_emitter(
    raw: SSAValue,
    bias: SSAValue | None,
    alpha: float,
    beta: float,
    act: tuple[str | None, float | None, float | None],
) -> Emitter:
    """Emit y = act(alpha * raw + beta * bias) in float32, rounded to the root's type."""

    def emit(k: RowVectorMath, op: Operation) -> None:
        x = k.locs[raw]
        fresh: list[SSAValue | None] = []

        def step(y: Loc) -> None:
            nonlocal x
            for buf in fresh:
                k.pool.release(buf)
            fresh.clear()
            fresh.append(y.buf)
            x = y

        if alpha != 1.0:
            step(k.scale_shift(x, alpha, None))
        if bias is not None:
            b = k.locs[bias]
            scaled = None
            if beta != 1.0:
                if b.kind == "scalar":
                    b = Loc("scalar", value=scalar_op(k.kb, "mul", b.value, k.kb.f32(beta)))  # type: ignore[arg-type]
                else:
                    b = scaled = k.scale_shift(b, beta, None)
            step(k.binary("add", x, b))
            if scaled is not None:
                k.pool.release(scaled.buf)
        name, lo, hi = act
        if name is not None:
            step(activation_loc(k, name, x, lo, hi))
        result = op.results[0]
        if x is k.locs[raw] and element_type(raw) == element_type(result):
            k.locs[result] = x  # already the result's values (f16/bf16 from Fixpipe)
        else:
            k.locs[result] = k.round_to(x, element_type(result))

    return emit


def epilogue_work(plan: RowPlan | None, root: Operation, elements: int) -> float:
    """Vector element operations of the epilogue over `elements` output elements."""
    if plan is None:
        return 0.0
    work = 0.0
    for op in plan.ops:
        if op is root:
            name, _, _ = activation_of(root)
            work += ACTIVATION_WEIGHT.get(name or "", 6.0 if name else 0.0) * elements
            work += elements * sum(1 for v in op.operands[2:])  # bias add
        else:
            work += VECTOR_OP_WEIGHT.get(type(op), 1.0) * elements
    for v in (*plan.inputs, *plan.outputs):
        if dtypes.type_name(element_type(v)) != "f32":
            work += elements  # widening / narrowing casts
    return work


def epilogue_io(
    plan: RowPlan | None,
    external: Sequence[SSAValue],
    rows: int,
    cols: int,
    chunks: int,
    chunk_cols: int,
    col_tiles: int,
    blocks: int,
    dims: Sequence[int] | None,
) -> tuple[int, int]:
    """GM bytes (read, write) of the epilogue's own inputs and of the kernel's outputs.

    Full operands are read once, a row vector once per chunk, a per-row column once per
    column tile, resident ones once per core."""
    if plan is None:
        return 0, 0
    read = write = 0
    for v, info in plan.values.items():
        w = byte_width(element_type(v))
        if info.is_input and info.constant is None and v not in external:
            own = si.num_elements(resolve_dynamic_dims(tensor_shape(v), dims)) or 0
            if info.kind == "full" or info.kind == "mapped_rows":
                read += rows * cols * w
            elif info.kind == "rowvec":
                read += chunks * chunk_cols * w
            elif info.kind == "column":
                read += rows * col_tiles * w
            else:
                read += blocks * own * w
        if info.is_output:
            write += rows * (cols if info.kind == "full" else 1) * w
    return read, write


def epilogue_unique_read(
    plan: RowPlan | None, external: Sequence[SSAValue], dims: Sequence[int] | None
) -> int:
    """GM bytes of the epilogue's own inputs, each read once: what reaches HBM of the
    traffic `epilogue_io` counts (its re-reads of row vectors, columns and residents are
    of small operands that stay in L2)."""
    if plan is None:
        return 0
    return sum(
        (si.num_elements(resolve_dynamic_dims(tensor_shape(v), dims)) or 0)
        * byte_width(element_type(v))
        for v, info in plan.values.items()
        if info.is_input and info.constant is None and v not in external
    )


def resolve_dynamic_dims(dims: Sequence[int], given: Sequence[int] | None) -> list[int]:
    """A shape with its dynamic dims replaced (by `given` in order, else 1)."""
    it = iter(given or [])
    return [next(it, 1) if d == DYN else d for d in dims]


def blended_transfer(parts: Sequence[tuple[float, float]]) -> int:
    """One transfer size for traffic moved in transfers of different sizes: with the cost
    model's DataCopy efficiency t / (t + T_half), moving b_i bytes in t_i-byte transfers
    takes as long as moving sum(b_i) in transfers of sum(b_i) / sum(b_i / t_i) bytes."""
    total = sum(b for b, _ in parts)
    weighted = sum(b / max(t, 1.0) for b, t in parts)
    return max(1, int(total / weighted)) if weighted else 1


def epilogue_ub(plan: RowPlan | None) -> int:
    if plan is None:
        return 0
    return plan.tile_bytes_per_elem * plan.max_tile_elems + plan.column_bytes_per_row * (
        plan.max_tile_elems // plan.align_elems
    )


def max_epilogue_cols(plan: RowPlan) -> int:
    """The widest column tile whose 16-row chunk fits the epilogue's UB budget."""
    return plan.max_tile_elems // FRACTAL // plan.align_elems * plan.align_elems


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


def co2_stage_bytes(plan: RowPlan, tm: int, tn: int) -> int:
    """The stage's bound for epilogue chunks of er rows of a tm x tn tile: er * tn f32
    elements, er*stride at most the epilogue's tile (or 16 rows of it), tn <= stride."""
    stride = round_up(tn, plan.align_elems)
    return 4 * min(tm * tn, max(plan.max_tile_elems, FRACTAL * stride))


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


def mmad_k_step(
    kb: KernelBuilder,
    queues: tuple[SSAValue, SSAValue],
    element_type: Attribute,
    fills: tuple[Callable[[SSAValue], None], Callable[[SSAValue], None]],
    c: SSAValue,
    dims: tuple[SSAValue, SSAValue, SSAValue],
    k_step: SSAValue,
) -> None:
    """One K step of a cube tile: load A and B into L0A/L0B through their queues, Mmad
    into `c` (accumulating unless `k_step` is the first), free both slots."""
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


def build_fitting_ub(
    build: Callable[[], buffer.KernelOp],
    rows: RowPlan | None,
    chip: ChipSpec,
    shrink: Callable[[int], None],
    ub_capacity: int | None = None,
) -> buffer.KernelOp:
    """Build the kernel; while its UB exceeds the chip's, shrink the epilogue's tile (the
    row plan's budget counts buffers per value, the emitted ops may need a few more
    working buffers: as the rows template does) and call `shrink(max_cols)` so the
    cube tiles follow. L1/L0 budgets are exact: exceeding them is a bug."""
    cap = ub_capacity if ub_capacity is not None else chip.ub_bytes
    for _ in range(6):
        kernel = build()
        need = footprint(kernel)
        for space in ("l1", "l0a", "l0b", "l0c"):
            have = chip.capacity(space)
            assert have is None or need.get(space, 0) <= have, (
                f"{kernel.sym_name.data} plans {need.get(space, 0)} bytes of {space}, "
                f"{chip.name} has {have}"
            )
        used = need.get("ub", 0)
        if used <= cap:
            kernel.attributes["afc.ub_bytes"] = graph.int_attr(used)
            return kernel
        if rows is None:
            break
        scaled = rows.max_tile_elems * cap // used
        rows.max_tile_elems = max(0, scaled // 64 * 64 - 64)
        cols = max_epilogue_cols(rows)
        if cols < FRACTAL:
            break
        shrink(cols)
    raise UserError(f"kernel {kernel.sym_name.data} does not fit the {chip.name} UB with any tile")
