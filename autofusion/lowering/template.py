"""Kernel templates: the shapes of kernel afc can generate, behind one interface.

A template decides whether a group of graph ops can be one kernel (`plan`, with the
reason when not), what that kernel costs (`cost`, for ub-fusion's decisions), and builds
it (`lower`: the buffer.kernel, its host tiling function, and the host-side values the
launch needs). `plan_group` is the one place a group is planned: ub-fusion plans there and
writes the plan on the group (dialects/group_plan.py); lower-to-buffer carries that plan
out (`carry_out`) and plans only a group that has none (hand-written IR).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, ClassVar, Generic, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import buffer, graph
from autofusion.dialects.group_plan import TilingValue, tiling_values
from autofusion.hardware import ChipSpec
from autofusion.lowering.index_expr import IrOps
from autofusion.passes.fusion_rule import Refusal


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
class KernelCost:
    """What one kernel moves and computes (cost_model.py turns it into time)."""

    gm_read_bytes: int
    gm_write_bytes: int
    vector_work: float  # float32 element operations, weighted per op
    cube_flops: float
    transfer_bytes: int  # bytes of one typical GM<->UB transfer (DataCopy efficiency)
    ub_bytes: int  # UB footprint of the kernel's buffers
    cube_cores_used: int = 0
    vector_cores_used: int = 0
    notes: list[str] = field(default_factory=list)
    # the part of gm_read/gm_write that reaches HBM when the kernel runs alone on a cold
    # L2: its own re-reads (and workspace round trips) hit L2 when its traversal keeps
    # them resident (None: all of it, no reuse modelled). See docs/ub-fusion.md.
    hbm_read_bytes: int | None = None
    hbm_write_bytes: int | None = None
    launches: int = 1  # 0 for a view op: no kernel runs

    @property
    def hbm_bytes(self) -> int:
        read = self.gm_read_bytes if self.hbm_read_bytes is None else self.hbm_read_bytes
        write = self.gm_write_bytes if self.hbm_write_bytes is None else self.hbm_write_bytes
        return read + write


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
        """The plan's tiling decisions (the group's `tiling` property): the fields of its
        `tiles`, when it has them."""
        tiles = getattr(plan, "tiles", None)
        return asdict(tiles) if is_dataclass(tiles) and not isinstance(tiles, type) else {}

    def footprint(self, plan: P) -> dict[str, int]:
        """Bytes the kernel's buffers take per on-chip space at the plan's tiling (the
        group's `footprint` property, checked against the target by the verifier); empty
        when the template sizes its buffers to fit while it builds the kernel."""
        return {}

    def retile(self, plan: P, tiling: Mapping[str, TilingValue], chip: ChipSpec) -> P | Refusal:
        """The plan with another tiling (a hand-edited group's), or why it cannot take it.
        Only the template's own tiling unless a template says so."""
        return Refusal(f"the {self.name} template takes only the tiling it plans")

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


def templates() -> list[KernelTemplate[Any]]:
    """Every template, in the order lower-to-buffer tries them. The cube templates come
    first: each takes only groups rooted at its own op (and refuses others with a falsy
    `NotApplicable`), so the order decides nothing but which refusal explains a group."""
    from autofusion.lowering.attention_kernel import AttentionTemplate
    from autofusion.lowering.conv_kernel import ConvTemplate
    from autofusion.lowering.ffn_kernel import FfnTemplate
    from autofusion.lowering.matmul_kernel import MatmulTemplate
    from autofusion.lowering.rows_template import RowsTemplate

    return [MatmulTemplate(), ConvTemplate(), AttentionTemplate(), FfnTemplate(), RowsTemplate()]


def group_parts(group: graph.FusionGroupOp) -> GroupParts:
    """The group's ops, inputs (block arguments, then in-group constants) and outputs."""
    ops: list[Operation] = []
    inputs: list[SSAValue] = list(group.block.args)
    for op in group.block.ops:
        if isinstance(op, graph.YieldOp):
            continue
        if isinstance(op, graph.ConstantOp):
            inputs.append(op.result)
        else:
            ops.append(op)
    return GroupParts(ops, inputs, list(group.yield_op.values))


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


def carry_out(
    group: graph.FusionGroupOp, chip: ChipSpec
) -> tuple[KernelTemplate[Any], Plan] | Refusal:
    """The group's plan as its properties give it: its template's analysis of the body at
    its recorded tiling. A group without a plan (hand-written IR) is planned here, once."""
    parts = group_parts(group)
    if group.template is None:
        return plan_group(parts, chip)
    chosen = plan_group(parts, chip, group.template.data)
    if isinstance(chosen, Refusal) or group.tiling is None:
        return chosen
    template, plan = chosen
    tiling = tiling_values(group.tiling)
    if tiling == template.tiling(plan):
        return template, plan
    planned = template.retile(plan, tiling, chip)
    return planned if isinstance(planned, Refusal) else (template, planned)
