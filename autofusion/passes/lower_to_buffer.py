"""`lower-to-buffer`: every graph.fusion_group becomes one buffer.kernel and a launch.

    afc-opt model.mlir -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer'

The group's plan (its properties, written by ub-fusion: template and tiling) is carried
out by that kernel template (autofusion/lowering/template.py); a group without a plan
(hand-written IR) is planned once by the same planning function ub-fusion uses. At the group's place the host code reads the runtime dims, calls the
kernel's tiling function (`@<kernel>_tiling`, the C++ TilingFunc in Ascend C terms) and
launches the kernel on the group's tensors. The kernels are for the module's target
(autofusion/dialects/target.py), the chip ub-fusion planned the groups for. Ops outside fusion groups stay graph ops
(library ops). A group no template can lower is an error naming what stops it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects.target import ReadsTarget, resolve_target
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.l2_hint import bypass_attribute, l2_bypass
from autofusion.lowering.template import carry_out
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


def lower_group(
    group: graph.FusionGroupOp, name: str, chip: ChipSpec, dynamic_size: int = 128
) -> list[Operation]:
    """Replace `group` by its launch; return the kernel and tiling function to add."""
    chosen = carry_out(group, chip)
    if isinstance(chosen, Refusal):
        raise UserError(
            f"cannot lower fusion group {name} ({describe_op(group)}): {chosen.reason}", group
        )
    template, plan = chosen
    entry = group_entry(group, name, chip, dynamic_size, chosen)
    try:
        lowered = template.lower(plan, name, chip)
    except UserError as e:
        if e.location is not None:
            raise
        raise UserError(e.message, group) from e  # a template's refusal is about the group
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
    launch.attributes[REPORT_ATTR] = entry_attribute(entry, launch_inputs, list(group.outputs))
    b.insert(launch)
    for old, new in zip(group.outputs, launch.outputs):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(group)
    return [lowered.kernel, lowered.tiling]
