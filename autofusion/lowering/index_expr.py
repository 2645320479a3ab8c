"""Index arithmetic written once, run two ways: on Python ints or as emitted `arith` IR.

Tiling rules are functions of an `IndexOps`: with `IntOps` they compute a plan for
static shapes (ub-fusion's capacity checks, the cost model), with `IrOps` they emit the
host tiling function and the in-kernel index math for runtime shapes. One source of truth,
so what fusion planned is what the kernel does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue

V = TypeVar("V")


class IndexOps(ABC, Generic[V]):
    """Non-negative index arithmetic (sizes, offsets, counts)."""

    @abstractmethod
    def const(self, value: int) -> V: ...

    @abstractmethod
    def add(self, a: V, b: V) -> V: ...

    @abstractmethod
    def sub(self, a: V, b: V) -> V: ...

    @abstractmethod
    def mul(self, a: V, b: V) -> V: ...

    @abstractmethod
    def floordiv(self, a: V, b: V) -> V: ...

    @abstractmethod
    def ceildiv(self, a: V, b: V) -> V: ...

    @abstractmethod
    def rem(self, a: V, b: V) -> V: ...

    @abstractmethod
    def min(self, a: V, b: V) -> V: ...

    @abstractmethod
    def max(self, a: V, b: V) -> V: ...

    def round_up(self, a: V, multiple: int) -> V:
        m = self.const(multiple)
        return self.mul(self.ceildiv(a, m), m)

    def round_down(self, a: V, multiple: int) -> V:
        m = self.const(multiple)
        return self.mul(self.floordiv(a, m), m)

    def product(self, values: list[V]) -> V:
        if not values:
            return self.const(1)
        out = values[0]
        for v in values[1:]:
            out = self.mul(out, v)
        return out


class IntOps(IndexOps[int]):
    """The rules evaluated on Python ints."""

    def const(self, value: int) -> int:
        return value

    def add(self, a: int, b: int) -> int:
        return a + b

    def sub(self, a: int, b: int) -> int:
        return a - b

    def mul(self, a: int, b: int) -> int:
        return a * b

    def floordiv(self, a: int, b: int) -> int:
        return a // b

    def ceildiv(self, a: int, b: int) -> int:
        return -(-a // b)

    def rem(self, a: int, b: int) -> int:
        return a % b

    def min(self, a: int, b: int) -> int:
        return min(a, b)

    def max(self, a: int, b: int) -> int:
        return max(a, b)


class IrOps(IndexOps[SSAValue]):
    """The rules emitted as `arith` ops on `index` at a builder's insertion point.

    Constants are folded and deduplicated, so static parts of a shape stay static. With
    `hoisted`, constants are not inserted but collected there, for the caller to put at
    the top of the function so that they dominate every use.
    """

    def __init__(self, builder: Builder, hoisted: list[Operation] | None = None) -> None:
        self.builder = builder
        self.hoisted = hoisted
        self._consts: dict[int, SSAValue] = {}

    def const(self, value: int) -> SSAValue:
        if value not in self._consts:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            op.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
            if self.hoisted is not None:
                self.hoisted.append(op)
            else:
                self.builder.insert(op)
            self._consts[value] = op.result
        return self._consts[value]

    @staticmethod
    def constant_value(v: SSAValue) -> int | None:
        owner = v.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def _binary(self, op_type: type, a: SSAValue, b: SSAValue, fold: object) -> SSAValue:
        ca, cb = self.constant_value(a), self.constant_value(b)
        if ca is not None and cb is not None:
            return self.const(fold(ca, cb))  # type: ignore[operator]
        return self.builder.insert(op_type(a, b)).result

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.constant_value(b) == 0:
            return a
        if self.constant_value(a) == 0:
            return b
        return self._binary(arith.AddiOp, a, b, lambda x, y: x + y)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.constant_value(b) == 0:
            return a
        return self._binary(arith.SubiOp, a, b, lambda x, y: x - y)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.constant_value(a) == 1:
            return b
        if self.constant_value(b) == 1:
            return a
        return self._binary(arith.MuliOp, a, b, lambda x, y: x * y)

    def floordiv(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.constant_value(b) == 1:
            return a
        # operands are non-negative sizes, so signed division floors
        return self._binary(arith.DivSIOp, a, b, lambda x, y: x // y)

    def ceildiv(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.constant_value(b) == 1:
            return a
        return self._binary(arith.CeilDivSIOp, a, b, lambda x, y: -(-x // y))

    def rem(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary(arith.RemSIOp, a, b, lambda x, y: x % y)

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if a is b:
            return a
        return self._binary(arith.MinSIOp, a, b, min)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if a is b:
            return a
        return self._binary(arith.MaxSIOp, a, b, max)
