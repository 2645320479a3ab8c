"""Vision ops of the graph dialect: resampling, transposed convolution, depth/space moves,
p-norm pooling, col2im and affine grids.

They follow the ONNX operator specs (https://onnx.ai/onnx/operators/) on NCHW (N-D
spatial) tensors. None of them has a kernel template yet, so each is `opaque`: ub-fusion
keeps it alone in its group and lower-to-buffer refuses the group by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f64,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Fusible, FusionKind, GraphOp, Props, tensor
from autofusion.dialects.op_facts import (
    CONV_ROLES,
    ContractionFacts,
    OperandRole,
    StreamingFacts,
    dims,
    elements,
    window_macs,
)
from autofusion.dialects.shape_inference import ShapeError

DYN = si.DYN

RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
    "tf_half_pixel_for_nn",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
DEPTH_SPACE_MODES = ("DCR", "CRD")

# a `sizes` entry keeping the input's (possibly dynamic) dim
KEEP = -1


def reals_attr(values: Sequence[float]) -> DenseArrayBase:
    """A list of floats as a property (array<f64: ...>)."""
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def reals(p: Props, name: str) -> tuple[float, ...] | None:
    """Float-list property `name`, or None when absent."""
    return p.reals(name) if p.has(name) else None


def _choice(p: Props, name: str, allowed: Sequence[str]) -> str:
    value = p.text(name)
    if value not in allowed:
        raise ShapeError(f"{name} '{value}' is not one of {', '.join(allowed)}")
    return value


def _per_dim(values: Sequence[object] | None, rank: int, what: str) -> None:
    if values is not None and len(values) != rank:
        raise ShapeError(f"{what} has {len(values)} entries for a rank-{rank} input")


# --------------------------------------------------------------------------------------
# Resize
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ResizeOp(GraphOp, StreamingFacts):
    """Resample every axis of the input (ONNX Resize-19, Upsample-10 as nearest/asymmetric).

    `scales` (one per axis) drive the coordinate transform; `sizes` is the output shape
    (-1 keeps the input's dim). Without `sizes` an output dim is floor(in * scale);
    without `scales` a scale is out / in. `roi` ([starts..., ends...], normalized) is for tf_crop_and_resize only.
    Example: `%y = graph.resize %x {mode = "linear", scales = array<f64: 1., 1., 2., 2.>,
    ...} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>`
    """

    name = "graph.resize"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    nearest_mode = prop_def(StringAttr)
    cubic_coeff_a = prop_def(FloatAttr)
    exclude_outside = prop_def(BoolAttr)
    extrapolation_value = prop_def(FloatAttr)
    antialias = prop_def(BoolAttr)
    scales = opt_prop_def(DenseArrayBase)
    sizes = opt_prop_def(DenseArrayBase)
    roi = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = x.get_shape()
        rank = len(shape)
        mode = _choice(p, "mode", RESIZE_MODES)
        coord = _choice(p, "coordinate_transformation_mode", COORDINATE_MODES)
        _choice(p, "nearest_mode", NEAREST_MODES)
        p.real("cubic_coeff_a")
        p.real("extrapolation_value")
        p.flag("exclude_outside")
        if p.flag("antialias") and mode == "nearest":
            raise ShapeError("antialias applies to linear and cubic modes only")
        if mode != "nearest" and not dtypes.is_float(x.element_type):
            raise ShapeError(f"{mode} mode needs a floating-point input, got {x.element_type}")
        scales = reals(p, "scales")
        sizes = p.integers("sizes") if p.has("sizes") else None
        roi = reals(p, "roi")
        _per_dim(scales, rank, "scales")
        _per_dim(sizes, rank, "sizes")
        _per_dim(roi, 2 * rank, "roi")
        if scales is None and sizes is None:
            raise ShapeError("needs scales or sizes")
        if scales is not None and any(not s > 0 for s in scales):
            raise ShapeError(f"scales {list(scales)} must be positive")
        if sizes is not None and any(s <= 0 and s != KEEP for s in sizes):
            raise ShapeError(f"sizes {list(sizes)} must be positive (or -1: keep)")
        if (roi is not None) != (coord == "tf_crop_and_resize"):
            raise ShapeError("roi is given exactly when the mode is tf_crop_and_resize")
        if sizes is not None:
            out = [d if s == KEEP else s for d, s in zip(shape, sizes)]
            return [tensor(out, x.element_type)]
        assert scales is not None
        out = [
            d if d == DYN and s == 1.0 else DYN if d == DYN else resized_dim(d, s, roi, k, rank)
            for k, (d, s) in enumerate(zip(shape, scales))
        ]
        return [tensor(out, x.element_type)]


def resized_dim(size: int, scale: float, roi: Sequence[float] | None, axis: int, rank: int) -> int:
    """floor(in * (roi_end - roi_start) * scale) (Resize-19's output_dimension)."""
    extent = 1.0 if roi is None else roi[rank + axis] - roi[axis]
    out = int(size * extent * scale)
    if out <= 0:
        raise ShapeError(f"axis {axis} of extent {size} resizes to {out} elements")
    return out


# --------------------------------------------------------------------------------------
# Transposed convolution
# --------------------------------------------------------------------------------------


def conv_transpose_shape(
    x: Sequence[int], w: Sequence[int], p: Props, group: int
) -> tuple[int, ...]:
    """Output shape of ConvTranspose-11 with explicit pads:
    out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end."""
    spatial = len(x) - 2
    if spatial < 1 or len(w) != len(x):
        raise ShapeError(f"input {si.fmt(x)} and weight {si.fmt(w)} are not N-D conv shapes")
    strides, pads = p.integers("strides"), p.integers("pads")
    dilations, out_pad = p.integers("dilations"), p.integers("output_padding")
    for vals, n, what in (
        (strides, spatial, "strides"),
        (dilations, spatial, "dilations"),
        (out_pad, spatial, "output_padding"),
        (pads, 2 * spatial, "pads"),
    ):
        if len(vals) != n:
            raise ShapeError(f"{what} has {len(vals)} entries, expected {n}")
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations) or any(v < 0 for v in pads):
        raise ShapeError("strides and dilations must be >= 1 and pads >= 0")
    if any(not 0 <= o < max(s, d) for o, s, d in zip(out_pad, strides, dilations)):
        raise ShapeError(f"output_padding {list(out_pad)} must be below stride or dilation")
    if (
        group < 1
        or (x[1] != DYN and x[1] % group)
        or (w[0] != DYN and x[1] != DYN and w[0] != x[1])
    ):
        raise ShapeError(f"input channels {x[1]} and weight {si.fmt(w)} do not fit group {group}")
    out = [x[0], DYN if w[1] == DYN else w[1] * group]
    for k in range(spatial):
        if x[2 + k] == DYN or w[2 + k] == DYN:
            out.append(DYN)
            continue
        size = (
            strides[k] * (x[2 + k] - 1)
            + out_pad[k]
            + (w[2 + k] - 1) * dilations[k]
            + 1
            - pads[k]
            - pads[spatial + k]
        )
        if size <= 0:
            raise ShapeError(f"spatial axis {k} has output extent {size}")
        out.append(size)
    return tuple(out)


@irdl_op_definition
class ConvTransposeOp(GraphOp, ContractionFacts):
    """N-D transposed convolution, input [N, C, D...], weight [C, M/group, k...] (ONNX
    ConvTranspose-11 with explicit pads [begin..., end...]; output_shape and auto_pad are
    resolved to pads at import). y = col2im(W^T x) + bias."""

    name = "graph.conv_transpose"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    output_padding = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)
    # the conv kernel template is a forward conv2d: no template takes this op yet
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True
    CONTRACTED_ROLES: ClassVar[tuple[OperandRole, OperandRole]] = CONV_ROLES

    def macs(self, dynamic_size: int) -> float:
        """Each input element is multiplied into weight[c, :, ...]'s (M/group x window)
        taps."""
        w = dims(self.weight, dynamic_size)
        return float(elements(self.input, dynamic_size)) * (si.num_elements(w[1:]) or 0)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, w = types[0], types[1]
        if x.element_type != w.element_type:
            raise ShapeError(
                f"input and weight element types differ: {x.element_type}, {w.element_type}"
            )
        shape = conv_transpose_shape(x.get_shape(), w.get_shape(), p, p.integer("group"))
        if len(types) == 3:
            b = types[2]
            if len(b.get_shape()) != 1 or not si.dims_compatible(b.get_shape()[0], shape[1]):
                raise ShapeError(
                    f"bias must be 1-D with {shape[1]} elements, got {si.fmt(b.get_shape())}"
                )
            if b.element_type != x.element_type:
                raise ShapeError(f"bias has element type {b.element_type}, not {x.element_type}")
        return [tensor(shape, x.element_type)]


# --------------------------------------------------------------------------------------
# Depth <-> space
# --------------------------------------------------------------------------------------


def _block(p: Props, shape: Sequence[int]) -> int:
    if len(shape) != 4:
        raise ShapeError(f"expects a 4-D NCHW input, got {si.fmt(shape)}")
    b = p.integer("blocksize")
    if b < 1:
        raise ShapeError(f"blocksize {b} must be >= 1")
    _choice(p, "mode", DEPTH_SPACE_MODES)
    return b


def _times(d: int, k: int) -> int:
    return DYN if d == DYN else d * k


def _split(d: int, k: int, what: str) -> int:
    if d == DYN:
        return DYN
    if d % k:
        raise ShapeError(f"{what} {d} is not divisible by {k}")
    return d // k


@irdl_op_definition
class DepthToSpaceOp(GraphOp, StreamingFacts):
    """Move channel blocks into b x b spatial blocks (ONNX DepthToSpace-13):
    [N, C, H, W] -> [N, C/b^2, H*b, W*b]; DCR takes depth as (b, b, C'), CRD as (C', b, b)."""

    name = "graph.depth_to_space"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    blocksize = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        b = _block(p, types[0].get_shape())
        n, c, h, w = types[0].get_shape()
        shape = (n, _split(c, b * b, "channels"), _times(h, b), _times(w, b))
        return [tensor(shape, types[0].element_type)]


@irdl_op_definition
class SpaceToDepthOp(GraphOp, StreamingFacts):
    """Move b x b spatial blocks into channels (ONNX SpaceToDepth-13, mode of -28):
    [N, C, H, W] -> [N, C*b^2, H/b, W/b]; DCR puts depth as (b, b, C), CRD as (C, b, b)."""

    name = "graph.space_to_depth"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    blocksize = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        b = _block(p, types[0].get_shape())
        n, c, h, w = types[0].get_shape()
        shape = (n, _times(c, b * b), _split(h, b, "height"), _split(w, b, "width"))
        return [tensor(shape, types[0].element_type)]


# --------------------------------------------------------------------------------------
# GridSample
# --------------------------------------------------------------------------------------

GRID_MODES = ("linear", "nearest", "cubic")
GRID_PADDINGS = ("zeros", "border", "reflection")


@irdl_op_definition
class GridSampleOp(GraphOp, StreamingFacts):
    """Sample the input at grid locations (ONNX GridSample-20): input [N, C, D...], grid
    [N, out..., r] of normalized coordinates in [-1, 1], innermost spatial axis first;
    result [N, C, out...]. Modes linear, nearest (half to even) and cubic (a = -0.75);
    padding zeros, border or reflection; align_corners maps -1/1 to the corner centres."""

    name = "graph.grid_sample"
    input = operand_def(TensorType)
    grid = operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    padding_mode = prop_def(StringAttr)
    align_corners = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, g = types[0].get_shape(), types[1].get_shape()
        _choice(p, "mode", GRID_MODES)
        _choice(p, "padding_mode", GRID_PADDINGS)
        p.flag("align_corners")
        spatial = len(x) - 2
        if spatial < 1 or len(g) != len(x) or g[-1] not in (spatial, DYN):
            raise ShapeError(
                f"grid {si.fmt(g)} does not hold {spatial}-D locations for input {si.fmt(x)}"
            )
        if not si.dims_compatible(x[0], g[0]):
            raise ShapeError(f"input batch {x[0]} and grid batch {g[0]} differ")
        if not dtypes.is_float(types[1].element_type):
            raise ShapeError(f"grid must be floating point, got {types[1].element_type}")
        return [tensor((x[0], x[1], *g[1:-1]), types[0].element_type)]


# --------------------------------------------------------------------------------------
# MaxUnpool
# --------------------------------------------------------------------------------------


def unpooled_shape(x: Sequence[int], p: Props) -> tuple[int, ...]:
    """MaxUnpool-11's inferred shape: (in - 1) * stride - pad_begin - pad_end + kernel."""
    spatial = len(x) - 2
    kernel, strides, pads = p.integers("kernel_shape"), p.integers("strides"), p.integers("pads")
    if spatial < 1 or len(kernel) != spatial or len(strides) != spatial or len(pads) != 2 * spatial:
        raise ShapeError(
            f"kernel_shape {list(kernel)}, strides {list(strides)} and pads {list(pads)} "
            f"do not fit a {si.fmt(x)} input"
        )
    out = [x[0], x[1]]
    for k in range(spatial):
        d = x[2 + k]
        out.append(
            DYN if d == DYN else (d - 1) * strides[k] - pads[k] - pads[spatial + k] + kernel[k]
        )
    return tuple(out)


@irdl_op_definition
class MaxUnpoolOp(GraphOp, StreamingFacts):
    """Scatter the values of a max pooling back to where they came from (ONNX
    MaxUnpool-11): zeros of the unpooled shape with y.flat[indices] = x, padded with zeros
    at the end of each axis to `output_shape` when that is given."""

    name = "graph.max_unpool"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    output_shape = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, idx = types[0], types[1]
        if not si.shapes_compatible(idx.get_shape(), x.get_shape()):
            raise ShapeError(
                f"indices {si.fmt(idx.get_shape())} differ from {si.fmt(x.get_shape())}"
            )
        if dtypes.type_name(idx.element_type) != "i64":
            raise ShapeError(f"indices must be i64, got {idx.element_type}")
        shape = unpooled_shape(x.get_shape(), p)
        if p.has("output_shape"):
            given = p.integers("output_shape")
            if len(given) != len(shape) or any(d != DYN and g < d for g, d in zip(given, shape)):
                raise ShapeError(f"output_shape {list(given)} is smaller than {si.fmt(shape)}")
            shape = tuple(given)
        return [tensor(shape, x.element_type)]


# --------------------------------------------------------------------------------------
# DeformConv
# --------------------------------------------------------------------------------------


@irdl_op_definition
class DeformConv2dOp(GraphOp, ContractionFacts):
    """Deformable 2-D convolution (ONNX DeformConv-19): input [N, C, H, W], weight
    [M, C/group, kH, kW], offset [N, G*2*kH*kW, oH, oW] ((dy, dx) per tap and offset
    group G), bias [M], mask broadcasting to [N, G*kH*kW, oH, oW]. Each tap reads the
    input bilinearly (zeros outside) at its strided, dilated, padded position plus its
    offset, scaled by its mask. pads are [top, left, bottom, right]."""

    name = "graph.deform_conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    offset = operand_def(TensorType)
    bias = operand_def(TensorType)
    mask = operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)
    offset_group = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True
    CONTRACTED_ROLES: ClassVar[tuple[OperandRole, OperandRole]] = CONV_ROLES

    def macs(self, dynamic_size: int) -> float:
        """conv2d's multiply-adds (the bilinear sampling of the taps is not counted)."""
        return window_macs(self, self.weight, dynamic_size)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, w, off, b, m = (t.get_shape() for t in types)
        elt = types[0].element_type
        if any(t.element_type != elt for t in types[1:]):
            raise ShapeError(f"operands must all have element type {elt}")
        if len(x) != 4 or len(w) != 4 or len(off) != 4 or len(m) != 4:
            raise ShapeError("input, weight, offset and mask must be 4-D")
        group, og = p.integer("group"), p.integer("offset_group")
        out = si.conv2d(
            x, w, p.integers("strides"), p.integers("pads"), p.integers("dilations"), group
        )
        taps = w[2] * w[3]
        want = (x[0], og * 2 * taps, out[2], out[3])
        if not si.shapes_compatible(off, want):
            raise ShapeError(f"offset {si.fmt(off)} is not {si.fmt(want)}")
        if og < 1 or (x[1] != DYN and x[1] % og):
            raise ShapeError(f"input channels {x[1]} do not split into {og} offset groups")
        if not si.broadcasts_to(m, (x[0], og * taps, out[2], out[3])):
            raise ShapeError(f"mask {si.fmt(m)} does not broadcast to the taps")
        if len(b) != 1 or not si.dims_compatible(b[0], out[1]):
            raise ShapeError(f"bias must be 1-D with {out[1]} elements, got {si.fmt(b)}")
        return [tensor(out, elt)]


# --------------------------------------------------------------------------------------
# RoiAlign
# --------------------------------------------------------------------------------------

ROI_MODES = ("avg", "max")
ROI_COORDINATE_MODES = ("half_pixel", "output_half_pixel")


@irdl_op_definition
class RoiAlignOp(GraphOp, StreamingFacts):
    """Pool each region of interest to output_height x output_width bins (ONNX
    RoiAlign-16): input [N, C, H, W], rois [R, 4] as (x1, y1, x2, y2) scaled by
    spatial_scale, batch_indices [R]; result [R, C, oH, oW]. Each bin averages (avg) or
    takes the largest weighted corner (max, as ONNX Runtime) of bilinear samples."""

    name = "graph.roi_align"
    input = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    output_height = prop_def(IntegerAttr)
    output_width = prop_def(IntegerAttr)
    sampling_ratio = prop_def(IntegerAttr)
    spatial_scale = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, rois, idx = (t.get_shape() for t in types)
        _choice(p, "mode", ROI_MODES)
        _choice(p, "coordinate_transformation_mode", ROI_COORDINATE_MODES)
        p.real("spatial_scale")
        oh, ow = p.integer("output_height"), p.integer("output_width")
        if oh < 1 or ow < 1 or p.integer("sampling_ratio") < 0:
            raise ShapeError("output sizes must be >= 1 and sampling_ratio >= 0")
        if len(x) != 4 or len(rois) != 2 or rois[1] not in (4, DYN) or len(idx) != 1:
            raise ShapeError(
                f"expects input [N, C, H, W], rois [R, 4], batch_indices [R], got "
                f"{si.fmt(x)}, {si.fmt(rois)}, {si.fmt(idx)}"
            )
        if not si.dims_compatible(rois[0], idx[0]):
            raise ShapeError(f"{rois[0]} rois but {idx[0]} batch indices")
        if types[1].element_type != types[0].element_type:
            raise ShapeError(f"rois must have element type {types[0].element_type}")
        if dtypes.type_name(types[2].element_type) != "i64":
            raise ShapeError(f"batch_indices must be i64, got {types[2].element_type}")
        return [tensor((rois[0], x[1], oh, ow), types[0].element_type)]


# --------------------------------------------------------------------------------------
# LpPool, GlobalLpPool
# --------------------------------------------------------------------------------------


class LpNormPoolOp(GraphOp, StreamingFacts, ABC):
    """p-norm pooling, (sum of |x|^p)^(1/p), over windows of [N, C, D...]."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    p = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    @abstractmethod
    def pooled(cls, x: Sequence[int], p: Props) -> tuple[int, ...]:
        """The result's spatial dims."""

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0].get_shape()
        if len(x) < 3:
            raise ShapeError(f"expects [N, C] and spatial dims, got {si.fmt(x)}")
        if p.integer("p") < 1:
            raise ShapeError(f"p {p.integer('p')} must be >= 1")
        return [tensor((x[0], x[1], *cls.pooled(x, p)), types[0].element_type)]


@irdl_op_definition
class LpPoolOp(LpNormPoolOp):
    """The p-norm of each window over [N, C, D...] with 1 to 3 spatial dims (ONNX
    LpPool-18 with explicit pads [begin..., end...]: padding adds nothing to a sum).
    ceil_mode is not an attribute: ONNX Runtime sums a partial last window and ONNX's
    reference scales it up, so the importer refuses it."""

    name = "graph.lp_pool"
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)

    @classmethod
    def pooled(cls, x: Sequence[int], p: Props) -> tuple[int, ...]:
        if len(x) > 5:
            raise ShapeError(f"expects 1 to 3 spatial dims, got {si.fmt(x)}")
        k, s, d, pads = (p.integers(n) for n in ("kernel_shape", "strides", "dilations", "pads"))
        return si.window_nd(x, k, s, pads, d)


@irdl_op_definition
class GlobalLpPoolOp(LpNormPoolOp):
    """The p-norm over all spatial dims of [N, C, D...], kept as 1 (ONNX GlobalLpPool-2)."""

    name = "graph.global_lp_pool"

    @classmethod
    def pooled(cls, x: Sequence[int], p: Props) -> tuple[int, ...]:
        return (1,) * (len(x) - 2)


# --------------------------------------------------------------------------------------
# Col2Im
# --------------------------------------------------------------------------------------


def col2im_blocks(p: Props) -> tuple[int, ...]:
    """The number of blocks along each image axis (Col2Im-18): (image + pads - (block -
    1) * dilation - 1) // stride + 1."""
    image, block = p.integers("image_shape"), p.integers("block_shape")
    strides, pads, dilations = p.integers("strides"), p.integers("pads"), p.integers("dilations")
    r = len(image)
    for what, values, n in (
        ("block_shape", block, r),
        ("strides", strides, r),
        ("dilations", dilations, r),
        ("pads", pads, 2 * r),
    ):
        if len(values) != n:
            raise ShapeError(f"{what} has {len(values)} entries for a {r}-D image, expected {n}")
    if r < 1 or any(v < 1 for v in (*image, *block, *strides, *dilations)) or min(pads) < 0:
        raise ShapeError("image_shape, block_shape, strides and dilations must be >= 1, pads >= 0")
    counts = []
    for k in range(r):
        span = image[k] + pads[k] + pads[r + k] - (block[k] - 1) * dilations[k] - 1
        if span < 0:
            raise ShapeError(
                f"block {list(block)} does not fit image {list(image)} (pads {list(pads)})"
            )
        counts.append(span // strides[k] + 1)
    return tuple(counts)


@irdl_op_definition
class Col2ImOp(GraphOp, StreamingFacts):
    """Sum sliding-block columns back into images (ONNX Col2Im-18, the inverse layout of
    im2col): input [N, C * prod(block_shape), L], the block's channel-major columns, L
    blocks in row-major order; result [N, C, image_shape...]. Each column value adds to
    the pixel at its block's strided position plus its dilated offset, minus the begin
    pads; pads are [begin..., end...]."""

    name = "graph.col2im"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    image_shape = prop_def(DenseArrayBase)
    block_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0].get_shape()
        if len(x) != 3:
            raise ShapeError(f"expects [N, C * block size, L] columns, got {si.fmt(x)}")
        counts = col2im_blocks(p)
        size = si.num_elements(p.integers("block_shape")) or 1
        channels = _split(x[1], size, "channels")
        blocks = si.num_elements(counts)
        if x[2] != DYN and x[2] != blocks:
            raise ShapeError(f"{x[2]} columns for {blocks} blocks ({list(counts)}) of the image")
        return [tensor((x[0], channels, *p.integers("image_shape")), types[0].element_type)]


# --------------------------------------------------------------------------------------
# AffineGrid
# --------------------------------------------------------------------------------------


@irdl_op_definition
class AffineGridOp(GraphOp, StreamingFacts):
    """The sampling grid of affine transforms (ONNX AffineGrid-20): theta [N, r, r + 1]
    (r = 2 or 3) times the homogeneous normalized location of every pixel of an image of
    `size` [N, C, D...]; result [N, D..., r], each location innermost axis first (as
    GridSample reads it). align_corners puts -1 and 1 at the corner pixels' centres, else
    at their outer edges. The batch is theta's (size's N, which must equal it at run time,
    may be a constant where theta's is a symbolic dim)."""

    name = "graph.affine_grid"
    theta = operand_def(TensorType)
    output = result_def(TensorType)
    size = prop_def(DenseArrayBase)
    align_corners = prop_def(BoolAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.OPAQUE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        theta, size = types[0].get_shape(), p.integers("size")
        p.flag("align_corners")
        if len(size) not in (4, 5) or min(size) < 1:
            raise ShapeError(f"size {list(size)} is not a positive [N, C, H, W] or [N, C, D, H, W]")
        r = len(size) - 2
        if len(theta) != 3 or not si.shapes_compatible(theta[1:], (r, r + 1)):
            raise ShapeError(f"theta {si.fmt(theta)} is not [N, {r}, {r + 1}]")
        return [tensor((theta[0], *size[2:], r), types[0].element_type)]


VISION_OPS = [
    RoiAlignOp,
    DeformConv2dOp,
    ResizeOp,
    ConvTransposeOp,
    DepthToSpaceOp,
    SpaceToDepthOp,
    GridSampleOp,
    MaxUnpoolOp,
    LpPoolOp,
    GlobalLpPoolOp,
    Col2ImOp,
    AffineGridOp,
]
