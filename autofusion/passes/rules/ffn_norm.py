"""RmsNormFfnFusionPass: the RMS norm feeding a graph.ffn joins it.

    y = ffn(rms_norm(h, g), W1, W2, ..., residual)  ->  y = ffn(h, W1', W2, ..., residual)
                                                        {norm_epsilon}, W1' = diag(g) W1

As the matmul norm prologue (norm_prologue.py): rms_norm(h, g) @ W1 is
diag(rstd) (h @ diag(g) W1), so g folds into the constant gate/up weights at compile
time and the ffn scales its projections' rows by rstd (graph.ffn's `norm_epsilon`); the
ffn kernel computes rstd from the x rows it reads anyway (lowering/ffn_emit.py), so the
norm's own kernel and the normalised h in HBM go. A Llama/Qwen layer's residual is h
itself: it stays the residual.

Split chips only (the ffn kernel). Preconditions: the norm is over the last axis (K1),
its scale and every weight1 are constants of the input's element type, the ffn has no
norm of its own yet, and the ffn reading it as its input is the norm's only user.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal
from autofusion.passes.rules.norm_prologue import fold_norm_scale


@dataclass
class FfnNorm:
    norm: graph.RmsNormOp
    ffn: graph.FfnOp


def _refusal(norm: graph.RmsNormOp, ffn: graph.FfnOp) -> Refusal | None:
    """Why the norm cannot join the ffn (None when it can)."""
    shape = m.shape(norm.input)
    axis = si.normalize_axis(graph.Props(norm.properties, norm.name).integer("axis"), len(shape))
    if axis != len(shape) - 1:
        return Refusal("the norm is over more than the last axis (the ffn's K1)")
    if shape[-1] == si.DYN:
        return Refusal("the norm's axis is dynamic")
    if m.constant_op(norm.scale) is None:
        return Refusal("the norm's scale is not a constant (it folds into the weights)")
    if si.num_elements(m.shape(norm.scale)) != shape[-1]:
        return Refusal("the norm's scale is not one value per column")
    if ffn.norm_epsilon is not None:
        return Refusal("the ffn normalises its input already")
    for use in norm.output.uses:
        if use.operation is not ffn or use.index != 0:
            return Refusal(
                f"the norm's output also feeds {use.operation.name}: the norm is computed anyway"
            )
    elt = m.tensor_type(norm.input).element_type
    for w in ffn.weight1:
        if m.constant_op(w) is None:
            return Refusal("a gate/up weight of the ffn is not a constant")
        if m.tensor_type(w).element_type != elt:
            return Refusal("a gate/up weight's element type differs from the norm's input")
    return None


class FoldRmsNormIntoFfn(FusionRule[FfnNorm]):
    rule_name = "RmsNormFfnFusionPass"
    pattern = "RmsNorm->FFN(constant gate/up weights)"
    anchors = (graph.FfnOp,)
    phase = 1  # the FFN rule (phase 0) builds the ffn first
    chip_modes = ("split",)  # the ffn kernel's statistics pass (a split chip's SyncAll)

    def match(self, op: Operation) -> FfnNorm | Refusal | None:
        assert isinstance(op, graph.FfnOp)
        norm = op.input.owner
        if not isinstance(norm, graph.RmsNormOp):
            return None
        return _refusal(norm, op) or FfnNorm(norm, op)

    def rewrite(self, op: Operation, match: FfnNorm, rewriter: PatternRewriter) -> None:
        norm, ffn = match.norm, match.ffn
        weights = [fold_norm_scale(norm, w) for w in ffn.weight1]
        fused = graph.FfnOp.from_parts(
            norm.input,
            [w.result for w in weights],
            ffn.weight2,
            ffn.activation.data,
            list(ffn.bias1),
            ffn.bias2,
            ffn.residual,
        )
        fused.properties["norm_epsilon"] = norm.epsilon
        for created in (*weights, fused):
            created.location = m.fused_location([norm, ffn])
        fused.output.name_hint = ffn.output.name_hint
        rewriter.replace(ffn, [*weights, fused], [fused.output])
        rewriter.erase(norm)
