"""The storage-only element types: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0FNU),
float4 (E2M1FN) and the 4- and 2-bit integers, with ONNX's exact conversions in numpy.

Values of these types live in wider numpy storage holding only representable values, as
bf16 does: the float formats in float32 (every value of each is a float32, E8M0's 2**-127
a subnormal one), so casting *from* them is exact and needs no decoding, and the integers
in int8/uint8. Conversions *to* them round as ONNX's reference implementation does
(onnx.reference.ops.op_cast, onnx.numpy_helper: ml_dtypes' round to nearest even, the
`saturate` tables of the Cast spec, `to_float8e8m0`'s round modes, 4/2-bit integers
wrapping like two's complement). Their raw bytes follow MLIR's dense layout: one byte per
element (the float8 bit pattern, the float4 code, a sign-extended 4/2-bit integer); ONNX's
packing of sub-byte types is onnx.numpy_helper's business at import and export.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """A small binary float format: its width, `mantissa` bits, exponent `bias`, largest
    finite value and what it has instead of IEEE's infinities and NaNs."""

    bits: int
    mantissa: int
    bias: int
    max: float
    has_inf: bool  # E5M2 only: overflow without saturation gives +-inf
    nan_code: int | None  # the (positive) NaN's code; None: no NaN, overflow clamps (E2M1)
    signed_nan: bool  # NaN keeps its sign (E4M3FN, E5M2); FNUZ's one NaN is 0x80
    negative_zero: bool  # FNUZ formats have no -0: it becomes +0

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest normal value."""
        return 1 - self.bias


# MLIR type name -> format (https://onnx.ai/onnx/technical/float8.html, float4.html)
FLOAT_FORMATS: dict[str, FloatFormat] = {
    "f8E4M3FN": FloatFormat(8, 3, 7, 448.0, False, 0x7F, True, True),
    "f8E4M3FNUZ": FloatFormat(8, 3, 8, 240.0, False, 0x80, False, False),
    "f8E5M2": FloatFormat(8, 2, 15, 57344.0, True, 0x7E, True, True),
    "f8E5M2FNUZ": FloatFormat(8, 2, 16, 57344.0, False, 0x80, False, False),
    "f4E2M1FN": FloatFormat(4, 1, 1, 6.0, False, None, False, True),
}
E8M0 = "f8E8M0FNU"
# MLIR integer type name -> (bits, signed)
SMALL_INTEGERS: dict[str, tuple[int, bool]] = {
    "i4": (4, True),
    "ui4": (4, False),
    "i2": (2, True),
    "ui2": (2, False),
}
BITS: dict[str, int] = {
    **{name: fmt.bits for name, fmt in FLOAT_FORMATS.items()},
    E8M0: 8,
    **{name: bits for name, (bits, _) in SMALL_INTEGERS.items()},
}
ROUND_MODES = ("up", "down", "nearest")


def round_float(x: np.ndarray, name: str, saturate: bool = True) -> np.ndarray:
    """`x` rounded to the nearest value of format `name` (ties to even), as float32; out
    of range values follow ONNX's Cast tables for `saturate`."""
    fmt = FLOAT_FORMATS[name]
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        a = np.abs(x)
        _, k = np.frexp(a)
        exponent = np.maximum(k.astype(np.int64) - 1, fmt.min_exponent)
        quantum = np.ldexp(1.0, exponent - fmt.mantissa)
        r = np.rint(a / quantum) * quantum  # exact: a / quantum only shifts the exponent
        over = np.isinf(a) | (r > fmt.max)
        if saturate or fmt.nan_code is None:
            r = np.where(over, fmt.max, r)
        else:
            r = np.where(over, np.inf if fmt.has_inf else np.nan, r)
        out = np.copysign(r, x)
    if not fmt.negative_zero:
        out = np.where(out == 0, 0.0, out)
    nan = np.isnan(x)
    # a format without NaN gives a zero of the opposite sign, as ml_dtypes (ONNX's
    # reference) does: NaN -> -0, -NaN -> +0
    out = np.where(nan, np.copysign(0.0, -x) if fmt.nan_code is None else x, out)
    return out.astype(np.float32)


def round_e8m0(x: np.ndarray, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """`x` as float8 E8M0 values (powers of two, NaN), as float32; onnx.numpy_helper's
    `to_float8e8m0`: the float32 exponent rounded by `round_mode`, the sign ignored.
    Where the Cast spec's table differs from that reference (inf saturates to NaN, not to
    the largest value; 0 without saturation is 2**-127, not NaN), the reference's result
    is taken: it is what ONNX's backend cases hold."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.int64)
    special = exponent == 0xFF
    fraction = bits & 0x7FFFFF
    if round_mode == "nearest":
        guard = (bits & 0x400000) > 0
        rest = (bits & 0x3FFFFF) > 0
        up = guard & (rest | (exponent > 0))
    elif round_mode == "up":
        up = fraction > 0
    elif round_mode == "down":
        up = np.zeros(bits.shape, dtype=np.bool_)
    else:
        raise ValueError(f"round_mode '{round_mode}' is not one of {', '.join(ROUND_MODES)}")
    if saturate:
        up &= exponent != 0xFE
    code = np.where(special, 0xFF, np.minimum(exponent + up, 0xFF))
    return decode(code.astype(np.uint8), E8M0)


def wrap_integer(x: np.ndarray, name: str) -> np.ndarray:
    """`x` in the 4/2-bit integer type `name`: floats truncated toward zero (NaN and inf
    give 0), then the low bits kept as two's complement, as ml_dtypes casts."""
    bits, signed = SMALL_INTEGERS[name]
    x = np.asarray(x)
    if x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            x = np.where(np.isfinite(x), np.trunc(x), 0)
    low = x.astype(np.int64) & ((1 << bits) - 1)
    if signed:
        low = np.where(low >= 1 << (bits - 1), low - (1 << bits), low)
        return low.astype(np.int8)
    return low.astype(np.uint8)


def to_narrow(
    x: np.ndarray, name: str, saturate: bool = True, round_mode: str = "up"
) -> np.ndarray:
    """Convert `x` to the storage of narrow type `name` (ONNX Cast semantics)."""
    arr = np.asarray(x)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.float32)
    if name in SMALL_INTEGERS:
        return wrap_integer(arr, name)
    if name == E8M0:
        return round_e8m0(arr.astype(np.float32), saturate, round_mode)
    return round_float(arr, name, saturate)


def _value_table(name: str) -> np.ndarray:
    """The value (float32) of every code of float format `name`."""
    if name == E8M0:
        values = np.full(256, np.nan, dtype=np.float32)
        values[:255] = np.ldexp(1.0, np.arange(255) - 127)  # code 255 is NaN
        return values
    fmt = FLOAT_FORMATS[name]
    bits = fmt.bits
    codes = np.arange(1 << bits)
    sign = np.where(codes >> (bits - 1) == 1, -1.0, 1.0)
    e_field = (codes >> fmt.mantissa) & ((1 << (bits - 1 - fmt.mantissa)) - 1)
    m_field = codes & ((1 << fmt.mantissa) - 1)
    normal = np.ldexp(1.0 + m_field / (1 << fmt.mantissa), e_field - fmt.bias)
    subnormal = np.ldexp(m_field / (1 << fmt.mantissa), fmt.min_exponent)
    values = sign * np.where(e_field == 0, subnormal, normal)
    e_max = (1 << (bits - 1 - fmt.mantissa)) - 1
    if fmt.has_inf:  # IEEE-like: all-ones exponent is inf (zero mantissa) or NaN
        values = np.where(e_field == e_max, np.where(m_field == 0, sign * np.inf, np.nan), values)
    elif fmt.nan_code is not None and fmt.signed_nan:
        values[(codes & 0x7F) == fmt.nan_code] = np.nan
    elif fmt.nan_code is not None:
        values[fmt.nan_code] = np.nan
    return values.astype(np.float32)


_TABLES: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _tables(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values by code, sorted float32 bit patterns of the non-NaN values, their codes)."""
    if name not in _TABLES:
        values = _value_table(name)
        codes = np.flatnonzero(~np.isnan(values))
        keys = values[codes].view(np.uint32)
        if name in FLOAT_FORMATS and not FLOAT_FORMATS[name].negative_zero:
            keys = np.append(keys, np.float32(-0.0).view(np.uint32))  # -0 stores as +0
            codes = np.append(codes, 0)
        order = np.argsort(keys, kind="stable")
        _TABLES[name] = (values, keys[order], codes[order])
    return _TABLES[name]


def decode(codes: np.ndarray, name: str) -> np.ndarray:
    """The float32 values of float-format codes (bytes, or float4 codes in bytes)."""
    values, _, _ = _tables(name)
    return values[np.asarray(codes, dtype=np.uint8) & (len(values) - 1)]


def encode(values: np.ndarray, name: str) -> np.ndarray:
    """The codes (uint8) of float32 values of float format `name`; a value the format
    cannot hold is an error (storage holds only representable values)."""
    _, keys, codes = _tables(name)
    v = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    nan = np.isnan(v)
    bits = v.view(np.uint32)
    at = np.minimum(np.searchsorted(keys, bits), len(keys) - 1)
    bad = (keys[at] != bits) & ~nan
    if bad.any():
        raise ValueError(f"{float(v[bad][0])} is not a value of {name}")
    out = codes[at].astype(np.uint8)
    if name == E8M0:
        return np.where(nan, 0xFF, out).astype(np.uint8).reshape(np.shape(values))
    fmt = FLOAT_FORMATS[name]
    if fmt.nan_code is None and nan.any():
        raise ValueError(f"{name} has no NaN")
    nan_code = fmt.nan_code or 0
    if fmt.signed_nan:
        negative = (bits >> 31).astype(np.uint8) << 7
        out = np.where(nan, nan_code | negative, out)
    else:
        out = np.where(nan, nan_code, out)
    return out.astype(np.uint8).reshape(np.shape(values))


def codes_of(values: np.ndarray, name: str) -> np.ndarray:
    """The bit pattern (uint8, in the low BITS[name] bits) of each storage value."""
    if name in SMALL_INTEGERS:
        return (np.asarray(values).astype(np.int64) & ((1 << BITS[name]) - 1)).astype(np.uint8)
    return encode(values, name)


def pack(codes: np.ndarray, bits: int) -> bytes:
    """Codes of `bits` (8, 4 or 2) bits packed as ONNX stores them: element k in bits
    (k * bits) % 8 up of byte k * bits // 8, the last byte padded with zeros."""
    flat = np.asarray(codes, dtype=np.uint8).reshape(-1)
    per_byte = 8 // bits
    padded = np.zeros(-(-flat.size // per_byte) * per_byte, dtype=np.uint8)
    padded[: flat.size] = flat
    lanes = padded.reshape(-1, per_byte) << (np.arange(per_byte, dtype=np.uint8) * bits)
    return np.bitwise_or.reduce(lanes, axis=1).astype(np.uint8).tobytes()
