"""Reference semantics of the graph dialect's library ops (autofusion/dialects/graph_library.py)
on numpy; constant folding uses the same code (interpreter.folding)."""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.utils.exceptions import InterpretationError

from autofusion import dtypes
from autofusion.dialects import graph_library as gl
from autofusion.dialects.graph_base import Props
from autofusion.interpreter.graph import (
    Array,
    _compute,
    _extreme,
    _props,
    _result,
    _window_view,
    pool2d,
    pool_padding,
)


def box_corners(boxes: Array, center_point_box: bool) -> Array:
    """[..., 4] boxes as [y_min, x_min, y_max, x_max]."""
    b = boxes.astype(np.float64)
    if center_point_box:  # [x_center, y_center, width, height]
        x, y, w, h = b[..., 0], b[..., 1], b[..., 2] / 2, b[..., 3] / 2
        return np.stack([y - h, x - w, y + h, x + w], -1)
    y = np.sort(b[..., 0::2], -1)
    x = np.sort(b[..., 1::2], -1)
    return np.stack([y[..., 0], x[..., 0], y[..., 1], x[..., 1]], -1)


def overlaps(corners: Array, k: int, others: Array, threshold: float) -> Array:
    """Whether the IoU of box `k` with each of `others` (indices) exceeds `threshold`
    (ONNX: an empty intersection or a non-positive area never suppresses)."""
    a, b = corners[k], corners[others]
    low = np.maximum(a[:2], b[:, :2])
    high = np.minimum(a[2:], b[:, 2:])
    extent = high - low
    inter = extent[:, 0] * extent[:, 1]
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a + area_b - inter
    valid = (extent > 0).all(1) & (area_a > 0) & (area_b > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return valid & (inter / np.where(union > 0, union, 1) > threshold)


def non_max_suppression(
    boxes: Array, scores: Array, center_point_box: bool, limits: tuple[int, float, float | None]
) -> Array:
    """[n, 3] selected (batch, class, box) indices; `limits` is (max boxes per class,
    iou threshold, score threshold or None)."""
    most, iou, least = limits
    selected: list[tuple[int, int, int]] = []
    for batch in range(boxes.shape[0]):
        corners = box_corners(boxes[batch], center_point_box)
        for cls in range(scores.shape[1]):
            s = scores[batch, cls].astype(np.float64)
            candidates = np.arange(len(s)) if least is None else np.flatnonzero(s > least)
            # descending score; a stable sort keeps lower indices first among ties
            order = candidates[np.argsort(-s[candidates], kind="stable")]
            kept: list[int] = []
            for k in order:
                if len(kept) >= most:
                    break
                if not kept or not overlaps(corners, int(k), np.asarray(kept), iou).any():
                    kept.append(int(k))
            selected.extend((batch, cls, k) for k in kept)
    return np.asarray(selected, np.int64).reshape(-1, 3)


def int_pow(x: Array, y: Array) -> Array:
    """x ^ y in x's integer type (see graph_library.IntPowOp)."""
    if y.dtype.kind in "iu" and not (y < 0).any():
        return np.power(x, y.astype(x.dtype))
    with np.errstate(all="ignore"):
        return np.trunc(np.power(x.astype(np.float64), y.astype(np.float64))).astype(x.dtype)


def max_pool_with_indices(
    x: Array, window: tuple[tuple[int, ...], ...], ceil_mode: bool, column_major: bool
) -> tuple[Array, Array]:
    """2-D max pooling of NCHW `x` and the flat input index of each maximum (see
    graph_library.MaxPoolWithIndicesOp); `window` is (kernel, strides, pads, dilations)."""
    kernel, strides, pads, dilations = window
    n, c, h, w = x.shape
    kernel, out, spec = pool_padding(x.shape, kernel, strides, pads, dilations, ceil_mode)
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    planes = np.arange(n * c).reshape(n, c, 1, 1) * (h * w)
    flat = planes + (rows + cols * h if column_major else rows * w + cols)
    views = []
    for array, fill in ((x, _extreme(x, low=True)), (flat, -1)):
        padded = np.pad(array, spec, constant_values=fill)
        views.append(_window_view(padded, *kernel, *strides, *dilations)[:, :, : out[0], : out[1]])
    values, where = (v.reshape(*v.shape[:4], -1) for v in views)
    best = values.max(axis=-1)
    # the first maximum in row-major window order; a padded tap (index -1) never wins
    hit = (values == best[..., None]) & (where >= 0)
    first = hit.argmax(axis=-1)[..., None]
    return best, np.take_along_axis(where, first, axis=-1)[..., 0].astype(np.int64)


def tensor_scatter(
    cache: Array, update: Array, start: Array | None, axis: int, circular: bool
) -> Array:
    """The cache with the update written along `axis` (see graph_library.TensorScatterOp)."""
    axis %= cache.ndim
    batch, extent, length = cache.shape[0], cache.shape[axis], update.shape[axis]
    first = np.zeros(batch, np.int64) if start is None else start.astype(np.int64)
    where = first[:, None] + np.arange(length)
    if circular:
        where %= extent
    elif where.size and (where.min() < 0 or where.max() >= extent):
        raise InterpretationError(
            f"graph.tensor_scatter: a linear write at {where.min()}..{where.max()} leaves the "
            f"cache's {extent} positions"
        )
    out = cache.copy()
    # the batch dim and the sequence dim first: out[b, where[b, s]] = update[b, s]
    np.moveaxis(out, axis, 1)[np.arange(batch)[:, None], where] = np.moveaxis(update, axis, 1)
    return out


def ngram_columns(p: Props) -> list[tuple[int, dict[tuple[int, ...], int]]]:
    """TfIdfVectorizer's pool as (length, n-gram -> column) per counted length; a repeated
    n-gram counts in the column of its last entry, as ONNX's reference does."""
    counts, pool, indexes = (
        p.integers("ngram_counts"),
        p.integers("pool"),
        p.integers("ngram_indexes"),
    )
    low, high = p.integer("min_gram_length"), p.integer("max_gram_length")
    out, first = [], 0
    for k, start in enumerate(counts):
        size = k + 1
        end = counts[k + 1] if k + 1 < len(counts) else len(pool)
        grams = [tuple(pool[i : i + size]) for i in range(start, end - size + 1, size)]
        if low <= size <= high and grams:
            out.append((size, {g: indexes[first + j] for j, g in enumerate(grams)}))
        first += len(grams)
    return out


def tfidf_vectorize(x: Array, p: Props) -> Array:
    """The n-gram counts of each row of `x`, weighted by mode (see
    graph_library.TfIdfVectorizerOp)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    width = max(p.integers("ngram_indexes")) + 1
    freq = np.zeros((rows.shape[0], width), np.float64)
    length = rows.shape[1]
    for size, columns in ngram_columns(p):
        grams = np.asarray(list(columns), np.int64).reshape(-1, size)
        cols = np.asarray(list(columns.values()), np.int64)
        # unigrams are not affected by the skip distance, so they count once
        for gap in [1] if size == 1 else range(1, p.integer("max_skip_count") + 2):
            starts = length - gap * (size - 1)
            if starts <= 0:
                break
            taps = np.stack([rows[:, k * gap : k * gap + starts] for k in range(size)], -1)
            hits = (taps[:, :, None, :] == grams[None, None]).all(-1).sum(1)  # [rows, grams]
            np.add.at(freq.T, cols, hits.T)
    mode = p.text("mode")
    weights = np.asarray(p.reals("weights")[:width]) if p.has("weights") else None
    if mode == "IDF":
        freq = np.where(freq > 0, 1.0 if weights is None else weights, 0.0)
    elif mode == "TFIDF" and weights is not None:
        freq = freq * weights
    return freq.reshape(*x.shape[:-1], width).astype(np.float32)


def pool3d(x: Array, op: gl.Pool3dOp) -> Array:
    """3-D pooling as two 2-D ones: over H, W with D folded into the channels, then over
    D with H, W folded into one dim (see graph_library.Pool3dOp)."""
    p = _props(op)
    k, s, d, pads = (p.integers(n) for n in ("kernel_shape", "strides", "dilations", "pads"))
    ceil = p.flag("ceil_mode")
    kind = "max" if isinstance(op, gl.MaxPool3dOp) else "avg"
    whole = kind == "avg" and p.flag("count_include_pad")
    n, c, depth, h, w = x.shape
    hw_pads = (pads[1], pads[2], pads[4], pads[5])
    y = pool2d(x.reshape(n, c * depth, h, w), k[1:], s[1:], hw_pads, d[1:], ceil, kind, whole)
    oh, ow = y.shape[2:]
    d_window = ((k[0], 1), (s[0], 1), (pads[0], 0, pads[3], 0), (d[0], 1))
    z = pool2d(y.reshape(n, c, depth, oh * ow), *d_window, ceil, kind, whole)
    return z.reshape(n, c, z.shape[2], oh, ow)


def dft_tables(n: int, length: int, inverse: bool, onesided: bool) -> list[Array]:
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


def dft(x: Array, axis: int, length: int, flags: tuple[bool, bool]) -> Array:
    """The DFT of x ([..., 1 or 2]) along `axis` (see graph_library.DftOp): each part
    with the transformed axis last, times the tables, in float64. `flags` is (inverse,
    onesided)."""
    inverse, onesided = flags
    tables = dft_tables(x.shape[axis], length, inverse, onesided)
    parts = [np.moveaxis(x[..., c].astype(np.float64), axis, -1) for c in range(x.shape[-1])]
    outs = []
    for pair in ((0, 1), (2, 3))[: 1 if inverse and onesided else 2]:
        total = sum(part @ tables[pair[c]] for c, part in enumerate(parts))
        outs.append(np.moveaxis(np.asarray(total), -1, axis))
    return np.stack(outs, axis=-1)


def stft(signal: Array, window: Array | None, p: Props) -> Array:
    """STFT-17: the frames gathered as [B, frames, frame_length, 1 or 2], times the window,
    each frame's DFT."""
    step, size = p.integer("frame_step"), p.integer("frame_length")
    frames = 1 + (signal.shape[1] - size) // step
    if frames < 1:
        raise InterpretationError(f"graph.stft: frame_length {size} exceeds the signal's length")
    index = np.arange(frames)[:, None] * step + np.arange(size)[None, :]
    framed = signal[:, index]
    if window is not None:
        framed = framed * window.reshape(1, 1, size, 1)
    return dft(framed, 2, size, (False, p.flag("onesided")))


@register_impls
class GraphLibraryFunctions(InterpreterFunctions):
    """numpy implementations of the graph dialect's library ops."""

    @impl(gl.NonMaxSuppressionOp)
    def run_non_max_suppression(
        self, i: Interpreter, op: gl.NonMaxSuppressionOp, args: PythonValues
    ) -> PythonValues:
        boxes, scores = args
        p = _props(op)
        least = p.real("score_threshold") if p.has("score_threshold") else None
        limits = (p.integer("max_output_boxes_per_class"), p.real("iou_threshold"), least)
        corner = p.flag("center_point_box")
        out = non_max_suppression(np.asarray(boxes), np.asarray(scores), corner, limits)
        return (_result(op, out),)

    @impl(gl.IntPowOp)
    def run_int_pow(self, i: Interpreter, op: gl.IntPowOp, args: PythonValues) -> PythonValues:
        x, y = (np.asarray(a) for a in args)
        return (_result(op, int_pow(x, y)),)

    @impl(gl.DetOp)
    def run_det(self, i: Interpreter, op: gl.DetOp, args: PythonValues) -> PythonValues:
        (x,) = args
        return (_result(op, np.linalg.det(np.asarray(x, np.float64))),)

    @impl(gl.MaxPoolWithIndicesOp)
    def run_max_pool_with_indices(
        self, i: Interpreter, op: gl.MaxPoolWithIndicesOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        window = tuple(p.integers(k) for k in ("kernel_shape", "strides", "pads", "dilations"))
        x = _compute(np.asarray(args[0]))
        values, where = max_pool_with_indices(
            x, window, p.flag("ceil_mode"), p.flag("column_major")
        )
        return (_result(op, values), _result(op, where, 1))

    @impl(gl.TensorScatterOp)
    def run_tensor_scatter(
        self, i: Interpreter, op: gl.TensorScatterOp, args: PythonValues
    ) -> PythonValues:
        cache, update, *start = (np.asarray(a) for a in args)
        p = _props(op)
        out = tensor_scatter(
            cache, update, start[0] if start else None, p.integer("axis"), p.flag("circular")
        )
        return (_result(op, out),)

    @impl(gl.TfIdfVectorizerOp)
    def run_tfidf_vectorizer(
        self, i: Interpreter, op: gl.TfIdfVectorizerOp, args: PythonValues
    ) -> PythonValues:
        return (_result(op, tfidf_vectorize(np.asarray(args[0]), _props(op))),)

    @impl(gl.MaxPool3dOp)
    def run_max_pool3d(
        self, i: Interpreter, op: gl.MaxPool3dOp, args: PythonValues
    ) -> PythonValues:
        return (_result(op, pool3d(_compute(np.asarray(args[0])), op)),)

    @impl(gl.AvgPool3dOp)
    def run_avg_pool3d(
        self, i: Interpreter, op: gl.AvgPool3dOp, args: PythonValues
    ) -> PythonValues:
        return (_result(op, pool3d(_compute(np.asarray(args[0])), op)),)

    @impl(gl.BitCastOp)
    def run_bit_cast(self, i: Interpreter, op: gl.BitCastOp, args: PythonValues) -> PythonValues:
        (x,) = args
        target = dtypes.storage_dtype(op.output.type.element_type)
        # numpy views bytes in the host's order; afc's hosts are little endian, as ONNX's
        # bit patterns are
        flat = np.ascontiguousarray(x).reshape(-1)
        return (flat.view(target).reshape(np.shape(x)),)

    @impl(gl.DftOp)
    def run_dft(self, i: Interpreter, op: gl.DftOp, args: PythonValues) -> PythonValues:
        x, p = _compute(np.asarray(args[0])), _props(op)
        length = gl.DftOp.length(p, x.shape[p.integer("axis")])
        flags = (p.flag("inverse"), p.flag("onesided"))
        return (_result(op, dft(x, p.integer("axis"), length, flags)),)

    @impl(gl.StftOp)
    def run_stft(self, i: Interpreter, op: gl.StftOp, args: PythonValues) -> PythonValues:
        window = _compute(np.asarray(args[1])) if len(args) == 2 else None
        return (_result(op, stft(_compute(np.asarray(args[0])), window, _props(op))),)
