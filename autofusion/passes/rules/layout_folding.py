"""Transpose and reshape folding: chains of layout ops become one op, or none.

    CascadeTransposeRemovePass    transpose(transpose(x, p), q) -> transpose(x, p∘q),
                                  or x itself when p∘q is the identity
    UnchangedTransposeRemovePass  transpose(x, identity) -> x; a transpose that moves only
                                  size-1 axes keeps the memory order -> reshape
    CascadeReshapeRemovePass      reshape(reshape(x)) -> reshape(x), or x itself
    NoUseReshapeRemovePass        reshape(x) to x's own shape -> x
    TransposeReshapeConstFoldingPass
                                  transpose or reshape of a graph.constant -> a constant;
                                  shape-only weights give shape-only weights

The bypassed inner op of a cascade may keep other users; it is never duplicated. A
constant is folded only within `matching.fold_is_bounded` (small, or its only user is the
folded op), so a weight is never stored twice.

Names: UnchangedTransposeRemovePass and NoUseReshapeRemovePass are GE graph passes
(hicann/ge compiler/graph/passes/format_optimize/unchanged_transpose_remove_pass.h,
shape_optimize/no_use_reshape_remove_pass.cc); CascadeReshapeRemovePass is GE AutoFuse's
(compiler/graph/optimize/autofuse/autofuse/pattern_fusion/cascade_reshape_remove_pass.cpp).
CANN has no pass composing two arbitrary transposes (GE's TransOpSymmetryEliminationPass
removes inverse pairs only; FE's TransposeReshapeFusionPass builds ConfusionTransposeD,
a different rewrite), so CascadeTransposeRemovePass is afc's name in GE's style. GE
folds a transpose of a constant in its ConstantFoldingPass, which needs values;
TransposeReshapeConstFoldingPass (afc's name) also folds shape-only weights, so fusion
can be planned for a model without its weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects.shape_inference import DYN
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal


def _perm(op: graph.TransposeOp) -> tuple[int, ...]:
    return graph.Props(op.properties, op.name).integers("perm")


def _reshape_spec(shape: tuple[int, ...]) -> list[int] | None:
    """A reshape `shape` property producing `shape` (one dynamic dim becomes -1)."""
    if sum(1 for d in shape if d == DYN) > 1:
        return None
    return [-1 if d == DYN else d for d in shape]


@dataclass
class LayoutFold:
    source: SSAValue
    inner: Operation | None
    spec: list[int] | None  # perm or shape of the new op; None: the source itself


class LayoutFoldRule(FusionRule[LayoutFold]):
    """A layout fold: the anchor becomes fold.source itself, or one `result_kind` op of it."""

    result_kind: ClassVar[type[graph.TransposeOp] | type[graph.ReshapeOp]]

    def rewrite(self, op: Operation, match: LayoutFold, rewriter: PatternRewriter) -> None:
        if match.spec is None:
            rewriter.replace(op, [], [match.source])
            return
        prop = "perm" if self.result_kind is graph.TransposeOp else "shape"
        new = self.result_kind.make([match.source], {prop: match.spec})
        new.location = m.fused_location([o for o in (match.inner, op) if o is not None])
        rewriter.replace(op, [new])


class CascadeTransposes(LayoutFoldRule):
    rule_name = "CascadeTransposeRemovePass"
    pattern = "Transpose->Transpose"
    anchors = (graph.TransposeOp,)
    result_kind = graph.TransposeOp

    def match(self, op: Operation) -> LayoutFold | Refusal | None:
        assert isinstance(op, graph.TransposeOp)
        inner = m.producer(op.input, graph.TransposeOp)
        if inner is None:
            return None
        perm = m.compose_perms(_perm(inner), _perm(op))
        return LayoutFold(inner.input, inner, None if m.is_identity_perm(perm) else list(perm))


class RemoveUnchangedTranspose(LayoutFoldRule):
    rule_name = "UnchangedTransposeRemovePass"
    pattern = "Transpose(identity or size-1 axes only)"
    anchors = (graph.TransposeOp,)
    result_kind = graph.ReshapeOp

    def match(self, op: Operation) -> LayoutFold | Refusal | None:
        assert isinstance(op, graph.TransposeOp)
        perm = _perm(op)
        if m.is_identity_perm(perm):
            return LayoutFold(op.input, None, None)
        dims = m.shape(op.input)
        moved = [p for p in perm if dims[p] != 1]
        if moved != sorted(moved):
            return None  # a real data movement
        spec = _reshape_spec(m.shape(op.output))
        if spec is None:
            return Refusal("the transposed shape has more than one dynamic dim")
        return LayoutFold(op.input, None, spec)


def _identity_reshape(source: SSAValue, result: SSAValue) -> bool:
    """Whether a reshape of `source` to `result`'s type leaves it unchanged.

    Equal shapes with at most one dynamic dim: the element counts agree, so that dim does.
    """
    dims = m.shape(source)
    return dims == m.shape(result) and sum(1 for d in dims if d == DYN) <= 1


class CascadeReshapes(LayoutFoldRule):
    rule_name = "CascadeReshapeRemovePass"
    pattern = "Reshape->Reshape"
    anchors = (graph.ReshapeOp,)
    result_kind = graph.ReshapeOp

    def match(self, op: Operation) -> LayoutFold | Refusal | None:
        assert isinstance(op, graph.ReshapeOp)
        inner = m.producer(op.input, graph.ReshapeOp)
        if inner is None:
            return None
        if _identity_reshape(inner.input, op.output):
            return LayoutFold(inner.input, inner, None)
        if m.static_elements(op.output) is not None:
            return LayoutFold(inner.input, inner, list(m.shape(op.output)))
        # 0 copies a dim of the outer reshape's input (the inner result): make it explicit
        middle = m.shape(inner.output)
        spec = list(graph.Props(op.properties, op.name).integers("shape"))
        for i, d in enumerate(spec):
            if d == 0:
                if middle[i] == DYN:
                    return Refusal(f"dim {i} copies a dynamic dim of the inner reshape")
                spec[i] = middle[i]
        return LayoutFold(inner.input, inner, spec)


class RemoveNoUseReshape(LayoutFoldRule):
    rule_name = "NoUseReshapeRemovePass"
    pattern = "Reshape(to the same shape)"
    anchors = (graph.ReshapeOp,)
    result_kind = graph.ReshapeOp

    def match(self, op: Operation) -> LayoutFold | Refusal | None:
        assert isinstance(op, graph.ReshapeOp)
        if not _identity_reshape(op.input, op.output):
            return None
        return LayoutFold(op.input, None, None)


@dataclass
class ConstLayout:
    constant: graph.ConstantOp
    values: np.ndarray | None


class FoldLayoutOfConstant(FusionRule[ConstLayout]):
    rule_name = "TransposeReshapeConstFoldingPass"
    pattern = "Const->Transpose|Reshape"
    anchors = (graph.TransposeOp, graph.ReshapeOp)

    def match(self, op: Operation) -> ConstLayout | Refusal | None:
        assert isinstance(op, graph.TransposeOp | graph.ReshapeOp)
        constant = m.constant_op(op.input)
        if constant is None:
            return None
        size = m.static_elements(op.output)
        if size is None:
            return Refusal("the result has a dynamic shape")
        if not m.fold_is_bounded(op, size):
            return Refusal(
                f"the constant has other users: folding would store its {size} elements twice"
            )
        values = m.constant_array(op.input)
        if values is not None:
            if isinstance(op, graph.TransposeOp):
                values = np.transpose(values, _perm(op))
            values = np.ascontiguousarray(values).reshape(m.shape(op.output))
        return ConstLayout(constant, values)

    def rewrite(self, op: Operation, match: ConstLayout, rewriter: PatternRewriter) -> None:
        suffix = "transposed" if isinstance(op, graph.TransposeOp) else "reshaped"
        name = m.constant_name(match.constant.result, "constant") + "." + suffix
        new = m.make_constant(match.values, m.tensor_type(op.results[0]), name)
        new.location = m.fused_location([match.constant, op])
        rewriter.replace(op, [new])
