"""Planning of vector kernels: the rows x columns view of a group and its UB budget.

A vector group (elementwise, broadcast, and reductions over trailing axes) is run over a
2-D view of its *anchor* shape S: outer dims flattened into R rows, the trailing dims
from axis p on flattened into C columns. Every value of the group must then be one of
(shapes left-padded to the rank of S):

  full          sv == S                                    a tile of rows x columns
  rowvec        outer all 1, inner == S[p:]                the same columns for every row
  mapped_rows   inner == S[p:], some outer dims broadcast  each row copied from a mapped row
  column        inner all 1, outer == S[:p]                one value per row
  mapped_column inner all 1, some outer dims broadcast     resident, indexed per row
  scalar        all 1                                      one value

Groups with reductions reduce exactly the inner block (axes p..rank), so tiles hold whole
rows; pure elementwise groups may also split the columns. Which values exist, their kinds
and their buffers are static; the tile sizes are computed from runtime shapes by
`rows_tiling` (autofusion/lowering/row_tiling.py).

Input views. A group may read an input through view ops (`VIEW_OPS`: unit-step slices
and reshapes, e.g. the Q columns of a merged QKV projection reshaped to heads): the
kernel then streams the view's rows straight from the input's GM buffer with strided
copies (DataCopyPad with a source stride, ascend.md 2.7) and the view is never
materialized. The view must be a full tile of the anchor whose inner block is
contiguous in the input, with at most two strides over its rows after merging
contiguous outer dims: row r is at offset + (r // run) * run_stride + (r % run) *
row_stride (`InputView`). Views need DataCopyPad (no 910/310P); a view op inside a
kernel must read an input or another view op. A kernel of view ops alone is a copy.

Channel-major values. A transpose of an input that moves one axis innermost, or one of
an output that moves it back, is addressing too (row_transpose.py): the kernel reads or
writes the [images x C x pixels] tensor in runs of one image's pixels.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN
from autofusion.lowering.row_layout import find_layout_transposes
from autofusion.lowering.row_plan_model import RowPlan, ValueInfo, attach_layout, whole_row_elems
from autofusion.lowering.row_views import Strided, input_view
from autofusion.lowering.template import GroupParts
from autofusion.passes.fusion_rule import Refusal

# vector work is done in float32: one 32-byte block holds 8 of them
F32 = 4
# a mapped column operand is kept whole in UB; above this many elements it is not
MAX_RESIDENT_ELEMENTS = 8192
# reserve for scalars, reduction scratch alignment and the library's own use (bytes)
UB_RESERVE = 4096

# elementwise ops the vector template lowers (see row_kernel.py for how)
ELEMENTWISE = (
    graph.AddOp,
    graph.SubOp,
    graph.MulOp,
    graph.DivOp,
    graph.MaxOp,
    graph.MinOp,
    graph.PowOp,
    graph.NegOp,
    graph.AbsOp,
    graph.ExpOp,
    graph.LogOp,
    graph.SqrtOp,
    graph.RsqrtOp,
    graph.ReciprocalOp,
    graph.ReluOp,
    graph.ClipOp,
    graph.SigmoidOp,
    graph.TanhOp,
    graph.ErfOp,
    graph.SinOp,
    graph.CosOp,
    graph.GeluOp,
    graph.SiluOp,
    graph.SwigluOp,
    graph.CastOp,
    graph.RopeOp,
)
# ops that reduce the inner block (their `axis` / `axes` must be exactly [p, rank))
ROW_REDUCTIONS = (
    graph.ReduceSumOp,
    graph.ReduceMeanOp,
    graph.ReduceMaxOp,
    graph.ReduceMinOp,
    graph.SoftmaxOp,
    graph.LayerNormOp,
    graph.RmsNormOp,
    graph.GlobalAvgPoolOp,
    graph.LayerNormStatsOp,
    graph.RmsNormStatsOp,
    graph.AddLayerNormOp,
    graph.AddRmsNormOp,
)
# view ops a kernel reads its inputs through (strided reads; see "Input views" above)
VIEW_OPS = (graph.SliceOp, graph.ReshapeOp)
# norm "apply" halves: elementwise on the row view, but they take an axis
ROW_APPLIES = (graph.LayerNormApplyOp, graph.RmsNormApplyOp)
# pow exponents the template computes exactly (others would need exp(b ln a), wrong for a < 0)
POW_EXPONENTS = (-1.0, -0.5, 0.5, 1.0, 2.0, 3.0)
FLOAT_TYPES = ("f32", "f16", "bf16")
# integer inputs a kernel may widen to float32 with a Cast on its copy-in (where the
# chip has the pair: row_vector_math.widened_integers)
WIDENED_INTEGERS = ("i64", "i32")


def _shape(v: SSAValue) -> tuple[int, ...]:
    return cast(TensorType, v.type).get_shape()


def _elt(v: SSAValue) -> str:
    return dtypes.type_name(cast(TensorType, v.type).element_type)


def _same(a: int, b: int) -> bool:
    """Equal sizes (two dynamic dims of one view are taken to be equal)."""
    return a == b


def classify(shape: Sequence[int], anchor: Sequence[int], split: int) -> str | None:
    """The layout kind of a value of `shape` in the view (anchor, split), or None."""
    rank = len(anchor)
    if len(shape) > rank:
        return None
    sv = (1,) * (rank - len(shape)) + tuple(shape)
    outer_v, inner_v = sv[:split], sv[split:]
    outer_s, inner_s = anchor[:split], anchor[split:]
    inner_full = all(_same(a, b) for a, b in zip(inner_v, inner_s))
    inner_bcast = all(d == 1 for d in inner_v)
    for a, b in zip(outer_v, outer_s):
        if not (_same(a, b) or a == 1):
            return None
    outer_full = all(_same(a, b) for a, b in zip(outer_v, outer_s))
    outer_bcast = all(d == 1 for d in outer_v)
    if inner_full and outer_full:
        return "full"
    if inner_full:
        return "rowvec" if outer_bcast else "mapped_rows"
    if inner_bcast:
        if outer_full:
            return "column"
        return "scalar" if outer_bcast else "mapped_column"
    return None


def _reduction_split(op: Operation) -> tuple[tuple[int, ...], int] | Refusal:
    """(anchor shape, split axis) implied by a row reduction, or why it is not one."""
    x = op.operands[0]
    shape = _shape(x)
    rank = len(shape)
    p = graph.Props(op.properties, op.name)
    if isinstance(op, graph.ReduceOp):
        axes = op.reduced_axes()
        if axes != tuple(range(axes[0], rank)):
            return Refusal(f"{op.name} reduces axes {list(axes)}, not a trailing block")
        return shape, axes[0]
    if isinstance(op, graph.SoftmaxOp):
        axis = si.normalize_axis(p.integer("axis"), rank)
        if axis != rank - 1:
            return Refusal("softmax over a non-last axis")
        return shape, axis
    if isinstance(op, graph.GlobalAvgPoolOp):
        return shape, 2
    return shape, si.normalize_axis(p.integer("axis"), rank)


def _is_float_group(
    ops: Sequence[Operation], inputs: Sequence[SSAValue], widens: Collection[str]
) -> Refusal | None:
    """None when the group computes floats: an integer value may only be a kernel input
    read by graph.cast ops, of a type the chip's Cast widens to float32 on its copy-in
    (`widens`; e.g. int64 position ids, A2 only)."""
    for op in ops:
        for v in (*op.operands, *op.results):
            elt = _elt(v)
            if elt in FLOAT_TYPES:
                continue
            cast_input = isinstance(op, graph.CastOp) and v in inputs and v is op.operands[0]
            if not (cast_input and elt in WIDENED_INTEGERS):
                return Refusal(f"{op.name} works on {elt}; vector kernels compute floats")
            if elt not in widens:
                return Refusal(f"{op.name} of {elt}: the chip's Cast has no {elt} -> float32")
    return None


def _supported(op: Operation) -> Refusal | None:
    if isinstance(op, graph.PowOp):
        from autofusion.passes.matching import splat_value

        e = splat_value(op.rhs)
        if e is None or e not in POW_EXPONENTS:
            return Refusal(f"pow with exponent other than {POW_EXPONENTS}")
    if isinstance(op, ELEMENTWISE + ROW_REDUCTIONS + ROW_APPLIES):
        return None
    return Refusal(f"{op.name} has no vector kernel")


def plan_rows(
    group: GroupParts,
    ub_bytes: int,
    queue_slots: int = 8,
    data_copy_pad: bool = True,
    split: int | None = None,
    widens: Collection[str] = (),
) -> RowPlan | Refusal:
    """Plan a vector kernel for the group's ops (in program order) or say why it cannot be
    one.

    `queue_slots` is the chip's limit of TQue buffers per position (VECIN, VECOUT);
    without `data_copy_pad` (Ascend910, 310P) every transfer must be a 32-byte multiple.
    `split`: the rows x columns view to take (a recorded plan's) instead of the first
    that fits. `widens`: the integer input types the chip's Cast turns into float32.
    """
    ops, inputs, outputs = group.ops, group.inputs, group.outputs
    wanted = split
    transposes = find_layout_transposes(ops, inputs, outputs)
    if isinstance(transposes, Refusal):
        return transposes
    if transposes.ops:
        if not data_copy_pad:
            return Refusal("channel-major transposes need DataCopyPad, which the chip lacks")
        ops, inputs, outputs = transposes.body(ops, inputs, outputs)
    found_views = _view_chains(ops, inputs, outputs)
    if isinstance(found_views, Refusal):
        return found_views
    strided, view_ops, terminal = found_views
    if view_ops:
        if not data_copy_pad:
            return Refusal("strided input views need DataCopyPad, which the chip lacks")
        ops = [op for op in ops if op not in view_ops]
        used = {v for op in ops for v in op.operands}
        inputs = [
            *(v for v in inputs if v in used or v in outputs),
            *terminal,
        ]
    for op in ops:
        why = _supported(op)
        if why is not None:
            return why
    why = _is_float_group(ops, inputs, widens)
    if why is not None:
        return why
    reductions = [op for op in ops if isinstance(op, ROW_REDUCTIONS)]
    if reductions:
        found = _reduction_split(reductions[0])
        if isinstance(found, Refusal):
            return found
        anchor, split = found
        for op in reductions[1:]:
            other = _reduction_split(op)
            if isinstance(other, Refusal):
                return other
            if other[1] != split or not si.shapes_compatible(other[0], anchor):
                return Refusal("reductions over different rows cannot share a kernel")
        candidates = [split]
    else:
        anchor = max((_shape(v) for v in outputs), key=len)
        candidates = list(range(len(anchor))) or [0]
    last: Refusal = Refusal("no rows x columns view fits every value")
    if wanted is not None:
        if wanted not in candidates:
            return Refusal(f"the group has no rows x columns view split at dim {wanted}")
        candidates = [wanted]
    for split in candidates:
        body = GroupParts(list(ops), list(inputs), list(outputs))
        plan = plan_for_split(body, anchor, split, bool(reductions), ub_bytes, queue_slots)
        if isinstance(plan, RowPlan) and not data_copy_pad:
            plan = aligned_transfers(plan)
        if isinstance(plan, RowPlan) and view_ops:
            plan = _attach_views(plan, strided, view_ops)
        if isinstance(plan, RowPlan) and transposes.ops:
            plan = attach_layout(transposes, plan, group.outputs)
            if isinstance(plan, RowPlan):
                size_tiles_to_ub(plan, ub_bytes)
        if isinstance(plan, RowPlan):
            return plan
        last = plan
    return last


def _view_chains(
    ops: Sequence[Operation], inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
) -> tuple[dict[SSAValue, tuple[SSAValue, Strided]], list[Operation], list[SSAValue]] | Refusal:
    """The group's view ops: each result's (source input, strided view), the ops, and
    the views the kernel streams (read by a compute op, or a group output)."""
    strided: dict[SSAValue, tuple[SSAValue, Strided]] = {}
    view_ops: list[Operation] = []
    for op in ops:
        if not isinstance(op, VIEW_OPS):
            continue
        x = op.operands[0]
        if _elt(x) not in FLOAT_TYPES:
            return Refusal(f"{op.name} works on {_elt(x)}; vector kernels compute floats")
        if x in strided:
            source, base = strided[x]
        elif x in inputs:
            start = Strided.contiguous(_shape(x))
            if start is None:
                return Refusal(f"{op.name} of an input with dynamic inner dims")
            source, base = x, start
        else:
            return Refusal(
                f"{op.name} inside a kernel must read a kernel input (a strided view of it)"
            )
        view = (
            base.sliced(op)
            if isinstance(op, graph.SliceOp)
            else base.reshaped(_shape(op.results[0]))
        )
        if view is None:
            return Refusal(f"{op.name} is not a strided view of the kernel's input")
        strided[op.results[0]] = (source, view)
        view_ops.append(op)
    inside = set(ops) - set(view_ops)
    terminal = [v for v in strided if v in outputs or any(u.operation in inside for u in v.uses)]
    return strided, view_ops, terminal


def _attach_views(
    plan: RowPlan,
    strided: dict[SSAValue, tuple[SSAValue, Strided]],
    view_ops: list[Operation],
) -> RowPlan | Refusal:
    for v in plan.inputs:
        if v not in strided:
            continue
        source, view = strided[v]
        if plan.values[v].narrow:
            return Refusal("a partial rope's table is read through a view")
        if plan.values[v].kind != "full":
            return Refusal(f"a strided input view of shape {si.fmt(_shape(v))} is not a full tile")
        found = input_view(source, view, plan.anchor, plan.split)
        if found is None:
            return Refusal(
                f"the input view of shape {si.fmt(_shape(v))} needs more than two row strides "
                f"or non-contiguous columns in the view split at {plan.split}"
            )
        plan.views[v] = found
    plan.view_ops = list(view_ops)
    return plan


def partial_rotary_dim(op: graph.RopeOp) -> int | None:
    """A partial rope's rotary_dim R: set and less than the head dim D (or D dynamic);
    None for a rope that rotates whole rows."""
    p = graph.Props(op.properties, op.name)
    d = _shape(op.input)[-1]
    if not p.has("rotary_dim") or p.integer("rotary_dim") == d:
        return None
    return p.integer("rotary_dim")


def narrow_tables(
    ops: Sequence[Operation], inputs: Sequence[SSAValue]
) -> dict[SSAValue, int] | Refusal:
    """The cos/sin tables of the group's partial ropes, each with its width R: kernel
    inputs [..., R] that only partial ropes of that R read as cos/sin. They stream as
    [rows, R] (`ValueInfo.narrow`), not as the view's D columns."""
    tables: dict[SSAValue, int] = {}
    for op in ops:
        if not isinstance(op, graph.RopeOp) or (r := partial_rotary_dim(op)) is None:
            continue
        for what, t in (("cos", op.cos), ("sin", op.sin)):
            if t not in inputs or _shape(t)[-1] != r:
                return Refusal(
                    f"a partial rope's {what} must be a kernel input of rotary_dim {r} columns"
                )
            tables[t] = r
    inside = set(ops)
    for t, r in tables.items():
        for use in t.uses:
            user = use.operation
            if user not in inside:
                continue
            if (
                not isinstance(user, graph.RopeOp)
                or use.index == 0
                or partial_rotary_dim(user) != r
            ):
                return Refusal(f"{user.name} reads a partial rope's table as a full-width value")
    return tables


def _row_apply_ok(op: Operation, split: int) -> bool:
    axis = graph.Props(op.properties, op.name).integer("axis")
    return si.normalize_axis(axis, len(_shape(op.operands[0]))) == split


def plan_for_split(
    body: GroupParts,
    anchor: tuple[int, ...],
    split: int,
    has_reduction: bool,
    ub_bytes: int,
    queue_slots: int,
) -> RowPlan | Refusal:
    ops, inputs, outputs = body.ops, body.inputs, body.outputs
    from autofusion.passes.matching import splat_value

    plan = RowPlan(list(ops), anchor, split, has_reduction)
    rank = len(anchor)
    reduced: set[SSAValue] = set()
    for op in ops:
        if isinstance(op, ROW_REDUCTIONS):
            if not isinstance(op, graph.SoftmaxOp | graph.LayerNormOp | graph.RmsNormOp):
                reduced.update(r for r in op.results)
            if isinstance(op, graph.AddLayerNormOp | graph.AddRmsNormOp):
                reduced.difference_update(op.results)
        if isinstance(op, ROW_APPLIES) and not _row_apply_ok(op, split):
            return Refusal(f"{op.name} normalizes other axes than the kernel's rows")
        if isinstance(op, graph.RopeOp) and split != rank - 1:
            return Refusal("rope needs the last dim as the kernel's columns")
    tables = narrow_tables(ops, inputs)
    if isinstance(tables, Refusal):
        return tables
    all_values: list[SSAValue] = list(inputs)
    for op in ops:
        all_values.extend(op.results)
    for v in all_values:
        shape = _shape(v)
        if v in reduced and len(shape) == split:
            kind: str | None = "column"  # a reduction without keepdims: one value per row
        elif v in tables:
            # a narrow table is laid out as the rows of the view it broadcasts to
            kind = classify((*shape[:-1], anchor[-1]), anchor, split)
        else:
            kind = classify(shape, anchor, split)
        if kind is None:
            return Refusal(
                f"a value of shape {si.fmt(shape)} does not fit the view {si.fmt(anchor)} split at {split}"
            )
        padded = (1,) * (rank - len(shape)) + shape
        info = ValueInfo(v, kind, padded[:split], is_input=v in inputs, is_output=v in outputs)
        if v in inputs:
            # a splat constant is a scalar whatever its shape: nothing to stream
            info.constant = splat_value(v)
        info.narrow = tables.get(v, 0)
        if kind == "mapped_column":
            n = si.num_elements(padded[:split])
            if n is None or n > MAX_RESIDENT_ELEMENTS:
                return Refusal(
                    f"a per-row operand of {n or 'unknown'} values is too large to keep in UB"
                )
        if info.is_output and kind not in ("full", "column"):
            return Refusal(f"a {kind} result cannot be written by a tile")
        if v in reduced and kind not in ("column", "scalar"):
            return Refusal("a reduction's result is not one value per row")
        plan.values[v] = info
    plan.inputs = list(inputs)
    plan.outputs = list(outputs)
    streamed = [
        v
        for v in inputs
        if plan.values[v].kind in ("full", "mapped_rows", "rowvec", "column")
        and plan.values[v].constant is None
    ]
    for what, count in (("inputs", len(streamed)), ("outputs", len(outputs))):
        if count > queue_slots:
            return Refusal(
                f"{count} streamed {what}; the chip has {queue_slots} queue buffers per position"
            )
    # double-buffer the queues when the chip has the slots for it
    plan.in_depth = 2 if 2 * len(streamed) <= queue_slots else 1
    plan.out_depth = 2 if 2 * len(outputs) <= queue_slots else 1
    size_tiles_to_ub(plan, ub_bytes)
    if plan.max_tile_elems < plan.align_elems:
        return Refusal("not even one padded row segment of the group's buffers fits UB")
    row = whole_row_elems(plan)
    if row is not None and row > plan.max_tile_elems:
        # a reduction keeps whole rows in UB (row_tiling.py): a row that does not fit
        # would fail at run time, so refuse it here (dynamic rows are checked by the
        # kernel when it starts)
        return Refusal(
            f"a reduced row of {si.num_elements(plan.inner)} elements does not fit UB (at "
            f"most {plan.max_tile_elems} with this group's buffers)"
        )
    return plan


def shrink_tile(plan: RowPlan, ub_capacity: int, needed: int) -> bool:
    """Shrink the plan's largest tile after its emitted kernel needed `needed` bytes of
    UB, more than `ub_capacity` (the per-value budget does not count an op's working
    buffers): in proportion, rounded down to 64 elements less a margin for the fixed
    buffers, or to whole rows when the tiles hold whole static rows, so the tiling
    recorded from the shrunk plan is one `take_row_tile` takes back. False when not even
    one tile (one padded row segment, or one whole row) is left."""
    scaled = plan.max_tile_elems * ub_capacity // needed
    row = whole_row_elems(plan)
    if row is None:
        plan.max_tile_elems = max(0, scaled // 64 * 64 - 64)
        return plan.max_tile_elems >= plan.align_elems
    plan.max_tile_elems = scaled // row * row
    return plan.max_tile_elems >= row


def aligned_transfers(plan: RowPlan) -> RowPlan | Refusal:
    """Without DataCopyPad, DataCopy moves 32-byte multiples only (asc-devkit DataCopy.md;
    ascend.md 2.7): every row segment must be one, and per-row values, whose transfers
    shrink on tail tiles, cannot be streamed."""
    cols = si.num_elements(plan.inner)
    for info in plan.values.values():
        if info.constant is not None or not (info.is_input or info.is_output):
            continue
        width = dtypes.byte_width(cast(TensorType, info.value.type).element_type)
        if info.kind in ("column", "scalar", "mapped_column"):
            return Refusal(
                "a per-row value would need transfers of less than 32 bytes (no DataCopyPad)"
            )
        if info.narrow and (info.narrow * width) % 32:
            return Refusal(
                f"table rows of {info.narrow} elements are not 32-byte multiples and the chip "
                "has no DataCopyPad"
            )
        if cols is None or (cols * width) % 32:
            return Refusal(
                f"rows of {cols if cols is not None else 'dynamic'} elements are not 32-byte "
                "multiples and the chip has no DataCopyPad"
            )
    return plan


def size_tiles_to_ub(plan: RowPlan, ub_bytes: int) -> None:
    """Bytes per tile element and the largest tile: every buffer of the kernel counted."""
    itemsizes = [dtypes.byte_width(cast(TensorType, v.type).element_type) for v in plan.values]
    plan.align_elems = 32 // min([F32, *itemsizes])
    widest = max((i.narrow for i in plan.values.values()), default=0)
    plan.narrow_stride = -(-widest // plan.align_elems) * plan.align_elems
    per_elem = 0
    per_row = 0
    narrow = 0
    for info in plan.values.values():
        width = dtypes.byte_width(cast(TensorType, info.value.type).element_type)
        if info.constant is not None:
            continue  # a splat constant is a scalar register, not a buffer
        if info.narrow:
            # a table's rows of narrow_stride elements: float32 copy and its queue
            narrow += plan.narrow_stride * (F32 + plan.in_depth * width)
        elif info.kind in ("full", "rowvec", "mapped_rows"):
            # working copy in float32, plus a double-buffered queue for GM traffic
            per_elem += F32
            if info.is_input or info.is_output:
                per_elem += (plan.in_depth if info.is_input else plan.out_depth) * width
        elif info.kind == "column":
            per_row += F32
            if info.is_input or info.is_output:
                per_row += (plan.in_depth if info.is_input else plan.out_depth) * width
    # a reduction's scratch (ReduceSum's sharedTmpBuffer): one float per 8 columns, rounded
    if plan.has_reduction:
        per_elem += 1
    # channel-major values (row_transpose.py): the float32 staging of their runs, the
    # i32 gather tables, each about a tile, and the output queue of a value the kernel
    # reads in one layout and writes in the other
    if plan.channel_major:
        per_elem += F32 + F32 * (bool(plan.transposed_sources) + bool(plan.transposed_outputs))
        for info in plan.values.values():
            if info.is_input and info.is_output:
                width = dtypes.byte_width(cast(TensorType, info.value.type).element_type)
                per_elem += plan.out_depth * width
    plan.tile_bytes_per_elem = per_elem
    plan.column_bytes_per_row = per_row
    plan.narrow_bytes_per_row = narrow
    resident = sum(
        F32 * (si.num_elements(i.outer_shape) or 0)
        for i in plan.values.values()
        if i.kind == "mapped_column"
    )
    available = ub_bytes - UB_RESERVE - resident
    # each row carries one column entry per column buffer; rows are >= align_elems wide
    per_tile_elem = per_elem + -(-per_row // plan.align_elems)
    # the tables' rows are whole rows of the view apart (a partial rope's tiles)
    per_tile_elem += -(-narrow // (whole_row_elems(plan) or plan.align_elems))
    elems = available // max(per_tile_elem, 1)
    plan.max_tile_elems = max(0, elems // 64 * 64)


__all__ = ["DYN", "RowPlan", "ValueInfo", "classify", "plan_rows", "shrink_tile", "whole_row_elems"]
