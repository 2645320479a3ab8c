"""Reference semantics of the buffer dialect on numpy: kernels run block by block.

A `mix` kernel on a split chip runs every block on its AIC and its AIVs (`CoreGroup`):
one thread per core, of which only one runs at a time, handing over when it waits for a
cross-core flag that nobody has set yet or when it ends. Each core runs the code outside
stages and the stages of its own kind (`cube` on the AIC, the others on each AIV), so the
flags are what orders the cores; a wait that no set can satisfy, and a set nobody waits
for, are errors.

Memrefs are 1-D numpy views (a buffer and an offset, like LocalTensor). The interpreter
enforces what Ascend C would: queue slots are taken and given back in order, UB
addresses used by vector instructions and copies are 32-byte aligned, DataCopy blocks are
32-byte multiples on chips without DataCopyPad, and runtime buffer sizes stay within the
static `max_bytes` the verifier checked. Padding lanes that DataCopyPad adds and GM
outputs a kernel never writes are NaN, so a kernel that reads or leaves them shows up in
its numbers.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from autofusion import dtypes
from autofusion.dialects import buffer
from autofusion.dialects.buffer_verifier import runs_split
from autofusion.hardware import get_chip
from autofusion.interpreter.buffer_refs import UB_ALIGN, Ref
from autofusion.interpreter.kernel_program import KernelProgram


@dataclass
class Queue:
    """A TQue: slots cycle free -> allocated -> enqueued -> dequeued -> free."""

    name: str
    slots: list[np.ndarray]
    free: deque[int] = field(default_factory=deque)
    fifo: deque[int] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.free.extend(range(len(self.slots)))


def _slot_of(queue: Queue, ref: Ref) -> int:
    for i, s in enumerate(queue.slots):
        if s is ref.data:
            return i
    raise InterpretationError(f"{ref.name} is not a slot of queue {queue.name}")


def _width(memref_type: Any) -> int:
    return dtypes.byte_width(cast(MemRefType, memref_type).element_type)


def _quiet(fn: Any) -> Any:
    with np.errstate(all="ignore"):
        return fn()


_VBINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
}
_VUNARY: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp,
    "ln": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "abs": np.abs,
    "relu": lambda x: np.maximum(x, 0),
    "reciprocal": lambda x: 1 / x,
}
_VSCALAR: dict[str, Callable[[Any, Any], Any]] = {
    "adds": np.add,
    "muls": np.multiply,
    "maxs": np.maximum,
    "mins": np.minimum,
}
_VREDUCE: dict[str, Callable[[Any], Any]] = {"sum": np.sum, "max": np.max, "min": np.min}
_INT_ROUNDING: dict[str, Callable[[Any], Any]] = {
    "trunc": np.trunc,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),  # half away from zero
    "rint": np.rint,
    "none": np.rint,
}
_VCOMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "lt": np.less,
    "gt": np.greater,
    "eq": np.equal,
    "le": np.less_equal,
    "ge": np.greater_equal,
    "ne": np.not_equal,
}


class _Abort(Exception):
    """Unwinds a core's thread when another core of its group failed."""


# cross-core flag counters saturate at 15 sets (asc-devkit CrossCoreSetFlag.md)
MAX_FLAG_COUNT = 15


class CoreGroup:
    """The AICs and AIVs of a mix kernel on a split chip, as coroutines: one block's
    cores, or every block's when the kernel has a `buffer.sync_all` (the cores of all
    blocks must then run side by side).

    Core i (block i // per, AIVs 0..n-1 then the AIC) is a thread; `turn` says which
    one runs. A core hands the turn over only when it waits (for a flag that is not set,
    or at a sync_all not every core has reached) or when it ends. The interpreter's value
    scopes and the running core's identity (block, core kind, sub-block) are per core,
    swapped at each hand-over. Flags are per block and follow CrossCoreSetFlag mode 2:
    a set by the AIC counts for every AIV; the AIC's wait needs a set from every AIV.
    """

    def __init__(
        self, interp: Interpreter, functions: BufferFunctions, n_aiv: int, blocks: list[int]
    ) -> None:
        self.interp = interp
        self.functions = functions
        self.n_aiv = n_aiv
        self.per = n_aiv + 1
        self.blocks = blocks
        self.names = [
            f"{'' if len(blocks) == 1 else f'block {b} '}{f'aiv{c}' if c < n_aiv else 'aic'}"
            for b in blocks
            for c in range(self.per)
        ]
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False] * len(self.names)
        # what a core waits for: ("flag", id) or ("sync", the sync_all count to reach)
        self.waiting: list[tuple[str, int] | None] = [None] * len(self.names)
        self.arrived = [0] * len(self.names)  # sync_all calls per core
        self.scopes: list[Any] = [interp._ctx] * len(self.names)
        # counts[block][receiver][flag]: sets not consumed yet; the AIC's are per AIV
        self.to_aiv: list[list[dict[int, int]]] = [[{} for _ in range(n_aiv)] for _ in blocks]
        self.to_aic: list[list[dict[int, int]]] = [[{} for _ in range(n_aiv)] for _ in blocks]
        self.error: BaseException | None = None

    def core_kind(self, i: int) -> str:
        return "aic" if i % self.per == self.n_aiv else "aiv"

    # ---- running ---------------------------------------------------------------------

    def run(self, body: Callable[[], None]) -> None:
        """Run `body` (the kernel) on every core, each in its own thread."""
        threads = [
            threading.Thread(target=self._thread, args=(i, body), daemon=True)
            for i in range(len(self.names))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error
        self._check_flags_taken()

    def run_steps(self, start: Callable[[], Generator[None, None, Any]]) -> None:
        """Run the kernel on every core as generators in this thread: `start()` gives a
        core's run, which yields whenever the core waits for something not yet ready
        (a KernelProgram's `run_steps`). The turns are the threads' turns of `run`,
        without an OS thread switch at each hand-over."""
        runs: list[Generator[None, None, Any] | None] = [None] * len(self.names)
        i = 0
        try:
            while i >= 0:
                self._enter(i)
                core = runs[i]
                if core is None:
                    core = runs[i] = start()
                try:
                    next(core)
                except StopIteration:
                    self.done[i] = True
                with self.cond:
                    self.scopes[i] = self.interp._ctx
                    self._pass_turn(i)
                    i = self.turn
        finally:
            for core in runs:
                if core is not None:
                    core.close()
        if self.error is not None:
            raise self.error
        self._check_flags_taken()

    def _check_flags_taken(self) -> None:
        """Every flag set was waited for (a set nobody waits for is an error)."""
        for k in range(len(self.blocks)):
            for i in range(self.n_aiv):
                aiv = self.names[k * self.per + i]
                for flag, n in sorted({**self.to_aiv[k][i]}.items()):
                    if n:
                        raise InterpretationError(
                            f"buffer.cross_core_set {flag} from the AIC was never waited for "
                            f"by {aiv}"
                        )
                for flag, n in sorted({**self.to_aic[k][i]}.items()):
                    if n:
                        raise InterpretationError(
                            f"buffer.cross_core_set {flag} from {aiv} was never waited for by "
                            "the AIC"
                        )

    def _thread(self, i: int, body: Callable[[], None]) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.turn == i or self.error is not None)
            if self.error is not None:
                self.done[i] = True
                return
            self._enter(i)
        try:
            body()
        except _Abort:
            pass
        except BaseException as e:  # reported by run()
            with self.cond:
                if self.error is None:
                    self.error = e
        with self.cond:
            self.scopes[i] = self.interp._ctx
            self.done[i] = True
            self._pass_turn(i)

    def _enter(self, i: int) -> None:
        self.interp._ctx = self.scopes[i]
        self.functions.core = self.core_kind(i)
        c = i % self.per
        self.functions.sub_block = c if c < self.n_aiv else 0
        self.functions.block_idx = self.blocks[i // self.per]

    def _ready(self, i: int) -> bool:
        waiting = self.waiting[i]
        if waiting is None:
            return True
        kind, n = waiting
        if kind == "sync":
            return all(a >= n for a in self.arrived)
        k, c = divmod(i, self.per)
        if c < self.n_aiv:
            return self.to_aiv[k][c].get(n, 0) > 0
        return all(self.to_aic[k][a].get(n, 0) > 0 for a in range(self.n_aiv))

    def _pass_turn(self, i: int) -> None:
        """Give the turn to the next core that can run (called with the lock held)."""
        n = len(self.names)
        for step in range(1, n + 1):
            j = (i + step) % n
            if not self.done[j] and self._ready(j):
                self.turn = j
                self.cond.notify_all()
                return
        stuck = [k for k in range(n) if not self.done[k]]
        if stuck and self.error is None:
            k = stuck[0]
            kind, value = cast(tuple[str, int], self.waiting[k])
            if kind == "sync":
                self.error = InterpretationError(
                    f"buffer.sync_all on {self.names[k]}: a core of the launch ended without "
                    "reaching it, so the others would wait forever"
                )
            else:
                self.error = InterpretationError(
                    f"buffer.cross_core_wait {value} on {self.names[k]} without a matching "
                    "buffer.cross_core_set: the core would wait forever"
                )
        self.turn = -1
        self.cond.notify_all()

    def _wait(self, i: int, what: tuple[str, int]) -> None:
        """Block core i (lock held) until what it waits for holds."""
        self.waiting[i] = what
        while not self._ready(i):
            self.scopes[i] = self.interp._ctx
            self._pass_turn(i)
            self.cond.wait_for(lambda: self.turn == i or self.error is not None)
            if self.error is not None:
                raise _Abort()
            self._enter(i)
        self.waiting[i] = None

    def _me(self, core: str, sub_block: int) -> int:
        k = self.blocks.index(self.functions.block_idx)
        return k * self.per + (self.n_aiv if core == "aic" else sub_block)

    # ---- flags -----------------------------------------------------------------------

    def set_flag(self, core: str, sub_block: int, flag: int) -> None:
        with self.cond:
            k = self._me(core, sub_block) // self.per
            targets = (
                [self.to_aiv[k][a] for a in range(self.n_aiv)]
                if core == "aic"
                else [self.to_aic[k][sub_block]]
            )
            for counts in targets:
                counts[flag] = counts.get(flag, 0) + 1
                if counts[flag] > MAX_FLAG_COUNT:
                    raise InterpretationError(
                        f"buffer.cross_core_set {flag} from the {core} a 16th time without a "
                        f"wait: a flag counts at most {MAX_FLAG_COUNT} sets"
                    )

    def _take_flag(self, i: int, flag: int) -> None:
        k, c = divmod(i, self.per)
        if c < self.n_aiv:
            self.to_aiv[k][c][flag] -= 1
        else:
            for a in range(self.n_aiv):
                self.to_aic[k][a][flag] -= 1

    def wait_flag(self, core: str, sub_block: int, flag: int) -> None:
        i = self._me(core, sub_block)
        with self.cond:
            self._wait(i, ("flag", flag))
            self._take_flag(i, flag)

    def sync_all(self, core: str, sub_block: int) -> None:
        i = self._me(core, sub_block)
        with self.cond:
            self.arrived[i] += 1
            self._wait(i, ("sync", self.arrived[i]))

    # ---- the same, as steps of a generator run (`run_steps`) -------------------------

    def _await(self, i: int, what: tuple[str, int]) -> Generator[None, None, None]:
        """Yield (hand the turn over) until what core i waits for holds."""
        self.waiting[i] = what
        while not self._ready(i):
            yield
        self.waiting[i] = None

    def wait_flag_steps(self, core: str, sub_block: int, flag: int) -> Generator[None, None, None]:
        i = self._me(core, sub_block)
        yield from self._await(i, ("flag", flag))
        self._take_flag(i, flag)

    def sync_all_steps(self, core: str, sub_block: int) -> Generator[None, None, None]:
        i = self._me(core, sub_block)
        self.arrived[i] += 1
        yield from self._await(i, ("sync", self.arrived[i]))


@register_impls
class BufferFunctions(InterpreterFunctions):
    """numpy implementations of the buffer dialect, plus kernel launches."""

    def __init__(self) -> None:
        super().__init__()
        self.block_idx = 0
        self.block_num = 1
        self.chip = get_chip("Ascend910B1")
        # the workspaces of the running launch, one per buffer.workspace op
        self.workspaces: dict[buffer.WorkspaceOp, Ref] = {}
        # the running core of a split mix kernel ("aic"/"aiv"; None: one core runs all)
        self.core: str | None = None
        self.sub_block = 0
        self.group: CoreGroup | None = None
        # each kernel compiled once (None: only xDSL's interpreter runs it)
        self.programs: dict[buffer.KernelOp, KernelProgram | None] = {}

    def runs_stage_on(self, core: str) -> bool:
        """Whether the running core runs a buffer.stage of `core` ("aic"/"aiv")."""
        return self.core is None or self.core == core

    # ---- host side --------------------------------------------------------------

    @impl(buffer.DimOp)
    def run_dim(self, interp: Interpreter, op: buffer.DimOp, args: PythonValues) -> PythonValues:
        return (int(np.asarray(args[0]).shape[op.dim.value.data]),)

    @impl(buffer.LaunchOp)
    def run_launch(
        self, interp: Interpreter, op: buffer.LaunchOp, args: PythonValues
    ) -> PythonValues:
        blocks = int(args[0])
        n_in = len(op.inputs)
        n_tiling = len(op.tiling)
        inputs = args[1 : 1 + n_in]
        tiling = args[1 + n_in : 1 + n_in + n_tiling]
        dims = list(args[1 + n_in + n_tiling :])
        kernel = interp.get_op_for_symbol(op.kernel)
        assert isinstance(kernel, buffer.KernelOp)
        if blocks < 1:
            raise InterpretationError(f"launch of @{kernel.sym_name.data} on {blocks} blocks")
        gm_in = [
            Ref(
                np.ascontiguousarray(x).reshape(-1).copy(),
                0,
                "gm",
                f"input #{i}",
                dtypes.byte_width(cast(TensorType, v.type).element_type),
            )
            for i, (x, v) in enumerate(zip(inputs, op.inputs))
        ]
        out_shapes = []
        for r in op.outputs:
            t = cast(TensorType, r.type)
            out_shapes.append(tuple(d if d >= 0 else dims.pop(0) for d in t.get_shape()))
        gm_out = []
        for i, (r, shape) in enumerate(zip(op.outputs, out_shapes)):
            dt = dtypes.storage_dtype(cast(TensorType, r.type).element_type)
            fill = np.nan if np.issubdtype(dt, np.floating) else 0
            width = dtypes.byte_width(cast(TensorType, r.type).element_type)
            gm_out.append(
                Ref(np.full(int(np.prod(shape)), fill, dt), 0, "gm", f"output #{i}", width)
            )
        saved = (self.block_idx, self.block_num, self.chip, self.workspaces)
        saved_core = (self.core, self.sub_block, self.group)
        self.group = None
        self.chip = get_chip(kernel.chip.data)
        self.block_num = blocks
        self.workspaces = {}
        args = (*gm_in, *gm_out, *tiling)
        name = kernel.sym_name.data
        if kernel not in self.programs:
            self.programs[kernel] = KernelProgram.compile(interp, self, kernel)
        program = self.programs[kernel]

        def body() -> None:
            if program is not None:
                program.run(args)
            else:
                interp.run_ssacfg_region(kernel.body, args, name)

        def run_group(group: CoreGroup) -> None:
            if program is not None:
                group.run_steps(lambda: program.run_steps(args))
            else:
                group.run(body)

        try:
            n_aiv = max(1, self.chip.vector_cores // max(self.chip.cube_cores, 1))
            if any(isinstance(o, buffer.SyncAllOp) for o in kernel.walk()):
                # every block's cores run side by side, meeting at the sync_alls
                if blocks > self.chip.cube_cores:
                    raise InterpretationError(
                        f"@{name} synchronizes all cores (buffer.sync_all) but is launched "
                        f"on {blocks} blocks, more than the {self.chip.cube_cores} cube cores "
                        f"of {self.chip.name}: the blocks that wait for a core would never run"
                    )
                self.group = CoreGroup(interp, self, n_aiv, list(range(blocks)))
                run_group(self.group)
            for b in range(0 if self.group is not None else blocks):
                self.block_idx = b
                if runs_split(kernel):
                    self.group = CoreGroup(interp, self, n_aiv, [b])
                    run_group(self.group)
                else:
                    body()
        finally:
            self.block_idx, self.block_num, self.chip, self.workspaces = saved
            self.core, self.sub_block, self.group = saved_core
        return tuple(
            dtypes.to_storage(o.data.reshape(shape), cast(TensorType, r.type).element_type)
            for o, shape, r in zip(gm_out, out_shapes, op.outputs)
        )

    @impl_terminator(buffer.ReturnOp)
    def run_return(
        self, interp: Interpreter, op: buffer.ReturnOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(()), ()

    # ---- kernel structure -------------------------------------------------------

    @impl(buffer.BlockIdxOp)
    def run_block_idx(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (self.block_idx,)

    @impl(buffer.BlockNumOp)
    def run_block_num(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (self.block_num,)

    @impl(buffer.SubBlockIdxOp)
    def run_sub_block_idx(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (self.sub_block,)

    @impl(buffer.StageOp)
    def run_stage(
        self, interp: Interpreter, op: buffer.StageOp, args: PythonValues
    ) -> PythonValues:
        if self.runs_stage_on(op.core):
            interp.run_ssacfg_region(op.body, (), op.stage.data)
        return ()

    def _group(self, op: Operation) -> tuple[CoreGroup, str]:
        """The running core group of a cross-core op and the running core's kind (an
        error outside a group)."""
        if self.group is None or self.core is None:
            raise InterpretationError(f"{op.name} outside a mix kernel on a split chip")
        return self.group, self.core

    def _cross_core(self, op: buffer.CrossCoreOp) -> PythonValues:
        """A flag op runs on the core it names (the others skip it)."""
        group, core = self._group(op)
        if core == op.core.data:
            act = group.set_flag if isinstance(op, buffer.CrossCoreSetOp) else group.wait_flag
            act(core, self.sub_block, op.flag.value.data)
        return ()

    def wait_steps(
        self, op: buffer.CrossCoreWaitOp | buffer.SyncAllOp
    ) -> Generator[None, None, None]:
        """A wait of a KernelProgram run by `CoreGroup.run_steps`: it yields until what
        it waits for holds (the generator twin of run_cross_core_wait / run_sync_all)."""
        group, core = self._group(op)
        if isinstance(op, buffer.SyncAllOp):
            yield from group.sync_all_steps(core, self.sub_block)
        elif core == op.core.data:
            yield from group.wait_flag_steps(core, self.sub_block, op.flag.value.data)

    @impl(buffer.SyncAllOp)
    def run_sync_all(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        group, core = self._group(op)
        group.sync_all(core, self.sub_block)
        return ()

    @impl(buffer.CrossCoreSetOp)
    def run_cross_core_set(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return self._cross_core(op)

    @impl(buffer.CrossCoreWaitOp)
    def run_cross_core_wait(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return self._cross_core(op)

    # ---- buffers and queues -----------------------------------------------------

    def _elements(self, op: Any, nbytes: int, element_type: Any) -> int:
        if nbytes > op.max_bytes.value.data:
            raise InterpretationError(
                f"{op.name} of {nbytes} bytes exceeds its static bound of "
                f"{op.max_bytes.value.data} bytes"
            )
        # InitBuffer rounds every buffer up to 32 bytes
        return -(-nbytes // UB_ALIGN) * UB_ALIGN // dtypes.byte_width(element_type)

    @impl(buffer.AllocQueueOp)
    def run_alloc_queue(
        self, interp: Interpreter, op: buffer.AllocQueueOp, args: PythonValues
    ) -> PythonValues:
        n = self._elements(op, int(args[0]), op.element_type)
        dt = dtypes.storage_dtype(op.element_type)
        name = op.queue.name_hint or "queue"
        return (Queue(name, [np.zeros(n, dt) for _ in range(op.buffers.value.data)]),)

    @impl(buffer.AllocBufOp)
    def run_alloc_buf(
        self, interp: Interpreter, op: buffer.AllocBufOp, args: PythonValues
    ) -> PythonValues:
        element_type = cast(MemRefType, op.buffer.type).element_type
        n = self._elements(op, int(args[0]), element_type)
        space = buffer.POSITIONS[op.position.data]
        return (
            Ref(
                np.zeros(n, dtypes.storage_dtype(element_type)),
                0,
                space,
                op.buffer.name_hint or "buf",
                dtypes.byte_width(element_type),
            ),
        )

    @impl(buffer.QueueAllocOp)
    def run_queue_alloc(
        self, interp: Interpreter, op: buffer.QueueAllocOp, args: PythonValues
    ) -> PythonValues:
        q = cast(Queue, args[0])
        if not q.free:
            raise InterpretationError(f"AllocTensor on queue {q.name} with no free buffer")
        i = q.free.popleft()
        space = buffer.space_of(op.tensor.type)
        return (Ref(q.slots[i], 0, space, f"{q.name}[{i}]", _width(op.tensor.type)),)

    @impl(buffer.EnqueOp)
    def run_enque(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        q, ref = cast(Queue, args[0]), cast(Ref, args[1])
        i = _slot_of(q, ref)
        if i in q.free or i in q.fifo:
            raise InterpretationError(f"EnQue of a buffer queue {q.name} did not hand out")
        q.fifo.append(i)
        return ()

    @impl(buffer.DequeOp)
    def run_deque(
        self, interp: Interpreter, op: buffer.DequeOp, args: PythonValues
    ) -> PythonValues:
        q = cast(Queue, args[0])
        if not q.fifo:
            raise InterpretationError(f"DeQue on queue {q.name} with nothing enqueued")
        i = q.fifo.popleft()
        space = buffer.space_of(op.tensor.type)
        return (Ref(q.slots[i], 0, space, f"{q.name}[{i}]", _width(op.tensor.type)),)

    @impl(buffer.QueueFreeOp)
    def run_queue_free(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        q, ref = cast(Queue, args[0]), cast(Ref, args[1])
        i = _slot_of(q, ref)
        if i in q.free or i in q.fifo:
            raise InterpretationError(f"FreeTensor of a buffer queue {q.name} does not hold")
        q.free.append(i)
        return ()

    @impl(buffer.ViewOp)
    def run_view(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        ref, offset = cast(Ref, args[0]), int(args[1])
        if offset < 0 or ref.offset + offset > ref.data.size:
            raise InterpretationError(f"view at {offset} is outside {ref.name}")
        return (Ref(ref.data, ref.offset + offset, ref.space, ref.name, ref.width),)

    # ---- data movement ----------------------------------------------------------

    @impl(buffer.CopyOp)
    def run_copy(self, interp: Interpreter, op: buffer.CopyOp, args: PythonValues) -> PythonValues:
        src, dst = cast(Ref, args[0]), cast(Ref, args[1])
        blocks, length, s_stride, d_stride = (int(a) for a in args[2:6])
        path = (src.space, dst.space)
        itemsize = dst.width
        if path in buffer.CHIP_DEPENDENT_PATHS and not self.chip.l0c_to_ub:
            raise InterpretationError(f"{self.chip.name} has no {path[0]} -> {path[1]} path")
        for ref in (src, dst):
            ref.check_aligned("copy")
        if "gm" in path and not self.chip.data_copy_pad and (length * itemsize) % UB_ALIGN:
            raise InterpretationError(
                f"copy of {length * itemsize}-byte blocks on {self.chip.name}: DataCopy moves "
                "32-byte multiples and this chip has no DataCopyPad"
            )
        pad = path == ("gm", "ub") and (length * itemsize) % UB_ALIGN != 0
        padded = -(-length * itemsize // UB_ALIGN) * UB_ALIGN // itemsize
        dst_type = cast(MemRefType, op.dest.type).element_type
        convert = cast(MemRefType, op.source.type).element_type != dst_type
        if op.transpose is not None:
            # block i of the source becomes column i of the destination
            rows = np.arange(blocks)[:, None]
            cols = np.arange(length)[None, :]
            src_at = src.offset + rows * s_stride + cols
            dst_at = dst.offset + cols * d_stride + rows
            if blocks and length:
                if src_at.max() >= src.data.size:
                    raise InterpretationError(f"transposed copy overruns {src.name}")
                if dst_at.max() >= dst.data.size:
                    raise InterpretationError(f"transposed copy overruns {dst.name}")
                dst.data[dst_at] = src.data[src_at]
            return ()
        for b in range(blocks):
            s = Ref(src.data, src.offset + b * s_stride, src.space, src.name, src.width).window(
                length, "copy source"
            )
            dref = Ref(dst.data, dst.offset + b * d_stride, dst.space, dst.name, dst.width)
            values = s.astype(np.float32) if convert else s.astype(dst.data.dtype)
            if op.relu is not None:
                values = np.maximum(values, 0)
            if convert:  # Fixpipe's F322F16 / F322BF16: round to nearest even
                values = dtypes.to_storage(values, dst_type)
            target = dref.window(length, "copy destination")
            if op.atomic is not None:  # SetAtomicAdd<T>: GM + values, in T
                if np.issubdtype(target.dtype, np.floating):
                    total = target.astype(np.float32) + np.asarray(values, np.float32)
                    values = dtypes.to_storage(total, dst_type)
                else:
                    values = target + values
            target[:] = values
            if pad and np.issubdtype(dst.data.dtype, np.floating):
                # DataCopyPad leaves the padding lanes undefined: poison them
                end = min(dref.offset + padded, dst.data.size)
                dst.data[dref.offset + length : end] = np.nan
        return ()

    # ---- vector -----------------------------------------------------------------

    def _vec(self, ref: Any, count: int, what: str) -> np.ndarray:
        r = cast(Ref, ref)
        r.check_aligned(what)
        return r.window(count, what)

    @impl(buffer.VBinaryOp)
    def run_vbinary(
        self, interp: Interpreter, op: buffer.VBinaryOp, args: PythonValues
    ) -> PythonValues:
        n = int(args[3])
        dst, a, b = (self._vec(args[i], n, f"vbinary {op.kind.data}") for i in range(3))
        fn = _VBINARY[op.kind.data]
        dst[:] = _quiet(lambda: fn(a, b))
        return ()

    @impl(buffer.VUnaryOp)
    def run_vunary(
        self, interp: Interpreter, op: buffer.VUnaryOp, args: PythonValues
    ) -> PythonValues:
        n = int(args[2])
        dst, src = (self._vec(args[i], n, f"vunary {op.kind.data}") for i in range(2))
        fn = _VUNARY[op.kind.data]
        dst[:] = _quiet(lambda: fn(src))
        return ()

    @impl(buffer.VScalarOp)
    def run_vscalar(
        self, interp: Interpreter, op: buffer.VScalarOp, args: PythonValues
    ) -> PythonValues:
        n = int(args[3])
        dst, src = (self._vec(args[i], n, f"vscalar {op.kind.data}") for i in range(2))
        s = np.asarray(args[2]).astype(dst.dtype)
        fn = _VSCALAR[op.kind.data]
        dst[:] = _quiet(lambda: fn(src, s))
        return ()

    @impl(buffer.VDupOp)
    def run_vdup(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        n = int(args[2])
        dst = self._vec(args[0], n, "vdup")
        dst[:] = args[1]
        return ()

    @impl(buffer.VCastOp)
    def run_vcast(
        self, interp: Interpreter, op: buffer.VCastOp, args: PythonValues
    ) -> PythonValues:
        n = int(args[2])
        dst, src = self._vec(args[0], n, "vcast"), self._vec(args[1], n, "vcast")
        mode = op.round.data
        values = src.astype(np.float64) if np.issubdtype(src.dtype, np.floating) else src
        if np.issubdtype(dst.dtype, np.integer):
            values = _INT_ROUNDING[mode](values)
        elif mode in ("trunc", "floor", "ceil", "round"):
            raise InterpretationError(f"round mode {mode} narrows to an integer type only")
        element_type = cast(MemRefType, op.dst.type).element_type
        dst[:] = dtypes.to_storage(values, element_type)
        return ()

    @impl(buffer.VReduceOp)
    def run_vreduce(
        self, interp: Interpreter, op: buffer.VReduceOp, args: PythonValues
    ) -> PythonValues:
        n = int(args[3])
        if n < 1:
            raise InterpretationError("vreduce of no elements")
        src = self._vec(args[1], n, "vreduce")
        dst = self._vec(args[0], 1, "vreduce")
        fn = _VREDUCE[op.kind.data]
        dst[0] = _quiet(lambda: fn(src.astype(np.float32)))
        return ()

    @impl(buffer.VCompareOp)
    def run_vcompare(
        self, interp: Interpreter, op: buffer.VCompareOp, args: PythonValues
    ) -> PythonValues:
        n = int(args[3])
        dst, a, b = (self._vec(args[i], n, "vcompare") for i in range(3))
        fn = _VCOMPARE[op.kind.data]
        dst[:] = fn(a, b)
        return ()

    @impl(buffer.VSelectOp)
    def run_vselect(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        n = int(args[4])
        dst, mask, a, b = (self._vec(args[i], n, "vselect") for i in range(4))
        dst[:] = np.where(mask.astype(bool), a, b)
        return ()

    @impl(buffer.VGatherOp)
    def run_vgather(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        n = int(args[3])
        dst = self._vec(args[0], n, "vgather")
        offsets = self._vec(args[2], n, "vgather offsets").astype(np.int64)
        src = cast(Ref, args[1])
        src.check_aligned("vgather")
        if n == 0:
            return ()
        if (offsets < 0).any() or (offsets % src.width).any():
            raise InterpretationError(
                f"vgather: byte offsets must be non-negative multiples of {src.width}"
            )
        at = src.offset + offsets // src.width
        if at.max() >= src.data.size:
            raise InterpretationError(
                f"vgather reads byte {int(offsets.max())} past the end of {src.name}"
            )
        dst[:] = src.data[at]
        return ()

    @impl(buffer.GetValueOp)
    def run_get_value(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        ref = cast(Ref, args[0])
        return (ref.window(int(args[1]) + 1, "get_value")[int(args[1])].item(),)

    @impl(buffer.SetValueOp)
    def run_set_value(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        ref = cast(Ref, args[0])
        ref.window(int(args[1]) + 1, "set_value")[int(args[1])] = args[2]
        return ()

    # ---- cube -------------------------------------------------------------------

    @impl(buffer.MmadOp)
    def run_mmad(self, interp: Interpreter, op: buffer.MmadOp, args: PythonValues) -> PythonValues:
        c, a, b = (cast(Ref, args[i]) for i in range(3))
        m, n, k = (int(args[i]) for i in range(3, 6))
        acc = bool(args[6])
        am = a.window(m * k, "mmad A").astype(np.float32).reshape(m, k)
        bm = b.window(k * n, "mmad B").astype(np.float32).reshape(k, n)
        cm = c.window(m * n, "mmad C")
        prod = (am @ bm).reshape(-1)
        cm[:] = cm + prod if acc else prod
        return ()

    @impl(buffer.PipeBarrierOp)
    def run_pipe_barrier(self, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        """The interpreter runs every op in order: a barrier has nothing left to order."""
        return ()

    # ---- workspace and im2col ---------------------------------------------------

    @impl(buffer.WorkspaceOp)
    def run_workspace(
        self, interp: Interpreter, op: buffer.WorkspaceOp, args: PythonValues
    ) -> PythonValues:
        """One GM allocation per launch, shared by every block (NaN: unwritten data shows)."""
        if op not in self.workspaces:
            element_type = cast(MemRefType, op.result.type).element_type
            width = dtypes.byte_width(element_type)
            dt = dtypes.storage_dtype(element_type)
            n = -(-int(args[0]) // width)
            self.workspaces[op] = Ref(np.full(n, np.nan, dt), 0, "gm", "workspace", width)
        return (self.workspaces[op],)

    @impl(buffer.Im2colOp)
    def run_im2col(
        self, interp: Interpreter, op: buffer.Im2colOp, args: PythonValues
    ) -> PythonValues:
        dst, src = cast(Ref, args[0]), cast(Ref, args[1])
        c, h, w, top, left, out_w, m0, m, k0, k = (int(a) for a in args[2:12])
        for ref in (src, dst):
            ref.check_aligned("im2col")
        kh, kw = op.ints("kernel")
        sh, sw = op.ints("strides")
        dh, dw = op.ints("dilations")
        fmap = src.window(c * h * w, "im2col source").reshape(c, h, w)
        pix = m0 + np.arange(m)
        oh, ow = pix // out_w, pix % out_w
        taps = k0 + np.arange(k)
        ci, r, s_ = taps // (kh * kw), (taps // kw) % kh, taps % kw
        if k and ci.max() >= c:
            raise InterpretationError(f"im2col reads channel {ci.max()} of a {c}-channel map")
        ih = oh[None, :] * sh + r[:, None] * dh - top  # [k, m]
        iw = ow[None, :] * sw + s_[:, None] * dw - left
        inside = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
        values = np.zeros((k, m), dtype=dst.data.dtype)
        cc = np.broadcast_to(ci[:, None], (k, m))
        values[inside] = fmap[cc[inside], ih[inside], iw[inside]]
        out = values if buffer.space_of(op.dest.type) == "l0b" else values.T
        dst.window(k * m, "im2col destination")[:] = out.reshape(-1)
        return ()
