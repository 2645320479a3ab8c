"""Whether a rope after a matmul can run as the matmul kernel's epilogue (issue 15, group 1).

A rope joins a cube kernel's [M, N] output tiles only when, per output row m, it needs
just that row: its input is a head reshape [..., S, H, D] of a column range of the
root's output (the whole output, a split result or a last-dim slice of it: a merged
QKV's q or k), that range starts on a head boundary, the rotation is rotate-half (not
interleaved) and the cos/sin tables are indexed by the row's position ([S, D] broadcast
over batch and heads). `rope_columns` finds that range or says by name why not;
`rope_epilogue` is split_cube_group's verdict on a group with ropes: the matmul
template takes ropes on column ranges of its output that read one pair of tables (a
merged QKV's q and k), and writes each group output from its columns of the rotated or
the plain product (q and k roped, v as it is: rope_epilogue_emit.py); it names why not
otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import FusionKind, fusion_kind
from autofusion.lowering.value_types import tensor_shape
from autofusion.passes.fusion_rule import Refusal


@dataclass(frozen=True)
class RopeColumns:
    """A rope's columns in the cube root's output: [start, start + heads * head_dim)."""

    rope: graph.RopeOp
    start: int
    heads: int
    head_dim: int

    @property
    def stop(self) -> int:
        return self.start + self.heads * self.head_dim


def _column_range(root_out: SSAValue, v: SSAValue) -> tuple[int, int] | Refusal:
    """(start, width) of `v` in the last dim of `root_out`, when `v` is it, one of its
    last-axis split results or a unit-step last-axis slice of it."""
    rank = len(tensor_shape(root_out))
    if v is root_out:
        return 0, tensor_shape(root_out)[-1]
    owner = v.owner
    if isinstance(owner, graph.SplitOp) and owner.operands[0] is root_out:
        p = graph.Props(owner.properties, owner.name)
        if si.normalize_axis(p.integer("axis"), rank) != rank - 1:
            return Refusal("the split before the rope is not along the matmul's columns")
        sizes = p.integers("sizes")
        i = next(n for n, r in enumerate(owner.results) if r is v)
        return sum(sizes[:i]), sizes[i]
    if isinstance(owner, graph.SliceOp) and owner.operands[0] is root_out:
        p = graph.Props(owner.properties, owner.name)
        axes = [si.normalize_axis(a, rank) for a in p.integers("axes")]
        starts, steps = p.integers("starts"), p.integers("steps")
        if axes != [rank - 1] or steps != (1,) or starts[0] < 0:
            return Refusal("the slice before the rope is not a column range of the matmul")
        return starts[0], tensor_shape(v)[-1]
    what = owner.name if isinstance(owner, Operation) else "a block argument"
    return Refusal(f"the rope reads {what}, not a column range of the matmul's output")


def _table_refusal(rope: graph.RopeOp, x_shape: tuple[int, ...]) -> Refusal | None:
    """Why the cos/sin tables are not indexed by the output row: [S, D] broadcast over
    batch and heads of the [B, S, H, D] input (padded to its rank: [1, S, 1, D])."""
    for name, t in (("cos", rope.operands[1]), ("sin", rope.operands[2])):
        shape = tensor_shape(t)
        padded = (1,) * (len(x_shape) - len(shape)) + shape
        seq_ok = padded[-3] == x_shape[-3]  # one table row per position, none broadcast
        if (
            len(padded) != len(x_shape)
            or padded[-1] != x_shape[-1]
            or padded[-2] != 1
            or not seq_ok
            or any(d != 1 for d in padded[:-3])
        ):
            return Refusal(
                f"the rope's {name} table of shape {si.fmt(shape)} is not indexed by the "
                f"output row (an [S, D] table broadcast over batch and heads of the "
                f"{si.fmt(x_shape)} input)"
            )
    return None


def rope_columns(root_out: SSAValue, rope: graph.RopeOp) -> RopeColumns | Refusal:
    """The rope's whole-head column range in `root_out` (the product the epilogue
    rotates), or why its rows are not the product's rows."""
    props = graph.Props(rope.properties, rope.name)
    if props.flag("interleaved"):
        return Refusal("an interleaved rope (adjacent pairs) has no cube epilogue")
    if (
        props.has("rotary_dim")
        and props.integer("rotary_dim") != tensor_shape(rope.operands[0])[-1]
    ):
        return Refusal(
            f"a partial rope (rotary_dim {props.integer('rotary_dim')}) has no cube epilogue: "
            "it rotates whole heads"
        )
    out_shape, x = tensor_shape(root_out), rope.operands[0]
    x_shape = tensor_shape(x)
    reshape = x.owner
    if not isinstance(reshape, graph.ReshapeOp) or len(x_shape) != len(out_shape) + 1:
        return Refusal("the rope's input is not a [..., heads, head_dim] reshape of the matmul")
    src = reshape.operands[0]
    heads, head_dim = x_shape[-2], x_shape[-1]
    if tensor_shape(src)[:-1] != x_shape[:-2] or si.DYN in (heads, head_dim):
        return Refusal("the rope's reshape does not split the matmul's columns into heads")
    found = _column_range(root_out, src)
    if isinstance(found, Refusal):
        return found
    start, width = found
    if width != heads * head_dim or start % head_dim:
        return Refusal(
            f"the rope's columns [{start}, {start + width}) are not whole heads of dim "
            f"{head_dim} in the matmul's output"
        )
    why = _table_refusal(rope, x_shape)
    if why is not None:
        return why
    return RopeColumns(rope, start, heads, head_dim)


@dataclass(frozen=True)
class ColumnOutput:
    """A group output written from the columns [start, stop) of the root's output view,
    rotated (a rope's result) or as the product (the output, or a column view of it)."""

    value: SSAValue
    start: int
    stop: int
    roped: bool


@dataclass(frozen=True)
class RopeEpilogue:
    """The ropes a matmul's epilogue runs on column ranges of its output (a merged QKV's
    q and k), all with the same cos/sin tables and head dim, and what each group output
    takes: every output tile is rotated per head, and each output gets its columns of
    the rotated or of the plain tile."""

    ropes: tuple[RopeColumns, ...]
    outputs: tuple[ColumnOutput, ...]
    source: SSAValue  # the product the ropes' column views read (product_chain)

    @property
    def rope(self) -> graph.RopeOp:
        """The rope the kernel's emitter stands for (all read the same tables)."""
        return self.ropes[0].rope

    @property
    def head_dim(self) -> int:
        return self.ropes[0].head_dim

    @property
    def tables(self) -> list[SSAValue]:
        return list(dict.fromkeys(self.rope.operands[1:]))


def _view_columns(root_out: SSAValue, v: SSAValue) -> tuple[int, int] | Refusal:
    """(start, width) of `v` in `root_out`'s columns when `v` is a column range of it,
    possibly reshaped into heads (the leading dims kept, the last split)."""
    owner = v.owner
    if isinstance(owner, graph.ReshapeOp) and v is not root_out:
        src = owner.operands[0]
        lead = tensor_shape(src)[:-1]
        shape = tensor_shape(v)
        if tuple(shape[: len(lead)]) != tuple(lead) or si.DYN in shape[len(lead) :]:
            return Refusal("a reshape of the matmul's columns changes its rows")
        return _column_range(root_out, src)
    return _column_range(root_out, v)


def product_chain(root: Operation, epilogue: Sequence[Operation]) -> list[Operation]:
    """The column-preserving ops the epilogue applies to the whole product before the
    ropes' column views (a norm prologue's row scale, a bias add): each elementwise or
    broadcast, of the chain's value only as its first operand, with the value's shape, so
    column c of its result depends on column c of the product alone and a column range
    of the result is the op on that range."""
    chain: list[Operation] = []
    value = root.results[0]
    ops = set(epilogue)
    while True:
        users = [u.operation for u in value.uses]
        if len(users) != 1 or users[0] not in ops:
            return chain
        op = users[0]
        kind = fusion_kind(op)
        if (
            isinstance(op, graph.RopeOp)
            or kind not in (FusionKind.ELEMENTWISE, FusionKind.BROADCAST)
            or len(op.results) != 1
            or op.operands[0] is not value
            or any(v is value for v in op.operands[1:])
            or tensor_shape(op.results[0]) != tensor_shape(value)
        ):
            return chain
        chain.append(op)
        value = op.results[0]


def _epilogue_refusal(root_out: SSAValue, op: Operation) -> Refusal | None:
    """Why `op` is not a column view of the root's output the rope epilogue reads through
    (a slice or split of its columns, a reshape of one into heads)."""
    if isinstance(op, graph.RopeOp):
        return None
    if isinstance(op, (graph.SliceOp, graph.SplitOp)) and op.operands[0] is root_out:
        return None
    if isinstance(op, graph.ReshapeOp):
        src = op.operands[0]
        if src is root_out or isinstance(src.owner, (graph.SliceOp, graph.SplitOp)):
            return None
    return Refusal(
        f"{op.name} with a rope after a cube op: the rope epilogue takes column slices, "
        "head reshapes and ropes only"
    )


def _tables(rope: graph.RopeOp) -> list[SSAValue]:
    """The rope's cos and sin before any reshape: two ropes whose tables are reshapes of
    the same tensors (each rope's own, as RopeTransposeSinkPass makes them) read the same
    rows, as both are [S, D] tables by position (_table_refusal)."""
    found = []
    for table in rope.operands[1:]:
        source = table
        while isinstance(source.owner, graph.ReshapeOp):
            source = source.owner.operands[0]
        found.append(source)
    return found


def rope_epilogue(
    root: Operation, epilogue: Sequence[Operation], outputs: Sequence[SSAValue]
) -> RopeEpilogue | Refusal:
    """The ropes a matmul's epilogue takes on column ranges of its output and where each
    group output's columns come from, or why not: the first rope the analysis refuses,
    ropes that read different tables, or an op that is not a column view of the output."""
    chain = product_chain(root, epilogue)
    root_out = chain[-1].results[0] if chain else root.results[0]
    ranges: list[RopeColumns] = []
    for op in epilogue:
        if op in chain:
            continue
        if isinstance(op, graph.RopeOp):
            found = rope_columns(root_out, op)
            if isinstance(found, Refusal):
                return Refusal(f"{op.name} after a cube op: {found.reason}")
            ranges.append(found)
        why = _epilogue_refusal(root_out, op)
        if why is not None:
            return why
    first = ranges[0]
    for r in ranges[1:]:
        if _tables(r.rope) != _tables(first.rope):
            return Refusal(
                "graph.rope after a cube op: the ropes read different cos/sin tables; the "
                "rope epilogue streams one pair"
            )
        if r.head_dim != first.head_dim:
            return Refusal(
                f"graph.rope after a cube op: head dims {first.head_dim} and {r.head_dim}; "
                "the rope epilogue rotates one head dim"
            )
    if first.head_dim % 8:
        # a head's halves and the per-head vector ops start 32-byte aligned in UB
        return Refusal(
            f"a rope epilogue needs a head dim that is a multiple of 8, not {first.head_dim}"
        )
    roped: dict[SSAValue, RopeColumns] = {r.rope.results[0]: r for r in ranges}
    columns: list[ColumnOutput] = []
    for v in outputs:
        if v in roped:
            taken = roped[v]
            columns.append(ColumnOutput(v, taken.start, taken.stop, True))
            continue
        span = _view_columns(root_out, v)
        if isinstance(span, Refusal):
            what = v.owner.name if isinstance(v.owner, Operation) else "a block argument"
            return Refusal(
                f"{what} is read outside a rope epilogue: {span.reason}; the epilogue "
                "writes ropes and column ranges of the product only"
            )
        start, width = span
        columns.append(ColumnOutput(v, start, start + width, False))
    return RopeEpilogue(tuple(ranges), tuple(columns), root_out)


def group_rope(
    root: Operation, epilogue: Sequence[Operation], outputs: Sequence[SSAValue]
) -> RopeEpilogue | None:
    """The rope of a matmul group split_cube_group took (None: the group has none)."""
    if not any(isinstance(op, graph.RopeOp) for op in epilogue):
        return None
    found = rope_epilogue(root, epilogue, outputs)
    assert not isinstance(found, Refusal), found.reason
    return found
