"""`lower-to-buffer`: every graph.fusion_group becomes one buffer.kernel and a launch.

    afc-opt model.mlir -p 'ub-fusion{chip=Ascend910B1},lower-to-buffer{chip=Ascend910B1}'

The group's template (autofusion/lowering/) plans its buffers and emits the kernel; at
the group's place the host code reads the runtime dims, calls the kernel's tiling
function (`@<kernel>_tiling`, the C++ TilingFunc in Ascend C terms) and launches the
kernel on the group's tensors. Ops outside fusion groups stay graph ops (library ops).
A group no template can lower is an error naming the op that stops it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects.buffer_verifier import (
    DEFAULT_QUEUE_SLOTS,
    QUEUE_SLOTS_PER_POSITION,
    footprint,
)
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import DEFAULT_CHIP, ChipSpec, get_chip
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.kernel_builder import KernelBuilder
from autofusion.lowering.row_kernel import RowKernel
from autofusion.lowering.row_plan import RowPlan, plan_rows
from autofusion.lowering.row_tiling import rows_tiling
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.fusion_statistics import describe_op


def group_parts(
    group: graph.FusionGroupOp,
) -> tuple[list[Operation], list[SSAValue], list[SSAValue]]:
    """(ops to compute, inputs: block arguments and in-group constants, outputs)."""
    ops: list[Operation] = []
    inputs: list[SSAValue] = list(group.block.args)
    for op in group.block.ops:
        if isinstance(op, graph.YieldOp):
            continue
        if isinstance(op, graph.ConstantOp):
            inputs.append(op.result)
        else:
            ops.append(op)
    outputs = list(group.yield_op.values)
    return ops, inputs, outputs


def plan_group(group: graph.FusionGroupOp, chip: ChipSpec) -> RowPlan | Refusal:
    ops, inputs, outputs = group_parts(group)
    if any(o in inputs for o in outputs):
        return Refusal("the group yields one of its inputs unchanged")
    slots = QUEUE_SLOTS_PER_POSITION.get(chip.arch, DEFAULT_QUEUE_SLOTS)
    return plan_rows(ops, inputs, outputs, chip.ub_bytes, slots)


def _runtime_dim(
    b: Builder, values: Sequence[tuple[SSAValue, SSAValue]], rank: int, d: int, static: int
) -> SSAValue | int:
    """Size of view dim d: static, else read from an input that has it unbroadcast."""
    if static != DYN:
        return static
    for outer, inner in values:
        shape = cast(TensorType, inner.type).get_shape()
        pos = d - (rank - len(shape))
        if pos >= 0 and shape[pos] == DYN:
            return b.insert(buffer.DimOp(outer, pos)).results[0]
    raise UserError(f"cannot find the runtime size of dimension {d} among the kernel inputs")


@dataclass(frozen=True)
class LowerToBufferPass(ModulePass):
    """Fusion groups to buffer kernels with host tiling and launches."""

    name = "lower-to-buffer"

    chip: str = DEFAULT_CHIP
    """The SoC the kernels are for (CANN name, e.g. Ascend910B1)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        chip = get_chip(self.chip)
        counter = 0
        for f in [o for o in op.ops if isinstance(o, func.FuncOp)]:
            for group in [g for g in f.walk() if isinstance(g, graph.FusionGroupOp)]:
                name = f"{f.sym_name.data}_kernel{counter}"
                counter += 1
                kernel, tiling_func = self.lower_group(group, name, chip)
                op.body.block.add_op(kernel)
                op.body.block.add_op(tiling_func)

    def lower_group(
        self, group: graph.FusionGroupOp, name: str, chip: ChipSpec
    ) -> tuple[buffer.KernelOp, func.FuncOp]:
        plan = plan_group(group, chip)
        if isinstance(plan, Refusal):
            raise UserError(
                f"cannot lower fusion group {name} ({describe_op(group)}): {plan.reason}"
            )
        kernel, emitter = _emit_fitting(plan, name, chip)
        return kernel, self._host(group, plan, emitter, name, chip)

    def _host(
        self,
        group: graph.FusionGroupOp,
        plan: RowPlan,
        emitter: RowKernel,
        name: str,
        chip: ChipSpec,
    ) -> func.FuncOp:
        """The tiling function, and at the group's place: dims, tiling call, launch."""
        # the tiling function: (rows, cols) -> tiling scalars..., blocks
        entry = Block(arg_types=[IndexType(), IndexType()])
        entry.args[0].name_hint, entry.args[1].name_hint = "rows", "cols"
        kb = KernelBuilder(entry)
        tiling = rows_tiling(
            kb.idx,
            entry.args[0],
            entry.args[1],
            plan.max_tile_elems,
            plan.align_elems,
            chip.vector_cores,
            plan.has_reduction,
        )
        results = [*tiling.params(), tiling.blocks]
        kb.insert(func.ReturnOp(*results))
        kb.finish()
        tiling_func = func.FuncOp(
            f"{name}_tiling", ([IndexType()] * 2, [IndexType()] * len(results)), Region(entry)
        )
        tiling_func.sym_visibility = StringAttr("private")

        # at the group: runtime dims, tiling, launch
        b = Builder(InsertPoint.before(group))
        idx = IrOps(b)
        outer_of = dict(zip(group.block.args, group.inputs))
        launch_inputs: list[SSAValue] = []
        for v in emitter.kernel_inputs:
            if v in outer_of:
                launch_inputs.append(outer_of[v])
            else:  # an in-group constant: materialize it outside for the launch
                const = cast(graph.ConstantOp, v.owner).clone()
                b.insert(const)
                launch_inputs.append(const.result)
        pairs = [(outer_of[v], v) for v in group.block.args]
        rank = len(plan.anchor)
        dims = [_runtime_dim(b, pairs, rank, d, s) for d, s in enumerate(plan.anchor)]
        dim_values = [idx.const(d) if isinstance(d, int) else d for d in dims]
        rows = idx.product(dim_values[: plan.split])
        cols = idx.product(dim_values[plan.split :])
        call = b.insert(
            func.CallOp(tiling_func.sym_name.data, [rows, cols], [IndexType()] * len(results))
        )
        params = list(call.results[:-1])
        blocks = call.results[-1]
        if emitter.needs_outer_dims():
            params += dim_values[: plan.split]
        out_dims: list[SSAValue] = []
        for v in plan.outputs:
            shape = cast(TensorType, v.type).get_shape()
            # a reduction without keepdims has the outer dims only (left-aligned)
            shift = 0 if len(shape) == plan.split < rank else rank - len(shape)
            for pos, d in enumerate(shape):
                if d == DYN:
                    out_dims.append(dim_values[pos + shift])
        launch = buffer.LaunchOp(
            name, blocks, launch_inputs, params, out_dims, [r.type for r in group.outputs]
        )
        launch.location = group.location
        b.insert(launch)
        for old, new in zip(group.outputs, launch.outputs):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(group)
        return tiling_func


def _emit_fitting(plan: RowPlan, name: str, chip: ChipSpec) -> tuple[buffer.KernelOp, RowKernel]:
    """Emit the kernel; if its buffers exceed UB, shrink the tile to fit and emit again."""
    for _ in range(4):
        emitter = RowKernel(plan, name, chip.name, chip.vector_cores)
        kernel = emitter.build()
        needed = footprint(kernel).get("ub", 0)
        if needed <= chip.ub_bytes:
            kernel.attributes["afc.ub_bytes"] = graph.int_attr(needed)
            return kernel, emitter
        # every buffer scales with the tile except small fixed ones: scale and round down
        scaled = plan.max_tile_elems * chip.ub_bytes // needed
        plan.max_tile_elems = max(0, scaled // 64 * 64 - 64)
        if plan.max_tile_elems < plan.align_elems:
            break
    raise UserError(f"fusion group {name} does not fit the {chip.name} UB with any tile")


__all__ = ["LowerToBufferPass", "group_parts", "plan_group"]
