"""The `matmul` template: a MatmulOp or GemmOp (with its bias, alpha/beta, activation)
plus an elementwise/broadcast epilogue, as one cube kernel.

Data path (ascend.md 2.10): GM -> L1 (A1/B1, ND2NZ on real hardware) -> L0A/L0B
(LoadData, with transpose for a transposed operand) -> Mmad into a float32 L0C tile
(f16/bf16 inputs accumulate in f32). Then:

* no epilogue on a split chip (910B): Fixpipe L0C -> GM, converting to the output type
  and applying ReLU on the fly when that is the only activation (core type `aic`);
* coupled chips (910, 310P: CO2 is UB, ascend.md 1.7): L0C -> UB in chunks of rows (whole
  Nz fractals, CO1 -> CO2; the epilogue's copy-in lays them out as rows), the vector
  epilogue, UB -> GM (core type `mix`);
* split chips with an epilogue: Fixpipe L0C -> a per-core GM workspace (f16/bf16 when
  the graph rounds the product there anyway, else f32), the AIV reads it back in chunks
  (AIC and AIV exchange data only through GM, ascend.md 1.1 and 4).

Tiling (static bounds from the chip, `choose_tiles`; runtime values from `matmul_tiling`,
the same code evaluated on ints and emitted as the host tiling function):

    baseM, baseN, baseK: multiples of 16 (one fractal) with
        2 * baseM * baseK * w <= L0A,  2 * baseK * baseN * w <= L0B   (double buffered)
        baseM * baseN * 4 * c_depth <= L0C                           (f32 accumulator)
        2 * (baseM + baseN) * stepK * baseK * w <= L1                (A1/B1 stages)
        16 * round_up(baseN, 32 B) float32 epilogue rows fit UB (the row plan's budget)
    tm  = min(baseM, round16(M));  mt = ceil(M / tm)
    tn  = min(baseN, round16(ceil(N / clamp(ceil(cores / (batch * mt)), 1, ceil(N / 16)))))
    nt  = ceil(N / tn);  tk = min(baseK, round16(K));  kl1 = min(stepK * baseK, round_up(K, tk))
    tiles = batch * mt * nt;  blocks = min(tiles, cores);  per_core = ceil(tiles / blocks)
    group_m = clamp(floor(L2 / 2 / (tm * K * w)), 1, mt)
    er  = min(tm, round_down16(T_epilogue / round_up(tn, align)))   epilogue rows per chunk
    workspace = blocks * 2 * tm * tn * w_ws bytes (two slots per core: the AIC fills one
                while the AIV drains the other)

Each core takes `per_core` consecutive output tiles; each tile loops over ceil(K / kl1)
L1 stages of ceil(kl1 / tk) L0 steps. A is read once per N tile, B once per M tile.

Tile order (`tile_coords`): per batch item, groups of group_m M tiles; within a group M is
fastest, then N (group_m = 1: N fastest; group_m = mt: M fastest). Consecutive tiles of a
group share one band of B (K x tn), so each band comes from HBM once per group and its
other group_m - 1 reads hit L2; the group's group_m A bands (tm x K each) are re-read for
every N tile, and group_m is the largest count whose bands fit half the chip's L2 (all of
A, and B streams from HBM once, whenever A fits). HBM reads are then about
|A| + |B| * ceil(mt / group_m) instead of the logical nt * |A| + mt * |B|.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from xdsl.builder import Builder
from xdsl.ir import SSAValue

from autofusion.diagnostics import UserError
from autofusion.dialects.group_plan import TilingValue
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_epilogue import epilogue_ub
from autofusion.lowering.index_expr import IrOps
from autofusion.lowering.matmul_cost import matmul_cost, matmul_read_once
from autofusion.lowering.matmul_emit import emit_matmul_kernel
from autofusion.lowering.matmul_host import matmul_launch, matmul_tiling_function
from autofusion.lowering.matmul_plan import MatmulPlan, plan_matmul
from autofusion.lowering.matmul_tiling import tiles_footprint
from autofusion.lowering.recorded_tiling import EPILOGUE_TILE
from autofusion.lowering.template import GroupParts, HostLaunch, KernelCost, KernelTemplate, Lowered
from autofusion.passes.fusion_rule import Refusal


class MatmulTemplate(KernelTemplate[MatmulPlan]):
    """A matmul and its elementwise epilogue as one cube kernel; the concerns live in
    matmul_plan, matmul_tiling, matmul_cost, matmul_emit and matmul_host."""

    name = "matmul"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> MatmulPlan | Refusal:
        plan = plan_matmul(parts, chip)
        if isinstance(plan, Refusal) or plan.prologue is None or plan.rope is None:
            return plan
        # a rope epilogue beside a norm prologue: the per-value UB budget does not count
        # the rope's working buffers next to the statistics' share, and no smaller tile
        # holds a whole head; build once, so ub-fusion never plans a kernel that
        # lower-to-buffer cannot build (the build shrinks the plan's tile as settle does)
        try:
            emit_matmul_kernel(plan, "fits", chip)
        except UserError as e:
            return Refusal(f"a rope epilogue beside a norm prologue: {e}")
        return plan

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> MatmulPlan | Refusal:
        return plan_matmul(parts, chip, tiling)

    def tiling(self, plan: MatmulPlan) -> dict[str, TilingValue]:
        rows = {EPILOGUE_TILE: plan.rows.max_tile_elems} if plan.rows is not None else {}
        return {**asdict(plan.tiles), **rows}

    def footprint(self, plan: MatmulPlan, chip: ChipSpec) -> dict[str, int]:
        cube = tiles_footprint(plan.tiles, byte_width(plan.in_elt))
        return {**cube, "ub": epilogue_ub(plan.rows)}

    def cost(
        self, plan: MatmulPlan, chip: ChipSpec, dims: Sequence[int] | None = None
    ) -> KernelCost:
        return matmul_cost(plan, chip, dims)

    def read_once(self, plan: MatmulPlan, chip: ChipSpec) -> list[SSAValue]:
        """B when M fits one tile, A when N does (each not broadcast over batch dims):
        the other operand's tiles then never re-read it (A is read once per N tile, B
        once per M tile); the epilogue's full inputs. Static shapes only."""
        return matmul_read_once(plan, chip)

    def lower(self, plan: MatmulPlan, name: str, chip: ChipSpec) -> Lowered:
        kernel, emitter = emit_matmul_kernel(plan, name, chip)
        tiling = matmul_tiling_function(plan, name, chip)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: MatmulPlan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        return matmul_launch(plan, b, idx, outside)
