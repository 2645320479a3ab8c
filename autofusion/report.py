"""The fusion report: every kernel with its ops, GM bytes, UB footprint and estimated
time, with totals before fusion (every op its own kernel), after fusion, and the lower
bound (every input, weight and output moved exactly once).

Works on graph-level IR after ub-fusion (kernels are graph.fusion_groups) and on
buffer-level IR after lower-to-buffer (kernels are buffer.launches, which carry what
lower-to-buffer recorded about their group). Graph ops outside kernels are library ops,
costed as one kernel each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

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
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.cost_model import kernel_time, lower_bound_bytes, op_cost
from autofusion.dialects import buffer, graph
from autofusion.dialects.graph_base import FusionKind, fusion_kind
from autofusion.hardware import ChipSpec
from autofusion.passes.fusion_statistics import describe_op

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

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "template": self.template,
            "ops": self.ops,
            "op_count": len(self.ops),
            "gm_read_bytes": self.gm_read_bytes,
            "gm_write_bytes": self.gm_write_bytes,
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

    def totals(self) -> dict[str, Any]:
        fused = [k for k in self.kernels if k.kind == "fused"]
        return {
            "kernels": len(self.kernels),
            "fused_kernels": len(fused),
            "library_ops": len(self.kernels) - len(fused),
            "ops": sum(len(k.ops) for k in self.kernels),
            "gm_bytes_before": sum(k.unfused_gm_bytes for k in self.kernels),
            "gm_bytes_after": sum(k.gm_read_bytes + k.gm_write_bytes for k in self.kernels),
            "gm_bytes_lower_bound": self.lower_bound_bytes,
            "time_us_before": round(sum(k.unfused_time_us for k in self.kernels), 3),
            "time_us_after": round(sum(k.time_us for k in self.kernels), 3),
            "kernels_before": sum(len(k.ops) for k in self.kernels),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "chip": self.chip,
            "totals": self.totals(),
            "kernels": [k.to_json() for k in self.kernels],
        }


def _unfused(ops: list[Operation], chip: ChipSpec, dynamic_size: int) -> tuple[int, float]:
    gm = 0
    time = 0.0
    for op in ops:
        cost = op_cost(op, chip, dynamic_size)
        gm += cost.gm_read_bytes + cost.gm_write_bytes
        time += kernel_time(cost, chip).total_us
    return gm, time


def group_entry(
    group: graph.FusionGroupOp, name: str, chip: ChipSpec, dynamic_size: int
) -> KernelEntry:
    """Cost a fusion group with the template that plans it."""
    from autofusion.passes.fusion_rule import Refusal
    from autofusion.passes.lower_to_buffer import choose_template, group_parts

    parts = group_parts(group)
    ops = parts.ops
    unfused_gm, unfused_time = _unfused(ops, chip, dynamic_size)
    chosen = choose_template(parts, chip)
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
        )
    template, plan = chosen
    cost = template.cost(plan, chip, [dynamic_size] * 16)
    return KernelEntry(
        name=name,
        kind="fused",
        template=template.name,
        ops=[describe_op(o) for o in ops],
        gm_read_bytes=cost.gm_read_bytes,
        gm_write_bytes=cost.gm_write_bytes,
        ub_bytes=cost.ub_bytes,
        time_us=kernel_time(cost, chip).total_us,
        unfused_gm_bytes=unfused_gm,
        unfused_time_us=unfused_time,
    )


def entry_attribute(entry: KernelEntry) -> DictionaryAttr:
    """The entry as an attribute, so a launch keeps it after its group is gone."""
    return DictionaryAttr(
        {
            "template": StringAttr(entry.template),
            "ops": ArrayAttr([StringAttr(o) for o in entry.ops]),
            "gm_read_bytes": graph.int_attr(entry.gm_read_bytes),
            "gm_write_bytes": graph.int_attr(entry.gm_write_bytes),
            "ub_bytes": graph.int_attr(entry.ub_bytes),
            "time_us": graph.float_attr(entry.time_us),
            "unfused_gm_bytes": graph.int_attr(entry.unfused_gm_bytes),
            "unfused_time_us": graph.float_attr(entry.unfused_time_us),
        }
    )


def _from_attribute(name: str, attr: Attribute) -> KernelEntry:
    d = cast(DictionaryAttr, attr).data

    def integer(key: str) -> int:
        return cast(IntegerAttr, d[key]).value.data

    def real(key: str) -> float:
        return cast(FloatAttr, d[key]).value.data

    return KernelEntry(
        name=name,
        kind="fused",
        template=cast(StringAttr, d["template"]).data,
        ops=[cast(StringAttr, o).data for o in cast(ArrayAttr[Attribute], d["ops"]).data],
        gm_read_bytes=integer("gm_read_bytes"),
        gm_write_bytes=integer("gm_write_bytes"),
        ub_bytes=integer("ub_bytes"),
        time_us=real("time_us"),
        unfused_gm_bytes=integer("unfused_gm_bytes"),
        unfused_time_us=real("unfused_time_us"),
    )


def build_report(module: ModuleOp, chip: ChipSpec, dynamic_size: int = 128) -> FusionReport:
    """The report of every public function of `module`."""
    report = FusionReport(chip.name)
    bound_values: list[SSAValue] = []
    counter = 0
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
        for op in block.ops:
            if isinstance(op, graph.ConstantOp):
                if _is_weight(op):
                    bound_values.append(op.result)
            elif isinstance(op, graph.FusionGroupOp):
                report.kernels.append(group_entry(op, f"kernel{counter}", chip, dynamic_size))
                counter += 1
                for inner in op.block.ops:
                    if isinstance(inner, graph.ConstantOp) and _is_weight(inner):
                        bound_values.append(inner.result)
            elif isinstance(op, buffer.LaunchOp) and REPORT_ATTR in op.attributes:
                report.kernels.append(
                    _from_attribute(op.kernel.string_value(), op.attributes[REPORT_ATTR])
                )
            elif op.dialect_name() == "graph" and any(
                isinstance(r.type, TensorType) for r in op.results
            ):
                cost = op_cost(op, chip, dynamic_size)
                time = kernel_time(cost, chip).total_us
                gm = cost.gm_read_bytes + cost.gm_write_bytes
                report.kernels.append(
                    KernelEntry(
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
                    )
                )
    unique: list[SSAValue] = []
    for v in bound_values:
        if v not in unique and isinstance(v.type, TensorType):
            unique.append(v)
    report.lower_bound_bytes = lower_bound_bytes(unique, dynamic_size)
    return report


def _is_weight(op: graph.ConstantOp) -> bool:
    """Whether a kernel must read the constant from GM: vector kernels take a splat as a
    scalar (Duplicate / the scalar forms Adds, Muls), cube ops read any weight from GM."""
    from autofusion.passes.matching import splat_value

    if splat_value(op.result) is None:
        return True
    return any(fusion_kind(use.operation) == FusionKind.CUBE for use in op.result.uses)
