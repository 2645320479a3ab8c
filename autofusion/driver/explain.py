"""`afc explain MODEL --op NAME`: why an op was or was not fused, and with what.

NAME is a source name: an ONNX node name, a text-language value name, or an SSA name of
an .mlir input. The answer follows the op through the pipeline: the graph rewrites that
consumed it (with the other ops they matched) or refused it (with the reason), then the
kernel UB fusion put it in, or why it stayed a library op, and every neighbour it was
not fused with and why.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.passes.fusion_statistics import describe_op, location_names

if TYPE_CHECKING:
    from autofusion.driver.pipeline import Compilation

# names listed when an answer would otherwise run long
SHOWN = 8


def _ops_named(module: ModuleOp, name: str) -> list[Operation]:
    return [
        op
        for op in module.walk()
        if not isinstance(op, graph.ConstantOp | graph.FusionGroupOp)
        and name in location_names(op.location)
    ]


def _mentions(description: str, name: str) -> bool:
    """Whether a describe_op() string ("graph.add @ a+b" or "x -> y") names `name`."""
    for side in description.split(" -> "):
        _, at, where = side.partition(" @ ")
        if at and name in where.split("+"):
            return True
    return False


def _all_names(module: ModuleOp) -> list[str]:
    names: list[str] = []
    for op in module.walk():
        for n in location_names(op.location):
            if n not in names:
                names.append(n)
    return names


def _brief(description: str) -> str:
    """A describe_op() string with a long list of fused source names cut to the first:
    `graph.gelu @ a+b+c+d` -> `graph.gelu @ a (+3 more)`."""
    head, at, where = description.partition(" @ ")
    names = where.split("+")
    if not at or len(names) <= 2:
        return description
    return f"{head} @ {names[0]} (+{len(names) - 1} more)"


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f", and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _kernel_of(fused: ModuleOp) -> dict[graph.FusionGroupOp, str]:
    """Kernel names as the report gives them (fusion groups in program order)."""
    groups = [op for op in fused.walk() if isinstance(op, graph.FusionGroupOp)]
    return {g: f"kernel{i}" for i, g in enumerate(groups)}


def explain(c: Compilation, name: str) -> list[str]:
    """The explanation, one finding per line."""
    assert c.fused is not None and c.ub_result is not None
    originals = _ops_named(c.original, name)
    if not originals:
        close = difflib.get_close_matches(name, _all_names(c.original), n=5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UserError(f"no op named '{name}' in the model{hint}", c.model)
    kinds = ", ".join(sorted({op.name for op in originals}))
    lines = [f"{name}: {kinds} in {c.model}"]

    # graph and split fusion
    for app in c.statistics.applications:
        if name in app.sources:
            others = [s for s in app.sources if s != name]
            with_ = f" together with {_listing(others)}" if others else ""
            lines.append(
                f"  graph fusion: {app.rule} rewrote it{with_} into "
                f"{_listing([_brief(d) for d in app.created])}"
            )
    for kind_rules in c.statistics.rules.values():
        for rule, stats in sorted(kind_rules.items()):
            for where, reason in stats.refusals:
                if _mentions(where, name) and " -> " not in where:
                    lines.append(f"  graph fusion: {rule} did not apply: {reason}")

    # UB fusion
    finals = _ops_named(c.fused, name)
    if not finals:
        lines.append("  UB fusion: nothing computes it any more (folded or dead after rewrites)")
    kernels = _kernel_of(c.fused)
    library = {op: reason for op, reason in c.ub_result.library_ops}
    for op in finals:
        parent = op.parent_op()
        if isinstance(parent, graph.FusionGroupOp):
            members = [
                _brief(describe_op(o))
                for o in parent.block.ops
                if not isinstance(o, graph.ConstantOp | graph.YieldOp)
            ]
            me = _brief(describe_op(op))
            tname = parent.template.data if parent.template is not None else "?"
            if len(members) == 1:
                lines.append(
                    f"  UB fusion: {me} is a kernel of its own, {kernels[parent]} ({tname})"
                )
            else:
                rules = parent.attributes.get("afc.rules")
                by = f" by {getattr(rules, 'data', '')}" if rules is not None else ""
                others = [m for m in members if m != me]
                lines.append(
                    f"  UB fusion: {me} is in {kernels[parent]} ({tname}){by} with "
                    f"{len(others)} other ops: {_listing(others)}"
                )
        elif op in library:
            lines.append(
                f"  UB fusion: {_brief(describe_op(op))} stays a library op: {library[op]}"
            )
        else:
            lines.append(f"  UB fusion: {_brief(describe_op(op))} is outside every kernel")
    for remark in c.ub_result.remarks:
        if _mentions(remark.producer, name) or _mentions(remark.consumer, name):
            lines.append(
                f"  UB fusion: not fused {_brief(remark.producer)} -> {_brief(remark.consumer)}: "
                f"{remark.reason}"
            )
    return lines
