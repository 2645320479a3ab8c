"""The partitioner: greedy grouping of one function body into kernels, under one policy.

Greedy by estimated benefit, as XLA's priority fusion (fusion-peers.md 2.2), with
Ascend's UB capacity as a hard constraint checked while grouping:

1. every op some kernel template can run becomes a group of its own; ops no template
   runs stay outside (library ops);
2. every producer->consumer pair of groups is a candidate; its benefit is
   t(P) + t(C) - t(P u C) from the cost model (GM traffic of the intermediates that
   stay in UB, one launch, minus any tiling loss of the bigger kernel);
3. the best candidate (ties: the earliest ops) is merged when it is legal
   (autofusion/fusion/legality.py: fusion kinds and the UBFusion rules of the switch
   file, a template's plan whose buffers fit UB and L1/L0, no cycle) and the policy's
   op and input caps hold;
4. only positive benefits are merged. Every rejected candidate keeps its reason.

Views. A reshape moves no data (cost.is_view): it never becomes a kernel of its own,
and a producer and a consumer with reshapes between them are still a candidate pair;
merged, the reshapes go into the kernel, which reads through them (the rows template's
input views, row_plan.py). A reshape between two kernels, or read by more than the
consumer's kernel, stays outside as a free view of its input's bytes.

`FusionPolicy` is everything the grouping is told: ub-fusion runs it, and split-fusion's
cost gate runs the same Partitioner with the same policy on a neighbourhood ("what
would ub-fusion do here", `estimate`), so the gate models the grouping that runs.

Determinism: candidates are ordered by (benefit, op order); nothing depends on hashes.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from autofusion.dialects import graph
from autofusion.fusion.cost import Refusal, is_empty, is_view, kernel_time, op_cost
from autofusion.fusion.edge_views import absorb_edge_views
from autofusion.fusion.legality import (
    creates_cycle,
    plan_kernel,
    rules_needed,
    switched_off,
)
from autofusion.fusion.view_placement import place_views
from autofusion.hardware import ChipSpec
from autofusion.lowering.template import GroupParts, KernelTemplate, Plan
from autofusion.passes.fusion_statistics import FusionStatistics, describe_op
from autofusion.passes.fusion_switch import FusionSwitch
from autofusion.passes.matching import splat_value


@dataclass(frozen=True)
class FusionPolicy:
    """What the grouping may do and assumes: the caps on one kernel, the size of a dynamic
    dimension for the cost model, and the UBFusion switches. Built once from ub-fusion's
    options (or the -O level), and shared by split-fusion's cost gate."""

    max_ops: int = 64
    """At most this many ops per kernel (large kernels compile slowly; TVM caps at 256)."""
    max_inputs: int = 16
    """At most this many GM inputs per kernel (the chip's queue limits also apply)."""
    dynamic_size: int = 128
    """The size the cost model assumes for dynamic dimensions."""
    switch: FusionSwitch = field(default_factory=FusionSwitch)
    """The fusion switch file's settings; its UBFusion section applies."""

    def caps(self, ops: Sequence[Operation], kernel_inputs: Sequence[SSAValue]) -> Refusal | None:
        """Why a kernel of `ops` reading `kernel_inputs` from GM breaks a cap, if it does."""
        if len(kernel_inputs) > self.max_inputs:
            return Refusal(f"{len(kernel_inputs)} inputs exceed max-inputs={self.max_inputs}")
        if len(ops) > self.max_ops:
            return Refusal(f"{len(ops)} ops exceed max-ops={self.max_ops}")
        return None


@dataclass
class Group:
    """A set of ops that will be one kernel, with its plan and estimated time."""

    gid: int
    ops: list[Operation]  # in program order
    template: KernelTemplate | None = None
    plan: Plan | None = None
    time_us: float = 0.0
    benefit_us: float = 0.0  # estimated time saved by the merges that formed it
    rules: tuple[str, ...] = ()
    alive: bool = True
    version: int = 0
    edge_views: tuple[Operation, ...] = ()  # views at its ends (edge_views.py)

    @property
    def first(self) -> int:
        return self.gid


@dataclass
class Remark:
    producer: str
    consumer: str
    reason: str


@dataclass
class FusionResult:
    """What ub-fusion decided for one module (for reports and `afc explain`)."""

    groups: list[Group] = field(default_factory=list)
    library_ops: list[tuple[Operation, str]] = field(default_factory=list)
    remarks: list[Remark] = field(default_factory=list)
    statistics: FusionStatistics = field(default_factory=FusionStatistics)


def _compute_ops(block: Block) -> list[Operation]:
    return [
        op
        for op in block.ops
        if not isinstance(op, graph.ConstantOp | func.ReturnOp | graph.FusionGroupOp)
        and op.dialect_name() == "graph"
    ]


def is_streamed(v: SSAValue) -> bool:
    """A value a kernel reads from GM: anything but a splat constant, which the kernel
    keeps in a register (and a fusion group copies into its body)."""
    return not isinstance(v.owner, graph.ConstantOp) or splat_value(v) is None


class Partitioner:
    """The greedy grouping of one function body."""

    def __init__(
        self, block: Block, chip: ChipSpec, policy: FusionPolicy, result: FusionResult
    ) -> None:
        self.chip = chip
        self.policy = policy
        self.result = result
        self.ops = _compute_ops(block)
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.group_of: dict[Operation, Group] = {}
        self.groups: list[Group] = []
        self._rejected: set[tuple[int, int, int, int]] = set()

    # ---- groups ---------------------------------------------------------------------

    def parts(self, ops: list[Operation]) -> GroupParts:
        """The GroupParts of a set of ops still in the function (not yet outlined)."""
        inside = set(ops)
        inputs: list[SSAValue] = []
        outputs: list[SSAValue] = []
        for op in ops:
            for v in op.operands:
                if v.owner not in inside and v not in inputs:
                    inputs.append(v)
            for r in op.results:
                if any(u.operation not in inside for u in r.uses) and r not in outputs:
                    outputs.append(r)
        return GroupParts(list(ops), inputs, outputs)

    def plan(self, ops: list[Operation]) -> tuple[KernelTemplate, Plan] | Refusal:
        parts = self.parts(ops)
        capped = self.policy.caps(ops, [v for v in parts.inputs if is_streamed(v)])
        if capped is not None:
            return capped
        return plan_kernel(parts, self.chip)

    def time(self, template: KernelTemplate, plan: Plan) -> float:
        dims = [self.policy.dynamic_size] * 16
        return kernel_time(template.cost(plan, self.chip, dims), self.chip).total_us

    def seed(self) -> None:
        for op in self.ops:
            if is_view(op):
                self.result.library_ops.append((op, "a view of its input (no kernel, no bytes)"))
                continue
            if is_empty(op):
                # no tiling divides an empty tensor, and there is nothing to compute
                self.result.library_ops.append((op, "an empty tensor (nothing to compute)"))
                continue
            if op.results and not any(r.uses for r in op.results):
                # a kernel of it would have no output to write (graph-level DCE removes it)
                self.result.library_ops.append((op, "its results are never used (dead code)"))
                continue
            planned = self.plan([op])
            if isinstance(planned, Refusal):
                self.result.library_ops.append((op, planned.reason))
                continue
            template, plan = planned
            g = Group(self.index[op], [op], template, plan, self.time(template, plan))
            self.groups.append(g)
            self.group_of[op] = g

    # ---- candidates -------------------------------------------------------------------

    def is_free_view(self, op: Operation) -> bool:
        """An ungrouped view op of this function: candidates pairs are found through it."""
        return op not in self.group_of and op in self.index and is_view(op)

    def consumers(self, g: Group) -> list[Group]:
        out: dict[int, Group] = {}
        stack = [use.operation for op in g.ops for r in op.results for use in r.uses]
        while stack:
            user = stack.pop()
            if self.is_free_view(user):
                stack.extend(use.operation for r in user.results for use in r.uses)
                continue
            other = self.group_of.get(user)
            if other is not None and other is not g and other.alive:
                out[other.gid] = other
        return [out[k] for k in sorted(out)]

    def producers(self, g: Group) -> list[Group]:
        out: dict[int, Group] = {}
        for op in g.ops:
            for v in op.operands:
                owner = v.owner
                while isinstance(owner, Operation) and self.is_free_view(owner):
                    owner = owner.operands[0].owner
                other = self.group_of.get(owner) if isinstance(owner, Operation) else None
                if other is not None and other is not g and other.alive:
                    out[other.gid] = other
        return [out[k] for k in sorted(out)]

    def bridge(self, p: Group, c: Group) -> list[Operation] | Refusal:
        """The ungrouped view ops between p's results and c's operands, which a merged
        kernel reads through; a refusal if one of them is read outside the merge too."""
        views: list[Operation] = []
        for op in c.ops:
            for v in op.operands:
                chain: list[Operation] = []
                owner = v.owner
                while isinstance(owner, Operation) and self.is_free_view(owner):
                    chain.append(owner)
                    owner = owner.operands[0].owner
                if chain and isinstance(owner, Operation) and self.group_of.get(owner) is p:
                    views += [o for o in chain if o not in views]
        inside = {*p.ops, *c.ops, *views}
        for view in views:
            if any(u.operation not in inside for r in view.results for u in r.uses):
                return Refusal(f"the view between them ({view.name}) is also read elsewhere")
        return sorted(views, key=self.index.__getitem__)

    def creates_cycle(self, p: Group, c: Group, views: Sequence[Operation] = ()) -> bool:
        """Whether merging p and c (with the views between them) would create a cycle
        through another kernel (legality.creates_cycle)."""
        return creates_cycle(p, c, self.group_of, self.index, views)

    def evaluate(
        self, p: Group, c: Group
    ) -> tuple[float, tuple[KernelTemplate, Plan], tuple[str, ...]] | Refusal:
        grouping_off = switched_off(self.policy.switch, ())
        if grouping_off is not None:
            return grouping_off
        views = self.bridge(p, c)
        if isinstance(views, Refusal):
            return views
        ops = sorted({*p.ops, *c.ops, *views}, key=self.index.__getitem__)
        parts = self.parts(ops)
        needed = rules_needed(ops, len(parts.outputs) > 1)
        rule_off = switched_off(self.policy.switch, needed)
        if rule_off is not None:
            return rule_off
        if self.creates_cycle(p, c, views):
            return Refusal("fusing them would create a cycle through another kernel")
        planned = self.plan(ops)
        if isinstance(planned, Refusal):
            return planned
        merged = self.time(*planned)
        benefit = p.time_us + c.time_us - merged
        if benefit <= 0:
            return Refusal(f"no estimated benefit ({benefit:.3f} us)")
        return benefit, planned, needed

    def run(self, explain: bool = True) -> None:
        """Group the function body; with `explain`, record why each remaining pair of
        neighbouring kernels stayed apart (an estimate does not need to)."""
        self.seed()
        self.merge_around(self.groups)
        # view_placement.py: a view moves to the side where it pays; a kernel that lost
        # or gained views may now take a merge it was refused (the QKV projection with v's
        # slice as an output writes less and has the UB room for its norm prologue)
        moved = place_views(self)
        if moved:
            self.merge_around(moved)
        if explain:
            self.explain_final()  # before the edge views join: pairs as the merges saw them
        absorb_edge_views(self)
        # views merged into a kernel are no longer library ops
        self.result.library_ops = [
            (op, why) for op, why in self.result.library_ops if op not in self.group_of
        ]

    def merge_around(self, groups: Sequence[Group]) -> None:
        """Merge greedily, best estimated benefit first, starting from the pairs of each
        of `groups` with its consumers and producers; a merged group's pairs join."""
        heap: list[tuple[float, int, int, int, int]] = []
        pushed: set[tuple[int, int, int, int]] = set()

        def push(p: Group, c: Group) -> None:
            key = (p.gid, c.gid, p.version, c.version)
            if key in self._rejected or key in pushed:
                return
            pushed.add(key)
            verdict = self.evaluate(p, c)
            if isinstance(verdict, Refusal):
                self._rejected.add(key)
                return
            heapq.heappush(heap, (-verdict[0], p.gid, c.gid, p.version, c.version))

        for g in list(groups):
            if not g.alive:
                continue
            for c in self.consumers(g):
                push(g, c)
            for p in self.producers(g):
                push(p, g)
        while heap:
            _, pid, cid, pv, cv = heapq.heappop(heap)
            p_found, c_found = self._by_gid(pid), self._by_gid(cid)
            if p_found is None or c_found is None:
                continue
            p, c = p_found, c_found
            if p.version != pv or c.version != cv:
                continue  # stale: one side changed since it was scored
            verdict = self.evaluate(p, c)
            if isinstance(verdict, Refusal):
                continue
            benefit, (template, plan), rules = verdict
            merged = self.merge(p, c, template, plan, rules)
            merged.benefit_us += benefit
            for other in self.producers(merged):
                push(other, merged)
            for other in self.consumers(merged):
                push(merged, other)

    def explain_final(self) -> None:
        """Why each remaining producer -> consumer pair of kernels stayed apart."""
        for g in sorted((g for g in self.groups if g.alive), key=lambda g: g.gid):
            for c in self.consumers(g):
                verdict = self.evaluate(g, c)
                reason = (
                    verdict.reason
                    if isinstance(verdict, Refusal)
                    else "a better merge took one of the two first"
                )
                self.result.remarks.append(
                    Remark(describe_op(g.ops[-1]), describe_op(c.ops[0]), reason)
                )

    def kernels(self) -> list[Group]:
        """The groups the grouping formed (after `run`), in the order they were seeded."""
        return [g for g in self.groups if g.alive]

    def _by_gid(self, gid: int) -> Group | None:
        for g in self.groups:
            if g.gid == gid and g.alive:
                return g
        return None

    def merge(
        self, p: Group, c: Group, template: KernelTemplate, plan: Plan, rules: tuple[str, ...]
    ) -> Group:
        views = self.bridge(p, c)
        assert not isinstance(views, Refusal), "merging a refused candidate"
        ops = sorted({*p.ops, *c.ops, *views}, key=self.index.__getitem__)
        keep, gone = (p, c) if p.gid < c.gid else (c, p)
        gone.alive = False
        keep.ops = ops
        keep.template, keep.plan = template, plan
        keep.time_us = self.time(template, plan)
        keep.rules = tuple(sorted({*keep.rules, *gone.rules, *rules}))
        keep.benefit_us += gone.benefit_us
        keep.version += 1
        for op in ops:
            self.group_of[op] = keep
        return keep


@dataclass(frozen=True)
class Estimate:
    """Estimated time of the kernels a grouping forms (and of its library ops)."""

    time_us: float
    kernels: int

    def describe(self) -> str:
        return f"{self.time_us:.3f} us in {self.kernels} kernels"


def estimate(block: Block, chip: ChipSpec, policy: FusionPolicy) -> Estimate:
    """The grouping of `block` under `policy`, costed: its kernels' roofline times plus
    one kernel per library op (what split-fusion's cost gate compares)."""
    result = FusionResult()
    part = Partitioner(block, chip, policy, result)
    part.run(explain=False)  # an estimate does not report the pairs it leaves apart
    kernels = part.kernels()
    time = sum(g.time_us for g in kernels)
    for op, _ in result.library_ops:
        time += kernel_time(op_cost(op, chip, policy.dynamic_size), chip).total_us
    # a view (a reshape left between kernels) is no kernel: it costs nothing and counts none
    library = [op for op, _ in result.library_ops if not is_view(op)]
    return Estimate(time, len(kernels) + len(library))
