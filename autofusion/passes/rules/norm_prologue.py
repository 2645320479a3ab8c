"""RmsNormMatMulFusionPass: an RMS norm folded into the matmuls it feeds.

    z = rms_norm(x, g) @ W [+ b]  ->  rstd = rms_norm_stats(x)
                                      y = x @ W'                      W' = g[:, None] * W
                                      z = rms_norm_apply(y, rstd, 1) [+ b]

Row r of rms_norm(x, g) is rstd[r] * x[r] * g, so rms_norm(x, g) @ W is
diag(rstd) (x @ (diag(g) W)): g folds into the constant weight at compile time (in
float32, rounded once to W's type; shape-only when g or W is), and the per-row rstd
scales the product's rows before the bias. The normalised x is never written: the
matmul reads x itself, and its kernel computes rstd from the A rows it has (the matmul
template's norm prologue, lowering/norm_prologue.py), so the norm's own kernel goes.

Split chips only (910B: the rule is skipped for a module whose target is another chip).
Preconditions: the norm is over the last axis only (K, the matmul's contraction), g and
W are constants, W is a [K, N] matrix, the matmul applies no activation (act(r y) is not
r act(y)), and every user of the norm is such a matmul reading it as A: a norm the graph
needs anyway (another user, a graph output) would be computed twice.

HF's RMSNorm rounds the normalised x to f16 before the matmul; this form rounds x @ W'
instead (a few f16 ulps apart; `afc compile --check` compares with ONNX Runtime).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


@dataclass
class NormPrologue:
    norm: graph.RmsNormOp
    matmul: graph.MatmulOp


def _user_refusal(norm: graph.RmsNormOp, k: int) -> Refusal | None:
    """Why some user of the norm is not a matmul reading it as A with a [K, N] constant."""
    for use in norm.output.uses:
        user = use.operation
        if not isinstance(user, graph.MatmulOp) or use.index != 0:
            return Refusal(f"the norm's output also feeds {user.name}: the norm is computed anyway")
        if user.activation is not None:
            return Refusal("a matmul the norm feeds applies an activation")
        w = user.rhs
        if m.constant_op(w) is None:
            return Refusal("a matmul the norm feeds has a weight that is not a constant")
        if len(m.shape(w)) != 2 or m.shape(w)[0] != k:
            return Refusal(f"a matmul weight of shape {si.fmt(m.shape(w))} is not [K, N]")
        if m.tensor_type(w).element_type != m.tensor_type(norm.input).element_type:
            return Refusal("a matmul weight's element type differs from the norm's input")
    return None


def fold_norm_scale(norm: graph.RmsNormOp, w: SSAValue) -> graph.ConstantOp:
    """The constant diag(g) W of the norm's scale g and a constant [K, N] weight W: in
    float32, rounded once to W's type; shape-only when g or W is."""
    g, values = m.constant_array(norm.scale), m.constant_array(w)
    folded = None
    if g is not None and values is not None:
        folded = np.asarray(g, np.float32).reshape(-1, 1) * np.asarray(values, np.float32)
    return m.make_constant(folded, m.tensor_type(w), m.constant_name(w, "weight") + ".normed")


class FoldRmsNormIntoMatMul(FusionRule[NormPrologue]):
    rule_name = "RmsNormMatMulFusionPass"
    pattern = "RmsNorm->MatMul(constant weight)"
    anchors = (graph.MatmulOp,)
    phase = 1  # after the QKV merge and the FFN: they take the norm's users first
    # the statistics join the matmul's kernel on split chips only (norm_prologue.py);
    # elsewhere their per-row values would stay library ops (no DataCopyPad on 910/310P)
    chip_modes = ("split",)

    def match(self, op: Operation) -> NormPrologue | Refusal | None:
        assert isinstance(op, graph.MatmulOp)
        norm = op.lhs.owner
        if not isinstance(norm, graph.RmsNormOp):
            return None
        shape = m.shape(norm.input)
        rank = len(shape)
        axis = si.normalize_axis(graph.Props(norm.properties, norm.name).integer("axis"), rank)
        if axis != rank - 1:
            return Refusal("the norm is over more than the last axis (the matmul's K)")
        k = shape[-1]
        if k == si.DYN:
            return Refusal("the norm's axis is dynamic")
        if m.constant_op(norm.scale) is None:
            return Refusal("the norm's scale is not a constant (it folds into the weight)")
        if si.num_elements(m.shape(norm.scale)) != k:
            return Refusal("the norm's scale is not one value per column")
        return _user_refusal(norm, k) or NormPrologue(norm, op)

    def rewrite(self, op: Operation, match: NormPrologue, rewriter: PatternRewriter) -> None:
        norm, mm = match.norm, match.matmul
        x = norm.input
        stats = graph.RmsNormStatsOp.make([x], {"axis": norm.axis, "epsilon": norm.epsilon})
        hint = norm.output.name_hint
        stats.results[0].name_hint = f"{hint}_rstd" if hint else "rstd"
        w_type = m.tensor_type(mm.rhs)
        weight = fold_norm_scale(norm, mm.rhs)
        props = {k: v for k, v in mm.properties.items()}
        product = graph.MatmulOp.make([x, weight.result], props)
        n = w_type.get_shape()[1]
        out_elt = m.tensor_type(mm.output).element_type
        ones = m.make_constant(np.ones(n, np.float32), graph.tensor([n], out_elt), "row_scale")
        rank = len(m.shape(x))
        apply = graph.RmsNormApplyOp.make(
            [product.results[0], stats.results[0], ones.result], {"axis": rank - 1}
        )
        new: list[Operation] = [stats, weight, product, ones, apply]
        if mm.bias is not None:
            new.append(graph.AddOp.make([apply.results[0], mm.bias]))
        for created in new:
            created.location = m.fused_location([norm, mm])
        new[-1].results[0].name_hint = mm.output.name_hint
        rewriter.replace(mm, new, [new[-1].results[0]])
        if not norm.output.uses:
            rewriter.erase(norm)
