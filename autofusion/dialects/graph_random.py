"""Random-number ops of the graph dialect (ONNX RandomNormal, RandomUniform, their -Like
forms, Bernoulli and Multinomial; https://onnx.ai/onnx/operators/).

The element type is the `dtype` property (a short name: f32, f16, ...); a -Like op or
Bernoulli without one takes its input's. `seed` (a float, as in ONNX) seeds the
interpreter's numpy generator; without it the interpreter uses DEFAULT_SEED, so afc's own
results are deterministic (ONNX leaves unseeded values to the runtime). A negative
`scale` or `high` < `low` is refused: ONNX does not define them and numpy cannot draw
them. None has a kernel template, so each is `opaque`, and none is Pure: two draws are
different values, so they must not be merged or folded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)

from autofusion import dtypes
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import Fusible, FusionKind, GraphOp, Props, tensor
from autofusion.dialects.op_facts import StreamingFacts
from autofusion.dialects.shape_inference import ShapeError

DEFAULT_SEED = 0  # the interpreter's seed of an op without `seed`
FLOATS = ("f16", "bf16", "f32", "f64")
# Bernoulli-15's output types: every numeric type and bool
BERNOULLI_TYPES = (*FLOATS, "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "i1")


def element(p: Props, like: TensorType | None, allowed: Sequence[str]) -> Attribute:
    """The result element type: `dtype` if given, else the input's (a -Like op)."""
    if p.has("dtype"):
        name = p.text("dtype")
        if name not in dtypes.ELEMENT_TYPES or name not in allowed:
            raise ShapeError(f"dtype '{name}' is not one of {', '.join(allowed)}")
        return dtypes.ELEMENT_TYPES[name]
    if like is None:
        raise ShapeError("missing property 'dtype'")
    elt = like.element_type
    if not dtypes.is_supported(elt) or dtypes.type_name(elt) not in allowed:
        raise ShapeError(f"input element type {elt} is not one of {', '.join(allowed)}")
    return elt


def check_distribution(p: Props) -> None:
    """scale >= 0 for a normal draw, low <= high for a uniform one; a seed is a float."""
    if p.has("seed"):
        p.real("seed")
    if p.has("scale") and p.real("scale") < 0:
        raise ShapeError(f"scale {p.real('scale')} must be >= 0")
    if p.has("low") and p.real("high") < p.real("low"):
        raise ShapeError(f"high {p.real('high')} is below low {p.real('low')}")


class RandomOp(GraphOp, StreamingFacts):
    """A draw of `dtype` values. The class variables are what `infer` checks: LIKE, the
    result takes the input's shape (and its element type without `dtype`); ALLOWED, the
    result's element types; INPUT, the input's, when its values are read."""

    output = result_def(TensorType)
    dtype = opt_prop_def(StringAttr)
    seed = opt_prop_def(FloatAttr)
    traits = traits_def(Fusible(FusionKind.OPAQUE))
    LIKE: ClassVar[bool] = False
    ALLOWED: ClassVar[tuple[str, ...]] = FLOATS
    INPUT: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        check_distribution(p)
        if cls.INPUT is not None:
            element(Props({}, cls.name), types[0], cls.INPUT)
        like = types[0] if cls.LIKE else None
        return [tensor(cls.result_shape(types, p), element(p, like, cls.ALLOWED))]

    @classmethod
    def result_shape(cls, types: Sequence[TensorType], p: Props) -> Sequence[int]:
        """The input's shape (a -Like op, Bernoulli) or the `shape` property."""
        shape = types[0].get_shape() if cls.LIKE else p.integers("shape")
        if any(d < 0 for d in shape):
            raise ShapeError(f"shape {si.fmt(shape)} has a negative or unknown dimension")
        return shape


class NormalDraw(RandomOp):
    """Normal values of mean `mean` and standard deviation `scale`."""

    mean = prop_def(FloatAttr)
    scale = prop_def(FloatAttr)


class UniformDraw(RandomOp):
    """Uniform values in [low, high)."""

    low = prop_def(FloatAttr)
    high = prop_def(FloatAttr)


@irdl_op_definition
class RandomNormalOp(NormalDraw):
    """Normal values of mean `mean` and standard deviation `scale` (ONNX RandomNormal-1).
    Example: `%y = graph.random_normal {dtype = "f32", mean = 0.0, scale = 1.0,
    shape = [2, 3]} : tensor<2x3xf32>`"""

    name = "graph.random_normal"
    shape = prop_def(DenseArrayBase)


@irdl_op_definition
class RandomUniformOp(UniformDraw):
    """Uniform values in [low, high) (ONNX RandomUniform-1)."""

    name = "graph.random_uniform"
    shape = prop_def(DenseArrayBase)


@irdl_op_definition
class RandomNormalLikeOp(NormalDraw):
    """RandomNormal with the input's shape (and element type unless `dtype` is given)."""

    name = "graph.random_normal_like"
    input = operand_def(TensorType)
    LIKE: ClassVar[bool] = True
    NARROW_TYPES: ClassVar[bool] = True  # only the input's shape is read


@irdl_op_definition
class RandomUniformLikeOp(UniformDraw):
    """RandomUniform with the input's shape (and element type unless `dtype` is given)."""

    name = "graph.random_uniform_like"
    input = operand_def(TensorType)
    LIKE: ClassVar[bool] = True
    NARROW_TYPES: ClassVar[bool] = True


@irdl_op_definition
class BernoulliOp(RandomOp):
    """1 with probability input[i], else 0 (ONNX Bernoulli-15); the input is floating point."""

    name = "graph.bernoulli"
    input = operand_def(TensorType)
    LIKE: ClassVar[bool] = True
    ALLOWED: ClassVar[tuple[str, ...]] = BERNOULLI_TYPES
    INPUT: ClassVar[tuple[str, ...] | None] = FLOATS  # the probabilities


@irdl_op_definition
class MultinomialOp(RandomOp):
    """`sample_size` class indices per row of a [batch, class] input of unnormalized log
    probabilities (ONNX Multinomial-7); i32 (default) or i64 results."""

    name = "graph.multinomial"
    input = operand_def(TensorType)
    sample_size = prop_def(IntegerAttr)
    ALLOWED: ClassVar[tuple[str, ...]] = ("i32", "i64")
    INPUT: ClassVar[tuple[str, ...] | None] = FLOATS  # the log probabilities

    @classmethod
    def result_shape(cls, types: Sequence[TensorType], p: Props) -> Sequence[int]:
        """[batch, sample_size]."""
        shape = types[0].get_shape()
        if len(shape) != 2:
            raise ShapeError(f"input {si.fmt(shape)} is not [batch, class]")
        samples = p.integer("sample_size")
        if samples < 1:
            raise ShapeError(f"sample_size {samples} must be >= 1")
        return (shape[0], samples)


RANDOM_OPS = [
    RandomNormalOp,
    RandomUniformOp,
    RandomNormalLikeOp,
    RandomUniformLikeOp,
    BernoulliOp,
    MultinomialOp,
]
