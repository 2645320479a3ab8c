"""The fusion report: every kernel with its ops, GM bytes, UB footprint and estimated
time, with totals before fusion (every op its own kernel), after fusion, and the lower
bound (every input, weight and output moved exactly once).

Two traffic figures per kernel and in the totals:

* `gm_*_bytes` / `gm_bytes_*`: logical GM bytes, what the kernels' DataCopies request
  (a matmul's operand re-reads included);
* `hbm_*_bytes` / `hbm_bytes_*`: the estimate of what reaches HBM through the chip's L2,
  from the traffic model (autofusion/traffic_model.py, an LRU write-back cache) run
  over the kernels in program order; `hbm_bytes_after_optimistic` with a scan-resistant
  L2 (weights streaming past do not displace older data), `hbm_bytes_after_pessimistic`
  with dead dirty data written back too.

Works on graph-level IR after ub-fusion (kernels are graph.fusion_groups) and on
buffer-level IR after lower-to-buffer (kernels are buffer.launches). A kernel's template,
time and UB footprint are its plan's (the group's properties, kept on its launch as
`afc.plan`: dialects/group_plan.py); its ops, GM bytes and traffic come from the group's
ops (at buffer level, what lower-to-buffer recorded of them as `afc.report`). Graph ops outside kernels are library ops,
costed as one kernel each, except views (reshapes: fusion.cost.is_view), which move no
data and run no kernel: the tensor they produce is their input's bytes.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects.graph_base import FusionKind, fusion_kind
from autofusion.dialects.group_plan import EDGE_VIEW_ATTR, PLAN_ATTR, tiling_values
from autofusion.dialects.op_facts import OperandRole, OpFacts, reads_through
from autofusion.fusion.cost import is_view, kernel_time, lower_bound_bytes, op_cost, value_bytes
from autofusion.hardware import ChipSpec
from autofusion.lowering.l2_hint import l2_bypass
from autofusion.passes.fusion_statistics import describe_op
from autofusion.traffic_model import TrafficKernel, granule_for, simulate_l2

if TYPE_CHECKING:
    from autofusion.lowering.template import KernelTemplate, Plan
    from autofusion.passes.fusion_rule import Refusal

REPORT_ATTR = "afc.report"


@dataclass
class KernelEntry:
    name: str
    kind: str  # "fused" (a template kernel) or "library"
    template: str
    ops: list[str]
    gm_read_bytes: int
    gm_write_bytes: int
    ub_bytes: int
    time_us: float
    unfused_gm_bytes: int
    unfused_time_us: float
    hbm_read_bytes: int = 0  # set by the traffic model (build_report)
    hbm_write_bytes: int = 0
    unfused_kernels: int = 1  # ops of the kernel that run a kernel of their own unfused
    # for the traffic model: what the kernel reads (bytes per input tensor) and the HBM
    # bytes of its own re-reads that L2 does not serve; the same for its ops unfused
    traffic: TrafficKernel | None = None
    unfused_traffic: list[TrafficKernel] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "template": self.template,
            "ops": self.ops,
            "op_count": len(self.ops),
            "gm_read_bytes": self.gm_read_bytes,
            "gm_write_bytes": self.gm_write_bytes,
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
            "ub_bytes": self.ub_bytes,
            "time_us": round(self.time_us, 3),
            "unfused_gm_bytes": self.unfused_gm_bytes,
            "unfused_time_us": round(self.unfused_time_us, 3),
        }


@dataclass
class FusionReport:
    chip: str
    kernels: list[KernelEntry] = field(default_factory=list)
    lower_bound_bytes: int = 0
    view_ops: int = 0  # reshapes outside kernels: no kernel, no bytes
    l2_bytes: int = 0
    hbm_before: int = 0  # the traffic model's totals (build_report)
    hbm_after: int = 0
    hbm_after_pessimistic: int = 0
    hbm_after_optimistic: int = 0
    hbm_final_writeback: int = 0  # graph outputs left dirty in L2 at the end

    def totals(self) -> dict[str, Any]:
        fused = [k for k in self.kernels if k.kind == "fused"]
        return {
            "kernels": len(self.kernels),
            "fused_kernels": len(fused),
            "library_ops": len(self.kernels) - len(fused),
            "view_ops": self.view_ops,
            "ops": sum(len(k.ops) for k in self.kernels) + self.view_ops,
            "gm_bytes_before": sum(k.unfused_gm_bytes for k in self.kernels),
            "gm_bytes_after": sum(k.gm_read_bytes + k.gm_write_bytes for k in self.kernels),
            "gm_bytes_lower_bound": self.lower_bound_bytes,
            "hbm_bytes_before": self.hbm_before,
            "hbm_bytes_after": self.hbm_after,
            "hbm_bytes_after_optimistic": self.hbm_after_optimistic,
            "hbm_bytes_after_pessimistic": self.hbm_after_pessimistic,
            "hbm_final_writeback_bytes": self.hbm_final_writeback,
            "l2_bytes": self.l2_bytes,
            "time_us_before": round(sum(k.unfused_time_us for k in self.kernels), 3),
            "time_us_after": round(sum(k.time_us for k in self.kernels), 3),
            "kernels_before": sum(k.unfused_kernels for k in self.kernels),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "chip": self.chip,
            "totals": self.totals(),
            "kernels": [k.to_json() for k in self.kernels],
        }


@dataclass(frozen=True)
class LaunchOverhead:
    """The kernel launches of a compile and what the chip charges for each (the cost
    model's `launch_overhead_us`). Every kernel and library op is one launch; a super
    kernel (codegen/super_kernel.py) runs its stages in one, saving the others'."""

    launch_us: float
    launches: int  # one per kernel and library op
    super_kernels: dict[str, list[str]]  # super kernel -> its stages' kernels

    @property
    def launches_after(self) -> int:
        return self.launches - sum(len(s) - 1 for s in self.super_kernels.values())

    @property
    def saved_us(self) -> float:
        return (self.launches - self.launches_after) * self.launch_us

    def to_json(self) -> dict[str, Any]:
        return {
            "launch_overhead_us": self.launch_us,
            "launches": self.launches,
            "launches_after": self.launches_after,
            "overhead_us": round(self.launches * self.launch_us, 3),
            "overhead_us_after": round(self.launches_after * self.launch_us, 3),
            "saved_us": round(self.saved_us, 3),
            "super_kernels": [
                {"name": name, "stages": stages} for name, stages in self.super_kernels.items()
            ],
        }


def launch_overhead(
    report: FusionReport, lowered: ModuleOp | None, chip: ChipSpec
) -> LaunchOverhead:
    """The launches of `report`'s kernels, with the super kernels of the buffer-level
    `lowered` module (None: not lowered, no super kernels)."""
    from autofusion.codegen.super_kernel import super_kernels

    supers = super_kernels(lowered) if lowered is not None else []
    return LaunchOverhead(
        chip.launch_overhead_us,
        sum(1 for k in report.kernels),
        {sk.name: [k.sym_name.data for k in sk.kernels] for sk in supers},
    )


def tensor_key(v: SSAValue) -> SSAValue:
    """The tensor whose bytes `v` is: followed through views (reshapes), a fusion
    group's block arguments (to its operands) and its results (to what it yields)."""
    while True:
        owner = v.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if not isinstance(parent, graph.FusionGroupOp):
                return v
            v = parent.inputs[cast(BlockArgument, v).index]
        elif isinstance(owner, graph.FusionGroupOp):
            v = owner.yield_op.values[cast(OpResult, v).index]
        elif is_view(owner):
            v = owner.operands[0]
        else:
            return v


def read_bytes(v: SSAValue, dynamic_size: int) -> int:
    """Bytes a kernel reads of its input `v`: all of it, or only the parts its views and
    subviews take when every use is one (graph.split / graph.slice read through strides:
    op_facts.Access)."""
    full = value_bytes(v, dynamic_size)
    users = list(dict.fromkeys(u.operation for u in v.uses))
    if not users or not all(reads_through(u) for u in users):
        return full
    taken = sum(read_bytes(r, dynamic_size) for u in users for r in u.results if r.uses)
    return min(full, taken)


def _tensors(values: list[SSAValue], dynamic_size: int) -> list[tuple[Hashable, int]]:
    return [
        (tensor_key(v), value_bytes(v, dynamic_size))
        for v in values
        if isinstance(v.type, TensorType)
    ]


def _op_traffic(op: Operation, chip: ChipSpec, dynamic_size: int) -> TrafficKernel:
    """One op as its own kernel: every operand read once, every result written once;
    the roles of its operands as the op states them (`operand_roles`)."""
    hot, transient = operand_roles(op, chip, dynamic_size)
    return TrafficKernel(
        describe_op(op),
        _merge(_tensors(list(op.operands), dynamic_size)),
        _merge(_tensors(list(op.results), dynamic_size)),
        hot=frozenset(tensor_key(v) for v in hot),
        transient=frozenset(tensor_key(v) for v in transient),
    )


def operand_roles(
    op: Operation, chip: ChipSpec, dynamic_size: int
) -> tuple[list[SSAValue], list[SSAValue]]:
    """The operands of `op` re-read throughout (hot) and briefly (transient), by the
    roles the op states (op_facts.OperandRole): a banded operand (a matmul's A, whose
    bands every N tile reads again) is hot while it fits the half of L2 the tiling
    keeps, else only a group's bands are: transient."""
    hot: list[SSAValue] = []
    transient: list[SSAValue] = []
    if not isinstance(op, OpFacts):
        return hot, transient
    for v, stated in zip(op.operands, op.operand_roles(dynamic_size)):
        role = stated
        if stated is OperandRole.BANDED:
            fits = value_bytes(v, dynamic_size) <= chip.l2_bytes // 2
            role = OperandRole.HOT if fits else OperandRole.TRANSIENT
        if role is OperandRole.HOT:
            hot.append(v)
        elif role is OperandRole.TRANSIENT:
            transient.append(v)
    return hot, transient


def _merge(accesses: list[tuple[Hashable, int]]) -> list[tuple[Hashable, int]]:
    """One access per tensor (the larger byte count), in first-seen order."""
    out: dict[Hashable, int] = {}
    for key, n in accesses:
        out[key] = max(out.get(key, 0), n)
    return list(out.items())


def _unfused(
    ops: list[Operation], chip: ChipSpec, dynamic_size: int
) -> tuple[int, float, int, list[TrafficKernel]]:
    """GM bytes, time, kernel count and traffic of `ops` run one kernel each."""
    gm = 0
    time = 0.0
    traffic = []
    for op in ops:
        cost = op_cost(op, chip, dynamic_size)
        gm += cost.gm_read_bytes + cost.gm_write_bytes
        time += kernel_time(cost, chip).total_us
        if cost.launches:
            traffic.append(_op_traffic(op, chip, dynamic_size))
    return gm, time, len(traffic), traffic


def group_entry(
    group: graph.FusionGroupOp,
    name: str,
    chip: ChipSpec,
    dynamic_size: int,
    chosen: tuple[KernelTemplate, Plan] | Refusal | None = None,
) -> KernelEntry:
    """Cost a fusion group with its plan: `chosen` (what lower-to-buffer carries out), else
    the plan its properties give (lowering/template_registry.py's `carry_out`: the template's
    analysis at the recorded tiling, no search). The time and the UB footprint are the
    plan's (`cost_us`, `footprint`) when it records them."""
    from autofusion.lowering.template import group_parts
    from autofusion.lowering.template_registry import carry_out
    from autofusion.passes.fusion_rule import Refusal

    ops = group_parts(group).ops
    unfused_gm, unfused_time, unfused_count, unfused_traffic = _unfused(ops, chip, dynamic_size)
    if chosen is None:
        chosen = carry_out(group, chip)
    if isinstance(chosen, Refusal):
        # a hand-written group no template takes: cost its ops as they are
        return KernelEntry(
            name,
            "library",
            "none",
            [describe_op(o) for o in ops],
            unfused_gm,
            0,
            0,
            unfused_time,
            unfused_gm,
            unfused_time,
            unfused_kernels=unfused_count,
            traffic=TrafficKernel(
                name,
                _merge([a for k in unfused_traffic for a in k.reads]),
                _merge([a for k in unfused_traffic for a in k.writes]),
            ),
            unfused_traffic=unfused_traffic,
        )
    template, plan = chosen
    cost = template.cost(plan, chip, [dynamic_size] * 16)
    streamed = [
        v
        for v in group.block.args
        if isinstance(v.type, TensorType) and not _scalar_in_kernel(v, group)
    ]
    reads = _merge([(tensor_key(v), read_bytes(v, dynamic_size)) for v in streamed])
    hbm_read = cost.gm_read_bytes if cost.hbm_read_bytes is None else cost.hbm_read_bytes
    hot, transient = access_roles(plan, chip, dynamic_size)
    # inputs read past L2: what lower-to-buffer records on the kernel (lowering/l2_hint.py)
    bypass = frozenset(tensor_key(v) for v in l2_bypass(group, template, plan, chip))
    scratch = template.scratch(plan, chip, [dynamic_size] * 16)
    traffic = TrafficKernel(
        name,
        reads,
        _merge(_tensors(list(group.outputs), dynamic_size)),
        max(0, hbm_read - sum(n for _, n in reads)),
        frozenset(tensor_key(v) for v in hot) - bypass,
        frozenset(tensor_key(v) for v in transient) - bypass,
        bypass,
        [((name, "scratch"), scratch)] if scratch else [],
        frozenset(tensor_key(v) for v in template.read_first(plan)) - bypass,
    )
    return KernelEntry(
        name=name,
        kind="fused",
        template=template.name,
        ops=[describe_op(o) for o in ops],
        gm_read_bytes=cost.gm_read_bytes,
        gm_write_bytes=cost.gm_write_bytes,
        ub_bytes=_planned_ub(group, cost.ub_bytes),
        time_us=group.cost_us.value.data
        if group.cost_us is not None
        else kernel_time(cost, chip).total_us,
        unfused_gm_bytes=unfused_gm,
        unfused_time_us=unfused_time,
        unfused_kernels=unfused_count,
        traffic=traffic,
        unfused_traffic=unfused_traffic,
    )


def _planned_ub(group: graph.FusionGroupOp, estimate: int) -> int:
    """UB bytes of the group's kernel: its plan's footprint, else the cost's estimate."""
    if group.footprint is None:
        return estimate
    return tiling_values(group.footprint).get("ub", estimate)


# row-plan kinds of inputs that a vector kernel reads again for every tile
_REREAD_KINDS = ("rowvec", "mapped_rows", "mapped_column", "scalar")


def access_roles(
    plan: object, chip: ChipSpec, dynamic_size: int
) -> tuple[list[SSAValue], list[SSAValue]]:
    """The kernel inputs the traffic model treats as re-read throughout the kernel (hot)
    and re-read briefly (transient):

    * a cube kernel's root op (matmul, gemm, conv, flash attention, ffn): its operands'
      roles as the op states them (`operand_roles`);
    * vector kernels and cube epilogues: row vectors, per-row tables and scalars (hot).
    """
    from autofusion.lowering.row_plan import RowPlan

    root = getattr(plan, "root", None)
    hot, transient = operand_roles(root, chip, dynamic_size) if root else ([], [])
    rows = plan if isinstance(plan, RowPlan) else getattr(plan, "rows", None)
    if isinstance(rows, RowPlan):
        for v, info in rows.values.items():
            if info.is_input and info.kind in _REREAD_KINDS:
                hot.append(rows.views[v].source if v in rows.views else v)
    return hot, transient


def _scalar_in_kernel(arg: SSAValue, group: graph.FusionGroupOp) -> bool:
    """A group input bound to a splat constant that no cube op reads: a scalar."""
    from autofusion.passes.matching import splat_value

    outer = group.inputs[cast(BlockArgument, arg).index]
    if splat_value(outer) is None:
        return False
    return not any(fusion_kind(use.operation) == FusionKind.CUBE for use in arg.uses)


# ---- entries on launches (buffer level) -------------------------------------------------


def _position(key: Hashable) -> tuple[int, ...]:
    """Where a tensor key is defined in its function, as a sortable path of op and result
    indices (a deterministic order for naming sets of tensors)."""
    if not isinstance(key, SSAValue):  # a decoded kernel-local name: sorted by its text
        return ()
    path: list[int] = [key.index if isinstance(key, OpResult | BlockArgument) else 0]
    op = key.owner if isinstance(key, OpResult) else None
    block = key.owner if isinstance(key, BlockArgument) else None
    while op is not None or block is not None:
        if op is not None:
            parent = op.parent_block()
            path.append(parent.get_operation_index(op) + 1 if parent else 0)
            block, op = parent, None
        elif block is not None:
            parent_op = block.parent_op()
            path.append(-1)
            op, block = parent_op, None
    return tuple(reversed(path))


def _encode(
    kernels: list[TrafficKernel], refs: dict[Hashable, str], local: dict[Hashable, str]
) -> ArrayAttr[Attribute]:
    """Traffic as [[reads], [writes], extra] with tensors named by `refs` (launch operand
    `i<k>`, result `o<k>`) or a kernel-local `l<j>` (in-kernel intermediates)."""

    def name(key: Hashable) -> StringAttr:
        if key in refs:
            return StringAttr(refs[key])
        return StringAttr(local.setdefault(key, f"l{len(local)}"))

    def accesses(items: list[tuple[Hashable, int]]) -> ArrayAttr[Attribute]:
        return ArrayAttr([ArrayAttr([name(k), graph.int_attr(n)]) for k, n in items])

    def roles(keys: frozenset[Hashable]) -> ArrayAttr[Attribute]:
        # name the set's unnamed tensors in program order, not in the set's (hash) order
        for k in sorted(
            (k for k in keys if k not in refs and k not in local),
            key=lambda k: (_position(k), str(k)),
        ):
            name(k)
        return ArrayAttr([name(k) for k in sorted(keys, key=lambda k: name(k).data)])

    return ArrayAttr(
        [
            ArrayAttr(
                [
                    accesses(k.reads),
                    accesses(k.writes),
                    graph.int_attr(k.extra_read),
                    roles(k.hot),
                    roles(k.transient),
                    *([accesses(k.scratch), roles(k.first)] if k.scratch or k.first else []),
                ]
            )
            for k in kernels
        ]
    )


def entry_attribute(
    entry: KernelEntry,
    inputs: list[SSAValue] | None = None,
    outputs: list[SSAValue] | None = None,
) -> DictionaryAttr:
    """The entry as an attribute, so a launch keeps it after its group is gone: what its
    plan (the launch's `afc.plan`: template, time, UB footprint) does not hold. The
    traffic refers to tensors by their place among the launch's `inputs` and `outputs`
    (graph-level values, as the group saw them)."""
    refs: dict[Hashable, str] = {}
    for k, v in enumerate(inputs or []):
        refs.setdefault(tensor_key(v), f"i{k}")
    for k, v in enumerate(outputs or []):
        refs.setdefault(tensor_key(v), f"o{k}")
    local: dict[Hashable, str] = {}
    fused = [entry.traffic] if entry.traffic is not None else []
    return DictionaryAttr(
        {
            "ops": ArrayAttr([StringAttr(o) for o in entry.ops]),
            "gm_read_bytes": graph.int_attr(entry.gm_read_bytes),
            "gm_write_bytes": graph.int_attr(entry.gm_write_bytes),
            "unfused_gm_bytes": graph.int_attr(entry.unfused_gm_bytes),
            "unfused_time_us": graph.float_attr(entry.unfused_time_us),
            "unfused_kernels": graph.int_attr(entry.unfused_kernels),
            "traffic": _encode(fused, refs, local),
            "unfused_traffic": _encode(entry.unfused_traffic, refs, local),
        }
    )


def _decode(attr: Attribute, launch: buffer.LaunchOp, name: str) -> list[TrafficKernel]:
    def key(ref: str) -> Hashable:
        n = int(ref[1:])
        if ref[0] == "i":
            return tensor_key(launch.inputs[n])
        if ref[0] == "o":
            return launch.outputs[n]
        return (name, n)

    def accesses(a: Attribute) -> list[tuple[Hashable, int]]:
        out = []
        for item in cast(ArrayAttr[Attribute], a).data:
            ref, n = cast(ArrayAttr[Attribute], item).data
            out.append((key(cast(StringAttr, ref).data), cast(IntegerAttr, n).value.data))
        return out

    def roles(a: Attribute) -> frozenset[Hashable]:
        return frozenset(key(cast(StringAttr, r).data) for r in cast(ArrayAttr[Attribute], a).data)

    kernels = []
    for item in cast(ArrayAttr[Attribute], attr).data:
        reads, writes, extra, hot, transient, *more = cast(ArrayAttr[Attribute], item).data
        kernels.append(
            TrafficKernel(
                name,
                accesses(reads),
                accesses(writes),
                cast(IntegerAttr, extra).value.data,
                roles(hot),
                roles(transient),
                scratch=accesses(more[0]) if more else [],
                first=roles(more[1]) if more else frozenset(),
            )
        )
    return kernels


def _from_attribute(
    name: str, launch: buffer.LaunchOp, kernel: buffer.KernelOp | None
) -> KernelEntry:
    """The entry of `launch`: its plan (template, time, UB footprint) and what
    lower-to-buffer recorded of its group's ops; the inputs its `kernel` reads past L2
    (its `l2_bypass` attribute, what codegen emits) go to the traffic model."""
    d = cast(DictionaryAttr, launch.attributes[REPORT_ATTR]).data
    plan = cast(DictionaryAttr, launch.attributes[PLAN_ATTR]).data
    missing = [k for k in ("template", "footprint", "cost_us") if k not in plan]
    if missing:
        raise UserError(f"the launch of {name} has a plan without {', '.join(missing)}", launch)

    def integer(key: str) -> int:
        return cast(IntegerAttr, d[key]).value.data

    def real(key: str) -> float:
        return cast(FloatAttr, d[key]).value.data

    fused = _decode(d["traffic"], launch, name) if "traffic" in d else []
    if fused and kernel is not None and buffer.L2_BYPASS_ATTR in kernel.attributes:
        indices = cast(ArrayAttr[IntegerAttr], kernel.attributes[buffer.L2_BYPASS_ATTR])
        bypass = frozenset(tensor_key(launch.inputs[i.value.data]) for i in indices.data)
        k = fused[0]
        fused[0] = replace(k, hot=k.hot - bypass, transient=k.transient - bypass, bypass=bypass)
    return KernelEntry(
        name=name,
        kind="fused",
        template=cast(StringAttr, plan["template"]).data,
        ops=[cast(StringAttr, o).data for o in cast(ArrayAttr[Attribute], d["ops"]).data],
        gm_read_bytes=integer("gm_read_bytes"),
        gm_write_bytes=integer("gm_write_bytes"),
        ub_bytes=tiling_values(cast(DictionaryAttr, plan["footprint"])).get("ub", 0),
        time_us=cast(FloatAttr, plan["cost_us"]).value.data,
        unfused_gm_bytes=integer("unfused_gm_bytes"),
        unfused_time_us=real("unfused_time_us"),
        unfused_kernels=integer("unfused_kernels") if "unfused_kernels" in d else 1,
        traffic=fused[0] if fused else None,
        unfused_traffic=_decode(d["unfused_traffic"], launch, name)
        if "unfused_traffic" in d
        else [],
    )


# ---- the report -------------------------------------------------------------------------


def _library_entry(op: Operation, chip: ChipSpec, dynamic_size: int) -> KernelEntry:
    cost = op_cost(op, chip, dynamic_size)
    time = kernel_time(cost, chip).total_us
    gm = cost.gm_read_bytes + cost.gm_write_bytes
    traffic = _op_traffic(op, chip, dynamic_size)
    return KernelEntry(
        describe_op(op),
        "library",
        "library",
        [describe_op(op)],
        cost.gm_read_bytes,
        cost.gm_write_bytes,
        0,
        time,
        gm,
        time,
        traffic=traffic,
        unfused_traffic=[traffic],
    )


def build_report(module: ModuleOp, chip: ChipSpec, dynamic_size: int = 128) -> FusionReport:
    """The report of every public function of `module`."""
    report = FusionReport(chip.name, l2_bytes=chip.l2_bytes)
    bound_values: list[SSAValue] = []
    outputs: set[Hashable] = set()
    counter = 0
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, buffer.KernelOp)}
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        if f.sym_visibility is not None and f.sym_visibility.data == "private":
            continue
        block = f.body.block
        bound_values.extend(block.args)
        ret = block.last_op
        if isinstance(ret, func.ReturnOp):
            bound_values.extend(ret.operands)
            outputs.update(tensor_key(v) for v in ret.operands if isinstance(v.type, TensorType))
        for op in block.ops:
            if isinstance(op, graph.ConstantOp):
                if _is_weight(op):
                    bound_values.append(op.result)
            elif isinstance(op, graph.FusionGroupOp):
                report.kernels.append(group_entry(op, f"kernel{counter}", chip, dynamic_size))
                counter += 1
                # its edge views (fusion/edge_views.py) are views of its buffers, no kernel's
                report.view_ops += sum(EDGE_VIEW_ATTR in inner.attributes for inner in op.block.ops)
                for inner in op.block.ops:
                    if isinstance(inner, graph.ConstantOp) and _is_weight(inner):
                        bound_values.append(inner.result)
            elif isinstance(op, buffer.LaunchOp) and {REPORT_ATTR, PLAN_ATTR} <= set(op.attributes):
                name = op.kernel.string_value()
                report.kernels.append(_from_attribute(name, op, kernels.get(name)))
            elif is_view(op):
                report.view_ops += 1
            elif op.dialect_name() == "graph" and any(
                isinstance(r.type, TensorType) for r in op.results
            ):
                report.kernels.append(_library_entry(op, chip, dynamic_size))
    unique: list[SSAValue] = []
    for v in bound_values:
        if v not in unique and isinstance(v.type, TensorType):
            unique.append(v)
    report.lower_bound_bytes = lower_bound_bytes(unique, dynamic_size)
    _simulate(report, module, outputs, chip, dynamic_size)
    return report


def _simulate(
    report: FusionReport,
    module: ModuleOp,
    outputs: set[Hashable],
    chip: ChipSpec,
    dynamic_size: int,
) -> None:
    """Run the traffic model over the kernels (fused) and over their ops (unfused)."""
    sizes: dict[Hashable, int] = {}
    for op in module.walk():
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if isinstance(v.type, TensorType):
                sizes.setdefault(tensor_key(v), value_bytes(v, dynamic_size))
    fused = [k.traffic for k in report.kernels if k.traffic is not None]
    unfused = [t for k in report.kernels for t in k.unfused_traffic]
    for k in (*fused, *unfused):
        for key, n in (*k.reads, *k.writes):
            sizes[key] = max(sizes.get(key, 0), n)
    granule = granule_for(sizes.values())
    after = simulate_l2(fused, sizes, outputs, chip.l2_bytes, granule=granule)
    entries = [k for k in report.kernels if k.traffic is not None]
    for entry, r, w in zip(entries, after.read, after.write):
        entry.hbm_read_bytes, entry.hbm_write_bytes = r, w
    report.hbm_after = after.total
    report.hbm_final_writeback = after.final_writeback
    report.hbm_after_pessimistic = simulate_l2(
        fused, sizes, outputs, chip.l2_bytes, drop_dead=False, granule=granule
    ).total
    report.hbm_after_optimistic = simulate_l2(
        fused, sizes, outputs, chip.l2_bytes, scan_resistant=True, granule=granule
    ).total
    report.hbm_before = simulate_l2(unfused, sizes, outputs, chip.l2_bytes, granule=granule).total


def _is_weight(op: graph.ConstantOp) -> bool:
    """Whether a kernel must read the constant from GM: vector kernels take a splat as a
    scalar (Duplicate / the scalar forms Adds, Muls), cube ops read any weight from GM."""
    from autofusion.passes.matching import splat_value

    if splat_value(op.result) is None:
        return True
    return any(fusion_kind(use.operation) == FusionKind.CUBE for use in op.result.uses)
