"""Element types of the graph dialect and their numpy storage.

bf16 has no numpy dtype without extra packages, so a bf16 tensor is stored as float32
holding only bf16-representable values (rounded to nearest even after every op). f16
tensors are stored as float16, and f16 arithmetic is done in float32 and rounded back,
which is also what Ascend's vector unit gives for the count-form APIs.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

# unsigned integer types (MLIR `ui8` ...); signless `iN` are signed, as in ONNX
ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16 = IntegerType(16, Signedness.UNSIGNED)
ui32 = IntegerType(32, Signedness.UNSIGNED)
ui64 = IntegerType(64, Signedness.UNSIGNED)

# name used in diagnostics, npz files and the text frontend -> MLIR element type
ELEMENT_TYPES: dict[str, Attribute] = {
    "f32": f32,
    "f16": f16,
    "bf16": bf16,
    "f64": f64,
    "i64": i64,
    "i32": i32,
    "i16": i16,
    "i8": i8,
    "ui64": ui64,
    "ui32": ui32,
    "ui16": ui16,
    "ui8": ui8,
    "i1": i1,
}

_STORAGE: dict[str, type[np.generic]] = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.float32,
    "f64": np.float64,
    "i64": np.int64,
    "i32": np.int32,
    "i16": np.int16,
    "i8": np.int8,
    "ui64": np.uint64,
    "ui32": np.uint32,
    "ui16": np.uint16,
    "ui8": np.uint8,
    "i1": np.bool_,
}

# bytes per element in memory (GM/UB); bf16 is 2 bytes even though we store it as f32
_BYTES: dict[str, int] = {
    "f32": 4,
    "f16": 2,
    "bf16": 2,
    "f64": 8,
    "i64": 8,
    "i32": 4,
    "i16": 2,
    "i8": 1,
    "ui64": 8,
    "ui32": 4,
    "ui16": 2,
    "ui8": 1,
    "i1": 1,
}


class UnsupportedElementType(ValueError):
    """An element type outside the set the graph dialect accepts."""


def type_name(element_type: Attribute) -> str:
    """The short name (`f32`, `bf16`, `i1`, ...) of a supported element type."""
    if isinstance(element_type, Float32Type):
        return "f32"
    if isinstance(element_type, Float16Type):
        return "f16"
    if isinstance(element_type, BFloat16Type):
        return "bf16"
    if isinstance(element_type, Float64Type):
        return "f64"
    if isinstance(element_type, IntegerType):
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        name = f"{'ui' if unsigned else 'i'}{element_type.width.data}"
        if name in _STORAGE:
            return name
    raise UnsupportedElementType(f"unsupported element type {element_type}")


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float32Type | Float16Type | BFloat16Type | Float64Type)


def is_integer(element_type: Attribute) -> bool:
    """A signed or unsigned integer type (not i1, which is bool)."""
    return isinstance(element_type, IntegerType) and element_type.width.data > 1


def is_supported(element_type: Attribute) -> bool:
    try:
        type_name(element_type)
    except UnsupportedElementType:
        return False
    return True


def storage_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype the interpreter stores values of `element_type` in."""
    return np.dtype(_STORAGE[type_name(element_type)])


def byte_width(element_type: Attribute) -> int:
    """Bytes one element takes in device memory."""
    return _BYTES[type_name(element_type)]


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bf16 value (ties to even), kept as float32."""
    shape = np.shape(x)
    bits = np.ascontiguousarray(x, dtype=np.float32).reshape(-1).view(np.uint32)
    nan = np.isnan(bits.view(np.float32))
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    out = ((bits + rounding) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(nan, np.float32(np.nan), out).astype(np.float32).reshape(shape)


def to_storage(x: np.ndarray | np.generic | float, element_type: Attribute) -> np.ndarray:
    """Convert a computed array to the storage of `element_type`, rounding as the type does."""
    name = type_name(element_type)
    arr = np.asarray(x)
    if name == "bf16":
        return round_bf16(arr.astype(np.float32))
    if name == "i1":
        return arr.astype(np.bool_)
    return arr.astype(_STORAGE[name])


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    return (round_bf16(x).view(np.uint32) >> 16).astype(np.uint16)


def from_bytes(data: bytes, element_type: Attribute, shape: tuple[int, ...]) -> np.ndarray:
    """Decode little-endian raw bytes (MLIR dense/blob layout) into storage form."""
    name = type_name(element_type)
    if name == "bf16":
        arr = bf16_bits_to_f32(np.frombuffer(data, dtype="<u2"))
    elif name == "i1":
        arr = np.frombuffer(data, dtype=np.uint8) != 0
    else:
        arr = np.frombuffer(data, dtype=np.dtype(_STORAGE[name]).newbyteorder("<"))
        arr = arr.astype(_STORAGE[name])
    return arr.reshape(shape)


def to_bytes(arr: np.ndarray, element_type: Attribute) -> bytes:
    """Encode a storage-form array as little-endian raw bytes (MLIR layout)."""
    name = type_name(element_type)
    if name == "bf16":
        return f32_to_bf16_bits(np.asarray(arr, dtype=np.float32)).astype("<u2").tobytes()
    if name == "i1":
        return np.asarray(arr, dtype=np.bool_).astype(np.uint8).tobytes()
    return np.ascontiguousarray(arr, dtype=np.dtype(_STORAGE[name]).newbyteorder("<")).tobytes()
