"""Facts the Ascend C printer needs that the buffer IR leaves implicit.

* `root_of`: the buffer a memref value views (a GM argument, a TBuf, a queue slot).
* `plan_syncs`: where SetFlag/WaitFlag pairs are needed. Ascend C's pipes (MTE2, V, S,
  MTE3, MTE1, M, FIX) run asynchronously; the TQue framework orders a queue slot
  between its producer and consumer (EnQue/DeQue/AllocTensor/FreeTensor, ascend.md
  2.4), but a TBuf, or a slot read on the scalar pipe, needs explicit events (ascend.md
  2.9). The plan orders every access after the conflicting accesses of other pipes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, Region, SSAValue

from autofusion.dialects import buffer
from autofusion.dialects.ascendc_rules import root_of

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
