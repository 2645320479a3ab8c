"""sin and cos on a row kernel's float32 locations, from count-form vector ops only.

Ascend C's Sin/Cos are high-level APIs that need a host-sized temporary buffer
(ascend.md 2.8, "Higher-level APIs"); as for tanh and erf, the template builds them from
basic calls instead (Muls, Adds, Mul, Add and Cast, ascend.md 2.8):

    sin:  k = rint(x / pi),        r = x - k pi,          sin x = (-1)^k sin r
    cos:  k = rint(x / pi - 1/2),  r = x - (k + 1/2) pi,  cos x = (-1)^(k+1) sin r

with r in [-pi/2, pi/2]. k pi is subtracted in three parts (Cody & Waite; cephes
sinf's constants times 4): the first has 8 significant bits, so k * PI_A is exact for
|k| < 2^15 (|x| up to about 10^5, rotary angles of 2^15 positions). sin r is its Taylor
polynomial to r^11 (truncation < 6e-8 on [-pi/2, pi/2]). (-1)^k = 1 - 2 (k - 2 floor(k/2)),
with rint and floor as Casts to int32 and back (exact for integers below 2^24).
"""

from __future__ import annotations

from typing import cast

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from autofusion.lowering.row_vector_math import Loc, RowVectorMath

# pi = PI_A + PI_B + PI_C (cephes sinf DP1..DP3 for pi/4, times 4)
PI_A = 3.140625
PI_B = 9.67502593994140625e-4
PI_C = 1.509957990978376432e-7
# sin r = r (1 + r^2 (S3 + r^2 (S5 + ...))): Taylor coefficients -1/3!, 1/5!, ..., -1/11!
SINE_TERMS = (-1 / 6, 1 / 120, -1 / 5040, 1 / 362880, -1 / 39916800)


def _integral(k: RowVectorMath, x: Loc, mode: str) -> Loc:
    """rint(x) or floor(x) (by `mode`) as float32, through an int32 Cast."""
    n = k._count(x.kind)
    scratch = k._narrow_buffer(x.kind, i32)
    out = k.pool.get(x.kind)
    k.kb.cast(scratch, cast(SSAValue, x.buf), n, mode)
    k.kb.cast(out, scratch, n, "none")
    return Loc(x.kind, buf=out)


def _step(k: RowVectorMath, old: Loc, new: Loc) -> Loc:
    k.pool.release(old.buf)
    return new


def sine_loc(k: RowVectorMath, x: Loc, cosine: bool) -> Loc:
    """sin(x), or cos(x) when `cosine`, into a fresh float32 buffer."""
    if x.kind == "mcol":
        x = k._as_layout(x, "col")
    q = k.scale_shift(x, 1 / 3.141592653589793, -0.5 if cosine else None)
    turns = _step(k, q, _integral(k, q, "rint"))  # k
    shift = k.scale_shift(turns, None, 0.5) if cosine else turns  # the multiple of pi
    r = k.scale_shift(x, None, None)
    for part in (PI_A, PI_B, PI_C):
        t = k.scale_shift(shift, -part, None)
        r = _step(k, r, k.binary("add", r, t))
        k.pool.release(t.buf)
    if shift is not turns:
        k.pool.release(shift.buf)
    r2 = k.binary("mul", r, r)
    poly = k.scale_shift(r2, SINE_TERMS[-1], SINE_TERMS[-2])
    for term in reversed(SINE_TERMS[:-2]):
        poly = _step(k, poly, k.binary("mul", poly, r2))
        poly = _step(k, poly, k.scale_shift(poly, None, term))
    poly = _step(k, poly, k.binary("mul", poly, r2))
    poly = _step(k, poly, k.scale_shift(poly, None, 1.0))
    k.pool.release(r2.buf)
    sine = _step(k, poly, k.binary("mul", poly, r))
    k.pool.release(r.buf)
    # parity of k: k - 2 floor(k / 2), then the sign 1 - 2 parity (cos: 2 parity - 1)
    half = k.scale_shift(turns, 0.5, None)
    floor = _step(k, half, _integral(k, half, "floor"))
    twice = _step(k, floor, k.scale_shift(floor, -2.0, None))
    parity = _step(k, twice, k.binary("add", turns, twice))
    k.pool.release(turns.buf)
    sign = _step(k, parity, k.scale_shift(parity, 2.0 if cosine else -2.0, -1.0 if cosine else 1.0))
    out = k.binary("mul", sine, sign)
    k.pool.release(sine.buf)
    k.pool.release(sign.buf)
    return out
