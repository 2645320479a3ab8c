"""ONNX export of the random graph ops (autofusion/dialects/graph_random.py): each is the
ONNX operator it was imported from, with the same attributes (`dtype` as the result's
type, `seed` only when the op has one).

`table()` gives their entries of `export_table.TABLE`; export_ops is imported where it
is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from autofusion.dialects import graph_random as gr

if TYPE_CHECKING:
    from frontends.onnx.export_ops import Emit, Emitter, Mapping

# each op's distribution attributes, as ONNX names them
DISTRIBUTION = {
    "normal": ("mean", "scale"),
    "uniform": ("low", "high"),
    "bernoulli": (),
    "multinomial": (),
}


def _random(op_type: str, distribution: str, with_shape: bool) -> Emit:
    """The operator with its distribution's attributes, `dtype`, `seed` and `shape`."""

    def emit(e: Emitter) -> None:
        from frontends.onnx.export_ops import onnx_elem

        attrs: dict[str, object] = {k: e.props.real(k) for k in DISTRIBUTION[distribution]}
        attrs["dtype"] = onnx_elem(e.out_type().element_type)
        if e.props.has("seed"):
            attrs["seed"] = e.props.real("seed")
        if with_shape:
            attrs["shape"] = list(e.props.integers("shape"))
        if e.props.has("sample_size"):
            attrs["sample_size"] = e.props.integer("sample_size")
        e.nodes(op_type, e.inputs, e.outputs, **attrs)

    return emit


def table() -> dict[type[Operation], Mapping]:
    """The export entries of the random ops."""
    from frontends.onnx.export_ops import Standard

    rows = {
        gr.RandomNormalOp: ("RandomNormal", "normal", True),
        gr.RandomUniformOp: ("RandomUniform", "uniform", True),
        gr.RandomNormalLikeOp: ("RandomNormalLike", "normal", False),
        gr.RandomUniformLikeOp: ("RandomUniformLike", "uniform", False),
        gr.BernoulliOp: ("Bernoulli", "bernoulli", False),
        gr.MultinomialOp: ("Multinomial", "multinomial", False),
    }
    return {op: Standard(_random(*row), row[0]) for op, row in rows.items()}
