"""ONNX export of the library graph ops (autofusion/dialects/graph_library.py): each is
the ONNX operator it was imported from, NonMaxSuppression with its limits as constant
inputs, max_pool2d_with_indices as MaxPool with two outputs, DFT and STFT with their
lengths and axis as constant inputs.

`table()` gives their entries of `export_table.TABLE`; export_ops is imported where it
is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from onnx import TensorProto
from xdsl.ir import Operation

from autofusion.dialects import graph_library as gl

if TYPE_CHECKING:
    from frontends.onnx.export_ops import Emitter, Mapping


def _non_max_suppression(e: Emitter) -> None:
    """NonMaxSuppression-11: max_output_boxes_per_class, iou_threshold and (when given)
    score_threshold as constant inputs."""
    most = np.asarray([e.props.integer("max_output_boxes_per_class")], np.int64)
    inputs = [*e.inputs, e.const(most, TensorProto.INT64, "max_boxes")]
    inputs.append(e.const([e.props.real("iou_threshold")], TensorProto.FLOAT, "iou"))
    if e.op.properties.get("score_threshold") is not None:
        inputs.append(e.const([e.props.real("score_threshold")], TensorProto.FLOAT, "score"))
    center = int(e.props.flag("center_point_box"))
    e.nodes("NonMaxSuppression", inputs, e.outputs, center_point_box=center)


def _bit_cast(e: Emitter) -> None:
    from frontends.onnx.export_ops import NotExportable

    if e.opset < 26:
        raise NotExportable(f"BitCast needs opset 26, not {e.opset}")
    e.nodes("BitCast", e.inputs, e.outputs, to=e.out_elem())


def _int_pow(e: Emitter) -> None:
    """Pow-15 (12 on take integer types); its output has the base's type."""
    e.nodes("Pow", e.inputs, e.outputs)


def _max_pool_with_indices(e: Emitter) -> None:
    """MaxPool-12 with its Indices output; column_major is storage_order=1."""
    p = e.props
    window = e.int_lists("kernel_shape", "strides", "pads", "dilations")
    ceil_mode, storage_order = int(p.flag("ceil_mode")), int(p.flag("column_major"))
    e.nodes(
        "MaxPool", e.inputs, e.outputs, ceil_mode=ceil_mode, storage_order=storage_order, **window
    )


def _tensor_scatter(e: Emitter) -> None:
    from frontends.onnx.export_ops import NotExportable

    if e.opset < 24:
        raise NotExportable(f"TensorScatter needs opset 24, not {e.opset}")
    mode = "circular" if e.props.flag("circular") else "linear"
    e.nodes("TensorScatter", e.inputs, e.outputs, axis=e.props.integer("axis"), mode=mode)


def _tfidf_vectorizer(e: Emitter) -> None:
    """TfIdfVectorizer-9 with the pool as pool_int64s."""
    p = e.props
    attrs: dict[str, object] = {
        k: p.integer(k) for k in ("min_gram_length", "max_gram_length", "max_skip_count")
    }
    attrs |= {k: list(p.integers(k)) for k in ("ngram_counts", "ngram_indexes")}
    attrs["pool_int64s"] = list(p.integers("pool"))
    if p.has("weights"):
        attrs["weights"] = list(p.reals("weights"))
    e.nodes("TfIdfVectorizer", e.inputs, e.outputs, mode=p.text("mode"), **attrs)


def _pool_3d(e: Emitter) -> None:
    """MaxPool-12 / AveragePool-19 (dilations) in 3-D."""
    from frontends.onnx.export_ops import NotExportable

    p = e.props
    attrs: dict[str, object] = {**e.int_lists("kernel_shape", "strides", "pads", "dilations")}
    attrs["ceil_mode"] = int(p.flag("ceil_mode"))
    if isinstance(e.op, gl.MaxPool3dOp):
        e.nodes("MaxPool", e.inputs, e.outputs, **attrs)
        return
    if e.opset < 19 and any(d != 1 for d in p.integers("dilations")):
        raise NotExportable(f"AveragePool with dilations needs opset 19, not {e.opset}")
    if e.opset < 19:
        del attrs["dilations"]
    attrs["count_include_pad"] = int(p.flag("count_include_pad"))
    e.nodes("AveragePool", e.inputs, e.outputs, **attrs)


def _scalar_int(e: Emitter, value: int, role: str) -> str:
    """A rank-0 int64 Constant (DFT's and STFT's lengths, steps and axis are scalars)."""
    return e.const(np.asarray(value, np.int64), TensorProto.INT64, role)


def _dft(e: Emitter) -> None:
    """DFT-20 (axis as an input) or DFT-17 (axis as an attribute); dft_length as an input
    when the op has one."""
    from frontends.onnx.export_ops import NotExportable

    if e.opset < 17:
        raise NotExportable(f"DFT needs opset 17, not {e.opset}")
    p = e.props
    length = _scalar_int(e, p.integer("dft_length"), "dft_length") if p.has("dft_length") else ""
    attrs = {"inverse": int(p.flag("inverse")), "onesided": int(p.flag("onesided"))}
    if e.opset >= 20:
        axis = _scalar_int(e, p.integer("axis"), "axis")
        e.nodes("DFT", [e.inputs[0], length, axis], e.outputs, **attrs)
    else:
        e.nodes("DFT", [e.inputs[0], length], e.outputs, axis=p.integer("axis"), **attrs)


def _stft(e: Emitter) -> None:
    """STFT-17: frame_step and frame_length as scalar int64 inputs."""
    from frontends.onnx.export_ops import NotExportable

    if e.opset < 17:
        raise NotExportable(f"STFT needs opset 17, not {e.opset}")
    p = e.props
    step = _scalar_int(e, p.integer("frame_step"), "frame_step")
    size = _scalar_int(e, p.integer("frame_length"), "frame_length")
    window = e.inputs[1] if len(e.inputs) == 2 else ""
    e.nodes("STFT", [e.inputs[0], step, window, size], e.outputs, onesided=int(p.flag("onesided")))


def table() -> dict[type[Operation], Mapping]:
    """The export entries of the library ops."""
    from frontends.onnx.export_ops import Standard, direct

    return {
        gl.NonMaxSuppressionOp: Standard(_non_max_suppression, "NonMaxSuppression"),
        gl.BitCastOp: Standard(_bit_cast, "BitCast (opset 26)"),
        gl.IntPowOp: Standard(_int_pow, "Pow (integer base)"),
        gl.DetOp: direct("Det"),
        gl.DftOp: Standard(_dft, "DFT (axis input from opset 20)"),
        gl.StftOp: Standard(_stft, "STFT"),
        gl.MaxPool3dOp: Standard(_pool_3d, "MaxPool (3-D)"),
        gl.AvgPool3dOp: Standard(_pool_3d, "AveragePool (3-D)"),
        gl.TfIdfVectorizerOp: Standard(_tfidf_vectorizer, "TfIdfVectorizer"),
        gl.TensorScatterOp: Standard(_tensor_scatter, "TensorScatter (opset 24)"),
        gl.MaxPoolWithIndicesOp: Standard(_max_pool_with_indices, "MaxPool (with Indices)"),
    }
