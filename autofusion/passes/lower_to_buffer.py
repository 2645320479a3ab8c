"""`lower-to-buffer`: every graph.fusion_group becomes one buffer.kernel and a launch.

    afc-opt model.mlir -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer'

The group's plan (its properties, written by ub-fusion: template and tiling) is carried
out by that kernel template (autofusion/lowering/template_registry.py): the template analyses the
group's body and takes the recorded tiling, with no search; a tiling that does not fit is
an error naming the group. A group without a tiling (hand-written IR) is planned once, by
the planning function ub-fusion uses, and its plan completed on it. At the group's place
the host code reads the runtime dims, calls the kernel's tiling function
(`@<kernel>_tiling`, the C++ TilingFunc in Ascend C terms) and launches the kernel on the
group's tensors; the launch keeps the group's plan (`afc.plan`) and what the report needs
of the group's ops (`afc.report`). The kernels are for the module's target
(autofusion/dialects/target.py), the chip ub-fusion planned the groups for. Ops outside
fusion groups stay graph ops (library ops). A group no template can lower is an error
naming what stops it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IndexType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects.group_plan import PLAN_ATTR, PLAN_PROPERTIES, tiling_values
from autofusion.dialects.target import ReadsTarget, resolve_target
from autofusion.fusion.cost import kernel_time
from autofusion.fusion.edge_views import peel_edge_views
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.l2_hint import bypass_attribute, l2_bypass
from autofusion.lowering.template import KernelTemplate, Plan
from autofusion.lowering.template_registry import carry_out, plan_properties
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.fusion_statistics import describe_op
from autofusion.report import REPORT_ATTR, entry_attribute, group_entry


@dataclass(frozen=True)
class LowerToBufferPass(ReadsTarget, ModulePass):
    """Fusion groups to buffer kernels with host tiling and launches."""

    name = "lower-to-buffer"

    dynamic_size: int = 128
    """The size the cost estimates recorded on launches assume for dynamic dimensions."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        chip = resolve_target(op, self.name)
        counter = 0
        for f in [o for o in op.ops if isinstance(o, func.FuncOp)]:
            for group in [g for g in f.walk() if isinstance(g, graph.FusionGroupOp)]:
                name = f"{f.sym_name.data}_kernel{counter}"
                counter += 1
                for new in lower_group(group, name, chip, self.dynamic_size):
                    op.body.block.add_op(new)


def complete_plan(
    group: graph.FusionGroupOp,
    template: KernelTemplate,
    plan: Plan,
    chip: ChipSpec,
    dynamic_size: int,
) -> None:
    """Write on `group` the parts of its plan its properties lack (a hand-written group
    planned here), from the plan as lowered, so its launch keeps the whole plan."""
    if all(key in group.properties for key in PLAN_PROPERTIES):
        return
    cost = kernel_time(template.cost(plan, chip, [dynamic_size] * 16), chip).total_us
    reason = "planned by lower-to-buffer: the group had no tiling"
    for key, value in plan_properties(template, plan, chip, cost, reason).items():
        group.properties.setdefault(key, value)


def lower_group(
    group: graph.FusionGroupOp, name: str, chip: ChipSpec, dynamic_size: int = 128
) -> list[Operation]:
    """Replace `group` by its launch; return the kernel and tiling function to add."""
    group = peel_edge_views(group)  # the group as ub-fusion planned it
    chosen = carry_out(group, chip)
    if isinstance(chosen, Refusal):
        raise UserError(
            f"cannot lower fusion group {name} ({describe_op(group)}): {chosen.reason}", group
        )
    template, plan = chosen
    try:
        lowered = template.lower(plan, name, chip)
    except UserError as e:
        if e.location is not None:
            raise
        raise UserError(e.message, group) from e  # a template's refusal is about the group
    recorded = tiling_values(group.tiling) if group.tiling is not None else None
    if recorded is not None and template.tiling(plan) != recorded:
        fitted = ", ".join(
            f"{k} = {v}" for k, v in sorted(template.tiling(plan).items()) if recorded.get(k) != v
        )
        raise UserError(
            f"cannot lower fusion group {name} ({describe_op(group)}): its buffers as emitted "
            f"exceed the {chip.name} UB at its tiling; they fit at {fitted}",
            group,
        )
    complete_plan(group, template, plan, chip, dynamic_size)
    entry = group_entry(group, name, chip, dynamic_size, chosen)
    bypass = l2_bypass(group, template, plan, chip)
    if bypass:
        indices = [i for i, v in enumerate(lowered.kernel_inputs) if v in bypass]
        lowered.kernel.attributes[buffer.L2_BYPASS_ATTR] = bypass_attribute(indices)
    b = Builder(InsertPoint.before(group))
    idx = IrOps(b)
    outside: dict[SSAValue, SSAValue] = dict(zip(group.block.args, group.inputs))
    launch_inputs: list[SSAValue] = []
    for v in lowered.kernel_inputs:
        if v in outside:
            launch_inputs.append(outside[v])
        else:  # an in-group constant: materialize it outside for the launch
            const = cast(graph.ConstantOp, v.owner).clone()
            b.insert(const)
            launch_inputs.append(const.result)
    host = template.host(plan, lowered, b, idx, outside)
    n_results = len(lowered.tiling.function_type.outputs)
    call = b.insert(
        func.CallOp(lowered.tiling.sym_name.data, host.tiling_args, [IndexType()] * n_results)
    )
    params = [*call.results[:-1], *host.extra_params]
    launch = buffer.LaunchOp(
        name,
        call.results[-1],
        launch_inputs,
        params,
        host.output_dims,
        [r.type for r in group.outputs],
    )
    launch.location = group.location
    launch.attributes[PLAN_ATTR] = DictionaryAttr(dict(group.properties))
    launch.attributes[REPORT_ATTR] = entry_attribute(entry, launch_inputs, list(group.outputs))
    b.insert(launch)
    for old, new in zip(group.outputs, launch.outputs):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(group)
    return [lowered.kernel, lowered.tiling]
