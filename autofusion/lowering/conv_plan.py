"""The conv template's plan: which groups it takes (a Conv2dOp root and an elementwise
epilogue, the chip's dtypes and row alignments), and its static decisions for one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, cast

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.conv_tiling import (
    ConvGeometry,
    ConvTiles,
    StageRules,
    choose_conv_tiles,
    conv_footprint,
    im2col_cols,
)
from autofusion.lowering.cube_common import cube_dtype_refusal, detached_value
from autofusion.lowering.cube_epilogue import (
    CubeEpilogue,
    EpilogueRoom,
    activation_of,
    max_epilogue_cols,
    plan_epilogue,
    split_cube_group,
)
from autofusion.lowering.recorded_tiling import (
    EPILOGUE_TILE,
    fractal_refusal,
    overflow,
    take_row_tile,
    take_tiles,
)
from autofusion.lowering.row_plan import RowPlan
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts, Plan
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal


@dataclass
class ConvPlan(Plan):
    template: ClassVar[str] = "conv"
    parts: GroupParts
    root: Operation
    epilogue: list[Operation]
    geometry: ConvGeometry
    bias: SSAValue | None
    bias_rows: SSAValue | None  # the bias as a [Cout, 1, 1] value of the epilogue view
    tiles: ConvTiles
    direct: bool
    l0c_to_ub: bool
    ws_elt: Attribute | None
    rows: RowPlan | None
    raw: SSAValue | None

    @property
    def ops(self) -> list[Operation]:
        """The group's ops (root and epilogue), in program order."""
        return self.parts.ops

    @property
    def x(self) -> SSAValue:
        return self.root.operands[0]

    @property
    def weight(self) -> SSAValue:
        return self.root.operands[1]

    @property
    def in_elt(self) -> Attribute:
        return element_type(self.x)

    @property
    def explicit(self) -> bool:
        """X_col is built by the AIVs in a GM workspace (module docstring)."""
        return self.tiles.explicit

    @property
    def local(self) -> bool:
        """X_col is built in UB and copied into L1 on the same core (coupled chips)."""
        return self.tiles.local


def conv_geometry(op: graph.Conv2dOp) -> ConvGeometry | Refusal:
    p = graph.Props(op.properties, op.name)
    xs, ws, ys = tensor_shape(op.input), tensor_shape(op.weight), tensor_shape(op.output)
    if DYN in (*xs[1:], *ws, *ys[1:]):
        return Refusal("a conv with dynamic channels or spatial dims (only the batch may be)")
    sh, sw = p.integers("strides")
    pt, pl, pb, pr = p.integers("pads")
    dh, dw = p.integers("dilations")
    return ConvGeometry(
        xs[1],
        xs[2],
        xs[3],
        ws[0],
        ws[1],
        ws[2],
        ws[3],
        p.integer("group"),
        (sh, sw),
        (pt, pl, pb, pr),
        (dh, dw),
        ys[2],
        ys[3],
    )


def plan_conv(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> ConvPlan | Refusal:
    found = split_cube_group(parts, graph.Conv2dOp, "conv")
    if isinstance(found, Refusal):
        return found
    root, epilogue = found
    op = cast(graph.Conv2dOp, root)
    why = cube_dtype_refusal(root, chip)
    if why is not None:
        return why
    geometry = conv_geometry(op)
    if isinstance(geometry, Refusal):
        return geometry
    g = geometry
    w = byte_width(element_type(op.input))
    bias = op.bias
    act = activation_of(root)
    direct = (
        not chip.l0c_to_ub
        and not epilogue
        and parts.outputs == [root.results[0]]
        and bias is None
        and act[0] in (None, "relu")
    )
    explicit = not chip.l0c_to_ub and not g.pointwise
    local = chip.l0c_to_ub and not g.pointwise
    ub_epilogue, slots = chip.ub_bytes, None
    col_cap: int | None = None
    if explicit:
        fits = im2col_cols(g, chip, w)
        if isinstance(fits, Refusal):
            return fits
        col_cap = fits
        ub_epilogue -= g.im2col_ub(col_cap, w)
        slots = queue_slots(chip) - 2  # the im2col's VECIN and VECOUT queues
    elif local:  # the im2col takes at most half the UB (its X_col blocks adapt)
        unit = min(g.cg, 32 // math.gcd(g.taps * w, 32))
        fits = im2col_cols(g, chip, w, lambda tn: g.local_ub(tn, unit, w))
        if isinstance(fits, Refusal):
            return fits
        col_cap = fits
        ub_epilogue -= chip.ub_bytes // 2
    rows: RowPlan | None = None
    raw = bias_rows = None
    ws_elt: Attribute | None = None
    max_cols = col_cap
    out_elt = element_type(root.results[0])
    if not direct:
        plain = bias is None and act[0] is None
        ws_elt = out_elt if (plain and not chip.l0c_to_ub) else f32
        raw = detached_value(ws_elt, tensor_shape(root.results[0]), "raw")
        extra: list[SSAValue] = []
        if bias is not None:
            bias_rows = detached_value(element_type(bias), (g.co, 1, 1), "bias")
            extra.append(bias_rows)
        room = EpilogueRoom(ub_epilogue, slots, resident=extra)
        planned = plan_epilogue(CubeEpilogue(root, raw, extra, epilogue, parts, 2), room, chip)
        if isinstance(planned, Refusal):
            return planned
        rows = planned
        max_cols = max_epilogue_cols(rows)
        if col_cap is not None:
            max_cols = min(max_cols, col_cap)
    whole_k = not chip.data_copy_pad
    if whole_k and ((g.k * w) % 32 or (g.w * w) % 32):
        return Refusal(
            "the conv's weight rows (Cin/group*kh*kw) or input rows (W) are not 32-byte "
            "multiples and the chip has no DataCopyPad"
        )
    if tiling is None:
        tiles = choose_conv_tiles(g, chip, w, max_cols, StageRules(whole_k, explicit, local))
    else:
        tiles = _recorded_conv_tiles(tiling, g, rows, max_cols, chip, w)
    if isinstance(tiles, Refusal):
        return tiles
    return ConvPlan(
        parts,
        root,
        epilogue,
        g,
        bias,
        bias_rows,
        tiles,
        direct,
        chip.l0c_to_ub,
        ws_elt,
        rows,
        raw,
    )


def _recorded_conv_tiles(
    tiling: Mapping[str, TilingValue],
    g: ConvGeometry,
    rows: RowPlan | None,
    max_cols: int | None,
    chip: ChipSpec,
    w: int,
) -> ConvTiles | Refusal:
    """The conv tiles a recorded tiling gives, when they fit the chip and keep the
    im2col mode and stage rows the analysis derives (`choose_conv_tiles`' rules)."""
    t = take_tiles(ConvTiles, tiling, "conv", [EPILOGUE_TILE] if rows is not None else [])
    if isinstance(t, Refusal):
        return t
    explicit = not chip.l0c_to_ub and not g.pointwise
    local = chip.l0c_to_ub and not g.pointwise
    why = fractal_refusal("conv", tm=t.tm, tn=t.tn, tk=t.tk)
    if (t.explicit, t.local) != (explicit, local):
        why = why or Refusal(
            f"the conv tiling's explicit/local must be {str(explicit).lower()}/{str(local).lower()} (the chip and the "
            "conv's geometry decide where X_col is built)"
        )
    if t.h_stage != g.stage_rows(t.tn):
        why = why or Refusal(
            f"the conv tiling's h_stage must be {g.stage_rows(t.tn)} for tn = {t.tn}"
        )
    if t.cstep > g.cg:
        why = why or Refusal(f"the conv tiling's cstep exceeds the {g.cg} channels per group")
    unit = 32 // math.gcd(g.taps * w, 32)
    if not chip.data_copy_pad and t.cstep < g.cg and t.cstep % unit:
        why = why or Refusal(
            f"the conv tiling's cstep must be all {g.cg} channels or a multiple of {unit} "
            "(whole 32-byte weight rows: the chip has no DataCopyPad)"
        )
    if local and g.local_ub(t.tn, t.cstep, w) > chip.ub_bytes // 2:
        why = why or Refusal("the conv tiling's X_col block exceeds half the UB")
    why = why or overflow(conv_footprint(g, t, w), chip)
    if rows is not None:
        why = why or take_row_tile(rows, tiling, EPILOGUE_TILE)
        max_cols = (
            max_epilogue_cols(rows) if max_cols is None else min(max_cols, max_epilogue_cols(rows))
        )
    if why is None and max_cols is not None and t.tn > max_cols:
        why = Refusal(f"the conv tiling's tn = {t.tn} exceeds the {max_cols} columns UB holds")
    return why or t
