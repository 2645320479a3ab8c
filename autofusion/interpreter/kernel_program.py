"""A buffer kernel compiled once into Python steps, so its loops run without xDSL's
per-op dispatch.

xDSL's `Interpreter.run_ssacfg_region` pushes a scope per region run, looks every operand
up through the scope chain and checks each arith op's type with `isa`: about 40 us per
op, and a kernel's scf.for nests run hundreds of thousands of index ops for one launch.
A `KernelProgram` resolves each op's implementation, operands and results once; the
values of a run live in one flat dict (SSA values are unique, and the verifier
guarantees every use is dominated by its definition, so no scope is needed). scf.for,
scf.if and buffer.stage run their bodies directly; the index arith ops are closures with
their bit width fixed at compile time and the same wrap-around as xDSL's
`ArithFunctions`; every other op calls the registered implementation with the same
arguments xDSL would pass. An error in an op is reported as xDSL reports it
(`emit_error` on that op, then on each enclosing op).

The cores of a mix kernel run the program as generators (`run_steps`), driven by
`CoreGroup.run_steps` in one thread: a core hands the turn over by yielding at a wait,
where a thread per core would cost an OS thread switch (milliseconds on a loaded
machine) at each of the thousands of cross-core hand-overs of a launch.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.traits import IsTerminator
from xdsl.utils.comparisons import to_unsigned
from xdsl.utils.exceptions import InterpretationError

from autofusion.dialects import buffer
from autofusion.interpreter.index_arith import IndexArithFunctions
from autofusion.interpreter.vector_loops import LoopNest


class CoreStages(Protocol):
    """What a kernel program asks of the buffer interpreter's functions (BufferFunctions in
    interpreter/buffer.py, which compiles and runs these programs): which stages the
    running core runs, and how a cross-core wait yields."""

    def runs_stage_on(self, core: str) -> bool:
        """Whether the running core runs a buffer.stage of `core` ("aic"/"aiv")."""

    def wait_steps(
        self, op: buffer.CrossCoreWaitOp | buffer.SyncAllOp
    ) -> Generator[None, None, None]:
        """A wait that yields until what it waits for has happened."""


Env = dict[SSAValue, Any]
Step = Callable[[Env], None]
GenStep = Callable[[Env], Generator[None, None, None]]


class _Unsupported(Exception):
    """The kernel has IR the program does not run (it falls back to xDSL's interpreter)."""


@dataclass
class _Body:
    """A single-block region: its arguments, its ops as steps, and what it yields.

    Each op has a plain step and, when it may wait for another core (a cross-core wait,
    a sync_all, or a region holding one), a generator step that yields while it waits.
    """

    args: tuple[SSAValue, ...]
    steps: list[tuple[Step, GenStep | None, Operation]]
    yields: tuple[SSAValue, ...]

    @property
    def waits(self) -> bool:
        return any(waiting is not None for _, waiting, _ in self.steps)

    def run(self, env: Env, args: Sequence[Any]) -> tuple[Any, ...]:
        for a, v in zip(self.args, args):
            env[a] = v
        for step, _, op in self.steps:
            try:
                step(env)
            except Exception as e:  # as xDSL's `_InterpreterFunctionImpls.run` reports it
                op.emit_error("Error while interpreting op", e)
        return tuple(env[v] for v in self.yields)

    def run_steps(self, env: Env, args: Sequence[Any]) -> Generator[None, None, tuple[Any, ...]]:
        """`run`, yielding whenever the core waits for another."""
        for a, v in zip(self.args, args):
            env[a] = v
        for step, waiting, op in self.steps:
            try:
                if waiting is None:
                    step(env)
                else:
                    yield from waiting(env)
            except Exception as e:
                op.emit_error("Error while interpreting op", e)
        return tuple(env[v] for v in self.yields)


def _width(interp: Interpreter, t: Attribute) -> int | None:
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, IndexType):
        return interp.index_bitwidth
    return None


def _signed(bits: int) -> Callable[[Any], Any]:
    """xDSL's `to_signed` for one bit width, with a shortcut for a Python int in range."""
    half, modulus = 1 << (bits - 1), 1 << bits

    def signed(x: Any) -> Any:
        if type(x) is int and -half <= x < half:
            return x
        return (x + half) % modulus - half

    return signed


def _unsigned(bits: int) -> Callable[[Any], Any]:
    def unsigned(x: Any) -> Any:
        return to_unsigned(x, bits)

    return unsigned


def _divsi(a: int, b: int) -> int:
    assert b != 0
    div = abs(a) // abs(b)
    return -div if (a > 0) != (b > 0) else div


def _remsi(a: int, b: int) -> int:
    return a - _divsi(a, b) * b


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# signed integer binary ops: (a, b) -> result on signed operands, and whether the result
# wraps to the bit width (xdsl/interpreters/arith.py; remsi does not wrap there either)
_SIGNED_BINARY: dict[type[Operation], tuple[Callable[[int, int], int], bool]] = {
    arith.AddiOp: (operator.add, True),
    arith.SubiOp: (operator.sub, True),
    arith.MuliOp: (operator.mul, True),
    arith.AndIOp: (operator.and_, True),
    arith.OrIOp: (operator.or_, True),
    arith.XOrIOp: (operator.xor, True),
    arith.DivSIOp: (_divsi, True),
    arith.RemSIOp: (_remsi, False),
}
# afc's index_arith.py ops: plain Python on the operands as given
_PLAIN_BINARY: dict[type[Operation], Callable[[int, int], int]] = {
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.CeilDivSIOp: _ceil_div,
    arith.CeilDivUIOp: _ceil_div,
    arith.DivUIOp: operator.floordiv,
    arith.RemUIOp: operator.mod,
}
# arith.cmpi predicates in order (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge)
_COMPARE = (
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
)
# the implementations the closures replace: an op registered to another (an override)
# is called through its implementation instead
_REPLACED = (ArithFunctions, IndexArithFunctions)


class KernelProgram:
    """A kernel body compiled for repeated runs by one interpreter."""

    def __init__(self, interp: Interpreter, functions: CoreStages, kernel: buffer.KernelOp) -> None:
        """`functions` is the interpreter's BufferFunctions (the running core decides
        which buffer.stage bodies run). Raises _Unsupported for IR it cannot run."""
        self.interp = interp
        self.functions = functions
        self.impls = interp._impls._impl_dict  # pyright: ignore[reportPrivateUsage]
        self.body = self._body(kernel.body)

    @property
    def functions_class(self) -> type:
        """BufferFunctions itself: an op whose impl is one of its own runs as a step here."""
        return type(self.functions)

    @staticmethod
    def compile(
        interp: Interpreter, functions: CoreStages, kernel: buffer.KernelOp
    ) -> KernelProgram | None:
        """The kernel's program, or None when it holds IR only xDSL's interpreter runs
        (ops with other regions, several blocks, other terminators)."""
        try:
            return KernelProgram(interp, functions, kernel)
        except _Unsupported:
            return None

    def run(self, args: Sequence[Any]) -> None:
        """Run the kernel body on `args` (its block arguments) with a fresh value map."""
        self.body.run({}, args)

    def run_steps(self, args: Sequence[Any]) -> Generator[None, None, None]:
        """`run` on one core of a CoreGroup's `run_steps`: it yields while it waits."""
        yield from self.body.run_steps({}, args)

    # ---- compiling ------------------------------------------------------------------

    def _body(self, region: Region) -> _Body:
        if len(region.blocks) != 1:
            raise _Unsupported()
        block = region.block
        ops = list(block.ops)
        yields: tuple[SSAValue, ...] = ()
        if ops and isinstance(ops[-1], scf.YieldOp | buffer.ReturnOp):
            yields = tuple(ops.pop().operands)
        steps = [(*self._step(op), op) for op in ops]
        return _Body(tuple(block.args), steps, yields)

    def _step(self, op: Operation) -> tuple[Step, GenStep | None]:
        if op.successors or op.has_trait(IsTerminator) or type(op) not in self.impls:
            raise _Unsupported()
        stock = type(self.impls[type(op)][0]) in (ScfFunctions, self.functions_class)
        if isinstance(op, scf.ForOp) and stock:
            return self._for(op)
        if isinstance(op, scf.IfOp) and stock:
            return self._if(op)
        if isinstance(op, buffer.StageOp) and stock:
            return self._stage(op)
        if op.regions:
            raise _Unsupported()
        if isinstance(op, buffer.CrossCoreWaitOp | buffer.SyncAllOp) and stock:
            functions = self.functions

            def waiting(env: Env) -> Generator[None, None, None]:
                yield from functions.wait_steps(op)

            return self._generic(op), waiting
        fast = self._arith(op)
        return (fast if fast is not None else self._generic(op)), None

    def _generic(self, op: Operation) -> Step:
        ft, fn = self.impls[type(op)]
        interp = self.interp
        operands = tuple(op.operands)
        results = tuple(op.results)
        count = len(results)

        def step(env: Env) -> None:
            values = fn(ft, interp, op, tuple([env[o] for o in operands])).values
            if len(values) != count:
                raise InterpretationError(
                    f"Number of operation results ({count}) doesn't match the number of "
                    f"implementation results ({len(values)})."
                )
            for r, v in zip(results, values):
                env[r] = v

        return step

    def _arith(self, op: Operation) -> Step | None:
        """A closure for an integer arith op whose registered implementation is the
        stock one (xDSL's or index_arith's), with xDSL's semantics; None otherwise."""
        if type(self.impls[type(op)][0]) not in _REPLACED:
            return None
        if isinstance(op, arith.ConstantOp):
            value = self._generic_value(op)
            r = op.result

            def constant(env: Env) -> None:
                env[r] = value

            return constant
        if isinstance(op, arith.CmpiOp):
            return self._cmpi(op)
        if isinstance(op, arith.IndexCastOp):
            return self._index_cast(op)
        if isinstance(op, arith.SelectOp):
            return self._select(op)
        if len(op.operands) != 2 or len(op.results) != 1:
            return None
        bits = _width(self.interp, op.results[0].type)
        if bits is None:
            return None
        a, b, r = op.operands[0], op.operands[1], op.results[0]
        if type(op) in _PLAIN_BINARY:
            plain = _PLAIN_BINARY[type(op)]

            def plain_step(env: Env) -> None:
                env[r] = plain(env[a], env[b])

            return plain_step
        if type(op) not in _SIGNED_BINARY:
            return None
        f, wraps = _SIGNED_BINARY[type(op)]
        signed = _signed(bits)

        def signed_step(env: Env) -> None:
            v = f(signed(env[a]), signed(env[b]))
            env[r] = signed(v) if wraps else v

        return signed_step

    def _cmpi(self, op: arith.CmpiOp) -> Step | None:
        bits = _width(self.interp, op.lhs.type)
        predicate = op.predicate.value.data
        if bits is None or not 0 <= predicate < len(_COMPARE):
            return None
        interpret = _unsigned(bits) if predicate >= 6 else _signed(bits)
        compare = _COMPARE[predicate]
        a, b, r = op.lhs, op.rhs, op.result

        def step(env: Env) -> None:
            env[r] = compare(interpret(env[a]), interpret(env[b]))

        return step

    def _index_cast(self, op: arith.IndexCastOp) -> Step | None:
        """xDSL's run_indexcast: truncate, sign-extend or re-sign to the result width."""
        into, out = _width(self.interp, op.input.type), _width(self.interp, op.result.type)
        if into is None or out is None:
            return None
        a, r = op.input, op.result
        cast: Callable[[Any], Any]
        if into > out:
            mask, top = (1 << out) - 1, 1 << (out - 1)

            def cast(x: Any) -> Any:
                t = x & mask
                return t - (1 << out) if t & top else t

        elif into < out:
            sign = 1 << (into - 1)

            def cast(x: Any) -> Any:
                return (x & (sign - 1)) - (x & sign)

        else:
            cast = _signed(out)

        def step(env: Env) -> None:
            env[r] = cast(env[a])

        return step

    def _select(self, op: arith.SelectOp) -> Step:
        """A scalar condition picks a whole value; a shaped one goes to xDSL's select."""
        elementwise = self._generic(op)
        c, t, f, r = op.cond, op.lhs, op.rhs, op.result

        def step(env: Env) -> None:
            cond = env[c]
            if isinstance(cond, ShapedArray):
                elementwise(env)
            else:
                env[r] = env[t] if cond else env[f]

        return step

    def _generic_value(self, op: Operation) -> Any:
        ft, fn = self.impls[type(op)]
        try:
            return fn(ft, self.interp, op, ()).values[0]
        except Exception as e:
            op.emit_error("Error while interpreting op", e)

    def _for(self, op: scf.ForOp) -> tuple[Step, GenStep | None]:
        body = self._body(op.body)
        lb, ub, stride = op.lb, op.ub, op.step
        inits = tuple(op.iter_args)
        results = tuple(op.results)
        nest = self._nest(op)

        def step(env: Env) -> None:
            if nest is not None and nest.run(env):
                return
            carried = tuple(env[v] for v in inits)
            for i in range(env[lb], env[ub], env[stride]):
                carried = body.run(env, (i, *carried))
            for r, v in zip(results, carried):
                env[r] = v

        def waiting(env: Env) -> Generator[None, None, None]:
            carried = tuple(env[v] for v in inits)
            for i in range(env[lb], env[ub], env[stride]):
                carried = yield from body.run_steps(env, (i, *carried))
            for r, v in zip(results, carried):
                env[r] = v

        return step, (waiting if body.waits else None)

    def _nest(self, op: scf.ForOp) -> LoopNest | None:
        """The loop as a vectorized nest, when it is a nest of index arith and stores."""
        stock = type(self.impls[buffer.SetValueOp][0]) is self.functions_class

        def scalar(inner: Operation) -> Step | None:
            return self._arith(inner) if type(inner) in self.impls else None

        return LoopNest.of(op, scalar, lambda t: _width(self.interp, t), stock)

    def _if(self, op: scf.IfOp) -> tuple[Step, GenStep | None]:
        then = self._body(op.true_region)
        otherwise = self._body(op.false_region) if op.false_region.blocks else None
        cond = op.cond
        results = tuple(op.results)

        def step(env: Env) -> None:
            if env[cond]:
                values = then.run(env, ())
            else:
                values = otherwise.run(env, ()) if otherwise is not None else ()
            for r, v in zip(results, values):
                env[r] = v

        def waiting(env: Env) -> Generator[None, None, None]:
            if env[cond]:
                values = yield from then.run_steps(env, ())
            else:
                values = () if otherwise is None else (yield from otherwise.run_steps(env, ()))
            for r, v in zip(results, values):
                env[r] = v

        waits = then.waits or (otherwise is not None and otherwise.waits)
        return step, (waiting if waits else None)

    def _stage(self, op: buffer.StageOp) -> tuple[Step, GenStep | None]:
        body = self._body(op.body)
        functions = self.functions
        core = op.core

        def step(env: Env) -> None:
            if functions.runs_stage_on(core):
                body.run(env, ())

        def waiting(env: Env) -> Generator[None, None, None]:
            if functions.runs_stage_on(core):
                yield from body.run_steps(env, ())

        return step, (waiting if body.waits else None)
