"""Emitting buffer-dialect IR: a kernel's entry, nested loops and stages, constants."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.builder import Builder
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    NameLoc,
    StringAttr,
    f16,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from autofusion.dialects import buffer
from autofusion.lowering.index_expr import IrOps


class KernelBuilder:
    """Builds the body of a `buffer.kernel` (or a host function).

    Index and float constants are hoisted to the top of the entry block, so that any
    nested region can use them.
    """

    def __init__(self, entry: Block) -> None:
        self.entry = entry
        self.hoisted: list[Operation] = []
        self.builder = Builder(InsertPoint.at_end(entry))
        self.idx = IrOps(self.builder, self.hoisted)
        self._floats: dict[float, SSAValue] = {}
        self._bools: dict[bool, SSAValue] = {}
        self._typed: dict[tuple[str, float], SSAValue] = {}
        self.origin: LocationAttr | None = None

    # ---- constants --------------------------------------------------------------

    def f32(self, value: float) -> SSAValue:
        key = float(value)
        if key not in self._floats:
            op = arith.ConstantOp(FloatAttr(key, f32))
            self.hoisted.append(op)
            self._floats[key] = op.result
        return self._floats[key]

    def f16(self, value: float) -> SSAValue:
        key = ("f16", float(value))
        if key not in self._typed:
            op = arith.ConstantOp(FloatAttr(float(value), f16))
            self.hoisted.append(op)
            self._typed[key] = op.result
        return self._typed[key]

    def i1(self, value: bool) -> SSAValue:
        if value not in self._bools:
            op = arith.ConstantOp(IntegerAttr(int(value), IntegerType(1)))
            self.hoisted.append(op)
            self._bools[value] = op.result
        return self._bools[value]

    def finish(self) -> None:
        """Put the hoisted constants at the top of the entry block."""
        first = self.entry.first_op
        for op in self.hoisted:
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)

    # ---- insertion --------------------------------------------------------------

    def insert(self, op: Operation, name: str | None = None) -> Operation:
        self.builder.insert(op)
        if name is not None and op.results:
            op.results[0].name_hint = name
        if self.origin is not None:
            op.location = self.origin
        return op

    @contextmanager
    def origin_of(self, op: Operation) -> Iterator[None]:
        """Ops emitted inside carry `loc("<op name>"(<op's location>))`: codegen's --debug
        maps each Ascend C statement back to the graph op and its source."""
        saved = self.origin
        self.origin = NameLoc(StringAttr(op.name), op.location)
        try:
            yield
        finally:
            self.origin = saved

    @contextmanager
    def at_end(self, block: Block) -> Iterator[None]:
        with self._at(InsertPoint.at_end(block)):
            yield

    @contextmanager
    def before(self, op: Operation) -> Iterator[None]:
        with self._at(InsertPoint.before(op)):
            yield

    @contextmanager
    def _at(self, point: InsertPoint) -> Iterator[None]:
        saved = self.builder
        self.builder = Builder(point)
        self.idx.builder = self.builder
        try:
            yield
        finally:
            self.builder = saved
            self.idx.builder = saved

    @contextmanager
    def loop(self, lower: SSAValue, upper: SSAValue, name: str) -> Iterator[SSAValue]:
        """`scf.for %name = lower to upper step 1 { ... }`; yields the induction variable."""
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = name
        self.insert(scf.ForOp(lower, upper, self.idx.const(1), [], Region(body)))
        with self.at_end(body):
            yield body.args[0]
            self.insert(scf.YieldOp())

    @contextmanager
    def when(self, cond: SSAValue) -> Iterator[None]:
        """`scf.if %cond { ... }` (no results)."""
        body = Block()
        self.insert(scf.IfOp(cond, [], Region(body)))
        with self.at_end(body):
            yield
            self.insert(scf.YieldOp())

    def less(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """a < b (signed) as an i1."""
        return self.insert(arith.CmpiOp(a, b, "slt")).results[0]

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        body = Block()
        self.insert(buffer.StageOp(name, Region(body)))
        with self.at_end(body):
            yield

    # ---- buffer ops -------------------------------------------------------------

    def view(self, base: SSAValue, offset: SSAValue) -> SSAValue:
        if IrOps.constant_value(offset) == 0:
            return base
        return self.insert(buffer.ViewOp(base, offset)).results[0]

    def queue(
        self,
        position: str,
        buffers: int,
        nbytes: SSAValue,
        max_bytes: int,
        elt: Attribute,
        name: str,
    ) -> SSAValue:
        op = buffer.AllocQueueOp(position, buffers, nbytes, max_bytes, elt)
        return self.insert(op, name).results[0]

    def tbuf(self, nbytes: SSAValue, max_bytes: int, elt: Attribute, name: str) -> SSAValue:
        return self.insert(buffer.AllocBufOp("veccalc", nbytes, max_bytes, elt), name).results[0]

    def copy(
        self,
        src: SSAValue,
        dst: SSAValue,
        blocks: SSAValue,
        length: SSAValue,
        src_stride: SSAValue,
        dst_stride: SSAValue,
    ) -> None:
        self.insert(buffer.CopyOp(src, dst, blocks, length, src_stride, dst_stride))

    def copy_1d(self, src: SSAValue, dst: SSAValue, count: SSAValue) -> None:
        zero = self.idx.const(0)
        self.copy(src, dst, self.idx.const(1), count, zero, zero)

    def binary(self, kind: str, dst: SSAValue, a: SSAValue, b: SSAValue, n: SSAValue) -> None:
        self.insert(buffer.VBinaryOp(kind, dst, a, b, n))

    def unary(self, kind: str, dst: SSAValue, src: SSAValue, n: SSAValue) -> None:
        self.insert(buffer.VUnaryOp(kind, dst, src, n))

    def scalar(self, kind: str, dst: SSAValue, src: SSAValue, s: SSAValue, n: SSAValue) -> None:
        self.insert(buffer.VScalarOp(kind, dst, src, s, n))

    def cast(self, dst: SSAValue, src: SSAValue, n: SSAValue, mode: str) -> None:
        self.insert(buffer.VCastOp(dst, src, n, mode))

    def get(self, src: SSAValue, index: SSAValue) -> SSAValue:
        return self.insert(buffer.GetValueOp(src, index)).results[0]

    def set(self, dst: SSAValue, index: SSAValue, value: SSAValue) -> None:
        self.insert(buffer.SetValueOp(dst, index, value))

    def index_to_f32(self, v: SSAValue) -> SSAValue:
        as_int = self.insert(arith.IndexCastOp(v, IntegerType(64))).results[0]
        return self.insert(arith.SIToFPOp(as_int, f32)).results[0]

    def fdiv(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.insert(arith.DivfOp(a, b)).results[0]

    def fneg(self, a: SSAValue) -> SSAValue:
        return self.insert(arith.MulfOp(a, self.f32(-1.0))).results[0]


def mapped_index(
    kb: KernelBuilder, row: SSAValue, outer: Sequence[SSAValue], operand_outer: Sequence[int]
) -> SSAValue:
    """The operand row of view row `row`: unravel over `outer`, zero the broadcast dims,
    ravel over the operand's own outer dims (`operand_outer`, 1 where it broadcasts)."""
    idx = kb.idx
    result = idx.const(0)
    stride = idx.const(1)
    remaining = row
    for d in reversed(range(len(outer))):
        coordinate = idx.rem(remaining, outer[d])
        remaining = idx.floordiv(remaining, outer[d])
        if operand_outer[d] != 1:
            # a dim the operand does not broadcast has the view's size
            result = idx.add(result, idx.mul(coordinate, stride))
            stride = idx.mul(stride, outer[d])
    return result


def tiling_function(
    name: str, arg_names: Sequence[str], body: Callable[[KernelBuilder], list[SSAValue]]
) -> func.FuncOp:
    """A private host function (index args) -> (index results) built by `body`."""
    entry = Block(arg_types=[IndexType()] * len(arg_names))
    for a, n in zip(entry.args, arg_names):
        a.name_hint = n
    kb = KernelBuilder(entry)
    results = body(kb)
    kb.insert(func.ReturnOp(*results))
    kb.finish()
    f = func.FuncOp(
        f"{name}_tiling",
        ([IndexType()] * len(arg_names), [IndexType()] * len(results)),
        Region(entry),
    )
    f.sym_visibility = StringAttr("private")
    return f
