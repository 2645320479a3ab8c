"""Graph ops that run as library kernels only: non-max suppression, which selects a
data-dependent number of boxes, the bit-pattern reinterpretation BitCast, and the power
of an integer base (graph.pow, which vector kernels compute, is floating point only),
the determinant, max pooling with the positions of its maxima, the KV-cache update
TensorScatter, the n-gram counter TfIdfVectorizer, 3-D pooling and the Fourier
transforms DFT and STFT.

No kernel template covers them (fusion kind opaque), so ub-fusion leaves each one on its
own. Semantics follow the ONNX operators of the same names
(https://onnx.ai/onnx/operators/): NonMaxSuppression-11, BitCast-26, Pow-15, Det-22,
MaxPool-12, TensorScatter-24, TfIdfVectorizer-9, AveragePool-19, DFT-20 and STFT-17.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i64,
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
from xdsl.utils.exceptions import VerifyException

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Fusible, FusionKind, GraphOp, Props, tensor
from autofusion.dialects.op_facts import MovementFacts, OpWork, StreamingFacts, elements
from autofusion.dialects.shape_inference import DYN, ShapeError

OPAQUE = Fusible(FusionKind.OPAQUE)


@irdl_op_definition
class NonMaxSuppressionOp(GraphOp, StreamingFacts):
    """Greedy non-max suppression per batch and class (ONNX NonMaxSuppression-11).

    boxes [B, N, 4] (corners [y1, x1, y2, x2] in either order, or with center_point_box
    [x_center, y_center, width, height]) and scores [B, C, N]. Per (batch, class), boxes
    scoring above score_threshold (when given) are taken by descending score (ties: lower
    index first), each unless its IoU with one already taken exceeds iou_threshold, up
    to max_output_boxes_per_class. The result is [n, 3] (batch, class, box) triples, n
    dynamic.
    """

    name = "graph.non_max_suppression"
    boxes = operand_def(TensorType)
    scores = operand_def(TensorType)
    output = result_def(TensorType)
    center_point_box = prop_def(BoolAttr)
    max_output_boxes_per_class = prop_def(IntegerAttr)
    iou_threshold = prop_def(FloatAttr)
    score_threshold = opt_prop_def(FloatAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        boxes, scores = (list(t.get_shape()) for t in types)
        p.flag("center_point_box")
        if p.integer("max_output_boxes_per_class") < 0:
            raise ShapeError("max_output_boxes_per_class must be >= 0")
        if len(boxes) != 3 or boxes[2] not in (4, DYN) or len(scores) != 3:
            raise ShapeError(f"boxes must be [B, N, 4] and scores [B, C, N], got {boxes}, {scores}")
        for what, b, s in (("batch", boxes[0], scores[0]), ("box", boxes[1], scores[2])):
            if DYN not in (b, s) and b != s:
                raise ShapeError(f"boxes and scores have different {what} counts {b} and {s}")
        if types[0].element_type != types[1].element_type:
            raise ShapeError("boxes and scores have different element types")
        return [tensor([DYN, 3], i64)]


@irdl_op_definition
class BitCastOp(GraphOp, MovementFacts):
    """The input's bits as another element type of the same width, shape unchanged
    (ONNX BitCast-26; little endian). The target type is the result's."""

    name = "graph.bit_cast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        # the target element type is the result's own; only the shape is inferred
        return [types[0]]

    def verify_(self) -> None:
        x = self.input.type
        y = self.output.type
        assert isinstance(x, TensorType) and isinstance(y, TensorType)
        if x.get_shape() != y.get_shape():
            raise VerifyException(f"'graph.bit_cast' changes the shape from {x} to {y}")
        widths = {dtypes.byte_width(t.element_type) for t in (x, y)}
        names = {dtypes.type_name(t.element_type) for t in (x, y)}
        if len(widths) != 1 or "bf16" in names:  # bf16 is stored as float32
            raise VerifyException(
                f"'graph.bit_cast' needs two element types of one width other than bf16, "
                f"got {x.element_type} and {y.element_type}"
            )


@irdl_op_definition
class IntPowOp(GraphOp, StreamingFacts):
    """z = x ^ y with numpy broadcasting for an integer base x (ONNX Pow-15): an integer
    exponent gives the exact power (wrapping on overflow as numpy does), a negative or
    floating-point one pow in float64 truncated toward zero to x's type."""

    name = "graph.int_pow"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, y = types
        if not dtypes.is_integer(x.element_type) or dtypes.type_name(x.element_type) == "i1":
            raise ShapeError(f"expects an integer base, got {x.element_type}")
        if dtypes.type_name(y.element_type) == "i1":
            raise ShapeError("expects a numeric exponent, got i1")
        return [tensor(si.broadcast(x.get_shape(), y.get_shape()), x.element_type)]


@irdl_op_definition
class DetOp(GraphOp, StreamingFacts):
    """The determinants of the trailing [M, M] matrices of a floating-point input: [...]
    (ONNX Det-11/22)."""

    name = "graph.det"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        (x,) = types
        shape = list(x.get_shape())
        if not dtypes.is_float(x.element_type):
            raise ShapeError(f"expects a floating-point operand, got {x.element_type}")
        if len(shape) < 2 or (DYN not in shape[-2:] and shape[-1] != shape[-2]):
            raise ShapeError(f"expects square matrices in the last two dims, got {shape}")
        return [tensor(shape[:-2], x.element_type)]

    def flops(self, dynamic_size: int) -> OpWork:
        # an LU factorisation: about M^3 / 3 multiply-adds per M x M matrix
        shape = cast(TensorType, self.input.type).get_shape()
        m = dynamic_size if shape[-1] == DYN else shape[-1]
        matrices = elements(self.output, dynamic_size)
        return OpWork(0.0, 2 * matrices * m**3 / 3)


@irdl_op_definition
class MaxPoolWithIndicesOp(GraphOp, StreamingFacts):
    """2-D max pooling over NCHW (graph.max_pool2d's window) that also gives each maximum's
    position (ONNX MaxPool-12 with its Indices output): the flat index into the whole
    input, ((n * C + c) * H + h) * W + w, or with column_major (storage_order=1)
    (n * C + c) * H * W + h + w * H. The first maximum in row-major window order wins;
    padding never does."""

    name = "graph.max_pool2d_with_indices"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    indices = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    ceil_mode = prop_def(BoolAttr)
    column_major = prop_def(BoolAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        p.flag("column_major")
        shape = types[0].get_shape()
        if len(shape) != 4:
            raise ShapeError(f"expects a 4-D NCHW input, got {si.fmt(shape)}")
        kernel, strides = p.integers("kernel_shape"), p.integers("strides")
        pads, dilations = p.integers("pads"), p.integers("dilations")
        h, w = si.window_nd(shape, kernel, strides, pads, dilations, p.flag("ceil_mode"))
        out = (shape[0], shape[1], h, w)
        return [tensor(out, types[0].element_type), tensor(out, i64)]


@irdl_op_definition
class TensorScatterOp(GraphOp, MovementFacts):
    """A KV-cache update (ONNX TensorScatter-24): the cache with, for each batch row b,
    the update's slices along `axis` written at positions write_indices[b] + s (zero
    without write_indices), taken modulo the cache's extent along `axis` when circular.
    In linear mode every position must lie inside the cache."""

    name = "graph.tensor_scatter"
    cache = operand_def(TensorType)
    update = operand_def(TensorType)
    write_indices = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    circular = prop_def(BoolAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        cache, update = (list(t.get_shape()) for t in types[:2])
        p.flag("circular")
        axis = si.normalize_axis(p.integer("axis"), len(cache))
        if axis == 0:
            raise ShapeError("axis cannot be the batch dim 0")
        if len(update) != len(cache) or types[0].element_type != types[1].element_type:
            raise ShapeError(f"cache {types[0]} and update {types[1]} differ in rank or type")
        for k, (c, u) in enumerate(zip(cache, update)):
            if DYN in (c, u) or (c == u if k != axis else u <= c):
                continue
            raise ShapeError(f"update {si.fmt(update)} does not fit cache {si.fmt(cache)}")
        if len(types) == 3:
            where = types[2]
            batch = where.get_shape()
            if not dtypes.is_integer(where.element_type) or len(batch) != 1:
                raise ShapeError(f"write_indices must be a 1-D integer tensor, got {where}")
            if DYN not in (batch[0], cache[0]) and batch[0] != cache[0]:
                raise ShapeError(f"write_indices {si.fmt(batch)} does not match batch {cache[0]}")
        return [types[0]]


class Pool3dOp(GraphOp, StreamingFacts, ABC):
    """3-D pooling over NCDHW; pads are [front, top, left, back, bottom, right]. No kernel
    template pools (the 2-D pools are library ops too), so one op keeps the ONNX operator
    for the export; the interpreter pools H, W then D, exact because a window is a box."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    ceil_mode = prop_def(BoolAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = x.get_shape()
        k, s, d, pads = (p.integers(n) for n in ("kernel_shape", "strides", "dilations", "pads"))
        if len(shape) != 5 or len(k) != 3 or len(pads) != 6:
            raise ShapeError(f"expects a 5-D NCDHW input and 3-D windows, got {si.fmt(shape)}")
        ceil = p.flag("ceil_mode")
        dhw = si.window_nd(shape, k, s, pads, d, ceil)
        return [tensor((shape[0], shape[1], *dhw), x.element_type)]


@irdl_op_definition
class MaxPool3dOp(Pool3dOp):
    """3-D max pooling (ONNX MaxPool, also on integers); padding never wins the max."""

    name = "graph.max_pool3d"


@irdl_op_definition
class AvgPool3dOp(Pool3dOp):
    """3-D average pooling (ONNX AveragePool-19 with dilations); count_include_pad counts
    padded zeros."""

    name = "graph.avg_pool3d"
    count_include_pad = prop_def(BoolAttr)
    FLOAT_ONLY: ClassVar[bool] = True


TFIDF_MODES = ("TF", "IDF", "TFIDF")


@irdl_op_definition
class TfIdfVectorizerOp(GraphOp, StreamingFacts):
    """n-gram counts of integer token rows (ONNX TfIdfVectorizer-9): x [C] or [B, C] gives
    float32 [K] or [B, K], K = max(ngram_indexes) + 1.

    `pool` holds the n-grams, those of length n from ngram_counts[n - 1] on; the j-th
    n-gram overall is counted in column ngram_indexes[j]. Every n-gram of length in
    [min_gram_length, max_gram_length] is matched at each start with its tokens
    1..max_skip_count + 1 apart (unigrams once). mode TF gives the counts, IDF the
    weight (or 1) where a count is positive, TFIDF the weight times the count.
    """

    name = "graph.tfidf_vectorizer"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    min_gram_length = prop_def(IntegerAttr)
    max_gram_length = prop_def(IntegerAttr)
    max_skip_count = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    ngram_counts = prop_def(DenseArrayBase)
    ngram_indexes = prop_def(DenseArrayBase)
    pool = prop_def(DenseArrayBase)
    weights = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        (x,) = types
        shape = list(x.get_shape())
        if dtypes.type_name(x.element_type) not in ("i32", "i64") or len(shape) not in (1, 2):
            raise ShapeError(f"expects [C] or [B, C] int32 or int64 tokens, got {x}")
        low, high = p.integer("min_gram_length"), p.integer("max_gram_length")
        if not 1 <= low <= high or p.integer("max_skip_count") < 0:
            raise ShapeError(f"n-gram lengths {low}..{high} or the skip count are invalid")
        if p.text("mode") not in TFIDF_MODES:
            raise ShapeError(f"mode {p.text('mode')!r} is not one of {', '.join(TFIDF_MODES)}")
        counts, pool = p.integers("ngram_counts"), p.integers("pool")
        if list(counts) != sorted(counts) or (
            counts and (counts[0] != 0 or counts[-1] > len(pool))
        ):
            raise ShapeError(f"ngram_counts {list(counts)} do not index the pool of {len(pool)}")
        indexes = p.integers("ngram_indexes")
        if not indexes or min(indexes) < 0:
            raise ShapeError(f"ngram_indexes {list(indexes)} must be non-empty and >= 0")
        width = max(indexes) + 1
        if p.has("weights") and len(p.reals("weights")) < width:
            raise ShapeError(f"weights has {len(p.reals('weights'))} values for {width} columns")
        return [tensor([*shape[:-1], width], f32)]


# --------------------------------------------------------------------------------------
# DFT, STFT
# --------------------------------------------------------------------------------------


def dft_shape(x: Sequence[int], axis: int, length: int, flags: tuple[bool, bool]) -> list[int]:
    """The result shape of a DFT of `length` points along `axis` of x ([..., 1 or 2]):
    `flags` (inverse, onesided) keep length // 2 + 1 bins for a onesided forward DFT and
    one trailing component (the real output) for a onesided inverse."""
    inverse, onesided = flags
    if len(x) < 2 or not 0 <= axis < len(x) - 1:
        raise ShapeError(f"axis {axis} must name a dim other than the last of {si.fmt(x)}")
    if x[-1] not in (1, 2, DYN):
        raise ShapeError(f"the last dim must be 1 (real) or 2 (complex), got {x[-1]}")
    if length != DYN and length < 1:
        raise ShapeError(f"dft_length {length} must be positive")
    bins = length // 2 + 1 if onesided and not inverse and length != DYN else length
    out = list(x)
    out[axis] = bins
    out[-1] = 1 if inverse and onesided else 2
    return out


@irdl_op_definition
class DftOp(GraphOp, StreamingFacts):
    """The discrete Fourier transform along `axis` (ONNX DFT-20): input [..., 1 or 2]
    (real, or real and imaginary parts), result [..., 2]. `dft_length` (default: the
    axis's extent, or 2 * (n - 1) for a onesided inverse) truncates or zero-pads the
    input; onesided keeps the first length // 2 + 1 bins of a forward DFT, and makes an
    inverse read those bins and give the real signal [..., length, 1] (numpy's irfft);
    inverse is 1/n times the conjugate transform."""

    name = "graph.dft"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    inverse = prop_def(BoolAttr)
    onesided = prop_def(BoolAttr)
    dft_length = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure(), OPAQUE)
    FLOAT_ONLY: ClassVar[bool] = True

    @staticmethod
    def length(p: Props, n: int) -> int:
        """The transform length: dft_length, or its default for an axis of extent n."""
        if p.has("dft_length"):
            return p.integer("dft_length")
        if n == DYN:
            return DYN
        return 2 * (n - 1) if p.flag("inverse") and p.flag("onesided") else n

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, axis = types[0].get_shape(), p.integer("axis")
        n = x[axis] if 0 <= axis < len(x) else DYN
        flags = (p.flag("inverse"), p.flag("onesided"))
        return [tensor(dft_shape(x, axis, cls.length(p, n), flags), types[0].element_type)]


@irdl_op_definition
class StftOp(GraphOp, StreamingFacts):
    """The short-time Fourier transform (ONNX STFT-17): signal [B, L, 1 or 2], frames of
    frame_length samples every frame_step, each times the window [frame_length] when it
    is given, then its DFT; result [B, 1 + (L - frame_length) // frame_step, bins, 2],
    bins = frame_length // 2 + 1 when onesided, else frame_length."""

    name = "graph.stft"
    signal = operand_def(TensorType)
    window = opt_operand_def(TensorType)
    output = result_def(TensorType)
    frame_step = prop_def(IntegerAttr)
    frame_length = prop_def(IntegerAttr)
    onesided = prop_def(BoolAttr)
    traits = traits_def(Pure(), OPAQUE)
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0].get_shape()
        step, size = p.integer("frame_step"), p.integer("frame_length")
        if len(x) != 3:
            raise ShapeError(f"the signal must be [batch, length, 1 or 2], got {si.fmt(x)}")
        if step < 1 or size < 1 or (x[1] != DYN and size > x[1]):
            raise ShapeError(f"frame_step {step} and frame_length {size} do not frame {x[1]}")
        if len(types) == 2:
            w = types[1]
            if not si.shapes_compatible(w.get_shape(), (size,)):
                raise ShapeError(f"the window has shape {si.fmt(w.get_shape())}, not [{size}]")
            if w.element_type != types[0].element_type:
                raise ShapeError(f"the window has element type {w.element_type}")
        frames = DYN if x[1] == DYN else 1 + (x[1] - size) // step
        framed = (x[0], frames, size, x[2])
        out = dft_shape(framed, 2, size, (False, p.flag("onesided")))
        return [tensor(out, types[0].element_type)]


LIBRARY_OPS = [
    DftOp,
    StftOp,
    MaxPool3dOp,
    AvgPool3dOp,
    TfIdfVectorizerOp,
    NonMaxSuppressionOp,
    BitCastOp,
    IntPowOp,
    DetOp,
    MaxPoolWithIndicesOp,
    TensorScatterOp,
]
