"""Facts the Ascend C printer needs that the buffer IR leaves implicit.

* `root_of`: the buffer a memref value views (a GM argument, a TBuf, a queue slot).
* `Divisibility`: what every index value is known to be a multiple of (or exactly),
  from the kernel's body and the host code that computes its tiling scalars. It decides
  whether a copy may use DataCopy (32-byte multiples, ascend.md 2.7) or needs
  DataCopyPad, and whether a stride can be expressed in 32-byte units.
* `plan_syncs`: where SetFlag/WaitFlag pairs are needed. Ascend C's pipes (MTE2, V, S,
  MTE3, MTE1, M, FIX) run asynchronously; the TQue framework orders a queue slot
  between its producer and consumer (EnQue/DeQue/AllocTensor/FreeTensor, ascend.md
  2.4), but a TBuf, or a slot read on the scalar pipe, needs explicit events (ascend.md
  2.9). The plan orders every access after the conflicting accesses of other pipes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from autofusion.dialects import buffer
from autofusion.dialects.ascendc_rules import root_of

# ---------------------------------------------------------------------------------------
# Buffer roots
# ---------------------------------------------------------------------------------------


def view_offset(value: SSAValue) -> list[SSAValue]:
    """The offsets (elements) of the views from the root to `value`."""
    offsets: list[SSAValue] = []
    while isinstance(value.owner, buffer.ViewOp):
        offsets.append(value.owner.offset)
        value = value.owner.base
    return offsets


# ---------------------------------------------------------------------------------------
# Divisibility of index values
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """An index value is exactly `exact`, else a multiple of `multiple` (1: unknown)."""

    multiple: int = 1
    exact: int | None = None

    def divides_by(self, m: int) -> bool:
        if self.exact is not None:
            return self.exact % m == 0
        return self.multiple % m == 0

    @property
    def gcd_part(self) -> int:
        """The largest known divisor (0 for an exact zero)."""
        return abs(self.exact) if self.exact is not None else self.multiple


UNKNOWN = Fact()


def _join(a: Fact, b: Fact) -> Fact:
    """What holds for a value that is either a or b."""
    if a.exact is not None and a.exact == b.exact:
        return a
    return Fact(math.gcd(a.gcd_part, b.gcd_part) or 1)


def _exact(v: int) -> Fact:
    return Fact(abs(v) or 1, v)


class Divisibility:
    """Divisibility facts for the index values of every kernel in a module.

    A kernel's tiling arguments get the join of what the host passes at each launch
    (through the tiling function's arithmetic); a kernel without a launch knows nothing
    about them. The facts hold for any runtime shape because the host code that
    computes the tiling is the same code the facts are derived from.
    """

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self._memo: dict[SSAValue, Fact] = {}
        self._funcs = {
            op.sym_name.data: op
            for op in module.ops
            if isinstance(op, func.FuncOp) and op.body.blocks
        }
        self._kernel_args: dict[SSAValue, Fact] = {}
        # facts of the module's top-level host values, shared by every launch
        self._top_memo: dict[SSAValue | Operation, Any] = {}
        kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, buffer.KernelOp)}
        for launch in module.walk():
            if not isinstance(launch, buffer.LaunchOp):
                continue
            kernel = kernels.get(launch.kernel.root_reference.data)
            if kernel is None:
                continue
            for arg, value in zip(kernel.tiling_args, launch.tiling):
                fact = self._host(value, {})
                self._kernel_args[arg] = (
                    _join(self._kernel_args[arg], fact) if arg in self._kernel_args else fact
                )

    # ---- queries ----------------------------------------------------------------------

    def of(self, value: SSAValue) -> Fact:
        if value not in self._memo:
            self._memo[value] = UNKNOWN  # cycles (loop-carried values) stay unknown
            self._memo[value] = self._derive(value, self._kernel_args, self.of)
        return self._memo[value]

    def exact(self, value: SSAValue) -> int | None:
        return self.of(value).exact

    def multiple_of(self, value: SSAValue, m: int) -> bool:
        return m <= 1 or self.of(value).divides_by(m)

    # ---- derivation -------------------------------------------------------------------

    def _host(
        self,
        value: SSAValue,
        env: dict[SSAValue, Fact],
        memo: dict[SSAValue | Operation, Any] | None = None,
    ) -> Fact:
        """A host value's fact; `env` binds the block arguments of a called function.

        `memo` caches the facts of one evaluation scope (and the scopes of the calls made
        from it): tiling functions share subexpressions, so without it the walk is
        exponential in their depth. The walk is iterative: a model's host code chains
        one launch's sizes into the next, deeper than Python's recursion limit.
        """
        memo = self._top_memo if memo is None else memo
        stack = [value]
        while stack:
            v = stack[-1]
            if v in env or v in memo:
                stack.pop()
                continue
            missing = [d for d in self._host_deps(v) if d not in env and d not in memo]
            if missing:
                stack.extend(missing)
                continue
            memo[v] = self._host_fact(v, env, memo)
            stack.pop()
        return env[value] if value in env else cast(Fact, memo[value])

    @staticmethod
    def _host_deps(value: SSAValue) -> list[SSAValue]:
        """The values of the same scope whose facts `value`'s fact is computed from."""
        owner = value.owner
        if isinstance(owner, func.CallOp):
            return list(owner.arguments)
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, scf.ForOp) and value is owner.args[0]:
                return [parent.lb, parent.step]
            return []
        return list(owner.operands)

    def _host_fact(
        self, value: SSAValue, env: dict[SSAValue, Fact], memo: dict[SSAValue | Operation, Any]
    ) -> Fact:
        """`value`'s fact once the facts of its `_host_deps` are known."""

        def known(v: SSAValue) -> Fact:
            return env[v] if v in env else cast(Fact, memo[v])

        owner = value.owner
        if not isinstance(owner, func.CallOp):
            return self._derive(value, env, known)
        callee = self._funcs.get(owner.callee.root_reference.data)
        ret = callee.body.block.last_op if callee is not None else None
        if callee is None or not isinstance(ret, func.ReturnOp):
            return UNKNOWN
        if owner not in memo:
            inner_env = {a: known(v) for a, v in zip(callee.body.block.args, owner.arguments)}
            memo[owner] = (inner_env, {})
        inner_env, inner_memo = memo[owner]
        index = cast(Operation, owner).results.index(value)
        return self._host(ret.arguments[index], inner_env, inner_memo)

    @staticmethod
    def _derive(
        value: SSAValue, env: dict[SSAValue, Fact], get: Callable[[SSAValue], Fact]
    ) -> Fact:
        if value in env:
            return env[value]
        owner = value.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, scf.ForOp) and value is owner.args[0]:
                return _join(get(parent.lb), get(parent.step))
            return UNKNOWN
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return _exact(owner.value.value.data)
        return _arith_fact(owner, [get(o) for o in owner.operands])


def _arith_fact(op: Operation, args: list[Fact]) -> Fact:
    if len(args) == 2 and all(a.exact is not None for a in args):
        a, b = (cast(int, x.exact) for x in args)
        folded = _fold(op, a, b)
        if folded is not None:
            return _exact(folded)
    if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MinSIOp | arith.MaxSIOp):
        return Fact(math.gcd(args[0].gcd_part, args[1].gcd_part) or 1)
    if isinstance(op, arith.MuliOp):
        return Fact(args[0].gcd_part * args[1].gcd_part or 1)
    if isinstance(op, arith.RemSIOp):
        return Fact(math.gcd(args[0].gcd_part, args[1].gcd_part) or 1)
    if isinstance(op, arith.IndexCastOp):
        return args[0]
    return UNKNOWN


def _fold(op: Operation, a: int, b: int) -> int | None:
    if isinstance(op, arith.AddiOp):
        return a + b
    if isinstance(op, arith.SubiOp):
        return a - b
    if isinstance(op, arith.MuliOp):
        return a * b
    if isinstance(op, arith.MinSIOp):
        return min(a, b)
    if isinstance(op, arith.MaxSIOp):
        return max(a, b)
    if b == 0:
        return None
    if isinstance(op, arith.DivSIOp):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    if isinstance(op, arith.CeilDivSIOp):
        return -(-a // b)
    if isinstance(op, arith.FloorDivSIOp):
        return a // b
    if isinstance(op, arith.RemSIOp):
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return None


# ---------------------------------------------------------------------------------------
# Pipes and synchronisation
# ---------------------------------------------------------------------------------------

# the pipe that runs a copy, by its path (ascend.md 1.6)
COPY_PIPES: dict[tuple[str, str], str] = {
    ("gm", "ub"): "MTE2",
    ("gm", "l1"): "MTE2",
    ("ub", "gm"): "MTE3",
    ("ub", "l1"): "MTE3",
    ("ub", "ub"): "V",
    ("l1", "l0a"): "MTE1",
    ("l1", "l0b"): "MTE1",
    ("l0c", "gm"): "FIX",
    # CO1 -> CO2 on coupled chips runs on the vector pipe (asc-devkit: the L0C -> UB
    # DataCopy overloads are __inout_pipe__(V); samples put M_V before it, V_M after)
    ("l0c", "ub"): "V",
}


@dataclass(frozen=True)
class Effect:
    """The pipe an op runs on and the buffers it reads and writes."""

    pipe: str
    reads: tuple[SSAValue, ...]
    writes: tuple[SSAValue, ...]


def effect_of(op: Operation) -> Effect | None:
    """The buffer accesses of a buffer op (None for ops that touch no buffer data)."""
    if isinstance(op, buffer.CopyOp):
        # an atomic add reads what it adds to
        reads = (root_of(op.source), *((root_of(op.dest),) if op.atomic is not None else ()))
        return Effect(COPY_PIPES[op.path], reads, (root_of(op.dest),))
    if isinstance(op, buffer.VReduceOp):
        return Effect("V", (root_of(op.src),), (root_of(op.dst), root_of(op.tmp)))
    if isinstance(op, buffer.VectorOp):
        sources = tuple(root_of(v) for v in op.operands[1:] if isinstance(v.type, MemRefType))
        return Effect("V", sources, (root_of(op.operands[0]),))
    if isinstance(op, buffer.GetValueOp):
        return Effect("S", (root_of(op.source),), ())
    if isinstance(op, buffer.SetValueOp):
        return Effect("S", (), (root_of(op.dest),))
    if isinstance(op, buffer.MmadOp):
        return Effect("M", (root_of(op.a), root_of(op.b), root_of(op.c)), (root_of(op.c),))
    return None


@dataclass
class _State:
    """Unsynchronised accesses: per buffer and pipe the time of its last write/read, and
    per pipe pair the time of the last event between them."""

    time: int = 0
    writes: dict[SSAValue, dict[str, int]] = field(default_factory=dict)
    reads: dict[SSAValue, dict[str, int]] = field(default_factory=dict)
    synced: dict[tuple[str, str], int] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(
            self.time,
            {k: dict(v) for k, v in self.writes.items()},
            {k: dict(v) for k, v in self.reads.items()},
            dict(self.synced),
        )

    def merge(self, other: _State) -> _State:
        """What holds after either of two paths (conservative: later accesses, earlier syncs)."""
        out = self.copy()
        out.time = max(self.time, other.time)
        for table, theirs in ((out.writes, other.writes), (out.reads, other.reads)):
            for root, pipes in theirs.items():
                mine = table.setdefault(root, {})
                for pipe, t in pipes.items():
                    mine[pipe] = max(mine.get(pipe, -1), t)
        for pair in set(out.synced) | set(other.synced):
            out.synced[pair] = min(out.synced.get(pair, -1), other.synced.get(pair, -1))
        return out


class SyncPlanner:
    """Walks a kernel in program order (stages inline, loops twice for the back edge)
    and records before which op which (source pipe, destination pipe) events go.

    `core` ("aic"/"aiv") plans one core of a mix kernel on a split chip: only its stages
    run there (the other core's pipes are other hardware)."""

    def __init__(self, core: str | None = None) -> None:
        self.core = core
        self.plan: dict[Operation, list[tuple[str, str]]] = {}
        # (pipe pair, time of the latest access the event orders) of every event planned
        self.causes: list[tuple[tuple[str, str], int]] = []

    def run(self, kernel: buffer.KernelOp) -> dict[Operation, list[tuple[str, str]]]:
        self._region(kernel.body, _State())
        return self.plan

    def _region(self, region: Region, state: _State) -> _State:
        for block in region.blocks:
            state = self._ops(block.ops, state)
        return state

    def _ops(self, ops: Iterable[Operation], state: _State) -> _State:
        for op in ops:
            state = self._op(op, state)
        return state

    def _op(self, op: Operation, state: _State) -> _State:
        if isinstance(op, scf.ForOp):
            self._hoist(op, state)
            first = self._region(op.body, state.copy())
            second = self._region(op.body, state.merge(first))
            return state.merge(second)
        if isinstance(op, scf.IfOp):
            then = self._region(op.true_region, state.copy())
            other = self._region(op.false_region, state.copy()) if op.false_region.blocks else state
            return then.merge(other)
        if isinstance(op, buffer.StageOp):
            if self.core is not None and op.core != self.core:
                return state
            return self._region(op.body, state)
        if isinstance(op, buffer.SyncAllOp):
            # SyncAll drains every pipe first (pipe_barrier(PIPE_ALL)): nothing is pending
            state.writes.clear()
            state.reads.clear()
            return state
        if isinstance(op, buffer.QueueAllocOp | buffer.DequeOp):
            # the queue hands out a synchronised slot
            state.writes.pop(op.results[0], None)
            state.reads.pop(op.results[0], None)
            return state
        effect = effect_of(op)
        if effect is None:
            return state
        self._access(op, effect, state)
        return state

    def _hoist(self, loop: scf.ForOp, state: _State) -> None:
        """Events a loop body needs for accesses made before the loop go before it, once."""
        probe = SyncPlanner(self.core)
        probe._region(loop.body, state.copy())
        # a pair the body synchronises for its own accesses anyway is left in the body
        inside = {pair for pair, cause in probe.causes if cause > state.time}
        before = [
            (pair, cause)
            for pair, cause in probe.causes
            if cause <= state.time and pair not in inside
        ]
        early = sorted({pair for pair, _ in before})
        if not early:
            return
        self.causes.extend(before)  # an enclosing loop may hoist them further
        state.time += 1
        pairs = self.plan.setdefault(loop, [])
        for pair in early:
            if pair not in pairs:
                pairs.append(pair)
            state.synced[pair] = state.time
        state.time += 1

    def _access(self, op: Operation, effect: Effect, state: _State) -> None:
        q = effect.pipe
        needed: dict[str, int] = {}

        def conflict(p: str, t: int) -> None:
            if p != q and t > state.synced.get((p, q), -1):
                needed[p] = max(needed.get(p, -1), t)

        for root in effect.reads + effect.writes:
            for p, t in state.writes.get(root, {}).items():
                conflict(p, t)
        for root in effect.writes:
            for p, t in state.reads.get(root, {}).items():
                conflict(p, t)
        state.time += 1
        if needed:
            pairs = self.plan.setdefault(op, [])
            for p in sorted(needed):
                if (p, q) not in pairs:
                    pairs.append((p, q))
                state.synced[(p, q)] = state.time
                self.causes.append(((p, q), needed[p]))
            state.time += 1
        for root in effect.reads:
            state.reads.setdefault(root, {})[q] = state.time
        for root in effect.writes:
            state.writes.setdefault(root, {})[q] = state.time


def plan_syncs(
    kernel: buffer.KernelOp, core: str | None = None
) -> dict[Operation, list[tuple[str, str]]]:
    """Before which ops of `kernel` which pipe pairs need a SetFlag/WaitFlag (on `core`
    of a mix kernel on a split chip)."""
    return SyncPlanner(core).run(kernel)
