"""The `ffn` template: a graph.ffn as one mix kernel on split chips (910B).

    y = [residual +] act(x @ W1 + b1) @ W2 + b2        x: [M, K1], W1: [K1, F], W2: [F, N2]

The intermediate F is cut into bands of bf columns. A work item is one (M tile of tm
rows, band); for each, on one block (an AIC and its two AIVs):

1. AIC: h = x_tile @ W1[:, band] (gate and up, sharing each staged x block), in
   sub-tiles of tn columns: GM -> L1 -> L0A/L0B -> Mmad into f32 L0C -> Fixpipe into
   the block's gate/up workspace slot (f16/bf16 when the graph rounds a plain
   product there, else f32), then cross-core flag READY;
2. AIVs (each every other chunk of rows x columns): g = act(gate [+ b1g]) [* (up [+ b1u])]
   in float32, rounded as graph.ffn rounds, into the block's g workspace slot; flag
   G_READY (which also frees the gate/up slot: the AIVs have read it);
3. AIC: y_acc[tile] += g @ W2[band, :], in N2 chunks of tn: g is loaded into L1 once
   and stays there (the A operand of every chunk), W2 streams through L1 in stages;
   each chunk's L0C tile is added to an f32 accumulator in GM by an atomic Fixpipe
   (`buffer.copy ... atomic`: SetAtomicAdd<float>, asc-devkit SetAtomicAdd.md; Atlas
   A2/A3 add from L0C).

The AIC runs step 1 of item s before step 3 of item s - 1, so the AIVs' activation of
s - 1 overlaps the AIC's gate/up of s (two slots per workspace; READY / G_READY order
every reuse). Every block contributes to many accumulator tiles and every tile gets a
contribution per band, so the accumulator needs all cores at its edges: the AIVs of
all blocks set it first to the residual in float32 (or zero it), `buffer.sync_all`
(SyncAll<false>, the hard all-core sync of Atlas A2/A3), the main loop,
`buffer.sync_all`, and the AIVs compute y = round(acc + b2) into the output (graph.ffn's
single rounding). SyncAll needs every block resident: blocks <= the chip's cube cores.

Items are numbered band-major (item = band * mt + M tile) and dealt round-robin
(block b takes b, b + blocks, ...): at any time the cores work on the M tiles of one or
two bands, so each band of W1 and W2 comes from HBM once and its other mt - 1 reads hit
L2, x (every band reads all of it) stays in L2, and so does the accumulator (touched by
every band). The gate/up and g never reach HBM: their slots are rewritten in place. The
residual is read first, before the weights stream through L2 (read last, as the
decomposed graph's add does, it would be pushed out of L2 by them and read back).

Tiling (static bounds `choose_ffn_tiles`, runtime values `ffn_tiling`):

    tm, tn, tk: multiples of 16 with  parts * tm * tn * 4 <= L0C (parts: 2 gated, 1 plain)
                2 * tm * tk * w <= L0A,  2 * tk * tn * w <= L0B
    bf (band):  2 * tm * kl1 * w + parts * 2 * kl1 * tn * w + tm * bf * w <= L1
    tm' = min(tm, round16(M)); mt = ceil(M / tm'); bf' = min(bf, round_up(F, tn));
    ft = ceil(F / bf'); items = mt * ft; blocks = min(items, cube cores)
    the activation chunks: ec = min(bf', EC) columns (EC: the epilogue's UB budget),
    er = min(tm', 16-multiple rows of the budget); the final pass: rows x cols tiles of
    its own budget over [M, N2], dealt round-robin over the blocks' AIVs
    workspaces: blocks * 2 * parts * tm * bf * w_gu (gate/up), blocks * 2 * tm * bf * w
    (g), M * N2 * 4 (the accumulator)

With graph.ffn's norm_epsilon (RmsNormFfnFusionPass) the AIVs first compute rstd of
every x row into a float32 workspace (lowering/norm_prologue.py's pass, before the
accumulator's first pass and its SyncAll), and step 2 scales gate and up by it.

Chips: split chips only (the ffn needs SyncAll<false> and the L0C -> GM atomic add);
elsewhere graph.ffn stays a library op (CANN's FFN is an Atlas A2/A3 op too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from xdsl.builder import Builder
from xdsl.ir import SSAValue

from autofusion.dialects.group_plan import TilingValue
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.ffn_cost import ffn_cost
from autofusion.lowering.ffn_emit import emit_ffn_kernel
from autofusion.lowering.ffn_host import ffn_launch, ffn_tiling, ffn_tiling_function
from autofusion.lowering.ffn_plan import FfnPlan, plan_ffn
from autofusion.lowering.ffn_tiles import ACT_TILE, INIT_TILE, OUT_TILE, ffn_footprint
from autofusion.lowering.index_expr import IntOps, IrOps
from autofusion.lowering.norm_prologue import RSTD_BYTES
from autofusion.lowering.template import GroupParts, HostLaunch, KernelCost, KernelTemplate, Lowered
from autofusion.passes.fusion_rule import Refusal


class FfnTemplate(KernelTemplate[FfnPlan]):
    """A graph.ffn as one mix kernel on split chips; the concerns live in ffn_plan,
    ffn_tiles, ffn_cost, ffn_emit and ffn_host."""

    name = "ffn"

    def plan(self, parts: GroupParts, chip: ChipSpec) -> FfnPlan | Refusal:
        return plan_ffn(parts, chip)

    def at_tiling(
        self, parts: GroupParts, tiling: Mapping[str, TilingValue], chip: ChipSpec
    ) -> FfnPlan | Refusal:
        return plan_ffn(parts, chip, tiling)

    def tiling(self, plan: FfnPlan) -> dict[str, TilingValue]:
        rows = {ACT_TILE: plan.act_rows, OUT_TILE: plan.out_rows, INIT_TILE: plan.init_rows}
        tiles = {k: r.max_tile_elems for k, r in rows.items() if r is not None}
        return {**asdict(plan.tiles), **tiles}

    def footprint(self, plan: FfnPlan, chip: ChipSpec) -> dict[str, int]:
        cube = ffn_footprint(plan.tiles, byte_width(plan.in_elt), plan.parts_count)
        return {**cube, "ub": self.cost(plan, chip).ub_bytes}

    def cost(self, plan: FfnPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
        return ffn_cost(plan, chip, dims)

    def read_first(self, plan: FfnPlan) -> list[SSAValue]:
        """The residual: the first pass reads it into the accumulator."""
        residual = plan.root.residual
        return [residual] if residual is not None else []

    def scratch(self, plan: FfnPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> int:
        """GM bytes of the kernel's own tensors that live through the whole kernel: the
        accumulator and the workspace slots (the traffic model's scratch)."""
        t = ffn_tiling(IntOps(), plan.sizes(dims), plan, chip).values
        return t["acc_bytes"] + t["gu_bytes"] + t["g_bytes"] + t.get(RSTD_BYTES, 0)

    def lower(self, plan: FfnPlan, name: str, chip: ChipSpec) -> Lowered:
        kernel, emitter = emit_ffn_kernel(plan, name, chip)
        tiling = ffn_tiling_function(plan, name, chip)
        return Lowered(kernel, tiling, emitter.kernel_inputs, emitter)

    def host(
        self,
        plan: FfnPlan,
        lowered: Lowered,
        b: Builder,
        idx: IrOps,
        outside: dict[SSAValue, SSAValue],
    ) -> HostLaunch:
        return ffn_launch(plan, b, idx, outside)
