"""Indexing ops of the graph dialect: element gathers and scatters, one-hot, sequence
reversal, and the data-dependent selections (Compress, NonZero, Unique).

These run as library ops (fusion kind opaque): no kernel template covers them, so
ub-fusion leaves each one on its own. The data-dependent ones have a dynamic result dim
(`?`) whose size only the values decide. Semantics follow the ONNX operators of the
same names (https://onnx.ai/onnx/operators/); negative indices count from the back.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence

from xdsl.dialects.builtin import BoolAttr, IntegerAttr, StringAttr, TensorType, i1, i64
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Fusible, FusionKind, GraphOp, Props, tensor
from autofusion.dialects.op_facts import StreamingFacts
from autofusion.dialects.shape_inference import DYN, ShapeError

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")
OPAQUE = Fusible(FusionKind.OPAQUE)


def _index_type(t: TensorType, what: str) -> None:
    if dtypes.type_name(t.element_type) not in ("i32", "i64"):
        raise ShapeError(f"{what} must be i32 or i64, got {t.element_type}")


def _same_type(a: TensorType, b: TensorType, what: str) -> None:
    if a.element_type != b.element_type:
        raise ShapeError(f"{what} has element type {b.element_type}, not {a.element_type}")


@irdl_op_definition
class GatherElementsOp(GraphOp, StreamingFacts):
    """out[i][j][k] = data[indices[i][j][k]][j][k] for axis 0, and so on for the other
    axes (ONNX GatherElements-13). The result has the shape of `indices`."""

    name = "graph.gather_elements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        data, idx = types
        _index_type(idx, "indices")
        ds, ix = data.get_shape(), idx.get_shape()
        ax = si.normalize_axis(p.integer("axis"), len(ds))
        if len(ix) != len(ds):
            raise ShapeError(f"indices {si.fmt(ix)} and data {si.fmt(ds)} differ in rank")
        for k, (a, b) in enumerate(zip(ds, ix)):
            if k != ax and DYN not in (a, b) and b > a:
                raise ShapeError(f"indices dim {k} ({b}) exceeds the data's ({a})")
        return [tensor(ix, data.element_type)]


class ScatterOp(GraphOp, StreamingFacts, ABC):
    """A copy of `data` with some elements or slices combined with `updates` by the
    reduction: none (replace), add, mul, max or min."""

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    output = result_def(TensorType)
    reduction = prop_def(StringAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def check_operands(cls, types: Sequence[TensorType], p: Props) -> None:
        data, idx, upd = types
        _index_type(idx, "indices")
        _same_type(data, upd, "updates")
        if p.text("reduction") not in SCATTER_REDUCTIONS:
            raise ShapeError(f"reduction must be one of {SCATTER_REDUCTIONS}")


@irdl_op_definition
class ScatterElementsOp(ScatterOp):
    """out[indices[i][j]][j] = f(out[...], updates[i][j]) for axis 0, and so on (ONNX
    ScatterElements-18); `indices` and `updates` have one shape."""

    name = "graph.scatter_elements"
    axis = prop_def(IntegerAttr)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        cls.check_operands(types, p)
        data, idx, upd = types
        ds = data.get_shape()
        si.normalize_axis(p.integer("axis"), len(ds))
        if not si.shapes_compatible(idx.get_shape(), upd.get_shape()):
            raise ShapeError(
                f"indices {si.fmt(idx.get_shape())} and updates {si.fmt(upd.get_shape())} differ"
            )
        if len(idx.get_shape()) != len(ds):
            raise ShapeError(f"indices and data {si.fmt(ds)} differ in rank")
        return [data]


@irdl_op_definition
class ScatterNDOp(ScatterOp):
    """out[indices[i...]] = f(out[...], updates[i...]), where each innermost row of
    `indices` (length k) addresses a slice data[i0, ..., ik-1, ...] (ONNX ScatterND-18;
    the KV-cache update of decode graphs). updates has shape
    indices.shape[:-1] + data.shape[k:]."""

    name = "graph.scatter_nd"

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        cls.check_operands(types, p)
        data, idx, upd = types
        ds, ix = data.get_shape(), idx.get_shape()
        if not ix:
            raise ShapeError("indices must have rank >= 1")
        k = ix[-1]
        if k == DYN:
            raise ShapeError("the last dim of indices (the index length) must be static")
        if k > len(ds):
            raise ShapeError(f"index length {k} exceeds the data's rank {len(ds)}")
        want = (*ix[:-1], *ds[k:])
        if not si.shapes_compatible(upd.get_shape(), want):
            raise ShapeError(f"updates {si.fmt(upd.get_shape())} must have shape {si.fmt(want)}")
        return [data]


@irdl_op_definition
class OneHotOp(GraphOp, StreamingFacts):
    """out[..., j, ...] = values[1] if j == indices[...] (mod depth) else values[0], with
    the new axis of size `depth` inserted at `axis` (ONNX OneHot-11; an index outside
    [-depth, depth) gives an all-off row). `values` is [off, on]."""

    name = "graph.one_hot"
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    output = result_def(TensorType)
    depth = prop_def(IntegerAttr)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        idx, values = types
        if idx.element_type == i1:
            raise ShapeError("indices must be numeric, got i1")
        if not si.shapes_compatible(values.get_shape(), (2,)):
            raise ShapeError(
                f"values must be [off, on] (shape [2]), got {si.fmt(values.get_shape())}"
            )
        depth = p.integer("depth")
        if depth < 1:
            raise ShapeError(f"depth must be >= 1, got {depth}")
        shape = list(idx.get_shape())
        ax = si.normalize_axis(p.integer("axis"), len(shape) + 1)
        shape.insert(ax, depth)
        return [tensor(shape, values.element_type)]


@irdl_op_definition
class ReverseSequenceOp(GraphOp, StreamingFacts):
    """Reverse the first sequence_lens[b] elements along `time_axis` of each batch entry b
    along `batch_axis`; the rest are copied (ONNX ReverseSequence-10)."""

    name = "graph.reverse_sequence"
    input = operand_def(TensorType)
    sequence_lens = operand_def(TensorType)
    output = result_def(TensorType)
    batch_axis = prop_def(IntegerAttr)
    time_axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, lens = types
        _index_type(lens, "sequence_lens")
        shape = x.get_shape()
        if len(shape) < 2:
            raise ShapeError(f"the input must have rank >= 2, got {si.fmt(shape)}")
        axes = {p.integer("batch_axis"), p.integer("time_axis")}
        if axes != {0, 1}:
            raise ShapeError("batch_axis and time_axis must be 0 and 1 (in either order)")
        batch = shape[p.integer("batch_axis")]
        if not si.shapes_compatible(lens.get_shape(), (batch,)):
            raise ShapeError(f"sequence_lens {si.fmt(lens.get_shape())} is not a [{batch}] vector")
        return [x]


@irdl_op_definition
class CompressOp(GraphOp, StreamingFacts):
    """The slices of `input` along `axis` where `condition` (1-D i1) is true; without
    `axis`, the elements of the flattened input (ONNX Compress-11). The selected dim is
    dynamic: the condition's values decide it."""

    name = "graph.compress"
    input = operand_def(TensorType)
    condition = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, cond = types
        if cond.element_type != i1 or len(cond.get_shape()) != 1:
            raise ShapeError(f"condition must be a 1-D i1 tensor, got {cond}")
        shape = list(x.get_shape())
        if not p.has("axis"):
            return [tensor([DYN], x.element_type)]
        ax = si.normalize_axis(p.integer("axis"), len(shape))
        shape[ax] = DYN
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class NonZeroOp(GraphOp, StreamingFacts):
    """The indices of the non-zero elements, [rank, n] in row-major order (ONNX NonZero-13);
    n is dynamic."""

    name = "graph.non_zero"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        return [tensor([len(types[0].get_shape()), DYN], i64)]


@irdl_op_definition
class UniqueOp(GraphOp, StreamingFacts):
    """The unique elements (or slices along `axis`) of the input, sorted ascending or in
    order of first occurrence, with the index of each first occurrence, the inverse
    indices (input position -> unique entry) and the counts (ONNX Unique-11). The
    number of unique entries is dynamic."""

    name = "graph.unique"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    indices = result_def(TensorType)
    inverse_indices = result_def(TensorType)
    counts = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    sorted = prop_def(BoolAttr)
    traits = traits_def(Pure(), OPAQUE)

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = list(x.get_shape())
        p.flag("sorted")
        if p.has("axis"):
            ax = si.normalize_axis(p.integer("axis"), len(shape))
            inverse = [shape[ax]]
            shape[ax] = DYN
            y = tensor(shape, x.element_type)
        else:
            n = si.num_elements(shape)
            inverse = [DYN if n is None else n]
            y = tensor([DYN], x.element_type)
        vec = tensor([DYN], i64)
        return [y, vec, tensor(inverse, i64), vec]


INDEXING_OPS = [
    GatherElementsOp,
    ScatterElementsOp,
    ScatterNDOp,
    OneHotOp,
    ReverseSequenceOp,
    CompressOp,
    NonZeroOp,
    UniqueOp,
]
