"""Element types of the graph dialect and their numpy storage.

bf16 has no numpy dtype without extra packages, so a bf16 tensor is stored as float32
holding only bf16-representable values (rounded to nearest even after every op). f16
tensors are stored as float16, and f16 arithmetic is done in float32 and rounded back,
which is also what Ascend's vector unit gives for the count-form APIs.

The float8, float4 and 4/2-bit integer types are storage-only (autofusion/narrow_types.py):
the graph dialect casts and (de)quantizes them and moves them around, but has no
arithmetic on them (the chip has none either).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
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

from autofusion import narrow_types

# unsigned integer types (MLIR `ui8` ...); signless `iN` are signed, as in ONNX
ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16 = IntegerType(16, Signedness.UNSIGNED)
ui32 = IntegerType(32, Signedness.UNSIGNED)
ui64 = IntegerType(64, Signedness.UNSIGNED)
i4 = IntegerType(4)
ui4 = IntegerType(4, Signedness.UNSIGNED)
i2 = IntegerType(2)
ui2 = IntegerType(2, Signedness.UNSIGNED)
f8E4M3FN = Float8E4M3FNType()
f8E4M3FNUZ = Float8E4M3FNUZType()
f8E5M2 = Float8E5M2Type()
f8E5M2FNUZ = Float8E5M2FNUZType()
f8E8M0FNU = Float8E8M0FNUType()
f4E2M1FN = Float4E2M1FNType()

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
    "f8E4M3FN": f8E4M3FN,
    "f8E4M3FNUZ": f8E4M3FNUZ,
    "f8E5M2": f8E5M2,
    "f8E5M2FNUZ": f8E5M2FNUZ,
    "f8E8M0FNU": f8E8M0FNU,
    "f4E2M1FN": f4E2M1FN,
    "i4": i4,
    "ui4": ui4,
    "i2": i2,
    "ui2": ui2,
}
# the storage-only types (no arithmetic: casts, quantization and data movement only)
NARROW = frozenset(narrow_types.BITS)

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
    **{name: np.float32 for name in (*narrow_types.FLOAT_FORMATS, narrow_types.E8M0)},
    **{
        name: np.int8 if signed else np.uint8
        for name, (_, signed) in narrow_types.SMALL_INTEGERS.items()
    },
}

# bytes per element in memory (GM/UB); bf16 is 2 bytes even though we store it as f32;
# a sub-byte type takes one byte here (MLIR's dense layout: they never reach a kernel),
# `bit_width` gives its packed size
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
    **dict.fromkeys(narrow_types.BITS, 1),
}


_NARROW_FLOATS: dict[type[Attribute], str] = {
    type(ELEMENT_TYPES[name]): name for name in (*narrow_types.FLOAT_FORMATS, narrow_types.E8M0)
}
# every float type's class -> its name
_FLOATS: dict[type[Attribute], str] = {
    **{type(ELEMENT_TYPES[name]): name for name in ("f32", "f16", "bf16", "f64")},
    **_NARROW_FLOATS,
}


class UnsupportedElementType(ValueError):
    """An element type outside the set the graph dialect accepts."""


def type_name(element_type: Attribute) -> str:
    """The short name (`f32`, `bf16`, `i1`, ...) of a supported element type."""
    if (name := _FLOATS.get(type(element_type))) is not None:
        return name
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


def is_narrow(element_type: Attribute) -> bool:
    """A storage-only type: float8, float4, a 4- or 2-bit integer (every graph op's
    verifier asks, so this is two type checks)."""
    if isinstance(element_type, IntegerType):
        return element_type.width.data in (2, 4)
    return type(element_type) in _NARROW_FLOATS


def is_narrow_float(element_type: Attribute) -> bool:
    """A storage-only float type: float8 or float4."""
    return is_narrow(element_type) and type_name(element_type) not in narrow_types.SMALL_INTEGERS


def bit_width(element_type: Attribute) -> int:
    """Bits of one element as ONNX packs it (4 for int4/float4, 2 for int2)."""
    name = type_name(element_type)
    return narrow_types.BITS.get(name) or 8 * _BYTES[name]


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
    """Convert a computed array to the storage of `element_type`, rounding as the type does
    (a narrow type as a numpy astype to ml_dtypes does: without saturation, so a value of
    the type, inf included, is unchanged; Cast's `saturate` is the cast's business)."""
    name = type_name(element_type)
    arr = np.asarray(x)
    if name in NARROW:
        return narrow_types.to_narrow(arr, name, saturate=False)
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
    if name in NARROW:
        return _narrow_from_bytes(data, name).reshape(shape)
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
    if name in narrow_types.SMALL_INTEGERS:  # a sign-extended byte each, as MLIR stores them
        return np.asarray(arr).astype(_STORAGE[name]).tobytes()
    if name in NARROW:
        return narrow_types.encode(np.asarray(arr), name).tobytes()
    if name == "bf16":
        return f32_to_bf16_bits(np.asarray(arr, dtype=np.float32)).astype("<u2").tobytes()
    if name == "i1":
        return np.asarray(arr, dtype=np.bool_).astype(np.uint8).tobytes()
    return np.ascontiguousarray(arr, dtype=np.dtype(_STORAGE[name]).newbyteorder("<")).tobytes()


def _narrow_from_bytes(data: bytes, name: str) -> np.ndarray:
    """One byte per element (MLIR's dense layout): a code or a sign-extended integer."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if name in narrow_types.SMALL_INTEGERS:
        return narrow_types.wrap_integer(raw, name)
    return narrow_types.decode(raw, name)
