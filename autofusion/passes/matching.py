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

from autofusion import dtypes, resources
from autofusion.dialects import graph

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


def all_have_values(values: Sequence[SSAValue]) -> bool:
    return all(constant_array(v) is not None for v in values)


def all_constant(values: Sequence[SSAValue]) -> bool:
    return all(constant_op(v) is not None for v in values)
