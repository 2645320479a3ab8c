"""The tensor type facts of a graph value the templates read: its element type, its
shape and the bytes of one element."""

from __future__ import annotations

from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from autofusion import dtypes


def element_type(v: SSAValue) -> Attribute:
    return cast(TensorType, v.type).element_type


def tensor_shape(v: SSAValue) -> tuple[int, ...]:
    return cast(TensorType, v.type).get_shape()


def element_bytes(v: SSAValue) -> int:
    return dtypes.byte_width(element_type(v))
