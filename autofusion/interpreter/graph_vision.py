"""Reference semantics of the vision graph ops (see autofusion/dialects/graph_vision.py).

Each follows ONNX's reference implementation (onnx/reference/ops/op_*.py), vectorized:
resize is separable (each resized axis is one weighted gather), grid_sample, roi_align
and deform_conv2d gather their interpolation taps in whole arrays, conv_transpose
scatter-adds one product per kernel offset. Work is in float64 (conv_transpose in its
operands' float32), rounded to the result type once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from autofusion.dialects import graph_vision as gv
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Props
from autofusion.interpreter.graph import Array, _compute, _props, _quiet, _result

# --------------------------------------------------------------------------------------
# Resize
# --------------------------------------------------------------------------------------


def source_coordinates(
    mode: str, out_size: int, in_size: int, scale: float, roi: tuple[float, float] | None
) -> Array:
    """x_original of every output index along one axis (Resize-19's coordinate modes).

    align_corners and tf_crop_and_resize divide by the unrounded output length
    in * scale, as ONNX's reference and backend cases do; ONNX Runtime takes the rounded
    length, so the two differ where in * scale is not an integer."""
    y = np.arange(out_size, dtype=np.float64)
    length = scale * in_size
    if mode == "align_corners":
        return np.zeros(out_size) if length == 1 else y * (in_size - 1) / (length - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        assert roi is not None
        start, end = roi
        if length == 1:
            x = np.full(out_size, (end - start) * (in_size - 1) / 2)
        else:
            x = y * (end - start) * (in_size - 1) / (length - 1)
        return cast(Array, x + start * (in_size - 1))
    if mode == "pytorch_half_pixel":  # the spec's 0 for one element (ONNX Runtime agrees)
        return np.zeros(out_size) if out_size == 1 else (y + 0.5) / scale - 0.5
    if mode == "tf_half_pixel_for_nn":  # Resize-11/13 only
        return (y + 0.5) / scale
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / length)
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5  # half_pixel


def _cubic_kernel(x: Array, a: float) -> Array:
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def resize_weights(p: Props, ratio: Array, scale: float) -> Array:
    """[out, n] weights of the n neighbours of each output index; `ratio` in (0, 1] is the
    source coordinate's distance from the neighbour left of it (1 when it is on one)."""
    mode = p.text("mode")
    r = ratio[:, None]
    if mode == "nearest":
        nearest = p.text("nearest_mode")
        right = {
            "round_prefer_floor": r > 0.5,
            "round_prefer_ceil": r >= 0.5,
            "floor": np.zeros_like(r, dtype=bool),
            "ceil": np.ones_like(r, dtype=bool),
        }[nearest] | (r == 1)
        return np.concatenate([~right, right], axis=1).astype(np.float64)
    a = p.real("cubic_coeff_a")
    if p.flag("antialias"):  # the kernel widens by 1/scale when downsampling
        s = min(scale, 1.0)
        reach = 1 if mode == "linear" else 2  # the kernel's support at scale 1
        start = math.floor(-reach / s) + 1
        taps = np.arange(start, 2 - start)
        args = (taps[None, :] - r) * s
        w = np.clip(1 - np.abs(args), 0, 1) if mode == "linear" else _cubic_kernel(args, a)
        return cast(Array, w / w.sum(axis=1, keepdims=True))
    if mode == "linear":
        return np.concatenate([1 - r, r], axis=1)
    return _cubic_kernel(np.concatenate([r + 1, r, 1 - r, 2 - r], axis=1), a)


def _neighbours(x: Array, n: int) -> Array:
    """[out, n] indices of the n neighbours of each source coordinate, left ties first
    (the reference's nearest-n rule on an edge-padded axis)."""
    pad = math.ceil(n / 2)
    xp = x + pad
    base = np.floor(xp).astype(np.int64)
    frac = xp - base
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    return cast(Array, (base + offset)[:, None] + np.arange(n)[None, :] - pad)


def resize_axis(
    data: Array, axis: int, out_size: int, scale: float, p: Props, roi: tuple[float, float] | None
) -> Array:
    """`data` resized along `axis` to `out_size` elements."""
    in_size = data.shape[axis]
    coord = p.text("coordinate_transformation_mode")
    x = source_coordinates(coord, out_size, in_size, scale, roi)
    whole = np.floor(x)
    ratio = np.where(x == whole, 1.0, x - whole)
    weights = resize_weights(p, ratio, scale)
    idx = _neighbours(x, weights.shape[1])
    if p.flag("exclude_outside"):
        weights = np.where((idx < 0) | (idx >= in_size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    taken = np.take(data, np.clip(idx, 0, in_size - 1), axis=axis)  # [.., out, n, ..]
    shape = (1,) * axis + weights.shape + (1,) * (data.ndim - axis - 1)
    result = cast(Array, (taken * weights.reshape(shape)).sum(axis=axis + 1))
    if coord == "tf_crop_and_resize":
        outside = ((x < 0) | (x > in_size - 1)).reshape(
            (1,) * axis + (-1,) + (1,) * (data.ndim - axis - 1)
        )
        result = np.where(outside, p.real("extrapolation_value"), result)
    return result


def resize(x: Array, p: Props, out_shape: Sequence[int]) -> Array:
    """Resize-19 of `x` to `out_shape`, the result type's shape (`si.DYN` where dynamic)."""
    rank = x.ndim
    scales = gv.reals(p, "scales")
    sizes = p.integers("sizes") if p.has("sizes") else None
    roi = gv.reals(p, "roi")
    y = x.astype(np.float64)
    for axis in range(rank):
        if sizes is not None:
            out = x.shape[axis] if sizes[axis] == gv.KEEP else sizes[axis]
        elif out_shape[axis] != si.DYN:
            out = out_shape[axis]
        else:
            assert scales is not None
            out = gv.resized_dim(x.shape[axis], scales[axis], roi, axis, rank)
        scale = scales[axis] if scales is not None else out / x.shape[axis]
        pair = None if roi is None else (roi[axis], roi[rank + axis])
        if math.isclose(scale, 1.0) and out == x.shape[axis] and (pair in (None, (0.0, 1.0))):
            continue
        y = resize_axis(y, axis, out, scale, p, pair)
    return y


# --------------------------------------------------------------------------------------
# ConvTranspose, DepthToSpace, SpaceToDepth
# --------------------------------------------------------------------------------------


def conv_transpose(x: Array, w: Array, b: Array | None, p: Props) -> Array:
    """Scatter-add of x * w for every kernel offset, then the pads cropped off."""
    spatial = x.ndim - 2
    strides, pads = p.integers("strides"), p.integers("pads")
    dilations, out_pad = p.integers("dilations"), p.integers("output_padding")
    group = p.integer("group")
    kernel = w.shape[2:]
    cg, mg = x.shape[1] // group, w.shape[1]
    full = [
        strides[k] * (x.shape[2 + k] - 1) + (kernel[k] - 1) * dilations[k] + 1 + out_pad[k]
        for k in range(spatial)
    ]
    out = np.zeros((x.shape[0], mg * group, *full), dtype=np.result_type(x, w))
    for g in range(group):
        xg = x[:, g * cg : (g + 1) * cg]
        wg = w[g * cg : (g + 1) * cg]
        for offset in itertools.product(*(range(k) for k in kernel)):
            taps: tuple[slice | int, ...] = (slice(None), slice(None), *offset)
            part = np.moveaxis(np.tensordot(xg, wg[taps], (1, 0)), -1, 1)
            window = tuple(
                slice(o * d, o * d + s * (n - 1) + 1, s)
                for o, d, s, n in zip(offset, dilations, strides, x.shape[2:])
            )
            out[(slice(None), slice(g * mg, (g + 1) * mg), *window)] += part
    crop = tuple(slice(pads[k], full[k] - pads[spatial + k]) for k in range(spatial))
    y = out[(slice(None), slice(None), *crop)]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * spatial)
    return cast(Array, y)


def depth_to_space(x: Array, block: int, mode: str) -> Array:
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, block, block, c // block**2, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // block**2, block, block, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // block**2, h * block, w * block)


def space_to_depth(x: Array, block: int, mode: str) -> Array:
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // block, block, w // block, block)
    t = t.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else t.transpose(0, 1, 3, 5, 2, 4)
    return t.reshape(n, c * block**2, h // block, w // block)


# --------------------------------------------------------------------------------------
# GridSample
# --------------------------------------------------------------------------------------


def reflect(x: Array, lo: float, hi: float) -> Array:
    """x reflected at lo and hi until it lies within them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = lo - x, x - hi
    out = x.copy()
    for dist, edge, other, mask in ((below, lo, hi, x < lo), (above, hi, lo, x > hi)):
        n = np.floor(dist / span)
        r = dist - n * span
        sign = 1 if edge == lo else -1
        near, far = edge + sign * r, other - sign * r
        out = np.where(mask, np.where(n % 2 == 0, near, far), out)
    return out


@dataclass(frozen=True)
class Sampling:
    """How GridSample reads between pixels (its mode, padding_mode and align_corners)."""

    mode: str
    padding: str
    aligned: bool


def grid_taps(how: Sampling, x: Array, size: int) -> tuple[Array, Array, Array]:
    """(indices, weights, in-range mask), each [..., taps], of the input pixels that
    location `x` (unnormalized, along one axis of `size` pixels) reads."""
    mode, padding, aligned = how.mode, how.padding, how.aligned
    lo, hi = (0.0, size - 1.0) if aligned else (-0.5, size - 0.5)
    if mode == "nearest":
        x = np.rint(x)
    if padding == "border":
        x = np.where((x < lo) | (x > hi), np.clip(x, 0, size - 1), x)
    elif padding == "reflection":
        x = np.where((x < lo) | (x > hi), reflect(x, lo, hi), x)
    if mode == "nearest":
        base = np.trunc(x).astype(np.int64)[..., None]
        weights = np.ones(base.shape)
    else:
        start = np.floor(x)
        t = (x - start)[..., None]
        if mode == "linear":
            offsets, weights = np.arange(2), np.concatenate([1 - t, t], axis=-1)
        else:
            offsets = np.arange(-1, 3)
            weights = _cubic_kernel(np.concatenate([t + 1, t, 1 - t, 2 - t], axis=-1), -0.75)
        base = start.astype(np.int64)[..., None] + offsets
    valid = (base >= 0) & (base < size)
    if padding == "reflection":
        base = np.trunc(reflect(base.astype(np.float64), lo, hi)).astype(np.int64)
    return np.clip(base, 0, size - 1), weights, valid | (padding != "zeros")


def grid_sample(x: Array, grid: Array, p: Props) -> Array:
    """GridSample-20 on [N, C, D...] and [N, out..., r] (see the op's docstring)."""
    spatial = x.shape[2:]
    rank = len(spatial)
    aligned = p.flag("align_corners")
    how = Sampling(p.text("mode"), p.text("padding_mode"), aligned)
    taps = []
    for axis, size in enumerate(spatial):
        g = grid[..., rank - 1 - axis].astype(np.float32)  # the grid lists W first
        loc = (g + 1) / 2 * (size - 1) if aligned else ((g + 1) * size - 1) / 2
        taps.append(grid_taps(how, loc.astype(np.float64), size))
    n = x.shape[0]
    batch = np.arange(n).reshape((n,) + (1,) * (grid.ndim - 2))
    channels_last = np.moveaxis(x, 1, -1)  # [N, D..., C]
    out = np.zeros((*grid.shape[:-1], x.shape[1]))  # [N, out..., C]
    for choice in itertools.product(*(range(t[0].shape[-1]) for t in taps)):
        index = tuple(t[0][..., k] for t, k in zip(taps, choice))
        weight = np.prod([t[1][..., k] * t[2][..., k] for t, k in zip(taps, choice)], axis=0)
        out += channels_last[(batch, *index)] * weight[..., None]
    return np.moveaxis(out, -1, 1)


def max_unpool(x: Array, indices: Array, p: Props, out_shape: Sequence[int]) -> Array:
    """MaxUnpool-11: y.flat[indices] = x in the unpooled shape, then zero-padded."""
    inferred = gv.unpooled_shape(x.shape, p)
    y = np.zeros(int(np.prod(inferred)), dtype=x.dtype)
    flat = indices.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= y.size):
        raise InterpretationError(f"graph.max_unpool index out of range [0, {y.size})")
    y[flat] = x.reshape(-1)
    shape = [i if o == si.DYN else o for i, o in zip(inferred, out_shape)]
    out = np.zeros(shape, dtype=x.dtype)
    out[tuple(slice(0, d) for d in inferred)] = y.reshape(inferred)
    return out


def deform_conv2d(args: Sequence[Array], p: Props) -> Array:
    """DeformConv-19: bilinear columns [N, C, kH, kW, oH, oW], then a grouped
    contraction with the weight (see graph.deform_conv2d)."""
    x, w, offset, bias, mask = args
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    (sh, sw), (dh, dw) = p.integers("strides"), p.integers("dilations")
    pads, group, og = p.integers("pads"), p.integer("group"), p.integer("offset_group")
    offset = offset.reshape(n, og, kh, kw, 2, oh, ow)
    mask = np.broadcast_to(mask, (n, og * kh * kw, oh, ow)).reshape(n, og, kh, kw, oh, ow)
    rows = (np.arange(kh) * dh)[:, None, None, None] + (np.arange(oh) * sh - pads[0])[:, None]
    cols = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(ow) * sw - pads[1])[None, :]
    how = Sampling("linear", "zeros", True)
    batch = np.arange(n).reshape(n, 1, 1, 1, 1)
    per_group = c // og
    sampled = np.zeros((n, c, kh, kw, oh, ow))
    for g in range(og):
        ys = grid_taps(how, rows[None] + offset[:, g, :, :, 0], h)
        xs = grid_taps(how, cols[None] + offset[:, g, :, :, 1], wd)
        part = np.moveaxis(x[:, g * per_group : (g + 1) * per_group], 1, -1)  # [N, H, W, Cg]
        acc = np.zeros((n, kh, kw, oh, ow, per_group))
        for a in range(2):
            for b in range(2):
                weight = ys[1][..., a] * ys[2][..., a] * xs[1][..., b] * xs[2][..., b]
                acc += part[batch, ys[0][..., a], xs[0][..., b]] * weight[..., None]
        acc *= mask[:, g][..., None]
        sampled[:, g * per_group : (g + 1) * per_group] = np.moveaxis(acc, -1, 1)
    out = np.empty((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        out[:, g * mg : (g + 1) * mg] = np.einsum(
            "nckluv,mckl->nmuv", sampled[:, g * cg : (g + 1) * cg], w[g * mg : (g + 1) * mg]
        )
    return cast(Array, out + bias.reshape(1, -1, 1, 1))


def _roi_axis(start: float, bin_size: float, bins: int, grid: int, size: int) -> tuple:
    """(low, high, weight of low, weight of high, in range), each [bins, grid], of the
    bilinear samples along one axis of a region (RoiAlign's sample rule)."""
    pos = start + np.arange(bins)[:, None] * bin_size + (np.arange(grid) + 0.5) * bin_size / grid
    inside = (pos >= -1.0) & (pos <= size)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    frac = np.where(edge, 0.0, pos - low)
    return low, high, 1.0 - frac, frac, inside


def roi_align(x: Array, rois: Array, indices: Array, p: Props) -> Array:
    """RoiAlign-16 (see graph.roi_align)."""
    oh, ow = p.integer("output_height"), p.integer("output_width")
    scale, ratio = p.real("spatial_scale"), p.integer("sampling_ratio")
    half = p.text("coordinate_transformation_mode") == "half_pixel"
    h, w = x.shape[2:]
    out = np.empty((rois.shape[0], x.shape[1], oh, ow))
    for r, (roi, b) in enumerate(zip(rois.astype(np.float64), indices)):
        x1, y1, x2, y2 = roi * scale - (0.5 if half else 0.0)
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio if ratio > 0 else math.ceil(rh / oh)
        gw = ratio if ratio > 0 else math.ceil(rw / ow)
        ylo, yhi, yl, yh, yin = _roi_axis(y1, rh / oh, oh, gh, h)
        xlo, xhi, xl, xh, xin = _roi_axis(x1, rw / ow, ow, gw, w)
        valid = (yin[:, :, None, None] & xin[None, None]).astype(np.float64)
        corners = [
            (ylo, xlo, yl, xl),
            (ylo, xhi, yl, xh),
            (yhi, xlo, yh, xl),
            (yhi, xhi, yh, xh),
        ]
        terms = []
        for ys, xs, wy, wx in corners:
            value = x[b][:, ys[:, :, None, None], xs[None, None]]  # [C, oh, gh, ow, gw]
            terms.append(value * (wy[:, :, None, None] * wx[None, None] * valid))
        if p.text("mode") == "avg":
            out[r] = sum(terms).sum(axis=(2, 4)) / max(gh * gw, 1)
        else:
            out[r] = np.max(np.max(terms, axis=0), axis=(2, 4))
    return out


# --------------------------------------------------------------------------------------
# LpPool, GlobalLpPool, Col2Im, AffineGrid
# --------------------------------------------------------------------------------------


def _lp_terms(x: Array, power: int) -> Array:
    """|x|^p in float64 (x*x for p = 2)."""
    x = x.astype(np.float64)
    return x * x if power == 2 else np.abs(x) ** power


def lp_pool(x: Array, p: Props) -> Array:
    """LpPool-18: the windows of the zero-padded |x|^p as one strided view (taps [::d]
    of each dilated span, windows [::s]), summed, then the p-th root."""
    k, s, d, pads = (p.integers(n) for n in ("kernel_shape", "strides", "dilations", "pads"))
    r, power = len(k), p.integer("p")
    terms = np.pad(_lp_terms(x, power), [(0, 0), (0, 0), *zip(pads[:r], pads[r:])])
    spans = [(kk - 1) * dd + 1 for kk, dd in zip(k, d)]
    view = np.lib.stride_tricks.sliding_window_view(terms, spans, axis=tuple(range(2, 2 + r)))
    taps = (
        slice(None),
        slice(None),
        *(slice(None, None, st) for st in s),
        *(slice(None, None, dd) for dd in d),
    )
    total = view[taps].sum(axis=tuple(range(-r, 0)))
    return cast(Array, np.power(total, 1.0 / power))


def global_lp_pool(x: Array, power: int) -> Array:
    """GlobalLpPool-2: the p-norm over the spatial dims, kept."""
    total = _lp_terms(x, power).sum(axis=tuple(range(2, x.ndim)), keepdims=True)
    return cast(Array, np.power(total, 1.0 / power))


def col2im(x: Array, p: Props) -> Array:
    """Col2Im-18: the columns as [N, C, block..., blocks...], each block offset's
    [N, C, blocks...] slab added at its strided, dilated place in the padded image
    (one add per block offset), then the pads cropped off."""
    image, block = p.integers("image_shape"), p.integers("block_shape")
    strides, pads, dilations = p.integers("strides"), p.integers("pads"), p.integers("dilations")
    counts = gv.col2im_blocks(p)
    r = len(image)
    n, c = x.shape[0], x.shape[1] // int(np.prod(block))
    cols = x.reshape(n, c, *block, *counts)
    padded = np.zeros((n, c, *(image[k] + pads[k] + pads[r + k] for k in range(r))), x.dtype)
    for offset in itertools.product(*(range(b) for b in block)):
        place = tuple(
            slice(o * dd, o * dd + st * (m - 1) + 1, st)
            for o, dd, st, m in zip(offset, dilations, strides, counts)
        )
        taps: tuple[slice | int, ...] = (slice(None), slice(None), *offset)
        padded[(slice(None), slice(None), *place)] += cols[taps]
    crop = tuple(slice(pads[k], pads[k] + image[k]) for k in range(r))
    return padded[(slice(None), slice(None), *crop)]


def affine_base_grid(sizes: Sequence[int], align_corners: bool) -> Array:
    """[prod(sizes), r + 1] homogeneous normalized locations, innermost axis first
    (AffineGrid-20's original grid)."""
    axes = []
    for size in sizes:
        if align_corners:
            step = 2.0 / (size - 1) if size > 1 else 2.0
            axes.append(np.arange(-1, 1 + 0.0001, step)[:size])
        else:
            step = 2.0 / size
            axes.append(np.arange(-1 + step / 2, 1, step)[:size])
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m.reshape(-1) for m in reversed(mesh)]
    return np.stack([*coords, np.ones_like(coords[0])], axis=1)


def affine_grid(theta: Array, p: Props) -> Array:
    """AffineGrid-20: every base location times each batch's theta^T."""
    size = p.integers("size")
    if theta.shape[0] != size[0]:
        raise InterpretationError(
            f"graph.affine_grid: theta has batch {theta.shape[0]}, size {size[0]}"
        )
    spatial = size[2:]
    base = affine_base_grid(spatial, p.flag("align_corners"))
    points = np.einsum("pk,nik->npi", base, theta.astype(np.float64))
    return points.reshape(theta.shape[0], *spatial, len(spatial))


@register_impls
class GraphVisionFunctions(InterpreterFunctions):
    """numpy implementations of the vision graph ops."""

    @impl(gv.ResizeOp)
    def run_resize(self, i: Interpreter, op: gv.ResizeOp, args: PythonValues) -> PythonValues:
        out_shape = cast(TensorType, op.output.type).get_shape()
        return (_result(op, _quiet(lambda: resize(_compute(args[0]), _props(op), out_shape))),)

    @impl(gv.ConvTransposeOp)
    def run_conv_transpose(
        self, i: Interpreter, op: gv.ConvTransposeOp, args: PythonValues
    ) -> PythonValues:
        x, w = _compute(args[0]), _compute(args[1])
        b = _compute(args[2]) if len(args) == 3 else None
        return (_result(op, _quiet(lambda: conv_transpose(x, w, b, _props(op)))),)

    @impl(gv.GridSampleOp)
    def run_grid_sample(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        x, g = _compute(args[0]), _compute(args[1])
        return (_result(op, _quiet(lambda: grid_sample(x, g, _props(op)))),)

    @impl(gv.MaxUnpoolOp)
    def run_max_unpool(
        self, i: Interpreter, op: gv.MaxUnpoolOp, args: PythonValues
    ) -> PythonValues:
        out_shape = cast(TensorType, op.output.type).get_shape()
        return (_result(op, max_unpool(args[0], args[1], _props(op), out_shape)),)

    @impl(gv.DeformConv2dOp)
    def run_deform_conv2d(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        values = [_compute(a) for a in args]
        return (_result(op, _quiet(lambda: deform_conv2d(values, _props(op)))),)

    @impl(gv.RoiAlignOp)
    def run_roi_align(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        x, rois = _compute(args[0]), _compute(args[1])
        return (_result(op, _quiet(lambda: roi_align(x, rois, args[2], _props(op)))),)

    @impl(gv.DepthToSpaceOp)
    def run_depth_to_space(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        p = _props(op)
        return (_result(op, depth_to_space(args[0], p.integer("blocksize"), p.text("mode"))),)

    @impl(gv.SpaceToDepthOp)
    def run_space_to_depth(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        p = _props(op)
        return (_result(op, space_to_depth(args[0], p.integer("blocksize"), p.text("mode"))),)

    @impl(gv.LpPoolOp)
    def run_lp_pool(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return (_result(op, _quiet(lambda: lp_pool(_compute(args[0]), _props(op)))),)

    @impl(gv.GlobalLpPoolOp)
    def run_global_lp_pool(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        x, power = _compute(args[0]), _props(op).integer("p")
        return (_result(op, _quiet(lambda: global_lp_pool(x, power))),)

    @impl(gv.Col2ImOp)
    def run_col2im(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return (_result(op, col2im(_compute(args[0]), _props(op))),)

    @impl(gv.AffineGridOp)
    def run_affine_grid(self, i: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return (_result(op, affine_grid(_compute(args[0]), _props(op))),)
