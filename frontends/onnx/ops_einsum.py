"""Einsum-12 lowered at import to graph transpose, reshape, reduce_sum, mul and matmul.

Each operand first loses its repeated labels (a diagonal: a product with an identity
mask summed over one of the two axes) and the labels nothing else needs (summed out).
Operands are then contracted left to right: both sides are transposed to [batch, kept,
contracted] / [batch, contracted, kept], merged to three dims by reshapes, multiplied by
one batched matmul, split back, and the result is transposed to the output's order.
Ellipsis dims get their own labels, right-aligned across operands; ellipsis dims that
broadcast (1 against N) are refused. https://onnx.ai/onnx/operators/onnx__Einsum.html
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Node, OpConverters, Value, probe_dims
from frontends.onnx.ops_tensor import reshape_to

# Einsum-28 only adds bf16
OPS = OpConverters(versions={"Einsum": (12, 28)})

ELLIPSIS = "..."
# labels of ellipsis dims (never letters, so they cannot clash with the equation's)
ELLIPSIS_LABELS = string.digits


@dataclass
class Term:
    """An operand (or an intermediate result) and the label of each of its dims."""

    value: Value
    labels: str

    def dims(self) -> dict[str, tuple[int, int]]:
        """label -> its size under probe assignments A and B."""
        a, b = probe_dims(self.value)
        return {c: (x, y) for c, x, y in zip(self.labels, a, b)}


def parse_equation(node: Node, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The input terms and the output term, ellipses expanded to digit labels."""
    eq = str(node.attr("equation")).replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise node.error(f"equation '{eq}' has {len(terms)} inputs, the node {len(ranks)}")
    for t in [*terms, rhs]:
        letters = t.replace(ELLIPSIS, "")
        if t.count(ELLIPSIS) > 1 or not all(c in string.ascii_letters for c in letters):
            raise node.error(f"equation '{eq}': term '{t}' is not letters and one '...'")
    widths = []
    for t, r in zip(terms, ranks):
        explicit = len(t.replace(ELLIPSIS, ""))
        width = r - explicit if ELLIPSIS in t else 0
        if width < 0 or (ELLIPSIS not in t and explicit != r):
            raise node.error(f"equation '{eq}': term '{t}' does not fit a rank-{r} input")
        widths.append(width)
    most = max(widths, default=0)
    if most > len(ELLIPSIS_LABELS):
        raise node.error(f"equation '{eq}': more than {len(ELLIPSIS_LABELS)} ellipsis dims")
    full = ELLIPSIS_LABELS[:most]
    inputs = [t.replace(ELLIPSIS, full[most - w :]) for t, w in zip(terms, widths)]
    if arrow:
        output = rhs.replace(ELLIPSIS, full)
    else:  # implicit: ellipsis dims, then the letters used once, alphabetically
        counts = Counter("".join(terms).replace(ELLIPSIS, ""))
        output = full + "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(output)) != len(output) or not set(output) <= set("".join(inputs)):
        raise node.error(f"equation '{eq}': output '{rhs}' repeats or invents a label")
    return inputs, output


def _transpose(node: Node, t: Term, labels: str) -> Term:
    if labels == t.labels:
        return t
    perm = [t.labels.index(c) for c in labels]
    return Term(node.emit1(graph.TransposeOp, [t.value], {"perm": perm}), labels)


def _sum_out(node: Node, t: Term, drop: set[str]) -> Term:
    axes = [k for k, c in enumerate(t.labels) if c in drop]
    if not axes:
        return t
    y = node.emit1(graph.ReduceSumOp, [t.value], {"axes": axes, "keepdims": False})
    return Term(y, "".join(c for c in t.labels if c not in drop))


def _diagonal(node: Node, t: Term) -> Term:
    """`t` with each repeated label kept once (its diagonal)."""
    while len(set(t.labels)) != len(t.labels):
        label = next(c for c in t.labels if t.labels.count(c) > 1)
        first = t.labels.index(label)
        second = t.labels.index(label, first + 1)
        size = t.value.shape[first]
        if size == si.DYN:
            raise node.error(f"the diagonal of label '{label}' needs a static dim")
        shape = [1] * len(t.labels)
        shape[first] = shape[second] = size
        eye = node.const(np.eye(size).reshape(shape), t.value.elt)
        masked = node.emit1(graph.MulOp, [t.value, eye])
        y = node.emit1(graph.ReduceSumOp, [masked], {"axes": [second], "keepdims": False})
        t = Term(y, t.labels[:second] + t.labels[second + 1 :])
    return t


def _merged(node: Node, t: Term, groups: Sequence[str]) -> Value:
    """`t` (labels in group order) reshaped to one dim per group after the batch labels."""
    dims = t.dims()
    batch = groups[0]
    shapes = [
        [dims[c][k] for c in batch] + [int(np.prod([dims[c][k] for c in g])) for g in groups[1:]]
        for k in (0, 1)
    ]
    if shapes == [list(d) for d in probe_dims(t.value)]:
        return t.value
    return reshape_to(node, t.value, shapes[0], shapes[1])


def contract(node: Node, a: Term, b: Term, needed: set[str]) -> Term:
    """a * b summed over their shared labels that are not `needed`, by one matmul."""
    batch = "".join(c for c in a.labels if c in b.labels and c in needed)
    inner = "".join(c for c in a.labels if c in b.labels and c not in needed)
    left = "".join(c for c in a.labels if c not in b.labels)
    right = "".join(c for c in b.labels if c not in a.labels)
    da, db = a.dims(), b.dims()
    for c in batch + inner:
        if da[c] != db[c]:
            raise node.error(
                f"label '{c}' has sizes {da[c][0]} and {db[c][0]}; broadcasting "
                "(ellipsis) dims in a contraction is not supported"
            )
    a = _transpose(node, a, batch + left + inner)
    b = _transpose(node, b, batch + inner + right)
    lhs = _merged(node, a, [batch, left, inner])
    rhs = _merged(node, b, [batch, inner, right])
    product = node.emit1(graph.MatmulOp, [lhs, rhs])  # [batch, left, right] merged
    dims = {**da, **db}
    out = batch + left + right
    shapes = [[dims[c][k] for c in out] for k in (0, 1)]
    if shapes == [list(d) for d in probe_dims(product)]:
        return Term(product, out)
    return Term(reshape_to(node, product, shapes[0], shapes[1]), out)


@OPS.register("Einsum")
def convert_einsum(node: Node) -> list[Value]:
    """Einsum-12/28 on any number of operands (see the module docstring)."""
    values = node.inputs()
    inputs, output = parse_equation(node, [len(v.shape) for v in values])
    terms = [_diagonal(node, Term(v, labels)) for v, labels in zip(values, inputs)]
    result = terms[0]
    for k in range(len(terms)):
        later = set(output).union(*(t.labels for t in terms[k + 1 :]))
        if k == 0:
            result = _sum_out(node, result, set(result.labels) - later)
            continue
        nxt = _sum_out(node, terms[k], set(terms[k].labels) - later - set(result.labels))
        result = _sum_out(node, result, set(result.labels) - later - set(nxt.labels))
        result = contract(node, result, nxt, later)
    return [_transpose(node, result, output).value]
