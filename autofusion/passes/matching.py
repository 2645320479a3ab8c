"""Small queries and builders that fusion rules share: producers, uses, constants, locations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar, cast

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    FusedLoc,
    LocationAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion import dtypes, resources
from autofusion.dialects import graph
from autofusion.passes.fusion_statistics import describe_op

OpT = TypeVar("OpT", bound=Operation)

# constants up to this many elements stay inline (dense); larger ones become blobs
INLINE_ELEMENTS = 16


def producer(value: SSAValue, kind: type[OpT]) -> OpT | None:
    """The op of type `kind` that defines `value`, if that is what defines it."""
    owner = value.owner
    return owner if isinstance(owner, kind) else None


def single_use(value: SSAValue) -> bool:
    return value.has_one_use()


def tensor_type(value: SSAValue) -> TensorType:
    return cast(TensorType, value.type)


def shape(value: SSAValue) -> tuple[int, ...]:
    return tensor_type(value).get_shape()


def constant_op(value: SSAValue) -> graph.ConstantOp | None:
    return producer(value, graph.ConstantOp)


def constant_array(value: SSAValue) -> np.ndarray | None:
    """Values of a constant (storage form); None if not a constant or shape-only."""
    c = constant_op(value)
    return resources.constant_array(c.value) if c is not None else None


def splat_value(value: SSAValue) -> float | None:
    """The single value of a constant whose elements are all equal (e.g. 0.5, 1e-5)."""
    arr = constant_array(value)
    if arr is None or arr.size == 0:
        return None
    flat = np.asarray(arr, dtype=np.float64).reshape(-1)
    return float(flat[0]) if np.all(flat == flat[0]) else None


def is_splat(value: SSAValue, expected: float, rtol: float = 1e-3) -> bool:
    v = splat_value(value)
    return v is not None and bool(np.isclose(v, expected, rtol=rtol, atol=0))


def fused_location(ops: Iterable[Operation]) -> LocationAttr:
    """The locations of `ops` as one (MLIR's FusedLoc); unknown locations are dropped."""
    locs: list[LocationAttr] = []
    for op in ops:
        loc = op.location
        parts = (
            cast(ArrayAttr[LocationAttr], loc.locations).data
            if isinstance(loc, FusedLoc)
            else (loc,)
        )
        for p in parts:
            if not isinstance(p, UnknownLoc) and p not in locs:
                locs.append(p)
    if not locs:
        return UnknownLoc()
    if len(locs) == 1:
        return locs[0]
    return FusedLoc(ArrayAttr(locs), NoneAttr())


def make_constant(array: np.ndarray | None, tensor_t: TensorType, name: str) -> graph.ConstantOp:
    """A graph.constant holding `array` (storage form), or shape-only when it is None."""
    attrs: dict[str, Attribute] = {"name": StringAttr(name)}
    if array is None:
        return _named(graph.ConstantOp(None, tensor_t, attrs), name)
    stored = dtypes.to_storage(
        np.asarray(array).reshape(tensor_t.get_shape()), tensor_t.element_type
    )
    if stored.size <= INLINE_ELEMENTS:
        return _named(graph.ConstantOp(resources.dense_attr(stored, tensor_t), None, attrs), name)
    flat = stored.reshape(-1)
    # bitwise equal (so -0.0 and 0.0 differ, and a NaN splat is still a splat)
    if flat.tobytes() == flat[:1].tobytes() * flat.size:
        return _named(graph.ConstantOp(resources.dense_attr(flat[:1], tensor_t), None, attrs), name)
    return _named(graph.ConstantOp(resources.add_blob(name, stored, tensor_t), None, attrs), name)


def _named(op: graph.ConstantOp, name: str) -> graph.ConstantOp:
    """Give the constant's SSA value a readable name derived from the weight's name."""
    hint = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    if hint and not hint[0].isdigit():
        op.result.name_hint = hint
    return op


def constant_name(value: SSAValue, fallback: str) -> str:
    c = constant_op(value)
    name = c.attributes.get("name") if c is not None else None
    return name.data if isinstance(name, StringAttr) else fallback


def all_constant(values: Sequence[SSAValue]) -> bool:
    return all(constant_op(v) is not None for v in values)


# --------------------------------------------------------------------------------------
# Recognition helpers: commuted operands, equivalent values, pattern-internal uses
# --------------------------------------------------------------------------------------


def commuted(op: Operation) -> tuple[tuple[SSAValue, SSAValue], tuple[SSAValue, SSAValue]]:
    """Both orders of a binary op's operands, for matching commutative ops (add, mul)."""
    a, b = op.operands
    return ((a, b), (b, a))


def same_value(a: SSAValue, b: SSAValue) -> bool:
    """`a` is `b`, or both are results of one-level identical pure ops (the same cast or
    subtraction built twice by an exporter)."""
    if a is b:
        return True
    pa, pb = a.owner, b.owner
    return (
        isinstance(pa, graph.GraphOp)
        and type(pa) is type(pb)
        and isinstance(pb, Operation)
        and len(pa.results) == 1
        and tuple(pa.operands) == tuple(pb.operands)
        and pa.properties == pb.properties
        and a.type == b.type
    )


def escaping_reason(ops: Sequence[Operation], root: Operation) -> str | None:
    """Why the pattern `ops` cannot be replaced at `root`: one of its other ops is read
    outside the pattern (None when none is).

    A rewrite that replaces `root` by a fused op deletes the other ops of the pattern;
    that is only a saving (and only correct) when nothing else reads them.
    """
    members = set(ops)
    for op in ops:
        if op is root:
            continue
        for result in op.results:
            if any(use.operation not in members for use in result.uses):
                return f"{describe_op(op)} is also used outside the pattern"
    return None


def replace_pattern(
    rewriter: PatternRewriter,
    ops: Sequence[Operation],
    new_ops: Sequence[Operation],
    extra: Sequence[Operation] = (),
) -> None:
    """Replace the pattern `ops` (its root first) by `new_ops` (the fused op last, located
    at the pattern's ops), then erase what became dead of `ops` and `extra`."""
    root = ops[0]
    constants = [o.owner for o in root.operands if isinstance(o.owner, graph.ConstantOp)]
    new_ops[-1].location = fused_location(reversed(ops))
    rewriter.replace(root, list(new_ops))
    erase_dead(rewriter, [*ops[1:], *extra, *constants])


def erase_dead(rewriter: PatternRewriter, ops: Sequence[Operation]) -> None:
    """Erase those of `ops` (and the constants they read) that no longer have users.

    Run after replacing a pattern's root: its intermediates are dead then, and erasing
    them here saves the walker one full sweep per level of the pattern.
    """
    pending = [op for op in ops if op.parent is not None]
    progress = True
    while progress:
        progress = False
        for op in list(pending):
            if op.parent is None or any(r.uses for r in op.results):
                continue
            constants = [o.owner for o in op.operands if isinstance(o.owner, graph.ConstantOp)]
            rewriter.erase(op)
            pending.remove(op)
            progress = True
            for c in constants:
                if c not in pending:
                    pending.append(c)


def trailing_axes(op: graph.ReduceOp) -> int | None:
    """k when `op` reduces exactly the last k axes with keepdims, else None."""
    if not graph.Props(op.properties, op.name).flag("keepdims"):
        return None
    rank = len(shape(op.input))
    axes = op.reduced_axes()
    k = len(axes)
    return k if k >= 1 and axes == tuple(range(rank - k, rank)) else None


def is_float(value: SSAValue) -> bool:
    return dtypes.is_float(tensor_type(value).element_type)


# --------------------------------------------------------------------------------------
# Layout and folding helpers (attention, horizontal matmul, layout and constant folding)
# --------------------------------------------------------------------------------------


def sole_user(value: SSAValue) -> Operation | None:
    """The op that uses `value`, if that is its only use."""
    if not value.has_one_use():
        return None
    return next(iter(value.uses)).operation


def compose_perms(inner: Sequence[int], outer: Sequence[int]) -> tuple[int, ...]:
    """The perm p with transpose(transpose(x, inner), outer) == transpose(x, p)."""
    return tuple(inner[i] for i in outer)


def is_identity_perm(perm: Sequence[int]) -> bool:
    return all(i == p for i, p in enumerate(perm))


def static_elements(value: SSAValue) -> int | None:
    """The number of elements of a statically shaped tensor, else None."""
    dims = shape(value)
    return None if any(d < 0 for d in dims) else int(np.prod(dims, dtype=np.int64))


# folded results up to this many elements are always materialized (16 KiB of f32)
FOLD_LIMIT_ELEMENTS = 4096


def fold_is_bounded(op: Operation, result_elements: int) -> bool:
    """Whether folding `op` into constants of `result_elements` keeps the weights bounded.

    Results of at most FOLD_LIMIT_ELEMENTS always fold. Larger ones fold only when the
    constant operands that die with `op` (it is their only user) hold at least as many
    elements: a weight is then replaced, never duplicated (a transposed copy beside a
    still-used original), and a small constant is never blown up (a scalar expanded to
    a large tensor).
    """
    if result_elements <= FOLD_LIMIT_ELEMENTS:
        return True
    dying = 0
    for value in dict.fromkeys(op.operands):
        if constant_op(value) is not None and all(u.operation is op for u in value.uses):
            dying += static_elements(value) or 0
    return result_elements <= dying
