"""The template registry and the planning of a fusion group: which templates exist, the
one place a group is planned (`plan_group`, ub-fusion's), the plan written on the group
(`settle`, `plan_properties`), and that plan carried out (`carry_out`, lower-to-buffer's).

It sits above the templates (template.py is the interface they implement, this module
imports them), so no lowering module imports it: ub-fusion, legality, lower-to-buffer and
the report do.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute

from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects.group_plan import TilingValue, tiling_attribute, tiling_values
from autofusion.dialects.target import TargetAttr
from autofusion.fusion.cost import Refusal
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_kernel import AttentionTemplate
from autofusion.lowering.conv_kernel import ConvTemplate
from autofusion.lowering.decode_attention_kernel import DecodeAttentionTemplate
from autofusion.lowering.ffn_kernel import FfnTemplate
from autofusion.lowering.fitted_tiling import fitted_tiling
from autofusion.lowering.matmul_kernel import MatmulTemplate
from autofusion.lowering.rows_template import RowsTemplate
from autofusion.lowering.template import GroupParts, KernelTemplate, Plan, group_parts


def templates() -> list[KernelTemplate[Any]]:
    """Every template, in the order lower-to-buffer tries them. The cube templates come
    first: each takes only groups rooted at its own op (and refuses others with a falsy
    `NotApplicable`), so the order decides nothing but which refusal explains a group;
    decode_attention, which takes attention groups only where its cost beats attention's,
    comes before attention."""
    return [
        MatmulTemplate(),
        ConvTemplate(),
        DecodeAttentionTemplate(),  # before attention: it plans a group only when faster
        AttentionTemplate(),
        FfnTemplate(),
        RowsTemplate(),
    ]


def plan_group(
    parts: GroupParts, chip: ChipSpec, template_name: str | None = None
) -> tuple[KernelTemplate[Any], Plan] | Refusal:
    """The one planning function: the first template that plans the group (only the one
    named `template_name` when given), or the first template's refusal."""
    first: Refusal | None = None
    chosen = [t for t in templates() if template_name in (None, t.name)]
    if not chosen:
        known = ", ".join(t.name for t in templates())
        return Refusal(f"no kernel template '{template_name}' (known: {known})")
    for template in chosen:
        plan = template.plan(parts, chip)
        if not isinstance(plan, Refusal):
            return template, plan
        first = first or plan
    return first or Refusal("no kernel template")


def settle(template: KernelTemplate[Any], plan: Plan, chip: ChipSpec, parts: GroupParts) -> Plan:
    """The plan at the tiling its kernel is built with. A template sizes its vector
    buffers from a per-value budget and, as it emits the kernel, shrinks the tiles until
    the emitted buffers (a few working ones more) fit UB; building the kernel once when
    the plan is written records that tiling, so lower-to-buffer carries it out as is. A
    group of a shape built before (fitted_tiling.py) takes the tiling that build fitted:
    the plan at it is `at_tiling`'s, as lower-to-buffer's is. A kernel that fits no tile
    is left to lower-to-buffer, which names it in its error."""

    def fit() -> dict[str, TilingValue] | None:
        try:
            template.lower(plan, "settle", chip)
        except UserError:  # lower-to-buffer names the kernel and the group
            return None
        return template.tiling(plan)

    fitted = fitted_tiling(template.name, parts, chip, template.tiling(plan), fit)
    if fitted is None or fitted == template.tiling(plan):
        return plan  # built here, or built before at this tiling and fitted as is
    settled = template.at_tiling(parts, fitted, chip)
    return plan if isinstance(settled, Refusal) else settled


def plan_properties(
    template: KernelTemplate[Any], plan: Plan, chip: ChipSpec, cost_us: float, reason: str
) -> dict[str, Attribute]:
    """The plan as a fusion group's properties (dialects/group_plan.py): what ub-fusion
    writes on a group and lower-to-buffer keeps on its launch."""
    return {
        "target": TargetAttr(chip.name),
        "template": StringAttr(template.name),
        "tiling": tiling_attribute(template.tiling(plan)),
        "footprint": tiling_attribute(template.footprint(plan, chip)),
        "cost_us": graph.float_attr(round(cost_us, 4)),
        "reason": StringAttr(reason),
    }


def carry_out(
    group: graph.FusionGroupOp, chip: ChipSpec
) -> tuple[KernelTemplate[Any], Plan] | Refusal:
    """The group's plan as its properties give it: its template's analysis of the body at
    its recorded tiling, with no search. A group without a tiling (hand-written IR) is
    planned here, once (by its template when it names one)."""
    parts = group_parts(group)
    name = group.template.data if group.template is not None else None
    if group.tiling is None:
        return plan_group(parts, chip, name)
    chosen = [t for t in templates() if t.name == name]
    if not chosen:
        known = ", ".join(t.name for t in templates())
        return Refusal(
            f"a tiling with no kernel template (known: {known})"
            if name is None
            else f"no kernel template '{name}' (known: {known})"
        )
    template = chosen[0]
    plan = template.at_tiling(parts, tiling_values(group.tiling), chip)
    return plan if isinstance(plan, Refusal) else (template, plan)
