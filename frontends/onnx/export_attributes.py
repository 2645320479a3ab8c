"""Attributes of standard ONNX ops that a later opset added: from which opset each exists,
and which value means what the op did before it.

`Body.add_node` (export_ops.py) passes every standard node's attributes through
`at_opset`: an attribute the op's schema at the export opset lacks is dropped where it
holds its `default` (the older versions' behaviour) and refused otherwise, naming the
op, the attribute and the opset it needs. Facts from https://onnx.ai/onnx/operators/
(tests/test_onnx_export_opsets.py checks each `opset` against onnx.defs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx


class AttributeOpsetError(ValueError):
    """An attribute the op has not at the export opset, with a value that matters."""


@dataclass(frozen=True)
class Since:
    """An attribute that exists from `opset`. `default` is the value meaning the older
    versions' behaviour (None: there is none, every value is refused before `opset`);
    `values` are the values of it that exist only from a later opset."""

    opset: int
    default: object = None
    values: Mapping[object, int] = field(default_factory=dict)


SINCE: dict[tuple[str, str], Since] = {
    ("ArgMax", "select_last_index"): Since(12, 0),
    ("ArgMin", "select_last_index"): Since(12, 0),
    ("Attention", "left_window_size"): Since(25, -1),
    ("Attention", "right_window_size"): Since(25, -1),
    ("AveragePool", "dilations"): Since(19),
    ("BatchNormalization", "training_mode"): Since(14, 0),
    ("Cast", "saturate"): Since(19, 1),
    ("Cast", "round_mode"): Since(24, "up"),
    # (De)QuantizeLinear-10 is per-tensor only: a per-axis scale's axis has no old form
    ("DequantizeLinear", "axis"): Since(13),
    ("DequantizeLinear", "block_size"): Since(21, 0),
    ("DequantizeLinear", "output_dtype"): Since(23, 0),
    ("LpPool", "ceil_mode"): Since(18, 0),
    ("LpPool", "dilations"): Since(18),
    ("QuantizeLinear", "axis"): Since(13),
    ("QuantizeLinear", "saturate"): Since(19, 1),
    ("QuantizeLinear", "output_dtype"): Since(21, 0),
    ("QuantizeLinear", "block_size"): Since(21, 0),
    ("QuantizeLinear", "precision"): Since(23, 0),
    ("Range", "stash_type"): Since(27, 1),
    ("ReduceMax", "noop_with_empty_axes"): Since(18, 0),
    ("ReduceMean", "noop_with_empty_axes"): Since(18, 0),
    ("ReduceMin", "noop_with_empty_axes"): Since(18, 0),
    ("ReduceProd", "noop_with_empty_axes"): Since(18, 0),
    ("ReduceSum", "noop_with_empty_axes"): Since(13, 0),
    ("Reshape", "allowzero"): Since(14, 0),
    ("Resize", "antialias"): Since(18, 0),
    ("Resize", "axes"): Since(18),
    ("Resize", "keep_aspect_ratio_policy"): Since(18, "stretch"),
    # RoiAlign-10 samples as "output_half_pixel"; RoiAlign-16's default is "half_pixel"
    ("RoiAlign", "coordinate_transformation_mode"): Since(16, "output_half_pixel"),
    # add and mul from version 16, max and min from 18
    ("ScatterElements", "reduction"): Since(16, "none", {"max": 18, "min": 18}),
    ("ScatterND", "reduction"): Since(16, "none", {"max": 18, "min": 18}),
    ("Shape", "start"): Since(15, 0),
    ("Shape", "end"): Since(15),
    ("SpaceToDepth", "mode"): Since(28, "DCR"),
    ("Split", "num_outputs"): Since(18),
}


def _shown(value: object) -> str:
    return repr(value.decode() if isinstance(value, bytes) else value)


def at_opset(
    op_type: str, schema: onnx.defs.OpSchema, opset: int, attrs: Mapping[str, Any]
) -> dict[str, Any]:
    """The attributes of an `op_type` node to write at `opset` (whose schema is `schema`):
    `attrs` without those the op has not yet and that hold their old default.

    Raises AttributeOpsetError (one line: op, attribute, value, opset) for any other
    attribute the schema lacks or a value that needs a later opset.
    """
    out: dict[str, Any] = {}
    for name, value in attrs.items():
        since = SINCE.get((op_type, name))
        if name not in schema.attributes:
            if since is None or since.opset <= opset:
                raise AttributeOpsetError(
                    f"ONNX {op_type}-{schema.since_version} (opset {opset}) has no attribute {name}"
                )
            if since.default is None or value != since.default:
                raise AttributeOpsetError(
                    f"{op_type} attribute {name}={_shown(value)} needs opset {since.opset}, "
                    f"not {opset}"
                )
            continue
        need = since.values.get(value, 0) if since is not None and _hashable(value) else 0
        if opset < need:
            raise AttributeOpsetError(
                f"{op_type} attribute {name}={_shown(value)} needs opset {need}, not {opset}"
            )
        out[name] = value
    return out


def _hashable(value: object) -> bool:
    return isinstance(value, int | str | float | bytes)
