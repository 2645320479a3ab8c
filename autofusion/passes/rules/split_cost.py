"""The cost gate of split fusion: the likely kernels around a rewrite, with and without it.

A split-fusion rewrite only pays if the parts it creates fuse into different neighbours
than the whole could, and whether they do is decided by ub-fusion: its kernel templates,
their legality (cube ops take no prologue, reductions need whole rows, queue and input
caps, UB capacity) and its greedy, benefit-ordered grouping. So the gate asks ub-fusion
itself, on a bounded neighbourhood of the candidate ("what if"):

1. the neighbourhood: the rewrite's core ops (e.g. the norm and its users) and every
   graph op at most RADIUS dataflow edges from them, within a window of WINDOW ops
   around the core in program order, at most MAX_OPS;
2. the neighbourhood is copied into a scratch function: values from outside become
   arguments (constants are copied, so splats stay splats), values used outside become
   results (they must be written to GM), and a value read back from a path that leaves
   the neighbourhood becomes an opaque op of the values it depends on (so ub-fusion
   cannot merge the two ends of that path: a cycle);
3. the fusion library's Partitioner (autofusion/fusion/partition.py), the one ub-fusion
   runs, groups the copy for the module's target with the same FusionPolicy (caps,
   dynamic size, UBFusion switches: split-fusion takes ub-fusion's policy options); the
   estimate is the sum of its kernels' roofline times plus one kernel per library op
   (fusion/cost.py), exactly what ub-fusion and the report use;
4. each variant of the rewrite (e.g. one shared norm apply, or one per consumer) is
   applied to another copy and estimated the same way;
5. the cheapest variant is applied when it saves more than MIN_GAIN_US.

The estimate sees the kernels ub-fusion would likely form around the candidate, not the
whole function; ops beyond the window count as consumers that need their inputs in GM.
Each estimate plans at most MAX_OPS ops, so the pass stays linear in the function size.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects import func
from xdsl.ir import Block, Operation, Region, SSAValue, Use
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from autofusion.dialects import graph
from autofusion.dialects.graph_base import Fusible, FusionKind
from autofusion.fusion.cost import Refusal
from autofusion.fusion.partition import Estimate, FusionPolicy, estimate
from autofusion.hardware import DEFAULT_CHIP, ChipSpec, get_chip
from autofusion.passes.fusion_rule import FusionRule, MatchT
from autofusion.passes.fusion_statistics import FusionStatistics

# dataflow edges from the core that the neighbourhood extends over
RADIUS = 2
# program-order window (ops before the first and after the last core op) searched
WINDOW = 24
# ops the core may span in program order (users further apart are refused)
MAX_SPAN = 256
# ops planned per estimate: the neighbourhood stops growing here
MAX_OPS = 40
# a rewrite must save at least this much estimated time (0.05 us is about 70 KB of GM
# traffic on Ascend910B1): smaller gains are within the model's error and grow the IR
MIN_GAIN_US = 0.05


@dataclass(frozen=True)
class CostSettings:
    """What the estimate plans for: the chip and ub-fusion's policy; and how many copies
    a split may make."""

    chip: ChipSpec = field(default_factory=lambda: get_chip(DEFAULT_CHIP))
    policy: FusionPolicy = field(default_factory=FusionPolicy)
    max_duplicates: int = 4


def is_compute_op(op: Operation) -> bool:
    """A graph op that ub-fusion groups (not a constant, a fusion group or a terminator)."""
    return (
        op.dialect_name() == "graph"
        and not isinstance(op, graph.ConstantOp | graph.FusionGroupOp | graph.YieldOp)
        and isinstance(op.parent_op(), func.FuncOp)
    )


def user_ops(value: SSAValue) -> set[Operation]:
    """The distinct ops of `value`'s block that use it (directly or in a region)."""
    owner = value.owner
    block = owner if isinstance(owner, Block) else owner.parent_block()
    if block is None:
        return set()
    found: set[Operation] = set()
    for use in value.uses:
        ancestor = block.find_ancestor_op_in_block(use.operation)
        if ancestor is not None:
            found.add(ancestor)
    return found


def users_in_order(op: Operation, users: set[Operation]) -> list[Operation] | Refusal:
    """`users` (ops after `op` in its block) in program order. Walks at most MAX_SPAN ops
    forward from `op`: users further apart are refused (the estimate could not see them
    together anyway)."""
    ordered: list[Operation] = []
    current = op.next_op
    for _ in range(MAX_SPAN):
        if current is None or len(ordered) == len(users):
            break
        if current in users:
            ordered.append(current)
        current = current.next_op
    if len(ordered) < len(users):
        return Refusal(f"its users are more than {MAX_SPAN} ops apart: too far to estimate")
    return ordered


def uses_in(user: Operation) -> Callable[[Use], bool]:
    """A predicate for `replace_uses_with_if`: the uses inside `user` (itself or nested)."""

    def predicate(use: Use) -> bool:
        return use.operation is user or user.is_ancestor(use.operation)

    return predicate


# ---- the neighbourhood -------------------------------------------------------------------


def _window(core: Sequence[Operation]) -> list[Operation] | Refusal:
    """Ops from WINDOW before the first core op to WINDOW after the last, in order."""
    first = core[0]
    wanted = set(core)
    span: list[Operation] = []
    op: Operation | None = first
    while op is not None and wanted:
        wanted.discard(op)
        span.append(op)
        if len(span) > MAX_SPAN:
            return Refusal(f"its ops are more than {MAX_SPAN} ops apart: too far to estimate")
        op = op.next_op if wanted else None
    if wanted:
        return Refusal("its ops are not in one block")
    before: list[Operation] = []
    op = first.prev_op
    while op is not None and len(before) < WINDOW:
        before.append(op)
        op = op.prev_op
    after: list[Operation] = []
    op = span[-1].next_op
    while op is not None and len(after) < WINDOW:
        after.append(op)
        op = op.next_op
    return [*reversed(before), *span, *after]


@irdl_op_definition
class ExternalPathOp(IRDLOperation):
    """Scratch IR only: the ops outside a neighbourhood on paths from `inputs` (values of
    the neighbourhood) to `output` (a value it reads back). ub-fusion cannot group it (it
    is opaque and no template takes it), so the estimate cannot merge two kernels that
    such a path connects (a cycle); its own cost is the same with and without a rewrite.
    """

    name = "graph.external_path"
    inputs = var_operand_def()
    output = result_def()
    traits = traits_def(Fusible(FusionKind.OPAQUE))


@dataclass
class Neighbourhood:
    """Compute ops around a rewrite (program order), and the values they read back from
    paths that leave them: each with the neighbourhood's values it depends on."""

    ops: list[Operation]
    paths: dict[SSAValue, list[SSAValue]]


def neighbourhood(core: Sequence[Operation]) -> Neighbourhood | Refusal:
    """The compute ops around `core` (core[0] first in program order)."""
    window = _window(core)
    if isinstance(window, Refusal):
        return window
    order = {op: i for i, op in enumerate(window)}
    pos = {op: i for op, i in order.items() if is_compute_op(op)}
    block = core[0].parent_block()
    assert block is not None

    def neighbours(op: Operation) -> list[Operation]:
        found: set[Operation] = set()
        for v in op.operands:
            if isinstance(v.owner, Operation) and v.owner in pos:
                found.add(v.owner)
        for r in op.results:
            for use in r.uses:
                user = block.find_ancestor_op_in_block(use.operation)
                if user is not None and user in pos:
                    found.add(user)
        return sorted(found, key=pos.__getitem__)

    chosen: set[Operation] = {op for op in core if op in pos}
    frontier = sorted(chosen, key=pos.__getitem__)
    for _ in range(RADIUS):
        nxt: list[Operation] = []
        for op in frontier:
            for other in neighbours(op):
                if other not in chosen and len(chosen) < MAX_OPS:
                    chosen.add(other)
                    nxt.append(other)
        frontier = nxt
    ops = sorted(chosen, key=pos.__getitem__)
    # paths that leave the neighbourhood and come back: which of its values reach each
    # value it reads from outside (program order bounds them: they lie between its ops)
    sources: dict[Operation, set[SSAValue]] = {}
    for op in window[order[ops[0]] : order[ops[-1]] + 1]:
        if op in chosen:
            continue
        found: set[SSAValue] = set()
        for v in op.operands:
            if v.owner in chosen:
                found.add(v)
            elif v.owner in sources:
                found |= sources[cast(Operation, v.owner)]
        if found:
            sources[op] = found

    def key(v: SSAValue) -> tuple[int, int]:
        owner = cast(Operation, v.owner)
        return order[owner], owner.results.index(v)

    paths: dict[SSAValue, list[SSAValue]] = {}
    for op in ops:
        for v in op.operands:
            if v.owner in sources and v not in paths:
                paths[v] = sorted(sources[cast(Operation, v.owner)], key=key)
    return Neighbourhood(ops, paths)


@dataclass
class Scratch:
    """A detached copy of a neighbourhood: a function of its outside inputs that returns
    every value used outside it."""

    function: func.FuncOp
    copies: dict[Operation, Operation]

    @property
    def block(self) -> Block:
        return self.function.body.block


def copy_neighbourhood(region: Neighbourhood) -> Scratch:
    inside = set(region.ops)
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    copies: dict[Operation, Operation] = {}
    for op in region.ops:
        for v in op.operands:
            if v in mapping:
                continue
            owner = v.owner
            if isinstance(owner, graph.ConstantOp):
                constant = owner.clone()
                block.add_op(constant)
                mapping[v] = constant.result
            elif v in region.paths:
                path = ExternalPathOp.create(
                    operands=[mapping[s] for s in region.paths[v]], result_types=[v.type]
                )
                block.add_op(path)
                mapping[v] = path.results[0]
            elif owner not in inside:
                mapping[v] = block.insert_arg(v.type, len(block.args))
        copy = op.clone(value_mapper=mapping)
        block.add_op(copy)
        copies[op] = copy
    escaping = [
        mapping[r]
        for op in region.ops
        for r in op.results
        if any(use.operation not in inside for use in r.uses)
    ]
    block.add_op(func.ReturnOp(*escaping))
    signature = ([a.type for a in block.args], [v.type for v in escaping])
    return Scratch(func.FuncOp("split_fusion_estimate", signature, Region(block)), copies)


def erase_dead(block: Block) -> None:
    """Erase ops left without users by a rewrite (the walker's DCE does it for real IR)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if not isinstance(op, func.ReturnOp) and is_trivially_dead(op):
                block.erase_op(op)
                changed = True


# ---- the estimate -----------------------------------------------------------------------


# ---- split-fusion rules -------------------------------------------------------------------


class SplitFusionRule(FusionRule[MatchT]):
    """A split-fusion rewrite: a structural match, its variants, and the cost gate.

    Subclasses implement `structure` (the pattern and its preconditions), `core` (the ops
    the rewrite reads and changes, the first in program order), optionally `variants`,
    and `rewrite`. `match` applies the best variant only when the estimate says it pays.
    While a rewrite is estimated on a scratch copy, `estimating` is true: new weights
    are then made shape-only (the estimate needs their shapes, not their values).
    """

    def __init__(
        self, statistics: FusionStatistics | None = None, settings: CostSettings | None = None
    ) -> None:
        super().__init__(statistics)
        self.settings = settings if settings is not None else CostSettings()
        self.estimating = False
        # verdicts by anchor and neighbourhood: the walker revisits every op on every sweep
        self._verdicts: dict[Operation, tuple[tuple[object, ...], int | Refusal]] = {}

    @abstractmethod
    def structure(self, op: Operation) -> MatchT | Refusal | None:
        """The match at `op` if the pattern and its preconditions hold (no cost check)."""

    @abstractmethod
    def core(self, op: Operation, match: MatchT) -> list[Operation]:
        """The ops the rewrite reads and replaces, the earliest first."""

    def variants(self, op: Operation, match: MatchT) -> list[MatchT]:
        """The ways to apply the rewrite, each estimated; the cheapest is applied."""
        return [match]

    def describe(self, match: MatchT) -> str:
        """A short name of a variant for refusal messages."""
        return "rewritten"

    @contextmanager
    def _estimating(self) -> Iterator[None]:
        self.estimating = True
        try:
            yield
        finally:
            self.estimating = False

    def match(self, op: Operation) -> MatchT | Refusal | None:
        found = self.structure(op)
        if found is None or isinstance(found, Refusal):
            return found
        region = neighbourhood(self.core(op, found))
        if isinstance(region, Refusal):
            return region
        key = _fingerprint(region)
        cached = self._verdicts.get(op)
        if cached is not None and cached[0] == key:
            verdict = cached[1]
        else:
            verdict = self._decide(op, found, region)
            self._verdicts[op] = (key, verdict)
        if isinstance(verdict, Refusal):
            return verdict
        return self.variants(op, found)[verdict]

    def _decide(self, op: Operation, match: MatchT, region: Neighbourhood) -> int | Refusal:
        """The index of the variant to apply, or why none pays."""
        options = self.variants(op, match)
        before = estimate(
            copy_neighbourhood(region).block, self.settings.chip, self.settings.policy
        )
        best: tuple[float, int, Estimate] | None = None
        for i in range(len(options)):
            scratch = copy_neighbourhood(region)
            copy = scratch.copies[op]
            found = self.structure(copy)
            copied = (
                [] if found is None or isinstance(found, Refusal) else self.variants(copy, found)
            )
            if len(copied) != len(options):
                # users outside the neighbourhood's function (e.g. in a fusion group) merge
                # into its one return: the copy is not the same pattern
                return Refusal("its users cannot be copied for an estimate")
            with self._estimating():
                self.rewrite(copy, copied[i], PatternRewriter(copy))
            erase_dead(scratch.block)
            after = estimate(scratch.block, self.settings.chip, self.settings.policy)
            if best is None or after.time_us < best[0]:
                best = (after.time_us, i, after)
        assert best is not None
        _, index, after = best
        if before.time_us - after.time_us >= MIN_GAIN_US:
            return index
        return Refusal(
            f"no estimated gain: the {len(region.ops)} ops around it take {before.describe()}, "
            f"{after.describe()} when {self.describe(options[index])}"
        )


def _fingerprint(region: Neighbourhood) -> tuple[object, ...]:
    """What the estimate of a neighbourhood depends on: its ops, their operands, whether
    each result is used outside it, and the paths back into it."""
    inside = set(region.ops)
    ops = tuple(
        (
            op,
            tuple(op.operands),
            tuple(any(u.operation not in inside for u in r.uses) for r in op.results),
        )
        for op in region.ops
    )
    return ops, tuple((v, tuple(src)) for v, src in region.paths.items())
