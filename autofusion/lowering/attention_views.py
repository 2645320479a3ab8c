"""Strided operand views of the attention kernel: q, k or v read in place from a wider
tensor, e.g. their columns of a merged QKV projection.

    qkv = x @ W_qkv                                    [B, S, Nq + Nk + Nv]
    k   = reshape(slice(qkv, [Nq, Nq + Nk), axis 2), [B, S, Hkv, D])    (BSND)

A BSND operand is a sequence of token rows: row (b, s) holds the heads of one token, so
head h of token (b, s) starts at element offset + (b * S + s) * token_stride + h *
head_stride of the source and its D values are contiguous. A contiguous BSND tensor has
token_stride H * D and head_stride D; a view of a column range of [B, S, C] has
token_stride C and a column offset. The attention kernel reads its K/V/Q blocks with
DataCopyPad row strides (attention_emit.py `_row_of`), so it reads such a view as cheaply
as the whole tensor, and the view's ops (graph.slice, graph.reshape) join its group
instead of a copy kernel (SplitSliceFusionPass's slices; split_slices.py).

The view ops may only change the dims after (B, S): a unit-step slice on them and a
reshape that keeps B and S (copies them, or repeats their static sizes). Dynamic B and
S are fine (the kernel's runtime B and S index the rows); the inner dims are static.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.ir import Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.row_views import Strided
from autofusion.lowering.template import GroupParts
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal

VIEW_OPS = (graph.SliceOp, graph.ReshapeOp)
# the dims a view keeps: B and S of a BSND operand (rows of tokens)
TOKEN_DIMS = 2


@dataclass(frozen=True)
class TokenView:
    """Where a BSND operand's elements are in its GM source (module docstring)."""

    source: SSAValue
    offset: int
    token_stride: int
    head_stride: int

    def row_of(self, idx: IrOps, token: SSAValue, head: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(element offset, row stride) of `head` of token row `token` (= b * S + s); the
        next token's row is token_stride further."""
        c = idx.const
        at = idx.add(
            idx.add(idx.mul(token, c(self.token_stride)), idx.mul(head, c(self.head_stride))),
            c(self.offset),
        )
        return at, c(self.token_stride)


@dataclass(frozen=True)
class OperandViews:
    """The views of a group's root operands (by operand index) and the group without its
    view ops (what the root and its epilogue plan as before)."""

    views: dict[int, TokenView]
    parts: GroupParts


def _token_view(op: Operation, base: Strided) -> Strided | Refusal | None:
    """`base` (source dims B and S taken as 1) seen through view op `op`, None when it
    is not a strided view, or why it changes B or S."""
    x, out = tensor_shape(op.operands[0]), tensor_shape(op.results[0])
    if isinstance(op, graph.SliceOp):
        p = graph.Props(op.properties, op.name)
        if any(a % len(x) < TOKEN_DIMS for a in p.integers("axes")):
            return Refusal(f"{op.name} slices the batch or sequence dim of an attention operand")
        return base.sliced(op)
    wanted = graph.Props(op.properties, op.name).integers("shape")
    for d in range(TOKEN_DIMS):
        keeps = d < len(wanted) and (wanted[d] == 0 or (x[d] != DYN and out[d] == x[d]))
        if len(out) <= TOKEN_DIMS or not keeps:
            return Refusal(f"{op.name} changes the batch or sequence dims of an attention operand")
    return base.reshaped([1] * TOKEN_DIMS + list(out[TOKEN_DIMS:]))


def _chain(x: SSAValue, inputs: Sequence[SSAValue]) -> tuple[TokenView, list[Operation]] | Refusal:
    """The view of BSND operand `x` through view ops back to a group input, and the ops."""
    ops: list[Operation] = []
    while not (x in inputs or not isinstance(x.owner, VIEW_OPS)):
        ops.insert(0, x.owner)
        x = x.owner.operands[0]
    if x not in inputs:
        return Refusal(
            f"a prologue op ({cast(Operation, x.owner).name}) feeds the graph.flash_attention: "
            "it reads q, k and v from GM, through slices and reshapes only"
        )
    shape = tensor_shape(x)
    if len(shape) <= TOKEN_DIMS or DYN in shape[TOKEN_DIMS:]:
        return Refusal(
            f"an attention operand viewed from a tensor of shape {list(shape)}: the view "
            "needs [B, S, ...] with static inner dims"
        )
    view = Strided.contiguous([1] * TOKEN_DIMS + list(shape[TOKEN_DIMS:]))
    assert view is not None  # static dims
    for op in ops:
        found = _token_view(op, view)
        if isinstance(found, Refusal):
            return found
        if found is None:
            return Refusal(f"{op.name} is not a strided view of the attention's input")
        view = found
    if view.strides[-1] != 1:
        return Refusal("an attention operand view whose head dim is not contiguous")
    return TokenView(x, view.offset, _row_elems(shape), view.strides[TOKEN_DIMS]), ops


def _row_elems(shape: Sequence[int]) -> int:
    """Elements of one token row of a [B, S, ...] tensor."""
    n = 1
    for d in shape[TOKEN_DIMS:]:
        n *= d
    return n


def operand_views(
    parts: GroupParts, root: Operation, bsnd: bool, chip: ChipSpec
) -> OperandViews | Refusal:
    """The views through which `root` (a flash attention) reads q, k and v, or why one
    cannot be read in place. A view's ops may feed nothing but the next view op or the
    root; an operand computed by any other op is left to the cube group's checks."""
    inside = set(parts.ops)
    views: dict[int, TokenView] = {}
    taken: list[Operation] = []
    for i, x in enumerate(root.operands[:3]):
        if x in parts.inputs or not isinstance(x.owner, VIEW_OPS) or x.owner not in inside:
            continue
        found = _chain(x, parts.inputs)
        if isinstance(found, Refusal):
            return found
        view, ops = found
        if not bsnd:
            return Refusal("a strided view of a BNSD attention operand (views are token rows)")
        for op, reader in zip(ops, [*ops[1:], root]):
            r = op.results[0]
            if r in parts.outputs or any(u.operation is not reader for u in r.uses):
                return Refusal(f"the view {op.name} of an attention operand is read elsewhere")
        w = byte_width(element_type(x))
        if not chip.data_copy_pad and any(
            (n * w) % 32 for n in (view.offset, view.token_stride, view.head_stride)
        ):
            return Refusal(
                "an attention operand view not on 32-byte boundaries and the chip has no "
                "DataCopyPad"
            )
        views[i] = view
        taken += [op for op in ops if op not in taken]
    if not views:
        return OperandViews({}, parts)
    ops = [op for op in parts.ops if op not in taken]
    read = {v for op in ops for v in op.operands}
    inputs = [v for v in parts.inputs if v in read]
    inputs += [root.operands[i] for i in views if root.operands[i] not in inputs]
    return OperandViews(views, GroupParts(ops, inputs, parts.outputs))


def attention_operand_views(parts: GroupParts, chip: ChipSpec) -> OperandViews | Refusal:
    """`operand_views` of the group's flash attention (none without one)."""
    root = next((op for op in parts.ops if isinstance(op, graph.FlashAttentionOp)), None)
    if root is None:
        return OperandViews({}, parts)
    bsnd = graph.Props(root.properties, root.name).text("layout") == "BSND"
    return operand_views(parts, root, bsnd, chip)
