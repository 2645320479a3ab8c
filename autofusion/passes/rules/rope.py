"""RotaryPositionEmbeddingFusionPass: transformers' apply_rotary_pos_emb -> graph.rope.

    x * cos + rotate_half(x) * sin,  rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])

as both torch exporters and our torch frontend write it: two slices (or a split) of the
last axis, a neg and a concat, each product and the sum in either order. The result is
graph.rope with interleaved = false (the GPT-NeoX/Llama layout). The name is that of
CANN's RotaryPositionEmbedding op, which its RotaryMul2RotaryPositionEmbeddingFusionPass
builds from the RotaryMul op; CANN has no pass from the decomposed form.

Preconditions: the halves split the last axis, which is static and even, exactly at
D/2 (a refusal names a wrong split point); cos and sin broadcast to x without changing
its shape; the slices, neg, concat and products have no users outside the pattern.

RopeTransposeSinkPass moves a transpose that keeps the last axis from before a rope to
after it, so the rope runs on the tensor as the projection wrote it:

    rope(transpose(x, p), cos, sin) = transpose(rope(x, cos', sin'), p)

with cos' = transpose(cos, p^-1) (padded to x's rank), which is a reshape when p moves
only cos's size-1 axes (cos [S, D] of BNSD q [B, N, S, D] is [1, S, 1, D] for the BSND
x = [B, S, N, D]). Rope rotates within the last axis and is elementwise elsewhere, so
permuting the other axes commutes with it. The transpose then meets the attention's
layout: FlashAttentionFusionPass absorbs it into layout BSND (or CascadeTransposeRemove
cancels it), where before it stayed a library op moving the whole tensor. Preconditions:
the transpose keeps the last axis, has no other user, and cos and sin need no data
movement (only size-1 axes move) and have at most one dynamic dim (the reshape's -1).
Named in GE's style (afc's).

PartialRotaryFusionPass folds partial rotary (Phi, GPT-NeoX's rotary_pct, GLM):

    concat(rope(x[..., :R], cos, sin), x[..., R:])  ->  rope(x, cos, sin, rotary_dim = R)

so that the head transposes sink through one rope on the whole head. Preconditions: the
concat is over the last axis with the rotated part first; the two parts are unit-step
slices (or a split) of the same static last axis, the rotated one starting at 0 and the
pass-through one covering the rest; the rope is full (no rotary_dim yet) and the parts
have no other users. Named in GE's style (afc's).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


@dataclass
class Rope:
    x: SSAValue
    cos: SSAValue
    sin: SSAValue
    # pattern ops, the root first
    ops: list[Operation]
    # where the rotation splits the last axis
    split_at: int


def _last_axis_part(value: SSAValue) -> tuple[SSAValue, int, int, Operation] | None:
    """(x, start, end, op) when `value` is x[..., start:end] along the last axis (a
    unit-step slice of that axis only, or a part of a split of it)."""
    op = value.owner
    if isinstance(op, graph.SliceOp):
        p = graph.Props(op.properties, op.name)
        rank = len(m.shape(op.input))
        size = m.shape(op.input)[-1]
        axes = [si.normalize_axis(a, rank) for a in p.integers("axes")]
        if axes != [rank - 1] or p.integers("steps") != (1,) or size == si.DYN:
            return None
        start, end, _ = slice(p.integers("starts")[0], p.integers("ends")[0]).indices(size)
        return op.input, start, end, op
    if isinstance(op, graph.SplitOp):
        p = graph.Props(op.properties, op.name)
        rank = len(m.shape(op.input))
        if si.normalize_axis(p.integer("axis"), rank) != rank - 1:
            return None
        if not isinstance(value, OpResult):
            return None
        index = value.index
        sizes = p.integers("sizes")
        start = sum(sizes[:index])
        return op.input, start, start + sizes[index], op
    return None


def _rotate_half(value: SSAValue) -> tuple[SSAValue, list[Operation], int] | None:
    """(x, ops, split point) when `value` is concat(-x[..., h:], x[..., :h])."""
    concat = value.owner
    if not isinstance(concat, graph.ConcatOp) or len(concat.inputs) != 2:
        return None
    rank = len(m.shape(concat.output))
    if si.normalize_axis(graph.Props(concat.properties, concat.name).integer("axis"), rank) != (
        rank - 1
    ):
        return None
    neg = concat.inputs[0].owner
    if not isinstance(neg, graph.NegOp):
        return None
    high, low = _last_axis_part(neg.input), _last_axis_part(concat.inputs[1])
    if high is None or low is None or high[0] is not low[0]:
        return None
    x, h_start, h_end, h_op = high
    _, l_start, l_end, l_op = low
    size = m.shape(x)[-1]
    ops = [concat, neg, h_op] + ([l_op] if l_op is not h_op else [])
    # x[..., h:] and x[..., :h] with the same h: a rotation, possibly at the wrong point
    if l_start != 0 or h_end != size or l_end != h_start:
        return None
    return x, ops, h_start


def parse_rope(add: graph.AddOp) -> Rope | None:
    """x * cos + rotate_half(x) * sin ending at `add`."""
    for first, second in m.commuted(add):
        rot_mul, x_mul = second.owner, first.owner
        if not isinstance(rot_mul, graph.MulOp) or not isinstance(x_mul, graph.MulOp):
            continue
        for rotated, sin in m.commuted(rot_mul):
            found = _rotate_half(rotated)
            if found is None:
                continue
            x, ops, split_at = found
            for xv, cos in m.commuted(x_mul):
                if xv is x:
                    return Rope(x, cos, sin, [add, x_mul, rot_mul, *ops], split_at)
    return None


class FuseRope(FusionRule[Rope]):
    rule_name = "RotaryPositionEmbeddingFusionPass"
    pattern = "Slice|Split->Neg->Concat->Mul(sin), Mul(cos)->Add"
    anchors = (graph.AddOp,)

    def match(self, op: Operation) -> Rope | Refusal | None:
        assert isinstance(op, graph.AddOp)
        found = parse_rope(op)
        if found is None:
            return None
        xs = m.shape(found.x)
        if xs[-1] != 2 * found.split_at:
            return Refusal(
                f"rotate_half splits the last axis of size {xs[-1]} at {found.split_at}, "
                f"not at {xs[-1] // 2}"
            )
        for what, v in (("cos", found.cos), ("sin", found.sin)):
            if not si.broadcasts_to(m.shape(v), xs):
                return Refusal(f"{what} {si.fmt(m.shape(v))} does not broadcast to x {si.fmt(xs)}")
        if m.tensor_type(op.output) != m.tensor_type(found.x) or not m.is_float(found.x):
            return Refusal("the result is not a floating-point tensor of x's type")
        escaping = m.escaping_reason(found.ops, op)
        return Refusal(escaping) if escaping is not None else found

    def rewrite(self, op: Operation, match: Rope, rewriter: PatternRewriter) -> None:
        rope = graph.RopeOp.make([match.x, match.cos, match.sin], {"interleaved": False})
        m.replace_pattern(rewriter, match.ops, [rope])


@dataclass
class TransposedRope:
    transpose: graph.TransposeOp
    perm: tuple[int, ...]
    # the reshape shape of cos and sin in x's layout
    shapes: tuple[list[int], list[int]]


def in_source_layout(v: SSAValue, perm: tuple[int, ...]) -> list[int] | None:
    """v's shape (padded to len(perm)) transposed by perm^-1, if that moves only size-1
    axes (then a reshape gives it, its one dynamic dim, if any, as -1); None otherwise."""
    rank = len(perm)
    shape = m.shape(v)
    if len(shape) > rank:
        return None
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    inverse = [0] * rank
    for i, q in enumerate(perm):
        inverse[q] = i
    moved = [padded[inverse[j]] for j in range(rank)]
    order = [inverse[j] for j in range(rank) if padded[inverse[j]] != 1]
    # a reshape infers one dynamic dim (as -1); two would be ambiguous
    if order != sorted(order) or padded.count(si.DYN) > 1:
        return None
    return [-1 if d == si.DYN else d for d in moved]


def _earlier_reshape(v: SSAValue, shape: list[int], before: Operation) -> SSAValue | None:
    """A reshape of `v` to `shape` earlier in `before`'s block: the ropes of q and k then
    read one table value, which a matmul's rope epilogue streams once for both."""
    for use in v.uses:
        r = use.operation
        if (
            isinstance(r, graph.ReshapeOp)
            and r.parent is before.parent
            and r.is_before_in_block(before)
            and list(graph.Props(r.properties, r.name).integers("shape")) == shape
        ):
            return r.results[0]
    return None


class SinkTransposeThroughRope(FusionRule[TransposedRope]):
    rule_name = "RopeTransposeSinkPass"
    pattern = "Transpose(last axis kept)->Rope"
    anchors = (graph.RopeOp,)

    def match(self, op: Operation) -> TransposedRope | Refusal | None:
        assert isinstance(op, graph.RopeOp)
        t = m.producer(op.input, graph.TransposeOp)
        if t is None:
            return None
        perm = graph.Props(t.properties, t.name).integers("perm")
        if perm[-1] != len(perm) - 1:
            return Refusal("the transpose moves the last axis, which rope rotates")
        if not t.output.has_one_use():
            return Refusal("the transpose has other users")
        shapes = [in_source_layout(v, perm) for v in (op.cos, op.sin)]
        if shapes[0] is None or shapes[1] is None:
            return Refusal(
                "cos or sin would need a transpose that moves data, or a reshape of two "
                "dynamic dims"
            )
        return TransposedRope(t, perm, (shapes[0], shapes[1]))

    def rewrite(self, op: Operation, match: TransposedRope, rewriter: PatternRewriter) -> None:
        assert isinstance(op, graph.RopeOp)
        new_ops: list[Operation] = []
        tables = []
        for v, shape in zip((op.cos, op.sin), match.shapes):
            if [-1 if d == si.DYN else d for d in m.shape(v)] == shape:
                tables.append(v)
                continue
            shared = _earlier_reshape(v, shape, op)
            if shared is not None:
                tables.append(shared)
                continue
            r = graph.ReshapeOp.make([v], {"shape": shape})
            if v.name_hint is not None:
                dims = ("S" if d == -1 else str(d) for d in shape)
                r.results[0].name_hint = f"{v.name_hint}_{'x'.join(dims)}"
            new_ops.append(r)
            tables.append(r.results[0])
        p = graph.Props(op.properties, op.name)
        rope = graph.RopeOp.make(
            [match.transpose.input, *tables],
            {
                "interleaved": p.flag("interleaved"),
                "rotary_dim": p.integer("rotary_dim") if p.has("rotary_dim") else None,
            },
        )
        back = graph.TransposeOp.make([rope.results[0]], {"perm": list(match.perm)})
        new_ops += [rope, back]
        location = m.fused_location([match.transpose, op])
        for new in new_ops:
            new.location = location
        back.results[0].name_hint = op.output.name_hint
        rewriter.replace(op, new_ops, [back.results[0]])
        rewriter.erase(match.transpose)


@dataclass
class PartialRope:
    rope: graph.RopeOp
    x: SSAValue
    rotary_dim: int
    # pattern ops, the concat first
    ops: list[Operation]


class FusePartialRope(FusionRule[PartialRope]):
    rule_name = "PartialRotaryFusionPass"
    pattern = "Slice(:R)->Rope, Slice(R:)->Concat"
    anchors = (graph.ConcatOp,)

    def match(self, op: Operation) -> PartialRope | Refusal | None:
        assert isinstance(op, graph.ConcatOp)
        if len(op.inputs) != 2:
            return None
        rank = len(m.shape(op.output))
        if si.normalize_axis(graph.Props(op.properties, op.name).integer("axis"), rank) != (
            rank - 1
        ):
            return None
        rope = m.producer(op.inputs[0], graph.RopeOp)
        if rope is None:
            if m.producer(op.inputs[1], graph.RopeOp) is not None:
                return Refusal("the pass-through part comes before the rotated part")
            return None
        if graph.Props(rope.properties, rope.name).has("rotary_dim"):
            return Refusal("the rope is already partial")
        head, tail = _last_axis_part(rope.input), _last_axis_part(op.inputs[1])
        if head is None or tail is None or head[0] is not tail[0]:
            return Refusal("the rope's input and the other part are not slices of one tensor")
        x, h_start, h_end, h_op = head
        _, t_start, t_end, t_op = tail
        if h_start != 0 or t_start != h_end or t_end != m.shape(x)[-1]:
            return Refusal(
                f"the parts [{h_start}:{h_end}] and [{t_start}:{t_end}] do not split the last "
                f"axis of size {m.shape(x)[-1]} as [:R] and [R:]"
            )
        ops: list[Operation] = [op, rope, h_op] + ([t_op] if t_op is not h_op else [])
        escaping = m.escaping_reason(ops, op)
        return Refusal(escaping) if escaping is not None else PartialRope(rope, x, h_end, ops)

    def rewrite(self, op: Operation, match: PartialRope, rewriter: PatternRewriter) -> None:
        rope = match.rope
        fused = graph.RopeOp.make(
            [match.x, rope.cos, rope.sin],
            {
                "interleaved": graph.Props(rope.properties, rope.name).flag("interleaved"),
                "rotary_dim": match.rotary_dim,
            },
        )
        m.replace_pattern(rewriter, match.ops, [fused])
