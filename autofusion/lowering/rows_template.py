"""The `rows` template: vector kernels over a rows x columns view (row_plan.py plans,
row_kernel.py emits, row_tiling.py tiles)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from xdsl.builder import Builder
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.buffer_verifier import (
    DEFAULT_QUEUE_SLOTS,
    QUEUE_SLOTS_PER_POSITION,
    footprint,
)
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.op_facts import vector_weight
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec
from autofusion.lowering.fitted_tiling import fitted_tiling
from autofusion.lowering.index_expr import IntOps, IrOps
from autofusion.lowering.kernel_builder import KernelBuilder, tiling_function
from autofusion.lowering.recorded_tiling import take_row_tile
from autofusion.lowering.row_kernel import RowKernel
from autofusion.lowering.row_plan import RowPlan, plan_rows, shrink_tile, whole_row_elems
from autofusion.lowering.row_tiling import TileBudget, rows_tiling
from autofusion.lowering.row_vector_math import widened_integers
from autofusion.lowering.template import GroupParts, HostLaunch, KernelCost, KernelTemplate, Lowered
from autofusion.lowering.value_types import resolve_dynamic_dims
from autofusion.passes.fusion_rule import Refusal

# the tiling key of the rows kernel's tile (elements), next to its view's `split`
TILE = "tile_elems"


def queue_slots(chip: ChipSpec) -> int:
    return QUEUE_SLOTS_PER_POSITION.get(chip.arch, DEFAULT_QUEUE_SLOTS)


def tile_budget(p: RowPlan) -> TileBudget:
    """The bound the plan puts on its runtime tiles."""
    return TileBudget(p.max_tile_elems, p.align_elems, p.whole_rows, p.image_rows)


class RowsTemplate(KernelTemplate[RowPlan]):
    name = "rows"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> RowPlan | Refusal:
        plan = self._analyse(parts, chip, None)
        if isinstance(plan, Refusal) or whole_row_elems(plan) is None:
            return plan
        # tiles of whole static rows: the per-value budget does not count the ops'
        # working buffers, so build the kernel once to be sure one row fits, and plan
        # the tile it is built with (what settle would record)
        row_plan = plan

        def fit() -> dict[str, TilingValue] | None:
            try:
                _emit_fitting(row_plan, "plan", chip)
            except UserError:
                return None
            return self.tiling(row_plan)

        fitted = fitted_tiling(self.name, parts, chip, self.tiling(plan), fit)
        if fitted is None:
            return Refusal(
                f"a reduced row of {si.num_elements(plan.inner)} elements does not fit "
                f"the {chip.name} UB with the kernel's working buffers"
            )
        return take_row_tile(plan, fitted, TILE) or plan

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> RowPlan | Refusal:
        keys = {"split", TILE}
        if set(tiling) != keys or any(isinstance(v, bool) for v in tiling.values()):
            return Refusal(f"a rows tiling has integers {', '.join(sorted(keys))}")
        plan = self._analyse(parts, chip, int(tiling["split"]))
        if isinstance(plan, Refusal):
            return plan
        return take_row_tile(plan, tiling, TILE) or plan

    def _analyse(self, parts: GroupParts, chip: ChipSpec, split: int | None) -> RowPlan | Refusal:
        """The row plan of the group's body: its rows x columns view (`split`, else the
        first that fits) and the largest tile its buffers fit in UB."""
        if any(o in parts.inputs for o in parts.outputs):
            return Refusal("the group yields one of its inputs unchanged")
        plan = plan_rows(
            parts,
            chip.ub_bytes,
            queue_slots(chip),
            chip.data_copy_pad,
            split,
            widened_integers(chip.arch),
        )
        if isinstance(plan, RowPlan):
            plan.parts = parts
        return plan

    def tiling(self, plan: RowPlan) -> dict[str, TilingValue]:
        return {"split": plan.split, TILE: plan.max_tile_elems}

    def footprint(self, plan: RowPlan, chip: ChipSpec) -> dict[str, int]:
        return {"ub": plan.ub_bytes}

    def read_once(self, plan: RowPlan, chip: ChipSpec) -> list[SSAValue]:
        """Inputs whose rows are the output's, streamed once tile by tile."""
        from autofusion.lowering.l2_hint import full_row_inputs

        return full_row_inputs(plan)

    # ---- cost ---------------------------------------------------------------------

    def cost(self, plan: RowPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        p = plan
        anchor = resolve_dynamic_dims(p.anchor, dims)
        rows = si.num_elements(anchor[: p.split]) or 0
        cols = si.num_elements(anchor[p.split :]) or 0
        t = rows_tiling(IntOps(), rows, cols, tile_budget(p), chip.vector_cores)
        row_tiles = -(-rows // t.tile_rows) if rows else 0
        read = write = unique = 0
        for v, info in p.values.items():
            width = dtypes.byte_width(cast(TensorType, v.type).element_type)
            if info.is_input and info.constant is None:
                own = (
                    si.num_elements(
                        resolve_dynamic_dims(cast(TensorType, v.type).get_shape(), dims)
                    )
                    or 0
                )
                # re-reads (a row vector per tile, mapped rows, residents per core) hit
                # L2 while the input fits in half of it
                before = read
                if info.narrow and info.kind != "full":
                    read += rows * info.narrow * width  # a table row copy per view row
                elif info.kind == "rowvec":
                    read += row_tiles * cols * width  # each row tile reads its columns again
                elif info.kind == "mapped_rows":
                    read += rows * cols * width  # one row copy per view row
                elif info.kind in ("mapped_column", "scalar"):
                    read += t.blocks * own * width  # resident on every core
                else:
                    read += own * width
                fits = own * width <= chip.l2_bytes // 2
                unique += own * width if fits else read - before
            if info.is_output:
                write += rows * (cols if info.kind == "full" else 1) * width
        work = 0.0
        for op in p.ops:
            weight = vector_weight(op)  # the op states it (op_facts.OpFacts)
            result_shape = resolve_dynamic_dims(
                cast(TensorType, op.results[0].type).get_shape(), dims
            )
            work += weight * (si.num_elements(result_shape) or 0)
        # widening and narrowing casts at the kernel's edges, and the Gathers that
        # transpose channel-major values (row_transpose.py)
        for v in (*p.inputs, *p.outputs):
            if dtypes.type_name(cast(TensorType, v.type).element_type) != "f32":
                work += rows * (p.values[v].narrow or cols)
        work += len(p.channel_major) * rows * cols
        main_width = max(
            (dtypes.byte_width(cast(TensorType, v.type).element_type) for v in p.inputs), default=4
        )
        transfer = t.tile_rows * min(t.tile_cols, cols or 1) * main_width
        ub = p.ub_bytes
        return KernelCost(
            gm_read_bytes=read,
            gm_write_bytes=write,
            vector_work=work,
            cube_flops=0.0,
            transfer_bytes=max(transfer, 1),
            ub_bytes=min(ub, chip.ub_bytes),
            vector_cores_used=t.blocks,
            hbm_read_bytes=min(read, unique),
        )

    # ---- lowering -----------------------------------------------------------------

    def lower(self, plan: RowPlan, name: str, chip: ChipSpec) -> Lowered:
        p = plan
        kernel, emitter = _emit_fitting(p, name, chip)

        # the tiling function: (rows, cols) -> tiling scalars..., blocks
        def body(kb: KernelBuilder) -> list[SSAValue]:
            rows, cols = kb.entry.args
            tiling = rows_tiling(kb.idx, rows, cols, tile_budget(p), chip.vector_cores)
            return [*tiling.params(), tiling.blocks]

        tiling_func = tiling_function(name, ["rows", "cols"], body)
        return Lowered(kernel, tiling_func, list(emitter.kernel_inputs), emitter)

    def host(
        self,
        plan: RowPlan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        p = plan
        # the kernel's operands broadcast to the anchor; a view's source is not one, but
        # a view's leading dynamic dims are its source's (row_views.Strided.reshaped)
        pairs = [(outside[v], v) for v in outside if v in p.values]
        pairs += [(outside[w.source], v) for v, w in p.views.items() if w.source in outside]
        rank = len(p.anchor)
        dims = [_runtime_dim(b, pairs, rank, d, s) for d, s in enumerate(p.anchor)]
        dim_values = [idx.const(d) if isinstance(d, int) else d for d in dims]
        rows = idx.product(dim_values[: p.split])
        cols = idx.product(dim_values[p.split :])
        emitter = cast(RowKernel, lowered.state)
        extra = list(dim_values[: p.split]) if emitter.needs_outer_dims() else []
        out_dims: list[SSAValue] = []
        for v in p.outputs:
            shape = cast(TensorType, v.type).get_shape()
            # a reduction without keepdims has the outer dims only (left-aligned)
            shift = 0 if len(shape) == p.split < rank else rank - len(shape)
            out_dims += [dim_values[pos + shift] for pos, d in enumerate(shape) if d == DYN]
        return HostLaunch([rows, cols], extra, out_dims)


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


def _emit_fitting(plan: RowPlan, name: str, chip: ChipSpec) -> tuple[buffer.KernelOp, RowKernel]:
    """Emit the kernel; if its buffers exceed UB, shrink the tile to fit and emit again."""
    for _ in range(4):
        emitter = RowKernel(plan, name, chip.name, chip.vector_cores)
        kernel = emitter.build()
        needed = footprint(kernel).get("ub", 0)
        if needed <= chip.ub_bytes:
            kernel.attributes["afc.ub_bytes"] = graph.int_attr(needed)
            return kernel, emitter
        if not shrink_tile(plan, chip.ub_bytes, needed):
            break
    row = whole_row_elems(plan)
    if row is not None and plan.max_tile_elems < row:
        raise UserError(
            f"fusion group {name} does not fit the {chip.name} UB with one whole row of "
            f"{si.num_elements(plan.inner)} elements, which its reduction needs"
        )
    raise UserError(f"fusion group {name} does not fit the {chip.name} UB with any tile")
