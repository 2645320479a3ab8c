"""Kernel templates: the shapes of kernel afc can generate, behind one interface.

A template decides whether a group of graph ops can be one kernel (`plan`, with the
reason when not), what that kernel costs (`cost`, for ub-fusion's decisions), and builds
it (`lower`: the buffer.kernel, its host tiling function, and the host-side values the
launch needs). Planning is two steps: the analysis of the group's body (roles of its ops,
shapes), then the choice of a tiling (a search over the chip's candidates); `plan` does
both, `at_tiling` the analysis only, taking a recorded tiling (`tiling`) instead of the
search. `plan_group` (template_registry.py) is the one place a group is planned: ub-fusion plans there and
writes the plan on the group (dialects/group_plan.py); lower-to-buffer carries that plan
out (`carry_out`: `at_tiling`, never the search) and plans only a group that has no
tiling (hand-written IR).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from typing import ClassVar, Generic, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects.group_plan import TilingValue, edge_chains
from autofusion.fusion.cost import KernelCost, Refusal
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IrOps


@dataclass(frozen=True)
class NotApplicable(Refusal):
    """A template's refusal of a group that is not of its kind (a cube template seeing no
    cube op of its own). It is falsy: ub-fusion and lower-to-buffer report the first
    refusal that is truthy, so a group is explained by the template it belongs to."""

    def __bool__(self) -> bool:
        return False


@dataclass
class GroupParts:
    """A fusion group's body: ops to compute, its inputs (block arguments and in-group
    constants) and its outputs (what it yields)."""

    ops: list[Operation]
    inputs: list[SSAValue]
    outputs: list[SSAValue]


@dataclass
class HostLaunch:
    """What the host computes before the launch: tiling-function arguments, extra kernel
    tiling scalars appended after the tiling function's results, and the sizes of the
    outputs' dynamic dims."""

    tiling_args: list[SSAValue]
    extra_params: list[SSAValue]
    output_dims: list[SSAValue]


class Plan(ABC):
    """A template's static decisions for one group."""

    template: ClassVar[str]


P = TypeVar("P", bound=Plan)


@dataclass
class Lowered:
    """A built kernel: the kernel op, its tiling function, and its GM inputs in order
    (group-body values: block arguments or in-group constants)."""

    kernel: buffer.KernelOp
    tiling: func.FuncOp
    kernel_inputs: list[SSAValue]
    state: object = None  # the template's own data for `host`


class KernelTemplate(ABC, Generic[P]):
    """One kind of kernel; generic in its plan type P, which its `plan` makes and its
    other methods take."""

    name: ClassVar[str]

    @abstractmethod
    def plan(self, parts: GroupParts, chip: ChipSpec) -> P | Refusal:
        """Whether the group can be one kernel of this template, and how."""

    @abstractmethod
    def cost(self, plan: P, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        """The kernel's traffic and work; dynamic dims take the sizes in `dims` when given
        (default: 1, the smallest legal size)."""

    def read_once(self, plan: P, chip: ChipSpec) -> list[SSAValue]:
        """The kernel inputs (group-body values) whose every byte the kernel reads exactly
        once at the group's static shapes: the candidates for reading past L2
        (lowering/l2_hint.py). None unless a template says so."""
        return []

    def read_first(self, plan: P) -> list[SSAValue]:
        """The kernel inputs (group-body values) it reads whole before the rest of its
        work (the traffic model's `first`). None unless a template says so."""
        return []

    def scratch(self, plan: P, chip: ChipSpec, dims: Sequence[int] | None = None) -> int:
        """GM bytes of the kernel's own tensors that it writes first and uses throughout
        (the traffic model's `scratch`: an accumulator it adds to, ...). None by default:
        the templates' workspace slots are small and rewritten in place."""
        return 0

    def tiling(self, plan: P) -> dict[str, TilingValue]:
        """Every tiling decision of the plan (the group's `tiling` property, what `at_tiling`
        takes back): the fields of its `tiles`, when it has them."""
        tiles = getattr(plan, "tiles", None)
        return asdict(tiles) if is_dataclass(tiles) and not isinstance(tiles, type) else {}

    @abstractmethod
    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> P | Refusal:
        """The group's plan at `tiling` (a planned group's `tiling` property): the same
        analysis of the body as `plan` (roles of the ops, shapes), with the tiling taken
        instead of searched; a tiling that is incomplete or does not fit the chip is a
        refusal saying why."""

    @abstractmethod
    def footprint(self, plan: P, chip: ChipSpec) -> dict[str, int]:
        """Bytes the kernel's buffers take per on-chip space at the plan's tiling (the
        group's `footprint` property, checked against the target by the verifier)."""

    @abstractmethod
    def lower(self, plan: P, name: str, chip: ChipSpec) -> Lowered:
        """Build the kernel and its host tiling function."""

    @abstractmethod
    def host(
        self,
        plan: P,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        """Emit, at builder `b` before the group, the runtime values the launch needs.

        `outside` maps the group's block arguments to the values they are bound to.
        """


def group_parts(group: graph.FusionGroupOp) -> GroupParts:
    """The group's ops, inputs (block arguments, then in-group constants) and outputs.
    A view marked as the group's edge (dialects/group_plan.py EDGE_VIEW_ATTR) is not the
    kernel's: a head view's result is an input in its argument's place, a tail view's
    source an output in its result's place (the group as ub-fusion planned it)."""
    block = group.block
    heads, tails = edge_chains(block)
    edges = {*heads, *tails}
    # each block argument, then the head views of its chain (edges reading it in turn)
    chains: dict[SSAValue, list[SSAValue]] = {a: [a] for a in block.args}
    start: dict[SSAValue, SSAValue] = {a: a for a in block.args}
    for op in heads:
        first = start[op.operands[0]]
        chains[first].append(op.results[0])
        start[op.results[0]] = first

    def kernel_reads(v: SSAValue) -> bool:
        return any(u.operation not in edges for u in v.uses)

    ops: list[Operation] = []
    inputs = [v for chain in chains.values() for v in chain if kernel_reads(v)]
    for op in block.ops:
        if isinstance(op, graph.YieldOp) or op in edges:
            continue
        if isinstance(op, graph.ConstantOp):
            inputs.append(op.result)
        else:
            ops.append(op)
    outputs: list[SSAValue] = []
    for value in group.yield_op.values:
        v = value
        while isinstance(v.owner, Operation) and v.owner in edges:
            v = v.owner.operands[0]  # back through a tail chain to the kernel's value
        outputs.append(v)
    return GroupParts(ops, inputs, outputs)
