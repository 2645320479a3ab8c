"""ConstantFoldingPass: an op whose operands are all constants becomes constants.

The op is evaluated by `interpreter.folding.evaluate`, the interpreter's own semantics
(rounding to the result type included), so a folded graph computes exactly what the
unfolded one did. Each result becomes a `graph.constant` (dense inline when small, a
`dense_resource` blob otherwise) named after the first constant operand and the op.

Preconditions, each refused with its reason:
- every operand has values: a shape-only weight cannot be evaluated (transposes and
  reshapes of shape-only weights are TransposeReshapeConstFoldingPass's);
- the results have static shapes;
- the folded results are bounded (`matching.fold_is_bounded`): at most
  FOLD_LIMIT_ELEMENTS elements, or no more than the constant operands that die with the
  op hold. A weight is thus never duplicated and a scalar never blown up into a large
  tensor (an expand of a constant stays an expand).

The same inputs always give the same constants (evaluation is deterministic, blob names
derive from the operands' names). Named after GE's ConstantFoldingPass
(hicann/ge compiler/graph/passes/standard_optimize/constant_folding/constant_folding_pass.cc).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import InterpretationError

from autofusion.dialects import graph
from autofusion.dialects.graph_random import RandomOp
from autofusion.interpreter.folding import evaluate
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


@dataclass
class Folded:
    values: list[np.ndarray]
    constants: list[graph.ConstantOp]


class FoldConstants(FusionRule[Folded]):
    rule_name = "ConstantFoldingPass"
    pattern = "Op(all operands constant)"
    anchors = (graph.GraphOp,)

    def match(self, op: Operation) -> Folded | Refusal | None:
        if isinstance(op, RandomOp):
            return Refusal("a random draw is not a constant (each run draws anew)")
        constants = [m.constant_op(v) for v in op.operands]
        if not constants or any(c is None for c in constants):
            return None
        arrays = [m.constant_array(v) for v in op.operands]
        for i, a in enumerate(arrays):
            if a is None:
                return Refusal(f"operand #{i} is a shape-only constant (no values to evaluate)")
        sizes = [m.static_elements(r) for r in op.results]
        if any(s is None for s in sizes):
            return Refusal("a result has a dynamic shape")
        total = sum(s for s in sizes if s is not None)
        if not m.fold_is_bounded(op, total):
            return Refusal(
                f"folding would materialize {total} elements, more than the constants it replaces"
            )
        try:
            values = evaluate(op, [a for a in arrays if a is not None])
        except (InterpretationError, ValueError, ArithmeticError) as e:
            return Refusal(f"cannot be evaluated: {e}")
        return Folded(values, [c for c in constants if c is not None])

    def rewrite(self, op: Operation, match: Folded, rewriter: PatternRewriter) -> None:
        base = m.constant_name(match.constants[0].result, "constant")
        kind = op.name.removeprefix("graph.")
        # the locations of a folded chain accumulate in the constant it leaves
        location = m.fused_location([*match.constants, op])
        new = []
        for i, (result, value) in enumerate(zip(op.results, match.values)):
            name = f"{base}.{kind}" if len(op.results) == 1 else f"{base}.{kind}_{i}"
            c = m.make_constant(value, m.tensor_type(result), name)
            c.location = location
            new.append(c)
        rewriter.replace(op, new, [c.result for c in new])
