"""The ffn template's plan: which groups it takes (one graph.ffn on a split chip) and its
static decisions: tiles, the row plans of the AIVs' activation, first and final passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_fused import FFN_GATED
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import FRACTAL, detached_value
from autofusion.lowering.cube_epilogue import max_epilogue_cols
from autofusion.lowering.ffn_tiles import (
    ACT_TILE,
    INIT_TILE,
    OUT_TILE,
    FfnTiles,
    choose_ffn_tiles,
    ffn_footprint,
)
from autofusion.lowering.norm_prologue import NormPrologue, plan_stats
from autofusion.lowering.recorded_tiling import fractal_refusal, overflow, take_row_tile, take_tiles
from autofusion.lowering.row_plan import RowPlan, plan_for_split
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts, NotApplicable, Plan
from autofusion.lowering.value_types import element_type, resolve_dynamic_dims, tensor_shape
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.matching import make_constant


@dataclass
class FfnPlan(Plan):
    template: ClassVar[str] = "ffn"
    parts: GroupParts
    root: graph.FfnOp
    tiles: FfnTiles
    gu_elt: Attribute  # the gate/up workspace's element type
    act_rows: RowPlan  # the AIVs' activation: gate/up -> g
    out_rows: RowPlan  # the AIVs' final pass: acc (+ b2) -> y
    init_rows: RowPlan | None  # the AIVs' first pass: residual -> acc (float32)
    gate_raw: SSAValue
    up_raw: SSAValue | None
    gate_mm: Operation  # the synthetic projections whose emitters apply b1 (and act)
    up_mm: Operation | None
    bias_ps: list[SSAValue]  # the activation plan's bias1 values (gate, up)
    g_ps: SSAValue
    acc_ps: SSAValue
    down_mm: Operation
    b2_ps: SSAValue | None
    y_ps: SSAValue
    res_ps: SSAValue | None  # the first pass's residual and float32 result
    init_ps: SSAValue | None
    # graph.ffn's norm_epsilon: the statistics pass over x and the activation's rstd
    prologue: NormPrologue | None = None
    rstd_ps: SSAValue | None = None

    @property
    def ffn(self) -> graph.FfnOp:
        return self.root

    @property
    def row_plans(self) -> list[RowPlan]:
        stats = self.prologue.rows if self.prologue is not None else None
        return [r for r in (self.act_rows, self.out_rows, self.init_rows, stats) if r is not None]

    @property
    def in_elt(self) -> Attribute:
        return element_type(self.root.input)

    @property
    def gated(self) -> bool:
        return self.root.gated

    @property
    def merged(self) -> bool:
        return self.gated and len(self.root.weight1) == 1

    @property
    def parts_count(self) -> int:
        return 2 if self.gated else 1

    def sizes(self, dims: Sequence[int] | None = None) -> tuple[int, int, int, int]:
        """(M, K1, F, N2), dynamic dims from `dims` in order (output dims, then K1)."""
        out = tensor_shape(self.root.output)
        k1 = tensor_shape(self.root.input)[-1]
        f = tensor_shape(self.root.weight2)[0]
        sized = resolve_dynamic_dims([*out, k1, f], dims)
        m = si.num_elements(sized[:-3]) or 1
        return m, sized[-2], sized[-1], sized[-3]


# the gate's activation op of each gated graph.ffn activation (FFN_GATED) but swiglu,
# which is one graph.swiglu of gate and up
GATE_ACTIVATIONS: dict[str, tuple[type[graph.GraphOp], dict[str, str]]] = {
    "geglu": (graph.GeluOp, {"approximate": "none"}),
    "geglu_tanh": (graph.GeluOp, {"approximate": "tanh"}),
    "reglu": (graph.ReluOp, {}),
}


def _activation_plan(
    root: graph.FfnOp, m: int, gu_elt: Attribute, ub: int, slots: int, rstd: SSAValue | None
) -> tuple[RowPlan, list[SSAValue], list[Operation], list[SSAValue], SSAValue] | Refusal:
    """The AIVs' activation as a row plan over [M x F]: synthetic projections (their
    emitters add b1 and, plain, apply the activation), with `rstd` each scaled per row
    (graph.rms_norm_apply, its scale a splat 1: a scalar), and graph.ffn's gating ops.
    Returns (plan, raw values, projections, bias values, g)."""
    t = element_type(root.input)
    k1 = tensor_shape(root.input)[-1]
    f = tensor_shape(root.weight2)[0]
    act = root.activation.data
    x_ps = detached_value(t, [m, k1], "x")
    w_ps = detached_value(t, [k1, f], "w1")
    raws: list[SSAValue] = []
    mms: list[Operation] = []
    biases: list[SSAValue] = []
    for what in ("gate", "up") if root.gated else ("h",):
        raw = detached_value(gu_elt, [m, f], what)
        operands = [x_ps, w_ps]
        if root.bias1:
            biases.append(detached_value(t, [f], f"b1_{what}"))
            operands.append(biases[-1])
        props = {} if root.gated else {"activation": act}
        mms.append(graph.MatmulOp.make(operands, props))
        raws.append(raw)
    ops: list[Operation] = list(mms)
    hs = [mm.results[0] for mm in mms]
    if rstd is not None:
        ones = make_constant(np.ones(f, np.float32), graph.tensor([f], t), "row_scale")
        applies = [graph.RmsNormApplyOp.make([h, rstd, ones.result], {"axis": 1}) for h in hs]
        ops += applies
        hs = [a.results[0] for a in applies]
    if act == "swiglu":
        ops.append(graph.SwigluOp.make(hs))
    elif act in FFN_GATED:
        gate_op, gate_props = GATE_ACTIVATIONS[act]
        a = gate_op.make([hs[0]], gate_props)
        ops += [a, graph.MulOp.make([a.results[0], hs[1]])]
    g = ops[-1].results[0]
    inputs = [*raws, *biases]
    if rstd is not None:
        inputs += [ones.result, rstd]
    plan = plan_for_split(GroupParts(ops, inputs, [g]), (m, f), 1, False, ub, slots)
    if isinstance(plan, Refusal):
        return plan
    plan.parts = GroupParts(ops, inputs, [g])
    return plan, raws, mms, biases, g


def _output_plan(
    root: graph.FfnOp, m: int, n2: int, ub: int, slots: int
) -> tuple[RowPlan, SSAValue, Operation, SSAValue | None, SSAValue] | Refusal:
    """The AIVs' final pass as a row plan over [M x N2]: y = round(acc + b2), the
    synthetic down projection's emitter adding b2. Returns (plan, acc, the down
    projection, b2, y)."""
    t = element_type(root.input)
    f = tensor_shape(root.weight2)[0]
    acc = detached_value(f32, [m, n2], "acc")
    operands = [detached_value(t, [m, f], "g"), detached_value(t, [f, n2], "w2")]
    b2 = detached_value(t, [n2], "b2") if root.bias2 is not None else None
    if b2 is not None:
        operands.append(b2)
    down = graph.MatmulOp.make(operands)
    y = down.results[0]
    inputs = [acc, *(v for v in (b2,) if v is not None)]
    plan = plan_for_split(GroupParts([down], inputs, [y]), (m, n2), 1, False, ub, slots)
    if isinstance(plan, Refusal):
        return plan
    plan.parts = GroupParts([down], inputs, [y])
    return plan, acc, down, b2, y


def _init_plan(
    root: graph.FfnOp, m: int, n2: int, ub: int, slots: int
) -> tuple[RowPlan, SSAValue, SSAValue] | Refusal:
    """The AIVs' first pass as a row plan over [M x N2]: acc = float32(residual).
    Returns (plan, residual, acc)."""
    res = detached_value(element_type(root.input), [m, n2], "residual")
    cast_op = graph.CastOp.make([res], result_types=[graph.tensor([m, n2], f32)])
    out = cast_op.results[0]
    plan = plan_for_split(GroupParts([cast_op], [res], [out]), (m, n2), 1, False, ub, slots)
    if isinstance(plan, Refusal):
        return plan
    plan.parts = GroupParts([cast_op], [res], [out])
    return plan, res, out


def _norm_prologue(root: graph.FfnOp, m: int, ub: int, slots: int) -> NormPrologue | Refusal:
    """The statistics pass of graph.ffn's norm_epsilon over the [M x K1] view of x (the
    matmul's norm prologue, lowering/norm_prologue.py). The activation scales the gate
    and up products before b1 and a plain activation would apply: it takes neither."""
    if root.bias1 or not root.gated:
        return Refusal("the ffn kernel's norm prologue takes a gated ffn without bias1")
    x = detached_value(element_type(root.input), [m, tensor_shape(root.input)[-1]], "x")
    eps = cast(FloatAttr, root.norm_epsilon)
    stats = graph.RmsNormStatsOp.make([x], {"axis": -1, "epsilon": eps})
    return plan_stats(stats, ub, slots)


def _recorded_ffn_tiles(
    tiling: Mapping[str, TilingValue],
    row_plans: Mapping[str, RowPlan],
    chip: ChipSpec,
    w: int,
    parts: int,
) -> FfnTiles | Refusal:
    """The ffn tiles and the vector passes' row tiles a recorded tiling gives, when they
    are fractals, the band holds a column tile, and they fit L0/L1 and UB."""
    t = take_tiles(FfnTiles, tiling, "ffn", list(row_plans))
    if isinstance(t, Refusal):
        return t
    why = fractal_refusal("ffn", tm=t.tm, tn=t.tn, tk=t.tk)
    if t.bf < t.tn:
        why = why or Refusal(f"the ffn tiling's band bf = {t.bf} is narrower than tn = {t.tn}")
    why = why or overflow(ffn_footprint(t, w, parts), chip)
    for key, rows in row_plans.items():
        why = why or take_row_tile(rows, tiling, key)
    return why or t


def plan_ffn(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> FfnPlan | Refusal:
    roots = [op for op in parts.ops if isinstance(op, graph.FfnOp)]
    if not roots:
        return NotApplicable("no graph.ffn in the group")
    root = roots[0]
    if len(parts.ops) > 1:
        others = next(op for op in parts.ops if op is not root)
        return Refusal(f"graph.ffn is a kernel of its own ({others.name} cannot join it)")
    if chip.mode != "split":
        return Refusal(
            f"the ffn kernel needs a split chip (SyncAll<false> and the L0C -> GM atomic add "
            f"of Atlas A2/A3); on {chip.name} graph.ffn stays a library op"
        )
    t = dtypes.type_name(element_type(root.input))
    if t not in ("f32", "f16", "bf16"):
        return Refusal(f"graph.ffn on {t}: the cube takes floats")
    if t == "bf16" and not chip.bf16:
        return Refusal(f"{chip.name} has no bf16 cube")
    k1, f = tensor_shape(root.input)[-1], tensor_shape(root.weight2)[0]
    n2 = tensor_shape(root.output)[-1]
    if DYN in (k1, f, n2):
        return Refusal("graph.ffn with a dynamic K1, F or N2 (the weights fix them)")
    lead = tensor_shape(root.output)[:-1]
    m = DYN if DYN in lead else (si.num_elements(lead) or 1)
    w = byte_width(element_type(root.input))
    plain = root.gated and not root.bias1
    gu_elt = element_type(root.input) if plain else f32
    # UB: half for the activation, a quarter for each of the first and the final pass
    # (the zeros a first pass without a residual writes come out of its quarter); queue
    # buffers per position likewise; a norm prologue takes half the activation's share
    quarter = chip.ub_bytes // 4
    slots = queue_slots(chip) // 4
    prologue: NormPrologue | None = None
    act_share = (2 * quarter, 2 * slots)
    if root.norm_epsilon is not None:  # the statistics take half the activation's share
        # (and one queue buffer per position: it streams x alone)
        planned_stats = _norm_prologue(root, m, quarter, 1)
        if isinstance(planned_stats, Refusal):
            return planned_stats
        prologue = planned_stats
        act_share = (quarter, 2 * slots - 1)
    rstd = prologue.rstd if prologue is not None else None
    act = _activation_plan(root, m, gu_elt, *act_share, rstd)
    if isinstance(act, Refusal):
        return Refusal(f"the activation does not fit UB: {act.reason}")
    out = _output_plan(root, m, n2, quarter, slots)
    if isinstance(out, Refusal):
        return Refusal(f"the output pass does not fit UB: {out.reason}")
    init: tuple[RowPlan, SSAValue, SSAValue] | None = None
    if root.residual is not None:
        planned = _init_plan(root, m, n2, quarter, slots)
        if isinstance(planned, Refusal):
            return Refusal(f"the residual pass does not fit UB: {planned.reason}")
        init = planned
    act_rows, raws, mms, biases, g = act
    if max_epilogue_cols(act_rows) < FRACTAL:
        return Refusal("the activation's buffers do not fit UB for even 16 columns")
    out_rows, acc, down, b2, y = out
    parts_count = 2 if root.gated else 1
    if tiling is None:
        tiles = choose_ffn_tiles(chip, w, parts_count)
    else:
        row_plans = {ACT_TILE: act_rows, OUT_TILE: out_rows}
        if init is not None:
            row_plans[INIT_TILE] = init[0]
        tiles = _recorded_ffn_tiles(tiling, row_plans, chip, w, parts_count)
    if isinstance(tiles, Refusal):
        return tiles
    if max_epilogue_cols(act_rows) < FRACTAL:  # a recorded activation tile
        return Refusal("the tiling's activation tile holds not even 16 columns")
    return FfnPlan(
        parts,
        root,
        tiles,
        gu_elt,
        act_rows,
        out_rows,
        init[0] if init is not None else None,
        raws[0],
        raws[1] if len(raws) > 1 else None,
        mms[0],
        mms[1] if len(mms) > 1 else None,
        biases,
        g,
        acc,
        down,
        b2,
        y,
        init[1] if init is not None else None,
        init[2] if init is not None else None,
        prologue,
        rstd,
    )
