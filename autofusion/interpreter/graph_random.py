"""Reference semantics of the random graph ops (see autofusion/dialects/graph_random.py).

Each op draws from its own numpy Generator seeded from its `seed` property (the float's
bits, so every float is a valid seed), or from graph_random.DEFAULT_SEED without one, so
the interpreter's values are deterministic. They cannot equal ONNX Runtime's (another
generator): only shapes, types and statistics are comparable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from autofusion.dialects import graph_random as gr
from autofusion.interpreter.graph import Array, _props, _result


def generator(op: gr.RandomOp) -> np.random.Generator:
    """The op's generator: seeded from `seed`'s f32 bits, or DEFAULT_SEED."""
    p = _props(op)
    seed = p.real("seed") if p.has("seed") else None
    bits = gr.DEFAULT_SEED if seed is None else int(np.float32(seed).view(np.uint32))
    return np.random.default_rng(bits)


def _shape(op: gr.RandomOp) -> tuple[int, ...]:
    return tuple(cast(TensorType, op.output.type).get_shape())


def normal(op: gr.RandomOp) -> Array:
    p = _props(op)
    return _result(op, generator(op).normal(p.real("mean"), p.real("scale"), _shape(op)))


def uniform(op: gr.RandomOp) -> Array:
    p = _props(op)
    return _result(op, generator(op).uniform(p.real("low"), p.real("high"), _shape(op)))


def _draw(
    sample: Callable[[gr.RandomOp], Array],
) -> Callable[[InterpreterFunctions, Interpreter, gr.RandomOp, PythonValues], PythonValues]:
    """The implementation of an op whose values are `sample(op)` (its input gives at most
    its shape, which the result type already has)."""

    def run(
        ft: InterpreterFunctions, i: Interpreter, op: gr.RandomOp, args: PythonValues
    ) -> PythonValues:
        return (sample(op),)

    return run


@register_impls
class GraphRandomFunctions(InterpreterFunctions):
    """numpy implementations of the random graph ops."""

    run_random_normal = impl(gr.RandomNormalOp)(_draw(normal))
    run_random_normal_like = impl(gr.RandomNormalLikeOp)(_draw(normal))
    run_random_uniform = impl(gr.RandomUniformOp)(_draw(uniform))
    run_random_uniform_like = impl(gr.RandomUniformLikeOp)(_draw(uniform))

    @impl(gr.BernoulliOp)
    def run_bernoulli(self, i: Interpreter, op: gr.BernoulliOp, args: PythonValues) -> PythonValues:
        prob: Array = np.asarray(args[0], dtype=np.float64)
        draw = generator(op).uniform(0.0, 1.0, prob.shape) < prob
        return (_result(op, draw.astype(np.float64)),)

    @impl(gr.MultinomialOp)
    def run_multinomial(
        self, i: Interpreter, op: gr.MultinomialOp, args: PythonValues
    ) -> PythonValues:
        return (_result(op, multinomial(op, np.asarray(args[0], dtype=np.float64))),)


def multinomial(op: gr.MultinomialOp, logits: Array) -> Array:
    """Class indices drawn per row from softmax(logits) (ONNX's unnormalized log probs)."""
    rng = generator(op)
    samples = _props(op).integer("sample_size")
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = shifted / shifted.sum(axis=1, keepdims=True)
    rows = [rng.choice(probs.shape[1], size=samples, p=row) for row in probs]
    return np.asarray(rows, dtype=np.int64).reshape(probs.shape[0], samples)
