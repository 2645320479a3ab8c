"""Which transposes a rows kernel folds into its addressing (channel-major inputs and
outputs: row_transpose.py emits them): a transpose of a group input that moves one axis
innermost, and of a group output that moves the innermost axis back, seen as
[images x C x pixels] (`ChannelMajor`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN
from autofusion.passes.fusion_rule import Refusal


@dataclass(frozen=True)
class ChannelMajor:
    """A GM tensor [images x channels x pixels] read or written as the rows x channels
    view: element (r, c) is at (r // pixels) * channels * pixels + c * pixels + r % pixels."""

    channels: int
    pixels: int


def _shape(v: SSAValue) -> tuple[int, ...]:
    return cast(TensorType, v.type).get_shape()


def _perm(op: graph.TransposeOp) -> tuple[int, ...]:
    return graph.Props(op.properties, op.name).integers("perm")


def _layout(channel_major: Sequence[int], axis: int) -> ChannelMajor | Refusal:
    """The layout of a channel-major shape whose channels are at `axis`."""
    pixels = si.num_elements(channel_major[axis + 1 :])
    channels = channel_major[axis]
    if pixels is None or channels == DYN:
        return Refusal("a channel-major transpose with dynamic channels or pixels")
    return ChannelMajor(channels, pixels)


def input_layout(op: graph.TransposeOp) -> ChannelMajor | Refusal | None:
    """The layout of a transpose that moves one axis to the innermost place, or None."""
    perm = _perm(op)
    r = len(perm)
    for k in range(r - 1):
        if perm == (*range(k), *range(k + 1, r), k):
            return _layout(_shape(op.input), k)
    return None


def output_layout(op: graph.TransposeOp) -> ChannelMajor | Refusal | None:
    """The layout of a transpose that moves the innermost axis to axis k, or None."""
    perm = _perm(op)
    r = len(perm)
    for k in range(r - 1):
        if perm == (*range(k), r - 1, *range(k, r - 1)):
            return _layout(_shape(op.output), k)
    return None


@dataclass
class LayoutTransposes:
    """A group's channel-major transposes: the input ones (their result -> the group
    input they read), the output ones (their result -> the value they transpose)."""

    inputs: dict[SSAValue, SSAValue] = field(default_factory=dict)
    outputs: dict[SSAValue, SSAValue] = field(default_factory=dict)
    layouts: dict[SSAValue, ChannelMajor] = field(default_factory=dict)
    ops: list[Operation] = field(default_factory=list)

    def body(
        self, ops: Sequence[Operation], inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
    ) -> tuple[list[Operation], list[SSAValue], list[SSAValue]]:
        """The group without its transposes: the transposed inputs are streamed inputs,
        and a transposed output is its source value's (written once per layout)."""
        rest = [op for op in ops if op not in self.ops]
        used = {v for op in rest for v in op.operands} | set(self.outputs.values())
        body_inputs = [v for v in inputs if v in used or v in outputs]
        body_inputs += [v for v in self.inputs if v in used or v in outputs]
        body_outputs = [self.outputs.get(v, v) for v in outputs]
        return rest, body_inputs, list(dict.fromkeys(body_outputs))


def find_layout_transposes(
    ops: Sequence[Operation], inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
) -> LayoutTransposes | Refusal:
    """The group's transposes the rows kernel can fold (module docstring), or why one
    cannot be folded."""
    found = LayoutTransposes()
    inside = set(ops)
    if len(ops) > 1 and all(isinstance(op, graph.TransposeOp) for op in ops):
        return Refusal("a kernel of transposes alone")
    for op in ops:
        if not isinstance(op, graph.TransposeOp):
            continue
        elt = dtypes.type_name(cast(TensorType, op.input.type).element_type)
        if elt not in ("f32", "f16", "bf16"):
            return Refusal(f"{op.name} works on {elt}; vector kernels compute floats")
        layout = input_layout(op) if op.input in inputs else None
        if layout is not None:
            found.inputs[op.output] = op.input
        else:
            layout = output_layout(op)
            if layout is None:
                return Refusal(
                    f"transpose perm {list(_perm(op))} neither moves one axis innermost "
                    "(a kernel input) nor the innermost one back"
                )
            if op.output not in outputs or any(u.operation in inside for u in op.output.uses):
                return Refusal("a channel-major transpose inside a kernel must be its output")
            if op.input in found.inputs:
                return Refusal("a channel-major output transpose of a transposed input")
            found.outputs[op.output] = op.input
        if isinstance(layout, Refusal):
            return layout
        found.layouts[op.output] = layout
        found.ops.append(op)
    return found
