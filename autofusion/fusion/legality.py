"""Which ops may share a kernel: fusion kinds, the UBFusion rules, capacity, no cycles.

A group of graph ops is one legal kernel when

- its fusion kinds combine under the UBFusion rules the switch file leaves on
  (`rules_needed`, `switched_off`). Each rule is named after the CANN UB-fusion pass
  that allows the same combination (hiascend "Graph Fusion and UB Fusion Patterns" list,
  see shared/reference/ascend.md section 3.4); "AutomaticUbFusion" is the grouping
  itself: off, every op is its own kernel;
- an opaque op stands alone, and some kernel template plans the group (`plan_kernel`):
  the templates check the UB/L1/L0 capacity rules, a tile whose double-buffered,
  32-byte aligned buffers fit the chip (autofusion/lowering/template.py);
- merging two groups creates no cycle through a third (`creates_cycle`).

The partitioner's caps (max ops and inputs per kernel) are its policy
(autofusion/fusion/partition.py), not legality.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from xdsl.ir import Operation

from autofusion.dialects import graph
from autofusion.fusion.cost import Refusal
from autofusion.hardware import ChipSpec
from autofusion.lowering.template import GroupParts, KernelTemplate, Plan
from autofusion.lowering.template_registry import plan_group
from autofusion.passes.fusion_switch import UB_FUSION, FusionSwitch

AUTOMATIC_UB_FUSION = "AutomaticUbFusion"

# rule name -> what it allows (data, read by the legality check and the docs)
UB_FUSION_RULES: dict[str, str] = {
    AUTOMATIC_UB_FUSION: "group ops into kernels at all (off: one op per kernel)",
    "TbeEltwiseFusionPass": "elementwise and broadcast ops fuse with each other",
    "TbeReduceElemwiseFusionPass": "a reduce (reductions, norms, softmax) fuses with the "
    "elementwise ops that feed it and follow it",
    "TbeInjectiveElemwiseFusionPass": "injective ops (reshape, transpose, slice, concat, "
    "gather, pad) fuse with elementwise ops",
    "ATbeMatMulElemwiseFusionPass": "matmul/gemm fuse forward into an elementwise epilogue",
    "TbeConvElemwiseFusionPass": "conv fuses forward into an elementwise epilogue",
    "TbeMultiOutputFusionPass": "a kernel may also write an intermediate value other kernels read",
}

UB_FUSION_RULE_NAMES = tuple(UB_FUSION_RULES)


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


def switched_off(switch: FusionSwitch, needed: Sequence[str]) -> Refusal | None:
    """Why the switch file forbids a merge that relies on `needed`, if it does."""
    if not switch.is_on(UB_FUSION, AUTOMATIC_UB_FUSION):
        return Refusal(f"{AUTOMATIC_UB_FUSION} is off")
    off = [r for r in needed if not switch.is_on(UB_FUSION, r)]
    if off:
        return Refusal(f"UBFusion rule {off[0]} is off")
    return None


def plan_kernel(parts: GroupParts, chip: ChipSpec) -> tuple[KernelTemplate, Plan] | Refusal:
    """The template and plan of the one kernel that runs `parts` on `chip`, or why none
    can: an opaque op stands alone, and the templates check fusion kinds and capacity."""
    if len(parts.ops) > 1 and any(
        graph.fusion_kind(op) == graph.FusionKind.OPAQUE for op in parts.ops
    ):
        return Refusal("an opaque op stands alone")
    return plan_group(parts, chip)


class Kernel(Protocol):
    """A group of ops that runs as one kernel (the partitioner's Group)."""

    gid: int
    ops: list[Operation]


def creates_cycle(
    p: Kernel,
    c: Kernel,
    group_of: Mapping[Operation, Kernel],
    index: Mapping[Operation, int],
    views: Sequence[Operation] = (),
) -> bool:
    """Whether some path leaves p, passes through an op outside p and c, and reaches c.

    A group runs as one kernel, so a path that enters any of its ops continues from all of
    its outputs. Ops after c's last op cannot reach c (`index`, the program order, is a
    topological order), which bounds the walk. `views` (the ungrouped reshapes between p
    and c that a merge takes in) are inside the union.
    """
    limit = max(index[op] for op in c.ops)
    stack = [
        u.operation
        for op in p.ops
        for r in op.results
        for u in r.uses
        if group_of.get(u.operation) not in (p, c) and u.operation not in views
    ]
    seen: set[Operation] = set(views)
    expanded: set[int] = set()
    while stack:
        op = stack.pop()
        if op in seen or index.get(op, limit + 1) > limit:
            continue
        seen.add(op)
        g = group_of.get(op)
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
