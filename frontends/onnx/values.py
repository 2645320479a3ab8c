"""What the ONNX importer knows of a value (frontends/onnx/importer.py): the ONNX element
types the graph dialect has, and the values the importer's name table holds: `Const`
(known at import time), `Sym` (integers computed from symbolic dims, under two probe
assignments), `Tensor` (an SSA value), and the sequences (`Seq`) and optionals (`Opt`)
of them that the importer resolves at compile time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import graph

# ONNX TensorProto element type -> the name (in autofusion.dtypes) of the graph element type
# it is; the storage-only types (autofusion/narrow_types.py) take casts and quantization only
_TYPE_NAMES: dict[int, str] = {
    TensorProto.FLOAT: "f32",
    TensorProto.FLOAT16: "f16",
    TensorProto.BFLOAT16: "bf16",
    TensorProto.DOUBLE: "f64",
    TensorProto.INT64: "i64",
    TensorProto.INT32: "i32",
    TensorProto.INT16: "i16",
    TensorProto.INT8: "i8",
    TensorProto.UINT64: "ui64",
    TensorProto.UINT32: "ui32",
    TensorProto.UINT16: "ui16",
    TensorProto.UINT8: "ui8",
    TensorProto.BOOL: "i1",
    TensorProto.FLOAT8E4M3FN: "f8E4M3FN",
    TensorProto.FLOAT8E4M3FNUZ: "f8E4M3FNUZ",
    TensorProto.FLOAT8E5M2: "f8E5M2",
    TensorProto.FLOAT8E5M2FNUZ: "f8E5M2FNUZ",
    TensorProto.FLOAT8E8M0: "f8E8M0FNU",
    TensorProto.FLOAT4E2M1: "f4E2M1FN",
    TensorProto.INT4: "i4",
    TensorProto.UINT4: "ui4",
    TensorProto.INT2: "i2",
    TensorProto.UINT2: "ui2",
}
# the ONNX TensorProto element types the graph dialect has
ELEMENT_TYPES: dict[int, Attribute] = {
    code: dtypes.ELEMENT_TYPES[name] for code, name in _TYPE_NAMES.items()
}


def element_type(onnx_type: int, what: str) -> Attribute:
    """The graph element type of an ONNX TensorProto data type."""
    if onnx_type not in ELEMENT_TYPES:
        name = (
            TensorProto.DataType.Name(onnx_type)
            if onnx_type in TensorProto.DataType.values()
            else str(onnx_type)
        )
        known = ", ".join(TensorProto.DataType.Name(t) for t in ELEMENT_TYPES)
        raise UserError(f"{what} has element type {name}, which afc does not support ({known})")
    return ELEMENT_TYPES[onnx_type]


def plain_array(array: np.ndarray, elt: Attribute) -> np.ndarray:
    """An array onnx.numpy_helper gives in an ml_dtypes type (bfloat16, float8, int4, ...)
    as plain numpy holding the same values: float32 for floats, int8/uint8 for integers."""
    if dtypes.is_float(elt) or dtypes.is_narrow_float(elt):
        return array.astype(np.float32)
    return array.astype(dtypes.storage_dtype(elt))


@dataclass(eq=False)
class Const:
    """A value known at import time, in the storage form of `elt` (see autofusion.dtypes)."""

    array: np.ndarray
    elt: Attribute
    hint: str  # resource handle hint: the initializer or node output name
    initializer: str | None = None  # the initializer name, for the constant's `name`
    ssa: SSAValue | None = None  # its graph.constant, once an emitted op used it

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def type(self) -> TensorType:
        return graph.tensor(self.shape, self.elt)


@dataclass(eq=False)
class Sym:
    """An integer/bool tensor that depends on symbolic dims: its values under probes A, B."""

    a: np.ndarray
    b: np.ndarray
    elt: Attribute

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.a.shape)

    @property
    def type(self) -> TensorType:
        return graph.tensor(self.shape, self.elt)


@dataclass(eq=False)
class Tensor:
    """An SSA value of the function, with its shape under probe assignments A and B."""

    ssa: SSAValue
    dims_a: tuple[int, ...]
    dims_b: tuple[int, ...]

    @property
    def type(self) -> TensorType:
        return cast(TensorType, self.ssa.type)

    @property
    def elt(self) -> Attribute:
        return self.type.element_type

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())


Value = Const | Sym | Tensor


@dataclass(eq=False)
class Seq:
    """An ONNX sequence resolved at compile time: its tensors in order (the sequence ops are
    taken apart by the importer, frontends/onnx/ops_sequence.py) and their element type."""

    items: tuple[Value, ...]
    elt: Attribute


@dataclass(eq=False)
class Opt:
    """An ONNX optional resolved at compile time: the value it holds, or None if empty."""

    value: Value | Seq | None


# what a name of the ONNX graph stands for: a tensor, or a sequence or optional of them
Item = Value | Seq | Opt


def item_kind(v: Item) -> str:
    """How diagnostics name a non-tensor value."""
    return "a sequence" if isinstance(v, Seq) else "an optional"


def probe_dims(v: Value) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape of `v` under probe assignments A and B (equal where static)."""
    if isinstance(v, Tensor):
        return v.dims_a, v.dims_b
    return v.shape, v.shape
