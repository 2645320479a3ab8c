"""The matmul template's plan: which groups it takes (a matmul root, its operands'
batch broadcast and alignment, an elementwise epilogue) and its static decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import cube_dtype_refusal, detached_value
from autofusion.lowering.cube_epilogue import (
    CubeEpilogue,
    EpilogueRoom,
    activation_of,
    fit_chunk_rows,
    max_epilogue_cols,
    plan_epilogue,
    split_cube_group,
)
from autofusion.lowering.matmul_tiling import CubeTiles, choose_tiles, tiles_footprint
from autofusion.lowering.norm_prologue import NormPrologue, epilogue_room, split_norm_prologue
from autofusion.lowering.recorded_tiling import (
    EPILOGUE_TILE,
    fractal_refusal,
    overflow,
    take_row_tile,
    take_tiles,
)
from autofusion.lowering.rope_epilogue import RopeEpilogue, group_rope
from autofusion.lowering.rope_epilogue_emit import head_step, plan_rope_epilogue
from autofusion.lowering.row_plan import RowPlan
from autofusion.lowering.template import GroupParts, Plan
from autofusion.lowering.value_types import element_type, tensor_shape
from autofusion.passes.fusion_rule import Refusal


@dataclass
class MatmulPlan(Plan):
    template: ClassVar[str] = "matmul"
    parts: GroupParts
    root: Operation
    epilogue: list[Operation]
    a: SSAValue
    b: SSAValue
    bias: SSAValue | None
    alpha: float
    beta: float
    trans_a: bool
    trans_b: bool
    batch_shape: tuple[int, ...]  # output batch dims
    a_outer: tuple[int, ...]  # A's batch dims padded to batch_shape's rank (1: broadcast)
    b_outer: tuple[int, ...]
    tiles: CubeTiles
    direct: bool  # no vector side: Fixpipe L0C -> GM
    l0c_to_ub: bool
    ws_elt: Attribute | None  # workspace element type (split chips with an epilogue)
    rows: RowPlan | None
    raw: SSAValue | None
    rope: RopeEpilogue | None = None  # a rope epilogue (rope_epilogue.py)
    prologue: NormPrologue | None = None  # the A rows' norm statistics (norm_prologue.py)

    @property
    def ops(self) -> list[Operation]:
        """The group's ops (root and epilogue), in program order."""
        return self.parts.ops

    @property
    def in_elt(self) -> Attribute:
        return element_type(self.a)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tensor_shape(self.root.results[0])

    def mnk(self) -> tuple[int, int, int]:
        a, b = tensor_shape(self.a), tensor_shape(self.b)
        m = a[-1] if self.trans_a else a[-2]
        k = a[-2] if self.trans_a else a[-1]
        n = b[-2] if self.trans_b else b[-1]
        return m, n, k


def _batch_pattern(operand: tuple[int, ...], batch: tuple[int, ...]) -> tuple[int, ...] | None:
    """An operand's batch dims padded to the output's, 1 where it broadcasts."""
    own = (1,) * (len(batch) - len(operand)) + operand
    out = []
    for o, b in zip(own, batch):
        if o in (b, DYN):
            out.append(b if b != 1 else 1)
        elif o == 1:
            out.append(1)
        else:
            return None
    return tuple(out)


def recorded_cube_tiles(
    tiling: Mapping[str, TilingValue],
    rows: RowPlan | None,
    w: int,
    chip: ChipSpec,
    col_step: int,
) -> CubeTiles | Refusal:
    """The cube tiles (and the epilogue's row tile and chunk rows) a recorded tiling
    gives, when they are fractals that fit L0A/L0B/L0C/L1 and the epilogue's UB columns
    (an N tile a multiple of `col_step`)."""
    tiles = take_tiles(CubeTiles, tiling, "matmul", [EPILOGUE_TILE] if rows is not None else [])
    if isinstance(tiles, Refusal):
        return tiles
    why = fractal_refusal("matmul", tm=tiles.tm, tn=tiles.tn, tk=tiles.tk)
    why = why or overflow(tiles_footprint(tiles, w), chip)
    if rows is not None:
        why = why or take_row_tile(rows, tiling, EPILOGUE_TILE)
        fit_chunk_rows(rows, col_step, not chip.l0c_to_ub)
        if why is None and tiles.tn > max_epilogue_cols(rows):
            why = Refusal(
                f"the tiling's tn = {tiles.tn} exceeds the {max_epilogue_cols(rows)} columns "
                "of the epilogue's UB tile"
            )
    return why or tiles


def plan_matmul(
    parts: GroupParts, chip: ChipSpec, tiling: Mapping[str, TilingValue] | None = None
) -> MatmulPlan | Refusal:
    group = parts
    split = split_norm_prologue(parts, chip)
    if isinstance(split, Refusal):
        return split
    parts, prologue = split
    found = split_cube_group(parts, (graph.MatmulOp, graph.GemmOp), "matmul")
    if isinstance(found, Refusal):
        return found
    root, epilogue = found
    rope = group_rope(root, epilogue, parts.outputs)
    why = cube_dtype_refusal(root, chip)
    if why is not None:
        return why
    p = graph.Props(root.properties, root.name)
    a, b = root.operands[0], root.operands[1]
    bias = root.operands[2] if len(root.operands) == 3 else None
    if isinstance(root, graph.GemmOp):
        trans_a, trans_b = p.flag("trans_a"), p.flag("trans_b")
        alpha, beta = p.real("alpha"), p.real("beta")
        batch_shape: tuple[int, ...] = ()
        a_outer: tuple[int, ...] = ()
        b_outer: tuple[int, ...] = ()
    else:
        trans_a = trans_b = False
        alpha = beta = 1.0
        if len(tensor_shape(a)) < 2 or len(tensor_shape(b)) < 2:
            return Refusal("a 1-D matmul operand (matrix-vector product) has no cube kernel")
        batch_shape = tensor_shape(root.results[0])[:-2]
        pa = _batch_pattern(tensor_shape(a)[:-2], batch_shape)
        pb = _batch_pattern(tensor_shape(b)[:-2], batch_shape)
        if pa is None or pb is None:
            return Refusal("the operands' batch dims do not broadcast to the output's")
        a_outer, b_outer = pa, pb
    if trans_a and element_type(a) == f32:
        # the buffer verifier's rule (dialects/fractal_rules.py): LoadData cannot transpose
        # float fractals into L0A, and LoadData3DV2's enTranspose is not emitted
        return Refusal(
            "a transposed f32 A operand has no L1 -> L0A load afc emits (LoadData3DV2's "
            "enTranspose): the gemm stays a library op"
        )
    act = activation_of(root)
    w = byte_width(element_type(a))
    rank = len(tensor_shape(root.results[0]))
    direct = (
        not chip.l0c_to_ub
        and not epilogue
        and parts.outputs == [root.results[0]]
        and bias is None
        and alpha == 1.0
        and act[0] in (None, "relu")
    )
    rows: RowPlan | None = None
    raw: SSAValue | None = None
    ws_elt: Attribute | None = None
    max_cols = None
    out_elt = element_type(root.results[0])
    if not direct:
        plain = bias is None and alpha == 1.0 and act[0] is None
        # the graph rounds a plain product to its type: Fixpipe can do that on the way out
        ws_elt = out_elt if (plain and not chip.l0c_to_ub) else f32
        raw = detached_value(ws_elt, tensor_shape(root.results[0]), "raw")
        extra = [bias] if bias is not None else []
        ep = CubeEpilogue(root, raw, extra, epilogue, parts, rank - 1)
        room = EpilogueRoom(*epilogue_room(prologue, chip))
        planned = (
            plan_epilogue(ep, room, chip)
            if rope is None
            else plan_rope_epilogue(ep, rope, room, chip)
        )
        if isinstance(planned, Refusal):
            return planned
        rows = planned
        fit_chunk_rows(rows, head_step(rope), not chip.l0c_to_ub)
        max_cols = max_epilogue_cols(rows) // head_step(rope) * head_step(rope)
    if not chip.data_copy_pad:
        why = _aligned_operands(root, a, b)
        if why is not None:
            return why
    if tiling is None:
        tiles = choose_tiles(chip, w, max_cols)
    else:
        tiles = recorded_cube_tiles(tiling, rows, w, chip, head_step(rope))
    if isinstance(tiles, Refusal):
        return tiles
    if rope is not None and tiles.tn % rope.head_dim:
        return Refusal(
            f"an N tile of {tiles.tn} columns does not hold whole heads of dim {rope.head_dim}"
        )
    return MatmulPlan(
        group,
        root,
        epilogue,
        a,
        b,
        bias,
        alpha,
        beta,
        trans_a,
        trans_b,
        batch_shape,
        a_outer,
        b_outer,
        tiles,
        direct,
        chip.l0c_to_ub,
        ws_elt,
        rows,
        raw,
        rope,
        prologue,
    )


def _aligned_operands(root: Operation, a: SSAValue, b: SSAValue) -> Refusal | None:
    """Without DataCopyPad every GM block is a 32-byte multiple (ascend.md 2.7, 4): the
    contiguous runs of A and B tiles (and output rows) must be, at every tile."""
    # a tile's contiguous runs are along each matrix's last dim, whatever the transposes
    for v in (a, b, root.results[0]):
        d = tensor_shape(v)[-1]
        if d == DYN or (d * byte_width(element_type(v))) % 32:
            return Refusal(
                f"rows of {'dynamic' if d == DYN else d} elements of {root.name}'s operands "
                "are not 32-byte multiples and the chip has no DataCopyPad"
            )
    return None
