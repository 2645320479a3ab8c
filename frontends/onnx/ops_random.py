"""ONNX import of the random operators: RandomNormal, RandomUniform, RandomNormalLike,
RandomUniformLike, Bernoulli and Multinomial (autofusion/dialects/graph_random.py).

They are built without folding: a draw on a constant input is still a draw.
"""

from __future__ import annotations

from autofusion import dtypes
from autofusion.dialects import graph_random as gr
from frontends.onnx.importer import Node, OpConverters, Value, element_type

# version 22 only adds bf16
OPS = OpConverters(
    versions={
        "RandomNormal": (1, 22),
        "RandomUniform": (1, 22),
        "RandomNormalLike": (1, 22),
        "RandomUniformLike": (1, 22),
        "Bernoulli": (15, 22),
        "Multinomial": (7, 22),
    }
)

ONNX_FLOAT = 1  # TensorProto.FLOAT, the default dtype of RandomNormal/RandomUniform


def _props(node: Node, dtype: int | None, **distribution: float) -> dict[str, object]:
    """The op's properties: the distribution's, `seed` when given and `dtype` when given."""
    props: dict[str, object] = dict(distribution)
    seed = node.attr("seed", None)
    if seed is not None:
        props["seed"] = float(seed)
    if dtype is not None:
        props["dtype"] = dtypes.type_name(element_type(int(dtype), f"node '{node.name}' dtype"))
    return props


def _draw(node: Node, cls: type[gr.RandomOp], props: dict[str, object]) -> list[Value]:
    inputs = [node.input(0)] if cls.get_irdl_definition().operands else []
    return node.importer.build(node, cls, inputs, props, None)


def _normal(node: Node, dtype: int | None) -> dict[str, object]:
    return _props(
        node, dtype, mean=float(node.attr("mean", 0.0)), scale=float(node.attr("scale", 1.0))
    )


def _uniform(node: Node, dtype: int | None) -> dict[str, object]:
    return _props(node, dtype, low=float(node.attr("low", 0.0)), high=float(node.attr("high", 1.0)))


@OPS.register("RandomNormal")
def convert_random_normal(node: Node) -> list[Value]:
    """RandomNormal-1/22: `shape`, `mean`, `scale`, `dtype` (default float), `seed`."""
    props = _normal(node, node.attr("dtype", ONNX_FLOAT))
    props["shape"] = [int(d) for d in node.attr("shape")]
    return _draw(node, gr.RandomNormalOp, props)


@OPS.register("RandomUniform")
def convert_random_uniform(node: Node) -> list[Value]:
    """RandomUniform-1/22: `shape`, `low`, `high`, `dtype` (default float), `seed`."""
    props = _uniform(node, node.attr("dtype", ONNX_FLOAT))
    props["shape"] = [int(d) for d in node.attr("shape")]
    return _draw(node, gr.RandomUniformOp, props)


@OPS.register("RandomNormalLike")
def convert_random_normal_like(node: Node) -> list[Value]:
    """RandomNormalLike-1/22: the input's shape, and its type unless `dtype` is given."""
    return _draw(node, gr.RandomNormalLikeOp, _normal(node, node.attr("dtype", None)))


@OPS.register("RandomUniformLike")
def convert_random_uniform_like(node: Node) -> list[Value]:
    """RandomUniformLike-1/22: the input's shape, and its type unless `dtype` is given."""
    return _draw(node, gr.RandomUniformLikeOp, _uniform(node, node.attr("dtype", None)))


@OPS.register("Bernoulli")
def convert_bernoulli(node: Node) -> list[Value]:
    """Bernoulli-15/22: 1 with the input's probability; the input's type unless `dtype`."""
    return _draw(node, gr.BernoulliOp, _props(node, node.attr("dtype", None)))


ONNX_INT32 = 6  # TensorProto.INT32, Multinomial's default dtype


@OPS.register("Multinomial")
def convert_multinomial(node: Node) -> list[Value]:
    """Multinomial-7/22: `sample_size` (default 1) indices per row, `dtype` int32/int64."""
    props = _props(node, node.attr("dtype", ONNX_INT32))
    props["sample_size"] = int(node.attr("sample_size", 1))
    return _draw(node, gr.MultinomialOp, props)
