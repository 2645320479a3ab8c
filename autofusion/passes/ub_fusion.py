"""`ub-fusion`: partition each function into graph.fusion_groups, one kernel each.

    afc-opt model.mlir -p 'set-target{chip=Ascend910B1},ub-fusion{max-ops=64 remarks=true}'

The chip is the module's target (autofusion/dialects/target.py).

Greedy by estimated benefit, as XLA's priority fusion (fusion-peers.md 2.2), with
Ascend's UB capacity as a hard constraint checked while grouping:

1. every op some kernel template can run becomes a group of its own; ops no template
   runs stay outside (library ops);
2. every producer->consumer pair of groups is a candidate; its benefit is
   t(P) + t(C) - t(P u C) from the cost model (GM traffic of the intermediates that
   stay in UB, one launch, minus any tiling loss of the bigger kernel);
3. the best candidate (ties: the earliest ops) is merged when it is legal: a template
   plans the union (fusion kinds, a tile whose double-buffered buffers fit UB and
   L1/L0 for cube work), the UBFusion rules of the switch file allow it, no path leaves
   the union and comes back (acyclic), and the op and input caps hold;
4. only positive benefits are merged. Every rejected candidate keeps its reason
   (`remarks=true` prints them; the statistics record them).

Views. A reshape moves no data (cost_model.is_view): it never becomes a kernel of its
own, and a producer and a consumer with reshapes between them are still a candidate
pair; merged, the reshapes go into the kernel, which reads through them (the rows
template's input views, row_plan.py). A reshape between two kernels, or read by more
than the consumer's kernel, stays outside as a free view of its input's bytes.

Determinism: candidates are ordered by (benefit, op order); nothing depends on hashes.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from autofusion.cost_model import is_empty, is_view, kernel_time
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects.target import ReadsTarget, resolve_target
from autofusion.hardware import ChipSpec
from autofusion.lowering.template import (
    GroupParts,
    KernelTemplate,
    Plan,
    plan_group,
    plan_properties,
    settle,
)
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.fusion_statistics import FusionStatistics, describe_op
from autofusion.passes.fusion_switch import UB_FUSION, FusionSwitch
from autofusion.passes.graph_fusion import report
from autofusion.passes.rule_registry import read_switch
from autofusion.passes.ub_fusion_rules import AUTOMATIC_UB_FUSION, UB_FUSION_RULES


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


def rules_needed(ops: Iterable[Operation], multi_output: bool) -> tuple[str, ...]:
    """The UBFusion rules a group of these ops relies on (UB_FUSION_RULES)."""
    kinds = {graph.fusion_kind(op) for op in ops}
    needed = []
    vector = kinds & {graph.FusionKind.ELEMENTWISE, graph.FusionKind.BROADCAST}
    if vector:
        needed.append("TbeEltwiseFusionPass")
    if graph.FusionKind.REDUCE in kinds:
        needed.append("TbeReduceElemwiseFusionPass")
    if graph.FusionKind.INJECTIVE in kinds:
        needed.append("TbeInjectiveElemwiseFusionPass")
    ops = list(ops)
    if any(isinstance(op, graph.Conv2dOp) for op in ops):
        needed.append("TbeConvElemwiseFusionPass")
    elif graph.FusionKind.CUBE in kinds:
        needed.append("ATbeMatMulElemwiseFusionPass")
    if multi_output:
        needed.append("TbeMultiOutputFusionPass")
    return tuple(needed)


class Partitioner:
    """The greedy grouping of one function body."""

    def __init__(
        self,
        block: Block,
        chip: ChipSpec,
        switch: FusionSwitch,
        max_ops: int,
        max_inputs: int,
        dynamic_size: int,
        result: FusionResult,
    ) -> None:
        self.chip = chip
        self.switch = switch
        self.max_ops = max_ops
        self.max_inputs = max_inputs
        self.dynamic_size = dynamic_size
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
        # splat constants are copied into the group; other constants are kernel inputs
        kernel_inputs = [
            v for v in parts.inputs if not isinstance(v.owner, graph.ConstantOp) or _large(v)
        ]
        if len(kernel_inputs) > self.max_inputs:
            return Refusal(f"{len(kernel_inputs)} inputs exceed max-inputs={self.max_inputs}")
        if len(ops) > self.max_ops:
            return Refusal(f"{len(ops)} ops exceed max-ops={self.max_ops}")
        if any(graph.fusion_kind(op) == graph.FusionKind.OPAQUE for op in ops) and len(ops) > 1:
            return Refusal("an opaque op stands alone")
        return plan_group(parts, self.chip)

    def time(self, template: KernelTemplate, plan: Plan) -> float:
        dims = [self.dynamic_size] * 16
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

    def _free_view(self, op: Operation) -> bool:
        """An ungrouped view op of this function: candidates pairs are found through it."""
        return op not in self.group_of and op in self.index and is_view(op)

    def consumers(self, g: Group) -> list[Group]:
        out: dict[int, Group] = {}
        stack = [use.operation for op in g.ops for r in op.results for use in r.uses]
        while stack:
            user = stack.pop()
            if self._free_view(user):
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
                while isinstance(owner, Operation) and self._free_view(owner):
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
                while isinstance(owner, Operation) and self._free_view(owner):
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
        """Whether some path leaves p, passes through an op outside p and c, and reaches c.

        A group runs as one kernel, so a path that enters any of its ops continues from
        all of its outputs. Ops after c's last op cannot reach c (program order is a
        topological order), which bounds the walk. `views` (the bridge between p and c,
        `bridge`) are inside the union.
        """
        limit = max(self.index[op] for op in c.ops)
        stack = [
            u.operation
            for op in p.ops
            for r in op.results
            for u in r.uses
            if self.group_of.get(u.operation) not in (p, c) and u.operation not in views
        ]
        seen: set[Operation] = set(views)
        expanded: set[int] = set()
        while stack:
            op = stack.pop()
            if op in seen or self.index.get(op, limit + 1) > limit:
                continue
            seen.add(op)
            g = self.group_of.get(op)
            if g is c:
                return True
            members = [op]
            if g is not None and g is not p and g.gid not in expanded:
                expanded.add(g.gid)
                members = g.ops
            for member in members:
                for r in member.results:
                    stack.extend(u.operation for u in r.uses)
        return False

    def evaluate(
        self, p: Group, c: Group
    ) -> tuple[float, tuple[KernelTemplate, Plan], tuple[str, ...]] | Refusal:
        if not self.switch.is_on(UB_FUSION, AUTOMATIC_UB_FUSION):
            return Refusal(f"{AUTOMATIC_UB_FUSION} is off")
        views = self.bridge(p, c)
        if isinstance(views, Refusal):
            return views
        ops = sorted({*p.ops, *c.ops, *views}, key=self.index.__getitem__)
        parts = self.parts(ops)
        needed = rules_needed(ops, len(parts.outputs) > 1)
        off = [r for r in needed if not self.switch.is_on(UB_FUSION, r)]
        if off:
            return Refusal(f"UBFusion rule {off[0]} is off")
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

    def run(self) -> None:
        self.seed()
        heap: list[tuple[float, int, int, int, int]] = []

        def push(p: Group, c: Group) -> None:
            key = (p.gid, c.gid, p.version, c.version)
            if key in self._rejected:
                return
            verdict = self.evaluate(p, c)
            if isinstance(verdict, Refusal):
                self._rejected.add(key)
                return
            heapq.heappush(heap, (-verdict[0], p.gid, c.gid, p.version, c.version))

        for g in self.groups:
            for c in self.consumers(g):
                push(g, c)
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
        # views merged into a kernel are no longer library ops
        self.result.library_ops = [
            (op, why) for op, why in self.result.library_ops if op not in self.group_of
        ]
        self.explain_final()

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


def _large(v: SSAValue) -> bool:
    """A constant worth streaming from GM (not a splat the kernel keeps in a register)."""
    from autofusion.passes.matching import splat_value

    return splat_value(v) is None


def outline(block: Block, groups: list[Group], chip: ChipSpec) -> None:
    """Replace each group's ops by one graph.fusion_group, in a dominance-respecting order.

    The block is rebuilt as a topological order of units (groups and other ops), each
    unit placed by its first op's original position: grouping is acyclic, so the order
    exists, and ops that do not depend on a group keep their relative order.
    """
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    unit_of: dict[Operation, int] = {}
    members: dict[int, list[Operation]] = {}
    kind: dict[int, Group | None] = {}
    owner_group = {op: g for g in groups for op in g.ops}
    for op in ops:
        g = owner_group.get(op)
        uid = position[g.ops[0]] if g is not None else position[op]
        unit_of[op] = uid
        members.setdefault(uid, []).append(op)
        kind[uid] = g
    deps: dict[int, set[int]] = {uid: set() for uid in members}
    users: dict[int, set[int]] = {uid: set() for uid in members}
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner in unit_of and unit_of[owner] != unit_of[op]:
                deps[unit_of[op]].add(unit_of[owner])
                users[unit_of[owner]].add(unit_of[op])
    ready = [uid for uid, d in deps.items() if not d]
    heapq.heapify(ready)
    order: list[int] = []
    remaining = {uid: len(d) for uid, d in deps.items()}
    while ready:
        uid = heapq.heappop(ready)
        order.append(uid)
        for u in sorted(users[uid]):
            remaining[u] -= 1
            if remaining[u] == 0:
                heapq.heappush(ready, u)
    assert len(order) == len(members), "ub-fusion formed a cycle"
    for op in ops:
        op.detach()
    for uid in order:
        g = kind[uid]
        if g is None:
            for op in members[uid]:
                block.add_op(op)
        else:
            block.add_op(_group_op(g, chip))
    # splat constants copied into groups may have no user left outside
    for op in list(block.ops):
        if isinstance(op, graph.ConstantOp) and not op.result.uses:
            block.erase_op(op)


def _group_op(g: Group, chip: ChipSpec) -> graph.FusionGroupOp:
    """The fusion_group op holding g's ops (moved into its body), with its plan."""
    inside = set(g.ops)
    inputs: list[SSAValue] = []
    constants: list[graph.ConstantOp] = []
    for op in g.ops:
        for v in op.operands:
            owner = v.owner
            if owner in inside or v in inputs:
                continue
            if isinstance(owner, graph.ConstantOp) and not _large(v):
                if owner not in constants:
                    constants.append(owner)
                continue
            inputs.append(v)
    outputs = [
        r for op in g.ops for r in op.results if any(u.operation not in inside for u in r.uses)
    ]
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for v, arg in zip(inputs, body.args):
        mapping[v] = arg
        arg.name_hint = v.name_hint
    for const in constants:
        clone = const.clone()
        body.add_op(clone)
        mapping[const.result] = clone.result
    for op in g.ops:
        for i, v in enumerate(op.operands):
            if v in mapping:
                op.operands[i] = mapping[v]
        body.add_op(op)
    body.add_op(graph.YieldOp(outputs))
    group_op = graph.FusionGroupOp(
        inputs, [r.type for r in outputs], Region(body), properties=_plan_properties(g, chip)
    )
    group_op.location = g.ops[-1].location
    if g.benefit_us:
        group_op.attributes["afc.benefit_us"] = graph.float_attr(round(g.benefit_us, 4))
    if g.rules:
        group_op.attributes["afc.rules"] = StringAttr(",".join(g.rules))
    for old, new in zip(outputs, group_op.outputs):
        old.replace_uses_with_if(new, lambda use: use.operation.parent_op() is not group_op)
    return group_op


def _plan_properties(g: Group, chip: ChipSpec) -> dict[str, Attribute]:
    """g's plan as the fusion_group's properties (autofusion/dialects/group_plan.py)."""
    template, plan = cast(KernelTemplate, g.template), cast(Plan, g.plan)
    if len(g.ops) == 1:
        reason = "a single op: no merge with a neighbour was taken (remarks=true says why)"
    else:
        reason = f"{len(g.ops)} ops in one {template.name} kernel save {round(g.benefit_us, 4)} us"
        reason += f" ({', '.join(g.rules)})" if g.rules else ""
    return plan_properties(template, plan, chip, g.time_us, reason)


@dataclass(frozen=True)
class UbFusionPass(ReadsTarget, ModulePass):
    """Capacity-aware, cost-driven grouping of ops into kernels for the module's target
    (its UB/L1/L0 sizes, cores and bandwidth)."""

    name = "ub-fusion"

    max_ops: int = 64
    """At most this many ops per kernel (large kernels compile slowly; TVM caps at 256)."""
    max_inputs: int = 16
    """At most this many GM inputs per kernel (the chip's queue limits also apply)."""
    dynamic_size: int = 128
    """The size the cost model assumes for dynamic dimensions."""
    switch_file: str | None = None
    """CANN fusion switch file; its UBFusion section turns the grouping or its rules off."""
    remarks: bool = False
    """Print every rejected candidate and the reason to stderr."""
    stats_file: str | None = None
    """Write fusion_result.json (the ub_fusion section) here."""
    log: bool = False
    """Print CANN-style statistics lines to stderr."""

    def run(self, module: ModuleOp) -> FusionResult:
        """Group every function of `module`; return what was decided and why."""
        switch = read_switch(self.switch_file)
        if self.max_ops < 1 or self.max_inputs < 1:
            raise UserError("max-ops and max-inputs must be at least 1")
        chip = resolve_target(module, self.name)  # after the options: one line on bad input
        result = FusionResult()
        for f in [op for op in module.ops if isinstance(op, func.FuncOp)]:
            if not f.body.blocks:
                continue
            block = f.body.block
            part = Partitioner(
                block, chip, switch, self.max_ops, self.max_inputs, self.dynamic_size, result
            )
            part.run()
            alive = [g for g in part.groups if g.alive]
            for g in alive:  # the plan at the tiling its kernel is built with
                g.plan = settle(cast(KernelTemplate, g.template), cast(Plan, g.plan), chip)
                g.time_us = part.time(cast(KernelTemplate, g.template), g.plan)
            result.groups.extend(alive)
            outline(block, alive, chip)
        self._statistics(result)
        return result

    def _statistics(self, result: FusionResult) -> None:
        stats = result.statistics
        for name in UB_FUSION_RULES:
            stats.rule(UB_FUSION, name, UB_FUSION_RULES[name])
        for g in result.groups:
            if len(g.ops) > 1:
                stats.effected(UB_FUSION, AUTOMATIC_UB_FUSION, UB_FUSION_RULES[AUTOMATIC_UB_FUSION])
                stats.matched(UB_FUSION, AUTOMATIC_UB_FUSION, UB_FUSION_RULES[AUTOMATIC_UB_FUSION])
                for rule in g.rules:
                    stats.matched(UB_FUSION, rule, UB_FUSION_RULES[rule])
                    stats.effected(UB_FUSION, rule, UB_FUSION_RULES[rule])
        for remark in result.remarks:
            stats.refused(
                UB_FUSION,
                AUTOMATIC_UB_FUSION,
                UB_FUSION_RULES[AUTOMATIC_UB_FUSION],
                f"{remark.producer} -> {remark.consumer}",
                remark.reason,
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        result = self.run(op)
        if self.remarks:
            for r in result.remarks:
                print(
                    f"ub-fusion: not fused {r.producer} -> {r.consumer}: {r.reason}",
                    file=sys.stderr,
                )
            for op_, reason in result.library_ops:
                print(f"ub-fusion: library op {describe_op(op_)}: {reason}", file=sys.stderr)
        report(result.statistics, self.stats_file, self.log)
