"""A fusion group's plan: the properties ub-fusion writes on `graph.fusion_group`.

    graph.fusion_group (...) -> tensor<16x256xf16> plan {target = #afc.target<"Ascend910B1">,
        template = "matmul", tiling = {tm = 128 : i64, ...}, footprint = {l0a = ... : i64},
        cost_us = 1.25 : f64, reason = "..."} { ... }

`target` is the chip the plan was made for, `template` the kernel template that builds it,
`tiling` the template's tiling decisions (lower-to-buffer carries them out), `footprint` the
bytes the kernel's buffers take in each on-chip space at that tiling, `cost_us` the cost
model's time for it and `reason` why the group is one kernel. The verifier rejects a plan
for another chip than the module's target, or whose footprint overflows the target.
lower-to-buffer keeps the plan on the group's launch (`afc.plan`), where the report reads
the template, the cost and the UB footprint.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i1, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from autofusion.dialects.target import TARGET_KEY, TargetAttr

# the attribute on a view at a fusion group's edge (fusion/edge_views.py): the view is
# not the kernel's, which reads or writes the buffer the view reshapes
EDGE_VIEW_ATTR = "afc.edge_view"

# the attribute on a buffer.launch that keeps its group's plan (lower-to-buffer), which the
# report reads
PLAN_ATTR = "afc.plan"

# the properties of a planned group, in print order
PLAN_PROPERTIES = ("target", "template", "tiling", "footprint", "cost_us", "reason")

# what a tiling or footprint value can be: an integer or a flag
TilingValue = int | bool


def tiling_attribute(values: Mapping[str, TilingValue]) -> DictionaryAttr:
    """`values` as a dictionary attribute (flags as i1, integers as i64), in key order so
    the printed plan is deterministic."""
    out: dict[str, Attribute] = {}
    for key in sorted(values):
        v = values[key]
        out[key] = IntegerAttr.from_bool(v) if isinstance(v, bool) else IntegerAttr(v, i64)
    return DictionaryAttr(out)


def tiling_values(attr: DictionaryAttr) -> dict[str, TilingValue]:
    """The inverse of `tiling_attribute`; another kind of entry is an error naming it."""
    out: dict[str, TilingValue] = {}
    for key, v in attr.data.items():
        if isinstance(v, IntegerAttr) and v.type == i1:
            out[key] = bool(v.value.data)
        elif isinstance(v, IntegerAttr):
            out[key] = v.value.data
        else:
            raise VerifyException(f"plan entry '{key}' must be an integer or a flag, not {v}")
    return out


def _module_target(op: Operation) -> TargetAttr | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    if parent is None:
        return None
    attr = parent.attributes.get(TARGET_KEY)
    return attr if isinstance(attr, TargetAttr) else None


def verify_plan(op: Operation, target: TargetAttr | None, footprint: DictionaryAttr | None) -> None:
    """A group's plan must be for the module's target and fit its on-chip memories."""
    if target is None:
        return
    module = _module_target(op)
    if module is not None and module.chip.data != target.chip.data:
        raise VerifyException(
            f"'graph.fusion_group' plan is for {target.chip.data} but the module's target is "
            f"{module.chip.data} (re-run ub-fusion for the target)"
        )
    if footprint is None:
        return
    spec = target.spec
    for space, used in tiling_values(footprint).items():
        capacity = spec.capacity(space)
        if capacity is None:
            raise VerifyException(f"'graph.fusion_group' plan footprint names no space '{space}'")
        if used > capacity:
            raise VerifyException(
                f"'graph.fusion_group' plan needs {used} bytes of {space.upper()} but "
                f"{spec.name} has {capacity}"
            )


def edge_chains(body: Block) -> tuple[list[Operation], list[Operation]]:
    """A fusion group body's marked edge views (EDGE_VIEW_ATTR): the head chains (each
    reads a block argument or the head before it), in op order, and the tail chains
    (each the only reader of its source, its result yielded or read by the tail after
    it), nearest the yield first. A marked op in neither is not an edge view."""
    marked = [op for op in body.ops if EDGE_VIEW_ATTR in op.attributes]
    heads: list[Operation] = []
    starts: set[SSAValue] = set(body.args)
    for op in marked:
        if len(op.operands) == 1 and len(op.results) == 1 and op.operands[0] in starts:
            heads.append(op)
            starts.add(op.results[0])
    tails: list[Operation] = []
    last = body.last_op
    ends: set[SSAValue] = set(last.operands) if last is not None else set()
    for op in reversed(marked):
        if op in heads or len(op.operands) != 1 or len(op.results) != 1:
            continue
        if op.results[0] in ends and op.results[0].has_one_use():
            tails.append(op)
            ends.add(op.operands[0])
    return heads, tails


def verify_edge_views(body: Block) -> None:
    """Every op marked as an edge view is a one-operand view at the group's edge."""
    heads, tails = edge_chains(body)
    for op in body.ops:
        if EDGE_VIEW_ATTR in op.attributes and op not in heads and op not in tails:
            raise VerifyException(
                f"'{op.name}' is marked {EDGE_VIEW_ATTR} but is not at the group's edge "
                "(reading a group input, or read only by the yield or another edge view)"
            )
