"""What a rows-kernel plan holds (row_plan.py plans it): each group value's layout
(`ValueInfo`) and the plan (`RowPlan`): the view, the buffers per tile element, the
strided input views and the channel-major transposes folded into its addressing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.ir import Operation, SSAValue

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import FusionKind, fusion_kind
from autofusion.lowering.row_layout import ChannelMajor, LayoutTransposes
from autofusion.lowering.row_views import InputView
from autofusion.lowering.template import GroupParts, Plan
from autofusion.lowering.value_types import tensor_shape
from autofusion.passes.fusion_rule import Refusal


@dataclass
class ValueInfo:
    """How one value of the group is laid out and where it lives."""

    value: SSAValue
    kind: str
    outer_shape: tuple[int, ...]  # the value's own outer dims (padded), for mapped kinds
    is_input: bool = False
    is_output: bool = False
    constant: float | None = None  # the value of a splat constant input
    # a partial rope's cos/sin table: its R columns (rotary_dim), narrower than the view's
    # (its rows stream as [rows, R], `RowPlan.narrow_stride` apart in UB); else 0
    narrow: int = 0


@dataclass
class RowPlan(Plan):
    """The static part of a vector kernel: view, value kinds, buffers per tile element."""

    template: ClassVar[str] = "rows"
    ops: list[Operation]
    anchor: tuple[int, ...]
    split: int  # p: outer = anchor[:p], inner = anchor[p:]
    has_reduction: bool
    values: dict[SSAValue, ValueInfo] = field(default_factory=dict)
    inputs: list[SSAValue] = field(default_factory=list)
    outputs: list[SSAValue] = field(default_factory=list)
    align_elems: int = 8  # row padding in elements: 32 bytes of the narrowest type used
    in_depth: int = 2  # buffers per input queue (2: double buffering)
    out_depth: int = 2
    tile_bytes_per_elem: int = 0  # UB bytes per element of a rows x columns tile
    column_bytes_per_row: int = 0  # UB bytes per row for column buffers
    narrow_stride: int = 0  # UB row stride of the narrow tables (elements), 0 without
    narrow_bytes_per_row: int = 0  # UB bytes per row for the narrow tables
    max_tile_elems: int = 0  # T_max: the largest tile (rows x padded columns) that fits
    parts: GroupParts | None = None
    # inputs read through view ops: the view value -> where its rows are in GM
    views: dict[SSAValue, InputView] = field(default_factory=dict)
    view_ops: list[Operation] = field(default_factory=list)
    # channel-major transposes folded into the kernel (row_transpose.py): the layout of
    # each transposed value, the input each transposed input reads, the value each
    # transposed output writes, and the rows per image its tiles do not straddle
    channel_major: dict[SSAValue, ChannelMajor] = field(default_factory=dict)
    transposed_sources: dict[SSAValue, SSAValue] = field(default_factory=dict)
    transposed_outputs: dict[SSAValue, SSAValue] = field(default_factory=dict)
    image_rows: int = 0
    # a cube epilogue's fewest rows per chunk (cube_common.spread_tiles): whole L0C
    # fractals through CO2 (16); from a GM workspace any count reads, 8 keeps a chunk's
    # float32 per-row values one 32-byte block
    chunk_rows: int = 16

    @property
    def gm_inputs(self) -> list[SSAValue]:
        """The kernel's GM input tensors: each input, or the source of each view, once
        (splat constants are scalars, not GM inputs)."""
        out = [
            self.views[v].source if v in self.views else self.transposed_sources.get(v, v)
            for v in self.inputs
            if self.values[v].constant is None
        ]
        return list(dict.fromkeys(out))

    @property
    def ub_bytes(self) -> int:
        """UB bytes of the kernel's buffers at its largest tile."""
        return (
            self.tile_bytes_per_elem * self.max_tile_elems
            + self.column_bytes_per_row * self.max_tile_rows
            + self.narrow_bytes_per_row * self.max_table_rows
        )

    @property
    def whole_rows(self) -> bool:
        """Whether every tile holds whole rows: the plan reduces them, transposes them
        (channel-major values), or a rope rotates them (its halves or pairs, or its first
        rotary_dim columns, are within a row). A cube kernel's rope epilogue (a plan that
        starts at the cube op) rotates heads of the product's columns instead
        (rope_epilogue_emit.py: column tiles of whole heads, head_step)."""
        rope = any(isinstance(op, graph.RopeOp) for op in self.ops)
        cube = any(fusion_kind(op) == FusionKind.CUBE for op in self.ops)
        return self.has_reduction or bool(self.channel_major) or (rope and not cube)

    @property
    def max_tile_rows(self) -> int:
        """Rows of the largest tile when each row is one padded segment at least."""
        return self.max_tile_elems // self.align_elems

    @property
    def max_table_rows(self) -> int:
        """Rows of the largest tile of whole rows (a partial rope's): its padded static
        row length apart, else one padded segment."""
        return self.max_tile_elems // (whole_row_elems(self) or self.align_elems)

    @property
    def outer(self) -> tuple[int, ...]:
        return self.anchor[: self.split]

    @property
    def inner(self) -> tuple[int, ...]:
        return self.anchor[self.split :]


def attach_layout(
    found: LayoutTransposes, plan: RowPlan, outputs: Sequence[SSAValue]
) -> RowPlan | Refusal:
    """The plan of the body with the transposes folded in: the group's own outputs,
    channel-major ones included, and the view that tiles whole images' pixels."""
    if plan.split != len(plan.anchor) - 1:
        return Refusal("a channel-major transpose needs the channels as the only columns")
    pixels = {lay.pixels for lay in found.layouts.values()}
    if len(pixels) > 1:
        return Refusal("channel-major transposes with different images in one kernel")
    for v in (*found.inputs, *found.outputs.values()):
        if plan.values[v].kind != "full":
            return Refusal(f"a transposed value of shape {si.fmt(tensor_shape(v))} is not a tile")
    for v, source in found.outputs.items():
        info = plan.values[source]
        plan.values[v] = ValueInfo(v, "full", info.outer_shape, is_output=True)
        if source not in outputs:
            info.is_output = False
    plan.outputs = list(outputs)
    plan.channel_major = dict(found.layouts)
    plan.transposed_sources = dict(found.inputs)
    plan.transposed_outputs = dict(found.outputs)
    plan.image_rows = pixels.pop()
    return plan


def whole_row_elems(plan: RowPlan) -> int | None:
    """The padded length of the plan's rows when its tiles hold whole rows of a static
    length (`RowPlan.whole_rows`: it reduces, rotates or transposes them), else None: its
    tiles are then whole multiples of it."""
    cols = si.num_elements(plan.inner)
    if not plan.whole_rows or cols is None:
        return None
    return -(-cols // plan.align_elems) * plan.align_elems
