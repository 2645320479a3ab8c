"""Evaluating single graph ops on constant inputs, with the interpreter's semantics.

Frontends use it to fold shape arithmetic; the constant-folding rewrite uses it to fold
subgraphs. Folding and interpreting therefore can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation


@cache
def _interpreter() -> Interpreter:
    from autofusion.interpreter.graph import GraphFunctions
    from autofusion.interpreter.graph_fused import GraphFusedFunctions
    from autofusion.interpreter.graph_indexing import GraphIndexingFunctions
    from autofusion.interpreter.graph_math import GraphMathFunctions
    from autofusion.interpreter.graph_quant import GraphQuantFunctions
    from autofusion.interpreter.graph_vision import GraphVisionFunctions

    interp = Interpreter(ModuleOp([]))
    interp.register_implementations(GraphFunctions())
    interp.register_implementations(GraphFusedFunctions())
    interp.register_implementations(GraphMathFunctions())
    interp.register_implementations(GraphIndexingFunctions())
    interp.register_implementations(GraphVisionFunctions())
    interp.register_implementations(GraphQuantFunctions())
    return interp


def evaluate(op: Operation, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of `op` (attached or not) on `inputs`, in storage form."""
    return [np.asarray(v) for v in _interpreter().run_op(op, tuple(inputs))]
