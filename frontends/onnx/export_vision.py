"""ONNX export of the vision graph ops (autofusion/dialects/graph_vision.py): each is the
ONNX operator it was imported from (Resize, ConvTranspose, DepthToSpace, SpaceToDepth,
GridSample, MaxUnpool, DeformConv, RoiAlign, LpPool, GlobalLpPool, Col2Im, AffineGrid).

`table()` gives their entries of `export_table.TABLE`; export_ops is imported where it
is used.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import TensorProto
from xdsl.ir import Operation

from autofusion.dialects import graph_vision as gv

if TYPE_CHECKING:
    from frontends.onnx.export_ops import Emitter, Mapping


def _resize_inputs(e: Emitter) -> tuple[str, str, dict[str, Any]]:
    """(scales, sizes, attributes) of Resize: scales when they give the result shape
    (floor(in * scale)); else sizes, for the changed axes only (Resize-18 axes) where an
    axis is kept, with the keep_aspect_ratio_policy that recovers a uniform scale."""
    from frontends.onnx.export_ops import NotExportable

    p = e.props
    scales = gv.reals(p, "scales")
    sizes = p.integers("sizes") if p.has("sizes") else None
    shape = e.in_type().get_shape()
    rank = len(shape)
    if scales is not None:
        roi = gv.reals(p, "roi")
        floors = [
            gv.KEEP if d == gv.DYN else gv.resized_dim(d, s, roi, k, rank)
            for k, (d, s) in enumerate(zip(shape, scales))
        ]
        if sizes is None or all(z in (f, gv.KEEP) for z, f in zip(sizes, floors)):
            return e.const(np.asarray(scales, np.float32), TensorProto.FLOAT, "scales"), "", {}
    assert sizes is not None
    if scales is None and gv.KEEP not in sizes:
        return "", e.ints(sizes, "sizes"), {}
    what = f"graph.resize to sizes {list(sizes)} with scales {scales}"
    if e.opset < 18:
        raise NotExportable(f"{what} needs Resize-18's axes (opset 18), not {e.opset}")
    axes = [k for k, z in enumerate(sizes) if z != gv.KEEP]
    targets = [sizes[a] for a in axes]
    if scales is None:
        return "", e.ints(targets, "sizes"), {"axes": axes}
    uniform = {scales[a] for a in axes}
    if len(uniform) == 1 and all(shape[a] != gv.DYN for a in axes):
        scale = uniform.pop()
        ratios = [sizes[a] / shape[a] for a in axes]
        for policy, pick in (("not_larger", min), ("not_smaller", max)):
            if math.isclose(pick(ratios), scale):
                attrs = {"axes": axes, "keep_aspect_ratio_policy": policy}
                return "", e.ints(targets, "sizes"), attrs
    raise NotExportable(f"{what}: ONNX Resize takes either the scales or the sizes")


def resize(e: Emitter) -> None:
    # Resize-11/13/18/19: roi, scales and sizes as inputs; antialias from 18,
    # half_pixel_symmetric from 19, tf_half_pixel_for_nn before 18
    from frontends.onnx.export_ops import NotExportable

    p = e.props
    coord = p.text("coordinate_transformation_mode")
    attrs: dict[str, Any] = {
        "mode": p.text("mode"),
        "coordinate_transformation_mode": coord,
        "nearest_mode": p.text("nearest_mode"),
        "cubic_coeff_a": p.real("cubic_coeff_a"),
        "exclude_outside": int(p.flag("exclude_outside")),
        "extrapolation_value": p.real("extrapolation_value"),
    }
    if p.flag("antialias"):  # from opset 18 (export_attributes)
        attrs["antialias"] = 1
    if coord == "half_pixel_symmetric" and e.opset < 19:
        raise NotExportable(f"Resize half_pixel_symmetric needs opset 19, not {e.opset}")
    if coord == "tf_half_pixel_for_nn" and e.opset >= 18:
        raise NotExportable(f"Resize tf_half_pixel_for_nn is gone from opset 18 ({e.opset})")
    roi = gv.reals(p, "roi")
    roi_name = "" if roi is None else e.const(np.asarray(roi, np.float32), TensorProto.FLOAT, "roi")
    scales, sizes, extra = _resize_inputs(e)
    if e.opset < 13:  # Resize-11 always takes roi and scales (empty when unused)
        empty = np.zeros(0, np.float32)
        roi_name = roi_name or e.const(empty, TensorProto.FLOAT, "roi")
        scales = scales or e.const(empty, TensorProto.FLOAT, "scales")
    ins = [e.inputs[0], roi_name, scales] + ([sizes] if sizes else [])
    e.nodes("Resize", ins, e.outputs, **attrs, **extra)


def conv_transpose(e: Emitter) -> None:
    # ConvTranspose-11 with explicit pads
    p = e.props
    e.nodes(
        "ConvTranspose",
        e.inputs,
        e.outputs,
        kernel_shape=list(e.in_type(1).get_shape()[2:]),
        **e.int_lists("strides", "pads", "dilations"),
        output_padding=list(p.integers("output_padding")),
        group=p.integer("group"),
    )


def depth_to_space(e: Emitter) -> None:
    # DepthToSpace-13
    p = e.props
    e.nodes(
        "DepthToSpace", e.inputs, e.outputs, blocksize=p.integer("blocksize"), mode=p.text("mode")
    )


def space_to_depth(e: Emitter) -> None:
    # SpaceToDepth-13 is DCR; SpaceToDepth-28 adds mode (left out before as DCR, refused
    # as CRD: export_attributes)
    p = e.props
    attrs = {"blocksize": p.integer("blocksize"), "mode": p.text("mode")}
    e.nodes("SpaceToDepth", e.inputs, e.outputs, **attrs)


def grid_sample(e: Emitter) -> None:
    # GridSample-20 (N-D, linear/cubic); GridSample-16 (4-D, bilinear/bicubic)
    from frontends.onnx.export_ops import NotExportable

    p = e.props
    mode = p.text("mode")
    if e.opset < 20:
        if e.opset < 16 or e.rank() != 4:
            raise NotExportable(f"a {e.rank()}-D GridSample needs opset 20, not {e.opset}")
        mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    e.nodes(
        "GridSample",
        e.inputs,
        e.outputs,
        mode=mode,
        padding_mode=p.text("padding_mode"),
        align_corners=int(p.flag("align_corners")),
    )


def max_unpool(e: Emitter) -> None:
    # MaxUnpool-11; output_shape as a constant input
    p = e.props
    ins = list(e.inputs)
    if p.has("output_shape"):
        ins.append(e.ints(p.integers("output_shape"), "output_shape"))
    e.nodes(
        "MaxUnpool",
        ins,
        e.outputs,
        **e.int_lists("kernel_shape", "strides", "pads"),
    )


def deform_conv(e: Emitter) -> None:
    # DeformConv-19 with bias and mask inputs
    from frontends.onnx.export_ops import NotExportable

    if e.opset < 19:
        raise NotExportable(f"DeformConv needs opset 19, not {e.opset}")
    p = e.props
    mask = e.inputs[4]
    want = list(e.in_type(2).get_shape())
    want[1] = want[1] // 2
    if list(e.in_type(4).get_shape()) != want:  # DeformConv takes a full-shape mask
        shape = e.node("Shape", [e.inputs[2]], elem=TensorProto.INT64)
        batch = e.node("Slice", [shape, e.ints([0], "start"), e.ints([1], "end")])
        spatial = e.node("Slice", [shape, e.ints([2], "start"), e.ints([4], "end")])
        taps = e.ints([want[1]], "taps")
        target = e.node("Concat", [batch, taps, spatial], axis=0)
        mask = e.node("Expand", [mask, target])
    e.nodes(
        "DeformConv",
        [*e.inputs[:4], mask],
        e.outputs,
        kernel_shape=list(e.in_type(1).get_shape()[2:]),
        **e.int_lists("strides", "pads", "dilations"),
        group=p.integer("group"),
        offset_group=p.integer("offset_group"),
    )


def roi_align(e: Emitter) -> None:
    # RoiAlign-16 (coordinate_transformation_mode); RoiAlign-10 is output_half_pixel
    from frontends.onnx.export_ops import NotExportable

    p = e.props
    attrs: dict[str, Any] = {
        "mode": p.text("mode"),
        "output_height": p.integer("output_height"),
        "output_width": p.integer("output_width"),
        "sampling_ratio": p.integer("sampling_ratio"),
        "spatial_scale": p.real("spatial_scale"),
    }
    coord = p.text("coordinate_transformation_mode")
    if e.opset >= 16:
        attrs["coordinate_transformation_mode"] = coord
    elif coord != "output_half_pixel":
        raise NotExportable(f"RoiAlign {coord} needs opset 16, not {e.opset}")
    e.nodes("RoiAlign", e.inputs, e.outputs, **attrs)


def _needs(e: Emitter, op_type: str, opset: int) -> None:
    from frontends.onnx.export_ops import NotExportable

    if e.opset < opset:
        raise NotExportable(f"{op_type} needs opset {opset}, not {e.opset}")


def lp_pool(e: Emitter) -> None:
    # LpPool-11 (explicit pads); dilations from LpPool-18
    p = e.props
    attrs: dict[str, Any] = {**e.int_lists("kernel_shape", "strides", "pads", "dilations")}
    if any(d != 1 for d in attrs["dilations"]):
        _needs(e, "LpPool with dilations", 18)
    if e.opset < 18:
        del attrs["dilations"]
    e.nodes("LpPool", e.inputs, e.outputs, p=p.integer("p"), **attrs)


def global_lp_pool(e: Emitter) -> None:
    # GlobalLpPool-2
    e.nodes("GlobalLpPool", e.inputs, e.outputs, p=e.props.integer("p"))


def col2im(e: Emitter) -> None:
    # Col2Im-18: image_shape and block_shape as int64 inputs
    _needs(e, "Col2Im", 18)
    p = e.props
    image = e.ints(p.integers("image_shape"), "image_shape")
    block = e.ints(p.integers("block_shape"), "block_shape")
    e.nodes(
        "Col2Im",
        [e.inputs[0], image, block],
        e.outputs,
        **e.int_lists("strides", "pads", "dilations"),
    )


def affine_grid(e: Emitter) -> None:
    # AffineGrid-20: size as an int64 input
    _needs(e, "AffineGrid", 20)
    p = e.props
    size = e.ints(p.integers("size"), "size")
    e.nodes(
        "AffineGrid", [e.inputs[0], size], e.outputs, align_corners=int(p.flag("align_corners"))
    )


def table() -> dict[type[Operation], Mapping]:
    """The export entries of the vision ops."""
    from frontends.onnx.export_ops import Standard

    return {
        gv.ResizeOp: Standard(resize, "Resize (scales or sizes input)"),
        gv.ConvTransposeOp: Standard(conv_transpose, "ConvTranspose (explicit pads)"),
        gv.DepthToSpaceOp: Standard(depth_to_space, "DepthToSpace"),
        gv.SpaceToDepthOp: Standard(space_to_depth, "SpaceToDepth (mode from 28)"),
        gv.GridSampleOp: Standard(grid_sample, "GridSample (-16 names before opset 20)"),
        gv.MaxUnpoolOp: Standard(max_unpool, "MaxUnpool (output_shape input)"),
        gv.DeformConv2dOp: Standard(deform_conv, "DeformConv (full-shape mask)"),
        gv.RoiAlignOp: Standard(roi_align, "RoiAlign"),
        gv.LpPoolOp: Standard(lp_pool, "LpPool (explicit pads)"),
        gv.GlobalLpPoolOp: Standard(global_lp_pool, "GlobalLpPool"),
        gv.Col2ImOp: Standard(col2im, "Col2Im (opset 18)"),
        gv.AffineGridOp: Standard(affine_grid, "AffineGrid (opset 20)"),
    }
