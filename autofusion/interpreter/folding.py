"""Evaluating single graph ops on constant inputs, with the interpreter's semantics.

Frontends use it to fold shape arithmetic; the constant-folding rewrite uses it to fold
subgraphs. Folding and interpreting therefore can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.ir import Operation


def op_family_functions() -> list[InterpreterFunctions]:
    """The implementations of the graph ops outside graph.py (fused, math, indexing,
    vision, quantization, random), registered by every interpreter of graph IR."""
    from autofusion.interpreter.graph_fused import GraphFusedFunctions
    from autofusion.interpreter.graph_indexing import GraphIndexingFunctions
    from autofusion.interpreter.graph_library import GraphLibraryFunctions
    from autofusion.interpreter.graph_math import GraphMathFunctions
    from autofusion.interpreter.graph_quant import GraphQuantFunctions
    from autofusion.interpreter.graph_random import GraphRandomFunctions
    from autofusion.interpreter.graph_vision import GraphVisionFunctions

    return [
        GraphFusedFunctions(),
        GraphMathFunctions(),
        GraphIndexingFunctions(),
        GraphLibraryFunctions(),
        GraphVisionFunctions(),
        GraphQuantFunctions(),
        GraphRandomFunctions(),
    ]


@cache
def _interpreter() -> Interpreter:
    from autofusion.interpreter.graph import GraphFunctions

    interp = Interpreter(ModuleOp([]))
    interp.register_implementations(GraphFunctions())
    for functions in op_family_functions():
        interp.register_implementations(functions)
    return interp


def evaluate(op: Operation, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of `op` (attached or not) on `inputs`, in storage form."""
    return [np.asarray(v) for v in _interpreter().run_op(op, tuple(inputs))]
