"""A cube kernel's vector epilogue: which ops a cube group may run after its root, the
epilogue's row plan on the view of the root's output, the root's own bias, scaling and
activation as an emitter, its cost pieces, and the kernel shrunk until it fits UB
(cube_common.py docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.ir import Operation, SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.buffer_verifier import footprint
from autofusion.dialects.op_facts import vector_weight
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import CUBE_ROOTS, FRACTAL, WORKSPACE_CHUNK_ROWS, round_up
from autofusion.lowering.rope_epilogue import rope_epilogue
from autofusion.lowering.row_ops import Emitter, activation_loc
from autofusion.lowering.row_plan import (
    ELEMENTWISE,
    ROW_APPLIES,
    RowPlan,
    aligned_transfers,
    plan_for_split,
    shrink_tile,
    size_tiles_to_ub,
)
from autofusion.lowering.row_vector_math import Loc, RowVectorMath, scalar_op
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts, NotApplicable
from autofusion.lowering.value_types import element_type, resolve_dynamic_dims, tensor_shape
from autofusion.passes.fusion_rule import Refusal

# epilogue ops: the vector template's elementwise ops, except rope (it needs whole heads
# and its rows' cos/sin: rope_epilogue.py names what a rope after a cube op lacks),
# and the norm applies: y[r, c] = f(x[r, c], stats[r], scale[c]) needs only its row's
# statistics and its columns' parameters, which any tile of rows x columns has, provided
# the apply normalizes the view's columns (its axis is the view's split: checked by the
# row plan, _row_apply_ok)
EPILOGUE_OPS = (*(t for t in ELEMENTWISE if t is not graph.RopeOp), *ROW_APPLIES)


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
    if any(isinstance(op, graph.RopeOp) for op in epilogue):
        if what != "matmul":
            return Refusal(f"graph.rope after a {root.name}: only matmuls take a rope epilogue")
        rope = rope_epilogue(root, epilogue, parts.outputs)
        return rope if isinstance(rope, Refusal) else (root, epilogue)
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


def activation_of(op: Operation) -> tuple[str | None, float | None, float | None]:
    p = graph.Props(op.properties, op.name)
    if not p.has("activation"):
        return None, None, None
    return p.text("activation"), p.opt_real("clip_min"), p.opt_real("clip_max")


@dataclass(frozen=True)
class CubeEpilogue:
    """A cube group's vector side: the root, its raw product (a detached value), the
    root's operands the vector side reads (`extra`: bias, gemm's C), the epilogue ops,
    the group, and the output dim its view splits at (rows = the dims before it)."""

    root: Operation
    raw: SSAValue
    extra: Sequence[SSAValue]
    ops: Sequence[Operation]
    parts: GroupParts
    split: int


@dataclass(frozen=True)
class EpilogueRoom:
    """What the epilogue may take: `ub_bytes` of UB, `slots` queue buffers per position
    (None: the chip's), `resident` operands kept whole in UB and indexed per row even
    where a stream would do (a conv bias on chips without DataCopyPad), and `preset`:
    the raw value is already in UB (no queue)."""

    ub_bytes: int
    slots: int | None = None
    resident: Sequence[SSAValue] = ()
    preset: bool = False


def plan_epilogue(ep: CubeEpilogue, room: EpilogueRoom, chip: ChipSpec) -> RowPlan | Refusal:
    """The row plan of the vector side: root (raw -> result) + epilogue ops on the view of
    the root's output split at `ep.split` (rows = output dims before it, cols = the rest)."""
    root, raw, extra, epilogue, parts, split = ep.root, ep.raw, ep.extra, ep.ops, ep.parts, ep.split
    ub_bytes, slots, resident, preset = room.ub_bytes, room.slots, room.resident, room.preset
    anchor = tensor_shape(root.results[0])
    inputs = [raw, *extra]
    for v in parts.inputs:
        if v not in inputs and any(v in op.operands for op in epilogue):
            inputs.append(v)
    plan = plan_for_split(
        GroupParts([root, *epilogue], inputs, parts.outputs),
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
        size_tiles_to_ub(plan, ub_bytes)
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
        aligned = aligned_transfers(plan)
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
        # the root's weight is its epilogue's: activation and bias adds (op_facts)
        work += vector_weight(op) * elements
    for v in (*plan.inputs, *plan.outputs):
        if dtypes.type_name(element_type(v)) != "f32":
            work += elements  # widening / narrowing casts
    return work


@dataclass(frozen=True)
class EpilogueSweep:
    """How a cube kernel's epilogue sweeps the output view: `rows` x `cols`, in `chunks`
    chunks of `chunk_cols` columns, `col_tiles` column tiles, on `blocks` cores."""

    rows: int
    cols: int
    chunks: int
    chunk_cols: int
    col_tiles: int
    blocks: int


def epilogue_io(
    plan: RowPlan | None,
    external: Sequence[SSAValue],
    sweep: EpilogueSweep,
    dims: Sequence[int] | None,
) -> tuple[int, int]:
    """GM bytes (read, write) of the epilogue's own inputs and of the kernel's outputs.

    Full operands are read once, a row vector once per chunk, a per-row column once per
    column tile, resident ones once per core."""
    if plan is None:
        return 0, 0
    rows, cols, chunks, chunk_cols = sweep.rows, sweep.cols, sweep.chunks, sweep.chunk_cols
    col_tiles, blocks = sweep.col_tiles, sweep.blocks
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


def epilogue_ub(plan: RowPlan | None) -> int:
    return 0 if plan is None else plan.ub_bytes


def max_epilogue_cols(plan: RowPlan) -> int:
    """The widest column tile whose chunk of `chunk_rows` rows fits the epilogue's UB
    budget."""
    return plan.max_tile_elems // plan.chunk_rows // plan.align_elems * plan.align_elems


def fit_chunk_rows(plan: RowPlan, col_step: int, from_workspace: bool) -> None:
    """Chunks of a fractal's 16 rows, or of 8 (RowPlan.chunk_rows) where 16 rows hold no
    `col_step` columns and the chunks are read back from a GM workspace (split chips)."""
    plan.chunk_rows = FRACTAL
    if from_workspace and max_epilogue_cols(plan) < col_step:
        plan.chunk_rows = WORKSPACE_CHUNK_ROWS


def co2_stage_bytes(plan: RowPlan, tm: int, tn: int) -> int:
    """The stage's bound for epilogue chunks of er rows of a tm x tn tile: er * tn f32
    elements, er*stride at most the epilogue's tile (or 16 rows of it), tn <= stride."""
    stride = round_up(tn, plan.align_elems)
    return 4 * min(tm * tn, max(plan.max_tile_elems, FRACTAL * stride))


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
        if not shrink_tile(rows, cap, used):
            break
        cols = max_epilogue_cols(rows)
        if cols < FRACTAL:
            break
        shrink(cols)
    raise UserError(f"kernel {kernel.sym_name.data} does not fit the {chip.name} UB with any tile")
