"""Converters of ONNX signal operators: DFT, STFT and MelWeightMatrix, and EyeLike.

DFT and STFT are the library ops graph.dft and graph.stft
(autofusion/dialects/graph_library.py), exported back as themselves. MelWeightMatrix and
EyeLike depend only on constants and shapes, so they fold to constants. Versions are cited
as `Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

import numpy as np

from autofusion.dialects import graph_library
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Node, OpConverters, Value, element_type

OPS = OpConverters(
    versions={
        "DFT": (17, 20),
        "STFT": (17,),
        "MelWeightMatrix": (17,),
        "EyeLike": (9, 22),
    }
)


# --------------------------------------------------------------------------------------
# DFT, STFT
# --------------------------------------------------------------------------------------


def _scalar(node: Node, i: int, what: str) -> int | None:
    values = node.ints_input(i, what)
    if values is None:
        return None
    if len(values) != 1:
        raise node.error(f"{what} (input #{i}) must hold one value, got {len(values)}")
    return values[0]


@OPS.register("DFT")
def convert_dft(node: Node) -> list[Value]:
    """DFT-17 (axis attribute, default 1) and DFT-20 (axis input, default -2) as graph.dft:
    forward, inverse, onesided (rfft) and onesided inverse (irfft), with dft_length."""
    x = node.input(0)
    rank = len(x.shape)
    if node.version >= 20:
        given = _scalar(node, 2, "axis")
        axis = -2 if given is None else given
    else:
        axis = int(node.attr("axis", 1))
    if not -rank <= axis < rank - 1 or axis == -1:
        raise node.error(f"axis {axis} must name a dim other than the last of rank {rank}")
    props: dict[str, object] = {
        "axis": axis + rank if axis < 0 else axis,
        "inverse": bool(node.attr("inverse", 0)),
        "onesided": bool(node.attr("onesided", 0)),
    }
    length = _scalar(node, 1, "dft_length")
    if length is not None:
        props["dft_length"] = length
    return node.emit(graph_library.DftOp, [x], props)


@OPS.register("STFT")
def convert_stft(node: Node) -> list[Value]:
    """STFT-17 as graph.stft; frame_step and frame_length must be constants (frame_length
    defaults to the window's length)."""
    signal = node.input(0)
    step = _scalar(node, 1, "frame_step")
    window = node.opt_input(2)
    size = _scalar(node, 3, "frame_length")
    if size is None:
        if window is None:
            raise node.error("one of window (input #2) and frame_length (input #3) is required")
        size = window.shape[0]
    if step is None:
        raise node.error("frame_step (input #1) is required")
    props = {"frame_step": step, "frame_length": size, "onesided": bool(node.attr("onesided", 1))}
    operands = [signal] if window is None else [signal, window]
    return node.emit(graph_library.StftOp, operands, props)


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


def mel_weight_matrix(bins: int, length: int, rate: int, low: float, high: float) -> np.ndarray:
    """[length//2 + 1, bins] triangular filters between mel-spaced points (MelWeightMatrix-17;
    the HTK mel scale 2595 log10(1 + f/700), points rounded down to DFT bins)."""

    def to_mel(f: float) -> float:
        return 2595 * np.log1p(f / 700) / np.log(10)

    low_mel, high_mel = to_mel(low), to_mel(high)
    step = (high_mel - low_mel) / (bins + 2)
    mels = np.arange(bins + 2) * step + low_mel
    hertz = 700 * np.expm1(mels / 2595 * np.log(10))
    points = (((length + 1) * hertz) // rate).astype(int)
    out = np.zeros((length // 2 + 1, bins))
    for i in range(bins):
        left, center, right = points[i], points[i + 1], points[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            js = np.arange(left, center + 1)
            out[js, i] = (js - left) / (center - left)
        if right > center:
            js = np.arange(center, right)
            out[js, i] = (right - js) / (right - center)
    return out


@OPS.register("MelWeightMatrix")
def convert_mel_weight_matrix(node: Node) -> list[Value]:
    """MelWeightMatrix-17: a constant from constant inputs, of output_datatype (float)."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    values = []
    for i, what in enumerate(names):
        arr = node.const_input(i, what)
        if arr is None or np.asarray(arr).size != 1:
            raise node.error(f"{what} (input #{i}) must be a scalar")
        values.append(np.asarray(arr).reshape(()).item())
    bins, length, rate = (int(v) for v in values[:3])
    if bins < 1 or length < 1 or rate < 1:
        raise node.error("num_mel_bins, dft_length and sample_rate must be positive")
    elt = element_type(int(node.attr("output_datatype", 1)), "output_datatype")
    table = mel_weight_matrix(bins, length, rate, float(values[3]), float(values[4]))
    return [node.const(table, elt)]


@OPS.register("EyeLike")
def convert_eye_like(node: Node) -> list[Value]:
    """EyeLike-9/22: ones on diagonal k of the input's (static) 2-D shape, of dtype (by
    default the input's type)."""
    x = node.input(0)
    if len(x.shape) != 2:
        raise node.error(f"the input must be 2-D, got {si.fmt(x.shape)}")
    if si.DYN in x.shape:
        raise node.symbolic_error("the shape of the result")
    dtype = node.attr("dtype", None)
    elt = x.elt if dtype is None else element_type(int(dtype), "dtype")
    eye = np.eye(x.shape[0], x.shape[1], k=int(node.attr("k", 0)))
    return [node.const(eye, elt)]
