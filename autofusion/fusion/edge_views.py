"""Edge views: a view (a reshape: it moves no data) left between kernels joins the kernel
at one end of it, and comes back out before that kernel is planned for lowering.

After ub-fusion's merges, a view that no merge took sits between two kernels, or between
a function argument and the kernel that reads it, or between a kernel and a function
result. It costs nothing either way (the host passes the same buffer with another
shape), but outside every group it reads as a node of its own: a library op in
fused.mlir and a Reshape node in fused.onnx, which the one-node-one-kernel count charges
as a kernel that reads and writes its tensor. `absorb_edge_views` gives it to the
kernel whose output is all it reads (the view then shapes that output), else to the one
kernel that reads all of it (it then shapes that input), and marks it `afc.edge_view`.
Neither kernel's plan changes: `peel_edge_views` moves the marked views back out of the
group, before or after it, before lower-to-buffer plans the group, so every template
sees the group it planned.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.dialects import graph
from autofusion.dialects.group_plan import EDGE_VIEW_ATTR, edge_chains


class EdgeGroup(Protocol):
    """What absorption uses of partition.py's Group."""

    ops: list[Operation]
    alive: bool
    edge_views: tuple[Operation, ...]


G = TypeVar("G", bound=EdgeGroup)


class Grouping(Protocol[G]):
    """What absorption uses of partition.py's Partitioner (protocols: partition.py
    imports this module)."""

    @property
    def ops(self) -> list[Operation]: ...
    @property
    def index(self) -> dict[Operation, int]: ...
    @property
    def group_of(self) -> dict[Operation, G]: ...
    def is_free_view(self, op: Operation) -> bool: ...


def absorb_edge_views(part: Grouping[G]) -> None:
    """Give every free view to the kernel at one end of it (module docstring): producer
    side first, in op order (a chain follows its head), then the consumer side, last
    view first. A view of a constant stays out (a group copies splat constants in)."""
    for op in part.ops:
        if not part.is_free_view(op):
            continue
        source = op.operands[0]
        owner = source.owner
        p = part.group_of.get(owner) if isinstance(owner, Operation) else None
        if p is not None and p.alive and all(u.operation is op for u in source.uses):
            _take(part, p, op)
    for op in reversed(part.ops):
        if not part.is_free_view(op) or isinstance(op.operands[0].owner, graph.ConstantOp):
            continue
        # every reader in one kernel (a function result or a library op also reads it)
        readers = [part.group_of.get(u.operation) for r in op.results for u in r.uses]
        c = readers[0] if readers else None
        if c is not None and c.alive and all(g is c for g in readers):
            _take(part, c, op)


def _take(part: Grouping[G], g: G, view: Operation) -> None:
    g.ops = sorted({*g.ops, view}, key=part.index.__getitem__)
    g.edge_views = (*g.edge_views, view)
    part.group_of[view] = g


def mark_edge_views(views: tuple[Operation, ...]) -> None:
    for view in views:
        view.attributes[EDGE_VIEW_ATTR] = UnitAttr()


def peel_edge_views(group: graph.FusionGroupOp) -> graph.FusionGroupOp:
    """The group with its marked edge views moved out (a head view before it, on the
    group's input; a tail view after it, on the group's output): the group as ub-fusion
    planned it. The group itself when it has none."""
    body = group.block
    head_views, tail_views = edge_chains(body)
    if not head_views and not tail_views:
        return group
    inputs = dict(zip(body.args, group.inputs))
    heads: list[Operation] = []
    for op in head_views:  # in order: a chain's next view then reads a new argument
        arg = op.operands[0]
        assert isinstance(arg, BlockArgument)
        outer = _unmarked(op)
        outer.operands[0] = inputs[arg]
        heads.append(outer)
        # in its argument's place: the kernel's inputs keep the order they had
        new = body.insert_arg(op.results[0].type, arg.index)
        new.name_hint = op.results[0].name_hint
        op.results[0].replace_all_uses_with(new)
        inputs[new] = outer.results[0]
        body.erase_op(op)
        if not arg.uses:
            del inputs[arg]
            body.erase_arg(arg)
    yield_op = group.yield_op
    tails: list[list[Operation]] = [[] for _ in yield_op.operands]
    for i in range(len(tails)):
        view = yield_op.operands[i].owner
        while view in tail_views:  # from the yield back along the tail chain
            assert isinstance(view, Operation)
            tails[i].append(_unmarked(view))
            yield_op.operands[i] = view.operands[0]
            body.erase_op(view)
            view = yield_op.operands[i].owner
    return _rebuilt(group, [inputs[a] for a in body.args], heads, tails)


def _unmarked(op: Operation) -> Operation:
    clone = op.clone()
    del clone.attributes[EDGE_VIEW_ATTR]
    return clone


def _rebuilt(
    group: graph.FusionGroupOp,
    inputs: list[SSAValue],
    heads: list[Operation],
    tails: list[list[Operation]],
) -> graph.FusionGroupOp:
    """A new group over `inputs` with `group`'s body and plan, the head views before it
    and each result's tail views (nearest the yield first) after it."""
    block = group.body.detach_block(0)
    new = graph.FusionGroupOp(
        inputs,
        [v.type for v in _yielded(block)],
        Region(block),
        properties=dict(group.properties),
    )
    new.attributes.update(group.attributes)
    new.location = group.location
    rewriter = Rewriter()
    for op in heads:
        rewriter.insert_op(op, InsertPoint.before(group))
    rewriter.insert_op(new, InsertPoint.before(group))
    at = InsertPoint.after(new)
    for old, result, chain, inner in zip(group.outputs, new.outputs, tails, _yielded(block)):
        # a peeled result is named after its value in the body (the view keeps the name)
        result.name_hint = inner.name_hint if chain else old.name_hint
        value: SSAValue = result
        for view in reversed(chain):
            view.operands[0] = value
            rewriter.insert_op(view, at)
            at = InsertPoint.after(view)
            value = view.results[0]
        old.replace_all_uses_with(value)
    rewriter.erase_op(group)
    return new


def _yielded(block: Block) -> list[SSAValue]:
    last = block.last_op
    assert isinstance(last, graph.YieldOp)
    return list(last.operands)
