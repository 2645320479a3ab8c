"""`ub-fusion`: partition each function into graph.fusion_groups, one kernel each.

    afc-opt model.mlir -p 'set-target{chip=Ascend910B1},ub-fusion{max-ops=64 remarks=true}'

The chip is the module's target (autofusion/dialects/target.py). The grouping is the
fusion library's (autofusion/fusion/): legality.py says which ops may share a kernel,
partition.py's Partitioner groups greedily by the cost model's estimated benefit under
the policy these options make (fusion_policy_options.py). This pass runs it on every
function, outlines each group into a graph.fusion_group that carries its plan, and
reports: every rejected candidate keeps its reason (`remarks=true` prints them; the
statistics record them).
"""

from __future__ import annotations

import heapq
import sys
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from autofusion.dialects import graph
from autofusion.dialects.target import ReadsTarget, resolve_target
from autofusion.fusion.edge_views import mark_edge_views
from autofusion.fusion.legality import AUTOMATIC_UB_FUSION, UB_FUSION_RULES
from autofusion.fusion.partition import FusionResult, Group, Partitioner, is_streamed
from autofusion.hardware import ChipSpec
from autofusion.lowering.fitted_tiling import fits_remembered
from autofusion.lowering.template import KernelTemplate, Plan
from autofusion.lowering.template_registry import plan_properties, settle
from autofusion.passes.fusion_policy_options import FusionPolicyOptions
from autofusion.passes.fusion_statistics import describe_op
from autofusion.passes.fusion_switch import UB_FUSION
from autofusion.passes.graph_fusion import report


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
            if isinstance(owner, graph.ConstantOp) and not is_streamed(v):
                if owner not in constants:
                    constants.append(owner)
                continue
            inputs.append(v)
    outputs = [
        r for op in g.ops for r in op.results if any(u.operation not in inside for u in r.uses)
    ]
    mark_edge_views(g.edge_views)
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
class UbFusionPass(ReadsTarget, FusionPolicyOptions, ModulePass):
    """Capacity-aware, cost-driven grouping of ops into kernels for the module's target
    (its UB/L1/L0 sizes, cores and bandwidth)."""

    name = "ub-fusion"

    remarks: bool = False
    """Print every rejected candidate and the reason to stderr."""
    stats_file: str | None = None
    """Write fusion_result.json (the ub_fusion section) here."""
    log: bool = False
    """Print CANN-style statistics lines to stderr."""

    def run(self, module: ModuleOp) -> FusionResult:
        """Group every function of `module`; return what was decided and why."""
        policy = self.fusion_policy()
        chip = resolve_target(module, self.name)  # after the options: one line on bad input
        result = FusionResult()
        with fits_remembered():  # the module's repeated groups are built once
            for f in [op for op in module.ops if isinstance(op, func.FuncOp)]:
                if f.body.blocks:
                    self._group(f.body.block, chip, Partitioner(f.body.block, chip, policy, result))
        self._statistics(result)
        return result

    def _group(self, block: Block, chip: ChipSpec, part: Partitioner) -> None:
        """Group `block`'s ops into kernels, each at the plan its kernel is built with."""
        part.run()
        alive = part.kernels()
        for g in alive:
            template = cast(KernelTemplate, g.template)
            # the group as planned: its edge views come back out before lowering
            planned = [op for op in g.ops if op not in g.edge_views]
            g.plan = settle(template, cast(Plan, g.plan), chip, part.parts(planned))
            g.time_us = part.time(template, g.plan)
        part.result.groups.extend(alive)
        outline(block, alive, chip)

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
