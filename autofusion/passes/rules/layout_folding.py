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
    ElementwiseTransposeSinkPass  e(transpose(a, p), b) -> transpose(e(a, b'), p), b' being
                                  b in a's layout (as it is, a reshape, or a transpose),
                                  when that leaves fewer transposes moving no more data:
                                  the new one cancels against transposes of the result
                                  that undo it (also through a chain of elementwise ops)

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

Why sinking, for CNNs (issue 15): a ConvNeXt block permutes NCHW -> NHWC after its
depthwise conv (the LayerNorm and the Linears run over channels) and back before the
residual add, and its channels-first LayerNorms (stem, downsampling) are NHWC sandwiches.
At a stage's end the last residual add is permuted to NHWC again by the downsampling
norm: sinking the add's operand permute below the add cancels it against the norm's
(the residual, when it is not itself a permute of NHWC data, gets the one transpose
left), and the add joins the NHWC rows kernel of the layer scale and that norm
(graph.add_layer_norm). Only a sink that removes transposes is done (a moved transpose
is never cheaper by itself); ElementwiseTransposeSinkPass is afc's name in the style of
GE's TransOpSymmetryEliminationPass, which removes inverse pairs that meet. The
transposes left at a conv's input or output move data across the innermost axis: the
rows kernel next to them reads or writes that channel-major layout itself
(lowering/row_transpose.py), so ub-fusion folds them into its addressing.
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
from autofusion.passes.rules.rope import in_source_layout


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


# ops whose result at an index depends only on their operands at that index (numpy
# broadcasting, no axis properties), so they commute with a transpose of every operand
ELEMENTWISE_OPS = (graph.UnaryOp, graph.BinaryOp, graph.CastOp, graph.WhereOp)


@dataclass
class Relaid:
    """An operand of the sunk op in the source layout: `value` as it is (kind None), or
    one `kind` op of it with perm or shape `spec`."""

    value: SSAValue
    kind: type[graph.TransposeOp] | type[graph.ReshapeOp] | None = None
    spec: list[int] | None = None


@dataclass
class SunkTranspose:
    perm: tuple[int, ...]
    operands: list[Relaid]
    transposes: list[graph.TransposeOp]  # the operands' transposes (kept for other users)
    # the result's users are all transposes undoing `perm`: they go instead of a new one
    cancels: bool


def _inverse(perm: tuple[int, ...]) -> list[int]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def _relaid(v: SSAValue, perm: tuple[int, ...]) -> Relaid | None:
    """v in the source layout of `perm`: as it is (a scalar), a reshape when only size-1
    axes move (in_source_layout), else a transpose of its own; None for a lower-rank
    operand whose data would move."""
    if all(d == 1 for d in m.shape(v)):
        return Relaid(v)
    shape = in_source_layout(v, perm)
    if shape is not None:
        return Relaid(v) if list(m.shape(v)) == shape else Relaid(v, graph.ReshapeOp, shape)
    if len(m.shape(v)) != len(perm):
        return None
    return Relaid(v, graph.TransposeOp, _inverse(perm))


def _inverse_transposes(value: SSAValue, perm: tuple[int, ...]) -> tuple[int, SSAValue]:
    """How many transposes undo transpose(value, perm) once it is sunk through a chain of
    single-user elementwise ops whose other operands need no data movement (0 when it
    meets anything else), and the value they transpose."""
    while True:
        users = [use.operation for use in value.uses]
        if users and all(
            isinstance(u, graph.TransposeOp) and m.is_identity_perm(m.compose_perms(perm, _perm(u)))
            for u in users
        ):
            return len(users), value
        if len(users) != 1 or not isinstance(users[0], ELEMENTWISE_OPS):
            return 0, value
        (user,) = users
        for v in user.operands:
            t = m.producer(v, graph.TransposeOp)
            if v is value or (t is not None and _perm(t) == perm):
                continue
            relaid = _relaid(v, perm)
            if relaid is None or relaid.kind is graph.TransposeOp:
                return 0, value
        value = user.results[0]


def _elements(values: list[SSAValue]) -> int | None:
    sizes = [m.static_elements(v) for v in values]
    return None if None in sizes else sum(s for s in sizes if s is not None)


class SinkTransposeThroughElementwise(FusionRule[SunkTranspose]):
    rule_name = "ElementwiseTransposeSinkPass"
    pattern = "Transpose->Elementwise(->inverse Transpose)"
    anchors = ELEMENTWISE_OPS

    def match(self, op: Operation) -> SunkTranspose | Refusal | None:
        rank = len(m.shape(op.results[0]))
        transposes = [m.producer(v, graph.TransposeOp) for v in op.operands]
        perms = {_perm(t) for t in transposes if t is not None and len(_perm(t)) == rank}
        if not perms:
            return None
        if len(perms) > 1:
            return Refusal("the operands are transposed by different perms")
        (perm,) = perms
        operands: list[Relaid] = []
        sunk: list[graph.TransposeOp] = []
        for v, t in zip(op.operands, transposes):
            if t is not None and _perm(t) == perm:
                operands.append(Relaid(t.input))
                if t not in sunk:
                    sunk.append(t)
                continue
            relaid = _relaid(v, perm)
            if relaid is None:
                return None  # a broadcast operand whose data would move
            operands.append(relaid)
        # Removed: the operands' transposes that only this op uses, and the inverse
        # transposes the new one meets (it goes with them). Added: a transpose per operand
        # whose data moves, and the new one unless it meets inverse ones. Fewer
        # transposes, and no more elements moved, or nothing is gained.
        freed = [t.output for t in sunk if all(u.operation is op for u in t.output.uses)]
        undone, end = _inverse_transposes(op.results[0], perm)
        moved = [r.value for r in operands if r.kind is graph.TransposeOp]
        if len(freed) + undone <= len(moved) + (0 if undone else 1):
            return None  # it would only move transposes
        cancels = undone > 0 and end is op.results[0]
        if undone and not cancels and moved:
            # a step along a chain moves no operand's data: after it the op has no
            # transposed operand left, so nothing sinks back
            return None
        gone, new = _elements(freed + [end] * undone), _elements(moved + ([] if undone else [end]))
        if gone is not None and new is not None and new > gone:
            return Refusal(f"its transposes would move {new} elements instead of {gone}")
        return SunkTranspose(perm, operands, sunk, cancels)

    def rewrite(self, op: Operation, match: SunkTranspose, rewriter: PatternRewriter) -> None:
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for r in match.operands:
            if r.kind is None:
                operands.append(r.value)
                continue
            prop = "perm" if r.kind is graph.TransposeOp else "shape"
            relay = r.kind.make([r.value], {prop: r.spec})
            relay.results[0].name_hint = r.value.name_hint
            new_ops.append(relay)
            operands.append(relay.results[0])
        out = m.tensor_type(op.results[0])
        dims = out.get_shape()
        source_dims = [0] * len(dims)
        for i, p in enumerate(match.perm):
            source_dims[p] = dims[i]
        inner = op.create(
            operands=operands,
            result_types=[type(out)(out.element_type, source_dims)],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        new_ops.append(inner)
        location = m.fused_location([*match.transposes, op])
        for new in new_ops:
            new.location = location
        if match.cancels:
            undone = [use.operation for use in op.results[0].uses]
            inner.results[0].name_hint = undone[0].results[0].name_hint
            rewriter.replace(op, new_ops, [inner.results[0]])
            for u in undone:
                rewriter.replace(u, [], [inner.results[0]])
        else:
            back = graph.TransposeOp.make([inner.results[0]], {"perm": list(match.perm)})
            back.location = location
            back.results[0].name_hint = op.results[0].name_hint
            rewriter.replace(op, [*new_ops, back], [back.results[0]])
        for t in match.transposes:
            if not t.output.uses:
                rewriter.erase(t)
