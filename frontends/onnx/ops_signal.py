"""Converters of ONNX signal operators: DFT, STFT and MelWeightMatrix, and EyeLike.

A DFT along an axis of static length is a product with constant matrices: the real and
imaginary parts (ONNX keeps them as a trailing dim of 1 or 2) are each a graph.matmul
with the cosine and sine tables of the transform, which take dft_length's truncation or
zero padding, onesided and inverse (1/n, and for a onesided inverse the Hermitian
weights numpy's irfft uses) as zero rows and scaled entries. STFT frames the signal with
one graph.gather, applies the window, and takes the DFT of each frame. MelWeightMatrix and
EyeLike depend only on constants and shapes, so they fold to constants. Versions are cited
as `Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i64

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import (
    Converter,
    Node,
    OpVersions,
    RefusedVersions,
    Value,
    element_type,
    probe_dims,
    register,
)
from frontends.onnx.ops_tensor import reshape_to

CONVERTERS: dict[str, Converter] = {}

VERSIONS: OpVersions = {
    "DFT": (17, 20),
    "STFT": (17,),
    "MelWeightMatrix": (17,),
    "EyeLike": (9, 22),
}
REFUSED_VERSIONS: RefusedVersions = {}


# --------------------------------------------------------------------------------------
# DFT as constant matrices
# --------------------------------------------------------------------------------------


def dft_tables(n: int, length: int, inverse: bool, onesided: bool) -> list[np.ndarray]:
    """[A, B, C, D] ([n, k] each) with real = r @ A + i @ B and imag = r @ C + i @ D for an
    input of n points along the axis (r, i its real and imaginary parts); a onesided
    inverse (numpy's irfft) has a real output only: its C and D are zeros."""
    if inverse and onesided:
        used, k = length // 2 + 1, length  # irfft: the first length//2 + 1 bins
    else:
        used, k = length, (length // 2 + 1 if onesided else length)
    rows = np.arange(n)[:, None]
    cols = np.arange(k)[None, :]
    theta = 2 * np.pi * ((rows * cols) % length) / length
    cos, sin = np.cos(theta), np.sin(theta)
    if inverse and onesided:
        # Hermitian weights: bin 0 and (for even lengths) bin length/2 count once
        weight = np.where((rows == 0) | (2 * rows == length), 1.0, 2.0) / length
        tables = [weight * cos, -weight * sin, np.zeros_like(cos), np.zeros_like(cos)]
    elif inverse:
        tables = [cos / length, -sin / length, sin / length, cos / length]
    else:
        tables = [cos, sin, -sin, cos]
    keep = (rows < used).astype(np.float64)  # rows past the transform length: truncated
    return [t * keep for t in tables]


def _part(node: Node, x: Value, index: int) -> Value:
    """x[..., index] with the trailing dim dropped."""
    rank = len(x.shape)
    props = {"starts": [index], "ends": [index + 1], "axes": [rank - 1], "steps": [1]}
    a, b = probe_dims(x)
    return reshape_to(node, node.emit1(graph.SliceOp, [x], props), a[:-1], b[:-1])


def dft(node: Node, x: Value, axis: int, length: int | None, flags: tuple[bool, bool]) -> Value:
    """The DFT of `x` ([..., 1 or 2], axis normalized, not the last) along `axis`:
    [..., 2], or [..., 1] for a onesided inverse. `flags` is (inverse, onesided)."""
    inverse, onesided = flags
    rank = len(x.shape)
    n = x.shape[axis]
    if n == si.DYN:
        raise node.symbolic_error(f"the transformed dim {axis}")
    if x.shape[-1] not in (1, 2):
        raise node.error(f"the last dim must be 1 (real) or 2 (complex), got {x.shape[-1]}")
    if length is None:
        length = 2 * (n - 1) if inverse and onesided else n
    if length < 1:
        raise node.error(f"dft_length must be positive, got {length}")
    # the transformed axis moves last for the products, and back after
    perm = [d for d in range(rank - 1) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank - 1)]
    parts = [_part(node, x, c) for c in range(x.shape[-1])]
    parts = [node.emit1(graph.TransposeOp, [p], {"perm": perm}) for p in parts]
    tables = [node.const(t, x.elt) for t in dft_tables(n, length, *flags)]
    outs = []
    for pair in ((0, 1), (2, 3))[: 1 if inverse and onesided else 2]:
        terms = [node.emit1(graph.MatmulOp, [p, tables[pair[c]]]) for c, p in enumerate(parts)]
        total = terms[0] if len(terms) == 1 else node.emit1(graph.AddOp, terms)
        total = node.emit1(graph.TransposeOp, [total], {"perm": back})
        a, b = probe_dims(total)
        outs.append(reshape_to(node, total, [*a, 1], [*b, 1]))
    return outs[0] if len(outs) == 1 else node.emit1(graph.ConcatOp, outs, {"axis": rank - 1})


def _scalar(node: Node, i: int, what: str) -> int | None:
    values = node.ints_input(i, what)
    if values is None:
        return None
    if len(values) != 1:
        raise node.error(f"{what} (input #{i}) must hold one value, got {len(values)}")
    return values[0]


@register(CONVERTERS, "DFT")
def convert_dft(node: Node) -> list[Value]:
    """DFT-17 (axis attribute, default 1) and DFT-20 (axis input, default -2): forward,
    inverse, onesided (rfft) and onesided inverse (irfft), with dft_length."""
    x = node.input(0)
    rank = len(x.shape)
    if node.version >= 20:
        given = _scalar(node, 2, "axis")
        axis = -2 if given is None else given
    else:
        axis = int(node.attr("axis", 1))
    if not -rank <= axis < rank - 1 or axis == -1:
        raise node.error(f"axis {axis} must name a dim other than the last of rank {rank}")
    axis = axis + rank if axis < 0 else axis
    flags = (bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0)))
    return [dft(node, x, axis, _scalar(node, 1, "dft_length"), flags)]


@register(CONVERTERS, "STFT")
def convert_stft(node: Node) -> list[Value]:
    """STFT-17: frames of frame_length every frame_step samples (one gather), times the
    window, each transformed: [batch, frames, bins, 2]."""
    signal = node.input(0)
    if len(signal.shape) != 3:
        raise node.error(f"the signal must be [batch, length, 1 or 2], got {si.fmt(signal.shape)}")
    total = signal.shape[1]
    if total == si.DYN:
        raise node.symbolic_error("the signal length")
    step = _scalar(node, 1, "frame_step")
    window = node.opt_input(2)
    size = _scalar(node, 3, "frame_length")
    if size is None:
        if window is None:
            raise node.error("one of window (input #2) and frame_length (input #3) is required")
        size = window.shape[0]
    if step is None or step < 1 or not 0 < size <= total:
        raise node.error(f"frame_step {step} and frame_length {size} do not frame {total}")
    if window is not None and tuple(window.shape) != (size,):
        raise node.error(f"the window has shape {si.fmt(window.shape)}, expected [{size}]")
    frames = 1 + (total - size) // step
    index = np.arange(frames)[:, None] * step + np.arange(size)[None, :]
    framed = node.emit1(graph.GatherOp, [signal, node.const(index, i64)], {"axis": 1})
    if window is not None:
        shaped = reshape_to(node, window, [1, 1, size, 1], [1, 1, size, 1])
        framed = node.emit1(graph.MulOp, [framed, shaped])
    onesided = bool(node.attr("onesided", 1))
    return [dft(node, framed, 2, size, (False, onesided))]


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


@register(CONVERTERS, "MelWeightMatrix")
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


@register(CONVERTERS, "EyeLike")
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
