"""Converters of ONNX vision operators: Resize, Upsample, ConvTranspose, DepthToSpace,
SpaceToDepth, LpPool, GlobalLpPool, GridSample, AffineGrid, MaxUnpool, Col2Im, DeformConv
and RoiAlign.

Each becomes its graph op (autofusion/dialects/graph_vision.py), which the export writes
back as the same operator. Operator versions are cited as `Op-<since_version>` from
https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from autofusion.dialects import graph_vision as gv
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Node, OpConverters, Value
from frontends.onnx.ops_math import (
    _window_pads,
)

OPS = OpConverters(
    versions={
        "Resize": (13, 18, 19),
        "Upsample": (10,),
        "ConvTranspose": (11, 22),
        "DepthToSpace": (13, 28),
        "SpaceToDepth": (13, 28),
        "LpPool": (11, 18, 22),
        "GlobalLpPool": (2, 22),
        "GridSample": (16, 20, 22),
        "AffineGrid": (20,),
        "MaxUnpool": (11, 22),
        "Col2Im": (18,),
        "DeformConv": (19, 22),
        "RoiAlign": (10, 16, 22),
    }
)

DYN = si.DYN


def _choice(node: Node, name: str, default: str, allowed: Sequence[str]) -> str:
    value = str(node.attr(name, default))
    if value not in allowed:
        raise node.reject(name, value, ", ".join(allowed))
    return value


# --------------------------------------------------------------------------------------
# Resize and Upsample
# --------------------------------------------------------------------------------------


def _resize_axes(node: Node, rank: int) -> list[int]:
    """Resize-18's axes (every axis by default), normalized and without repeats."""
    given = node.ints_attr("axes") if node.version >= 18 else None
    if given is None:
        return list(range(rank))
    axes = [a + rank if a < 0 else a for a in given]
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise node.error(f"axes {given} are not distinct axes of a rank-{rank} input")
    return axes


def _full(values: Sequence[float], axes: Sequence[int], fill: Sequence[float]) -> list[float]:
    out = list(fill)
    for a, v in zip(axes, values):
        out[a] = v
    return out


def _resize_size_props(
    node: Node, x: Value, axes: list[int], sizes: list[int], policy: str
) -> dict[str, object]:
    """`sizes` (for `axes`) as the op's sizes, and scales when keep_aspect_ratio_policy
    rescales them (Resize-18: one scale, min or max of out/in, over the axes)."""
    rank = len(x.shape)
    if len(sizes) != len(axes):
        raise node.error(f"sizes {sizes} needs one entry per resized axis ({len(axes)})")
    if policy == "stretch":
        return {"sizes": [int(v) for v in _full(sizes, axes, [gv.KEEP] * rank)]}
    if any(x.shape[a] == DYN for a in axes):
        raise node.symbolic_error("the output shape")
    ratios = [sizes[i] / x.shape[a] for i, a in enumerate(axes)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    # Resize-18: output size = round(scale * in), halves up
    out = [int(scale * x.shape[k] + 0.5) if k in axes else gv.KEEP for k in range(rank)]
    return {"sizes": out, "scales": gv.reals_attr(_full([scale] * len(axes), axes, [1.0] * rank))}


@OPS.register("Resize")
def convert_resize(node: Node) -> Sequence[Value | None]:
    """Resize-11/13/18/19: every mode, coordinate mode, nearest mode, axes and
    keep_aspect_ratio_policy; antialias for linear and cubic. scales, sizes and roi
    must be constants. Resize-10 is Upsample-10."""
    if node.version < 11:
        return convert_upsample(node)
    x = node.input(0)
    rank = len(x.shape)
    mode = _choice(node, "mode", "nearest", gv.RESIZE_MODES)
    # half_pixel_symmetric is new in Resize-19; tf_half_pixel_for_nn is gone from Resize-18
    modes = [
        m
        for m in gv.COORDINATE_MODES
        if (m != "half_pixel_symmetric" or node.version >= 19)
        and (m != "tf_half_pixel_for_nn" or node.version < 18)
    ]
    coord = str(node.attr("coordinate_transformation_mode", "half_pixel"))
    if coord not in modes:
        raise node.reject("coordinate_transformation_mode", coord, ", ".join(modes))
    antialias = bool(node.attr("antialias", 0)) if node.version >= 18 else False
    if antialias and mode == "nearest":
        raise node.reject("antialias", 1, "antialias applies to linear and cubic modes")
    axes = _resize_axes(node, rank)
    policy = "stretch"  # Resize-18's keep_aspect_ratio_policy applies to sizes only
    if node.version >= 18:
        policies = ("stretch", "not_larger", "not_smaller")
        policy = _choice(node, "keep_aspect_ratio_policy", "stretch", policies)
    scales = node.const_input(2, "scales")
    sizes = node.ints_input(3, "sizes")
    has_scales = scales is not None and scales.size > 0
    if has_scales == bool(sizes):
        raise node.error("exactly one of scales and sizes must be given")
    props: dict[str, object] = {
        "mode": mode,
        "coordinate_transformation_mode": coord,
        "nearest_mode": _choice(node, "nearest_mode", "round_prefer_floor", gv.NEAREST_MODES),
        "cubic_coeff_a": float(node.attr("cubic_coeff_a", -0.75)),
        "exclude_outside": bool(node.attr("exclude_outside", 0)),
        "extrapolation_value": float(node.attr("extrapolation_value", 0.0)),
        "antialias": antialias,
    }
    if has_scales:
        assert scales is not None
        values = [float(v) for v in np.asarray(scales).reshape(-1)]
        if len(values) != len(axes):
            raise node.error(f"scales {values} needs one entry per resized axis ({len(axes)})")
        props["scales"] = gv.reals_attr(_full(values, axes, [1.0] * rank))
    else:
        props.update(_resize_size_props(node, x, axes, sizes or [], policy))
    if coord == "tf_crop_and_resize":
        roi = node.const_input(1, "roi")
        if roi is None or roi.size != 2 * len(axes):
            raise node.error(f"tf_crop_and_resize needs an roi of {2 * len(axes)} values")
        r = [float(v) for v in np.asarray(roi).reshape(-1)]
        n = len(axes)
        props["roi"] = gv.reals_attr(
            _full(r[:n], axes, [0.0] * rank) + _full(r[n:], axes, [1.0] * rank)
        )
    # other modes ignore roi (Resize-13+), so it may be computed
    return node.emit(gv.ResizeOp, [x], props)


@OPS.register("Upsample")
def convert_upsample(node: Node) -> list[Value]:
    """Upsample-7/9/10 (deprecated) and Resize-10: Resize with asymmetric coordinates; nearest takes the
    floor of the source coordinate, as ONNX Runtime does. Scales below 1 are refused
    (ONNX Runtime rounds those up, which no Resize mode expresses)."""
    x = node.input(0)
    mode = _choice(node, "mode", "nearest", ("nearest", "linear"))
    # Upsample-7 gives scales as an attribute, Upsample-9 on as an input
    scales = node.const_input(1, "scales") if node.version >= 9 else node.attr("scales")
    if scales is None:
        raise node.error("input #1 (scales) is required")
    values = [float(v) for v in np.asarray(scales).reshape(-1)]
    if len(values) != len(x.shape) or any(v < 1 for v in values):
        raise node.error(f"scales {values} must give one value >= 1 per axis")
    props: dict[str, object] = {
        "mode": mode,
        "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "floor",
        "cubic_coeff_a": -0.75,
        "exclude_outside": False,
        "extrapolation_value": 0.0,
        "antialias": False,
        "scales": gv.reals_attr(values),
    }
    return node.emit(gv.ResizeOp, [x], props)


# --------------------------------------------------------------------------------------
# ConvTranspose
# --------------------------------------------------------------------------------------


def _conv_transpose_pads(
    node: Node, x: Value, kernel: Sequence[int], attrs: dict[str, list[int]]
) -> tuple[list[int], list[int]]:
    """(pads, output_padding) from pads, output_shape and auto_pad (ConvTranspose-11).

    With output_shape (or SAME_*: output = input * stride) the total padding is split
    with the extra element at the end for SAME_UPPER, at the beginning otherwise; a
    negative end pad (an output larger than the full result) becomes output padding."""
    spatial = len(kernel)
    auto_pad = _choice(node, "auto_pad", "NOTSET", ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"))
    out_pad = attrs["output_padding"]
    output_shape = node.ints_attr("output_shape")
    pads = node.ints_attr("pads")
    if output_shape is None and auto_pad in ("NOTSET", "VALID"):
        if auto_pad == "VALID" and pads is not None and any(pads):
            raise node.error("pads cannot be combined with auto_pad=VALID")
        return (pads if pads is not None and auto_pad == "NOTSET" else [0] * 2 * spatial), out_pad
    in_dims = x.shape[2:]
    if DYN in in_dims:
        raise node.symbolic_error("the padding")
    if output_shape is None:
        output_shape = [d * s for d, s in zip(in_dims, attrs["strides"])]
    output_shape = output_shape[-spatial:]
    begins, ends = [], []
    for k in range(spatial):
        full = (
            attrs["strides"][k] * (in_dims[k] - 1)
            + out_pad[k]
            + (kernel[k] - 1) * attrs["dilations"][k]
            + 1
        )
        total = full - output_shape[k]
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    out_pad = list(out_pad)
    for k in range(spatial):
        if ends[k] < 0:
            out_pad[k] -= ends[k]
            ends[k] = 0
    if any(b < 0 for b in begins):
        raise node.error(f"output_shape {output_shape} needs negative leading pads")
    return begins + ends, out_pad


@OPS.register("ConvTranspose")
def convert_conv_transpose(node: Node) -> list[Value]:
    """ConvTranspose-11 in any spatial rank: strides, pads, output_padding, output_shape,
    dilations, group and auto_pad."""
    x, w = node.input(0), node.input(1)
    spatial = len(x.shape) - 2
    if spatial < 1 or len(w.shape) != len(x.shape):
        raise node.error(f"input {si.fmt(x.shape)} and weight {si.fmt(w.shape)} do not match")
    kernel = list(w.shape[2:])
    given = node.ints_attr("kernel_shape")
    if given is not None and given != kernel:
        raise node.error(f"kernel_shape {given} differs from the weight's {kernel}")
    if DYN in kernel:
        raise node.error(f"the weight {si.fmt(w.shape)} needs a static kernel")
    attrs = {
        "strides": node.ints_attr("strides", [1] * spatial) or [],
        "dilations": node.ints_attr("dilations", [1] * spatial) or [],
        "output_padding": node.ints_attr("output_padding", [0] * spatial) or [],
    }
    for name, values in attrs.items():
        if len(values) != spatial:
            raise node.error(f"{name} {values} must have {spatial} values")
    pads, out_pad = _conv_transpose_pads(node, x, kernel, attrs)
    props = {**attrs, "pads": pads, "output_padding": out_pad, "group": int(node.attr("group", 1))}
    b = node.opt_input(2)
    operands = [x, w] if b is None else [x, w, b]
    return node.emit(gv.ConvTransposeOp, operands, props)


# --------------------------------------------------------------------------------------
# DepthToSpace, SpaceToDepth
# --------------------------------------------------------------------------------------


@OPS.register("DepthToSpace", "SpaceToDepth")
def convert_depth_space(node: Node) -> list[Value]:
    """DepthToSpace-13 (DCR/CRD) and SpaceToDepth-13 (DCR; CRD from version 28)."""
    has_mode = node.op_type == "DepthToSpace" or node.version >= 28
    mode = _choice(node, "mode", "DCR", gv.DEPTH_SPACE_MODES) if has_mode else "DCR"
    props = {"blocksize": int(node.attr("blocksize")), "mode": mode}
    cls = gv.DepthToSpaceOp if node.op_type == "DepthToSpace" else gv.SpaceToDepthOp
    return node.emit(cls, [node.input(0)], props)


# --------------------------------------------------------------------------------------
# LpPool, GlobalLpPool
# --------------------------------------------------------------------------------------


def _p(node: Node) -> int:
    p = int(node.attr("p", 2))
    if p < 1:
        raise node.reject("p", p, "p >= 1")
    return p


_LP_CEIL = (
    "only ceil_mode=0: ONNX Runtime sums a partial last window, ONNX's reference scales "
    "its sum by kernel size / taps inside"
)


@OPS.register("LpPool")
def convert_lp_pool(node: Node) -> list[Value]:
    """LpPool-11/18/22 in 1-D, 2-D and 3-D as graph.lp_pool (auto_pad resolved to pads);
    ceil_mode=1 is refused (`_LP_CEIL`)."""
    x = node.input(0)
    spatial = len(x.shape) - 2
    if spatial not in (1, 2, 3):
        raise node.error(f"expects an N, C and 1 to 3 spatial dims, got {si.fmt(x.shape)}")
    kernel = node.ints_attr("kernel_shape")
    if kernel is None or len(kernel) != spatial:
        raise node.error(f"kernel_shape must have {spatial} values, got {kernel}")
    strides = node.ints_attr("strides", [1] * spatial) or []
    dilations = [1] * spatial
    if node.version >= 18:  # LpPool-18 adds dilations and ceil_mode
        dilations = node.ints_attr("dilations", dilations) or []
        if node.attr("ceil_mode", 0):
            raise node.reject("ceil_mode", 1, _LP_CEIL)
    props = {
        "kernel_shape": kernel,
        "strides": strides,
        "dilations": dilations,
        "pads": _window_pads(node, x, kernel, strides, dilations),
        "p": _p(node),
    }
    return node.emit(gv.LpPoolOp, [x], props)


@OPS.register("GlobalLpPool")
def convert_global_lp_pool(node: Node) -> list[Value]:
    """GlobalLpPool-2/22 as graph.global_lp_pool."""
    return node.emit(gv.GlobalLpPoolOp, [node.input(0)], {"p": _p(node)})


# --------------------------------------------------------------------------------------
# GridSample, AffineGrid
# --------------------------------------------------------------------------------------

# GridSample-16's mode names -> GridSample-20's
_GRID_MODES_16 = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}


@OPS.register("GridSample")
def convert_grid_sample(node: Node) -> list[Value]:
    """GridSample-16 (4-D, bilinear/bicubic) and -20/22 (N-D, linear/cubic)."""
    x = node.input(0)
    if node.version < 20:
        mode = _GRID_MODES_16.get(str(node.attr("mode", "bilinear")))
        if mode is None or len(x.shape) != 4:
            raise node.error("GridSample-16 takes 4-D inputs and bilinear, nearest or bicubic")
    else:
        mode = _choice(node, "mode", "linear", gv.GRID_MODES)
    props = {
        "mode": mode,
        "padding_mode": _choice(node, "padding_mode", "zeros", gv.GRID_PADDINGS),
        "align_corners": bool(node.attr("align_corners", 0)),
    }
    return node.emit(gv.GridSampleOp, [x, node.input(1)], props)


@OPS.register("AffineGrid")
def convert_affine_grid(node: Node) -> list[Value]:
    """AffineGrid-20 (2-D and 3-D) as graph.affine_grid; size must be a constant."""
    size = node.ints_input(1, "size")
    if size is None:
        raise node.error("the size input is required")
    align = int(node.attr("align_corners", 0))
    if align not in (0, 1):
        raise node.reject("align_corners", align, "0 or 1")
    props = {"size": size, "align_corners": bool(align)}
    return node.emit(gv.AffineGridOp, [node.input(0)], props)


# --------------------------------------------------------------------------------------
# MaxUnpool, Col2Im
# --------------------------------------------------------------------------------------


@OPS.register("MaxUnpool")
def convert_max_unpool(node: Node) -> list[Value]:
    """MaxUnpool-11: kernel_shape, strides, pads and the optional output_shape input
    (a constant)."""
    x = node.input(0)
    spatial = len(x.shape) - 2
    kernel = node.ints_attr("kernel_shape")
    if kernel is None or len(kernel) != spatial:
        raise node.error(f"kernel_shape must have {spatial} values, got {kernel}")
    props: dict[str, object] = {
        "kernel_shape": kernel,
        "strides": node.ints_attr("strides", [1] * spatial),
        "pads": node.ints_attr("pads", [0] * 2 * spatial),
        "output_shape": node.ints_input(2, "output_shape"),
    }
    return node.emit(gv.MaxUnpoolOp, [x, node.input(1)], props)


@OPS.register("Col2Im")
def convert_col2im(node: Node) -> list[Value]:
    """Col2Im-18 as graph.col2im; image_shape and block_shape must be constants."""
    image = node.ints_input(1, "image_shape")
    block = node.ints_input(2, "block_shape")
    if image is None or block is None:
        raise node.error("the image_shape and block_shape inputs are required")
    r = len(image)
    props = {
        "image_shape": image,
        "block_shape": block,
        "strides": node.ints_attr("strides", [1] * r),
        "pads": node.ints_attr("pads", [0] * 2 * r),
        "dilations": node.ints_attr("dilations", [1] * r),
    }
    return node.emit(gv.Col2ImOp, [node.input(0)], props)


@OPS.register("DeformConv")
def convert_deform_conv(node: Node) -> list[Value]:
    """DeformConv-19 in 2-D; an absent bias is zeros and an absent mask ones."""
    x, w, offset = node.input(0), node.input(1), node.input(2)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise node.error(f"only 2-D deformable convolution is supported, got {si.fmt(x.shape)}")
    kernel = list(w.shape[2:])
    given = node.ints_attr("kernel_shape")
    if given is not None and given != kernel:
        raise node.error(f"kernel_shape {given} differs from the weight's {kernel}")
    og = int(node.attr("offset_group", 1))
    if w.shape[0] == DYN or DYN in kernel:
        raise node.error(f"the weight {si.fmt(w.shape)} needs static dims")
    bias = node.opt_input(3)
    if bias is None:
        bias = node.const(np.zeros(w.shape[0], np.float32), x.elt)
    mask = node.opt_input(4)
    if mask is None:
        mask = node.const(np.ones((1, og * kernel[0] * kernel[1], 1, 1), np.float32), x.elt)
    props = {
        "strides": node.ints_attr("strides", [1, 1]),
        "pads": node.ints_attr("pads", [0, 0, 0, 0]),
        "dilations": node.ints_attr("dilations", [1, 1]),
        "group": int(node.attr("group", 1)),
        "offset_group": og,
    }
    return node.emit(gv.DeformConv2dOp, [x, w, offset, bias, mask], props)


@OPS.register("RoiAlign")
def convert_roi_align(node: Node) -> list[Value]:
    """RoiAlign-10/16/22: avg and max modes, both coordinate transformation modes
    (RoiAlign-10 has none: its coordinates are output_half_pixel)."""
    coord = "output_half_pixel"
    if node.version >= 16:
        modes = gv.ROI_COORDINATE_MODES
        coord = _choice(node, "coordinate_transformation_mode", "half_pixel", modes)
    props = {
        "mode": _choice(node, "mode", "avg", gv.ROI_MODES),
        "coordinate_transformation_mode": coord,
        "output_height": int(node.attr("output_height", 1)),
        "output_width": int(node.attr("output_width", 1)),
        "sampling_ratio": int(node.attr("sampling_ratio", 0)),
        "spatial_scale": float(node.attr("spatial_scale", 1.0)),
    }
    return node.emit(gv.RoiAlignOp, [node.input(0), node.input(1), node.input(2)], props)
