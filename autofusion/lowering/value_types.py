"""The tensor type facts of a graph value the templates read: its element type, its
shape, the bytes of one element, and a shape at given sizes of its dynamic dims."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from autofusion import dtypes
from autofusion.dialects.shape_inference import DYN


def element_type(v: SSAValue) -> Attribute:
    return cast(TensorType, v.type).element_type


def tensor_shape(v: SSAValue) -> tuple[int, ...]:
    return cast(TensorType, v.type).get_shape()


def element_bytes(v: SSAValue) -> int:
    return dtypes.byte_width(element_type(v))


def resolve_dynamic_dims(dims: Sequence[int], given: Sequence[int] | None) -> list[int]:
    """A shape with its dynamic dims replaced (by `given` in order, else 1)."""
    it = iter(given or [])
    return [next(it, 1) if d == DYN else d for d in dims]
