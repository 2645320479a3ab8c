"""Scalar loop nests of a buffer kernel run once over all their iterations, in numpy.

Kernels build index tables element by element: the gather offsets of a depthwise
convolution's im2col, for one, are an scf.for nest of index arithmetic ending in one
`buffer.set_value` per element, thousands of iterations per tile. A `LoopNest` runs such
a nest (index arith, set_value and inner scf.for, no loop-carried values) as numpy over
every iteration at once: a loop at depth d gives its induction variable as an array
along axis d, values broadcast, and the stores are made after the whole nest ran.

The result is the sequential one exactly, or the nest runs sequentially: every value is
an integer below 2**31 in magnitude (so int64 numpy computes what Python's integers do,
before the wrap to the op's width), no division is by zero, every store is in bounds,
fits its element type and hits an element no other store of the nest hits (so the
order of the stores does not matter). Anything else, an error included, makes `run`
return False before it wrote anything, and the caller runs the nest iteration by
iteration, which gives the same numbers or the same error as before.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer
from autofusion.interpreter.buffer_refs import Ref

Env = dict[SSAValue, Any]
Vector = Callable[..., Any]

# every value of a vectorized nest stays below this in magnitude
BOUND = 1 << 31


class _Sequential(Exception):
    """The nest must run iteration by iteration (a value or store the check refused)."""


def _ints(x: Any) -> Any:
    """`x` if it is a Python int or bool or an integer/bool array of a vectorized nest
    within BOUND; raises _Sequential otherwise."""
    if type(x) is bool or (type(x) is int and -BOUND < x < BOUND):
        return x
    if isinstance(x, np.ndarray) and x.dtype.kind in "bi":
        if x.dtype.kind == "i" and x.size and int(np.abs(x).max()) >= BOUND:
            raise _Sequential()
        return x
    raise _Sequential()


def _wrap(bits: int) -> Callable[[Any], Any]:
    """xDSL's to_signed at `bits` on values within BOUND (the identity from 32 bits up)."""
    if bits >= 32:
        return lambda v: v
    half, mask = 1 << (bits - 1), (1 << bits) - 1
    return lambda v: ((v + half) & mask) - half


def _nonzero(b: Any) -> Any:
    if np.any(np.asarray(b) == 0):
        raise _Sequential()
    return b


def _signed(f: Callable[[Any, Any], Any], wraps: bool) -> Callable[[int], Vector]:
    def build(bits: int) -> Vector:
        w = _wrap(bits)
        if wraps:
            return lambda a, b: w(f(w(a), w(b)))
        return lambda a, b: f(w(a), w(b))

    return build


def _divsi(a: Any, b: Any) -> Any:
    q = np.abs(a) // np.abs(_nonzero(b))
    return np.where((np.asarray(a) > 0) != (np.asarray(b) > 0), -q, q)


def _remsi(a: Any, b: Any) -> Any:
    return a - _divsi(a, b) * b


def _plain(f: Callable[[Any, Any], Any]) -> Callable[[int], Vector]:
    return lambda bits: f


# the vector twin of each op kernel_program runs as a closure (same semantics on values
# within BOUND), by the op's result width
_BINARY: dict[type[Operation], Callable[[int], Vector]] = {
    arith.AddiOp: _signed(operator.add, True),
    arith.SubiOp: _signed(operator.sub, True),
    arith.MuliOp: _signed(operator.mul, True),
    arith.AndIOp: _signed(operator.and_, True),
    arith.OrIOp: _signed(operator.or_, True),
    arith.XOrIOp: _signed(operator.xor, True),
    arith.DivSIOp: _signed(_divsi, True),
    arith.RemSIOp: _signed(_remsi, False),
    arith.MinSIOp: _plain(np.minimum),
    arith.MaxSIOp: _plain(np.maximum),
    arith.MinUIOp: _plain(np.minimum),
    arith.MaxUIOp: _plain(np.maximum),
    arith.CeilDivSIOp: _plain(lambda a, b: -(-a // _nonzero(b))),
    arith.CeilDivUIOp: _plain(lambda a, b: -(-a // _nonzero(b))),
    arith.DivUIOp: _plain(lambda a, b: a // _nonzero(b)),
    arith.RemUIOp: _plain(lambda a, b: a % _nonzero(b)),
}
_COMPARE = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)


def _cmpi(predicate: int, bits: int) -> Vector:
    compare = _COMPARE[predicate if predicate < 6 else predicate - 4]
    if predicate < 6:
        w = _wrap(bits)
        return lambda a, b: compare(w(a), w(b))

    def unsigned(a: Any, b: Any) -> Any:
        if np.any(np.asarray(a) < 0) or np.any(np.asarray(b) < 0):
            raise _Sequential()  # to_unsigned of a negative is past int64
        return compare(a % (1 << bits), b % (1 << bits)) if bits < 32 else compare(a, b)

    return unsigned


def _index_cast(into: int, out: int) -> Vector:
    if into > out:
        mask, top = (1 << out) - 1, 1 << (out - 1)

        def truncate(x: Any) -> Any:
            t = np.asarray(x) & mask
            return np.where(t & top, t - (1 << out), t)

        return truncate
    if into < out:
        sign = 1 << (into - 1)
        return lambda x: (x & (sign - 1)) - (x & sign)
    return _wrap(out)


def _select(c: Any, t: Any, f: Any) -> Any:
    if isinstance(c, np.ndarray):
        return np.where(c, t, f)
    return t if c else f


@dataclass
class _Op:
    """An arith op: its closure (all operands scalars) and its vector twin."""

    scalar: Callable[[Env], None]
    vector: Vector
    operands: tuple[SSAValue, ...]
    result: SSAValue


@dataclass
class _Store:
    """A buffer.set_value."""

    ref: SSAValue
    index: SSAValue
    value: SSAValue


@dataclass
class _Loop:
    lb: SSAValue
    ub: SSAValue
    step: SSAValue
    iv: SSAValue
    body: list[_Op | _Store | _Loop]


class LoopNest:
    """An scf.for nest compiled for `run`; `of` says whether a loop is one."""

    def __init__(self, loop: _Loop, depth: int) -> None:
        self.loop = loop
        self.depth = depth
        self.ref_type = Ref

    @staticmethod
    def of(
        op: scf.ForOp,
        scalar: Callable[[Operation], Callable[[Env], None] | None],
        width: Callable[[Any], int | None],
        stores: bool,
    ) -> LoopNest | None:
        """The nest of `op`, or None when it holds anything but integer arith ops that
        `scalar` compiles (index arith with a closure), set_values (when `stores`: their
        implementation is the stock one) and inner loops, or stores nothing.
        `width(type)` is an integer type's bit width."""
        try:
            loop, depth, count = _compile_loop(op, scalar, width, stores)
        except _Sequential:
            return None
        return LoopNest(loop, depth) if count else None

    def run(self, env: Env) -> bool:
        """Run the whole nest vectorized and return True, or return False having written
        nothing when it must run iteration by iteration."""
        values: Env = {}
        stores: list[tuple[Any, Any, Any, tuple[int, ...]]] = []
        try:
            self._run(self.loop, env, values, stores, ())
            writes = self._writes(stores)
        except Exception:  # refused, or an error the sequential run reports in its place
            return False
        for data, at, items in writes:
            data[at] = items
        return True

    def _run(
        self,
        loop: _Loop,
        env: Env,
        values: Env,
        stores: list[tuple[Any, Any, Any, tuple[int, ...]]],
        extents: tuple[int, ...],
    ) -> None:
        def get(v: SSAValue) -> Any:
            return values[v] if v in values else env[v]

        bounds = [get(v) for v in (loop.lb, loop.ub, loop.step)]
        if any(type(b) is not int for b in bounds):
            raise _Sequential()
        iterations = range(*bounds)
        if not iterations:
            return
        shape = [1] * self.depth
        shape[len(extents)] = len(iterations)
        values[loop.iv] = _ints(np.arange(*bounds, dtype=np.int64).reshape(shape))
        inner = (*extents, len(iterations))
        for node in loop.body:
            if isinstance(node, _Loop):
                self._run(node, env, values, stores, inner)
            elif isinstance(node, _Store):
                ref = get(node.ref)
                if not isinstance(ref, self.ref_type):
                    raise _Sequential()
                stores.append((ref, _ints(get(node.index)), get(node.value), inner))
            else:
                args = [get(o) for o in node.operands]
                if not any(isinstance(a, np.ndarray) for a in args):
                    scalars = dict(zip(node.operands, args))
                    node.scalar(scalars)  # exactly the sequential closure
                    values[node.result] = scalars[node.result]
                else:
                    values[node.result] = _ints(node.vector(*(_ints(a) for a in args)))

    def _writes(
        self, stores: list[tuple[Any, Any, Any, tuple[int, ...]]]
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(array, positions, values) of every store in iteration order, checked as
        set_value checks one (in bounds, value fits) and for no position hit twice."""
        writes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        hit: dict[int, list[np.ndarray]] = {}
        for ref, index, value, extents in stores:
            shape = (*extents, *[1] * (self.depth - len(extents)))
            at = np.broadcast_to(index, shape).reshape(-1).astype(np.int64)
            items = np.broadcast_to(_ints(value), shape).reshape(-1)
            if at.size and (int(at.min()) < 0 or ref.offset + int(at.max()) >= ref.data.size):
                raise _Sequential()
            if ref.data.dtype.kind not in "iu":
                raise _Sequential()
            limits = np.iinfo(ref.data.dtype)
            if items.size and (int(items.min()) < limits.min or int(items.max()) > limits.max):
                raise _Sequential()
            writes.append((ref.data, ref.offset + at, items.astype(ref.data.dtype)))
            hit.setdefault(id(ref.data), []).append(ref.offset + at)
        for positions in hit.values():
            every = np.concatenate(positions)
            if np.unique(every).size != every.size:
                raise _Sequential()
        return writes


def _compile_loop(
    op: scf.ForOp,
    scalar: Callable[[Operation], Callable[[Env], None] | None],
    width: Callable[[Any], int | None],
    stores: bool,
) -> tuple[_Loop, int, int]:
    """(the loop, its nest depth, its store count), or _Sequential."""
    if op.iter_args or op.results:
        raise _Sequential()
    body: list[_Op | _Store | _Loop] = []
    depth, count = 1, 0
    for inner in op.body.block.ops:
        if isinstance(inner, scf.YieldOp) and not inner.operands:
            continue
        if isinstance(inner, scf.ForOp):
            loop, d, n = _compile_loop(inner, scalar, width, stores)
            body.append(loop)
            depth, count = max(depth, d + 1), count + n
        elif isinstance(inner, buffer.SetValueOp) and stores:
            body.append(_Store(inner.dest, inner.index, inner.value))
            count += 1
        else:
            body.append(_arith(inner, scalar, width))
    iv = op.body.block.args[0]
    return _Loop(op.lb, op.ub, op.step, iv, body), depth, count


def _arith(
    op: Operation,
    scalar: Callable[[Operation], Callable[[Env], None] | None],
    width: Callable[[Any], int | None],
) -> _Op:
    step = scalar(op)
    if step is None or len(op.results) != 1:
        raise _Sequential()
    result = op.results[0]
    bits = width(result.type)
    vector: Vector
    if isinstance(op, arith.ConstantOp):
        vector = _select  # never called: a constant has no operand
    elif isinstance(op, arith.CmpiOp):
        lhs_bits = width(op.lhs.type)
        if lhs_bits is None:
            raise _Sequential()
        vector = _cmpi(op.predicate.value.data, lhs_bits)
    elif isinstance(op, arith.SelectOp):
        vector = _select
    elif isinstance(op, arith.IndexCastOp):
        into = width(op.input.type)
        if into is None or bits is None:
            raise _Sequential()
        vector = _index_cast(into, bits)
    elif type(op) in _BINARY and bits is not None:
        vector = _BINARY[type(op)](bits)
    else:
        raise _Sequential()
    return _Op(step, vector, tuple(op.operands), result)
