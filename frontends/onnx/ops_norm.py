"""Converters of ONNX normalization operators onto existing graph ops.

InstanceNormalization and GroupNormalization are a graph.layer_norm (unit scale) over
the spatial dims of each channel or group, followed by the per-channel scale and bias;
MeanVarianceNormalization, LpNormalization and LRN are their formulas in primitive ops.
No new graph op is needed, so fusion, lowering and export treat them as the ops they
are made of. Versions are cited as `Op-<since_version>` from https://onnx.ai/onnx/operators/;
the later versions `OPS` lists only add element types.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import i64

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Node, OpConverters, Value

OPS = OpConverters(
    versions={
        "InstanceNormalization": (6, 22),
        "GroupNormalization": (18, 21),
        "MeanVarianceNormalization": (9, 13),
        "LpNormalization": (1, 22),
        "LRN": (1, 13),
    }
)

DYN = si.DYN


def _scalar(node: Node, value: float, like: Value) -> Value:
    return node.const(np.asarray(value), like.elt)


def _float_input(node: Node) -> Value:
    x = node.input(0)
    if not dtypes.is_float(x.elt):
        raise node.error(f"the input must be floating point, got {x.elt}")
    return x


def _per_channel(node: Node, param: Value, rank: int) -> Value:
    """A [C] parameter as [C, 1, ..., 1], to broadcast over an [N, C, ...] input."""
    return node.emit1(graph.ReshapeOp, [param], {"shape": [-1, *([1] * (rank - 2))]})


def _affine(node: Node, y: Value, scale: Value, bias: Value, rank: int) -> list[Value]:
    y = node.emit1(graph.MulOp, [y, _per_channel(node, scale, rank)])
    return node.emit(graph.AddOp, [y, _per_channel(node, bias, rank)])


def _unit_layer_norm(node: Node, x: Value, axis: int, epsilon: float) -> Value:
    """(x - mean) / sqrt(var + epsilon) over [axis, rank): a layer norm of scale 1."""
    return node.emit1(
        graph.LayerNormOp, [x, _scalar(node, 1.0, x)], {"axis": axis, "epsilon": epsilon}
    )


@OPS.register("InstanceNormalization")
def convert_instance_normalization(node: Node) -> list[Value]:
    """InstanceNormalization-6: per (n, c), normalize over the spatial dims; then
    scale[c] * y + B[c]."""
    x = _float_input(node)
    rank = len(x.shape)
    if rank < 3:
        raise node.error(f"the input must be [N, C, D1, ...], got {si.fmt(x.shape)}")
    epsilon = float(node.attr("epsilon", 1e-5))
    y = _unit_layer_norm(node, x, 2, epsilon)
    return _affine(node, y, node.input(1), node.input(2), rank)


@OPS.register("GroupNormalization")
def convert_group_normalization(node: Node) -> list[Value]:
    """GroupNormalization-18/21: channels in num_groups groups, each normalized over its
    channels and spatial dims; then the per-channel (21) or per-group (18) scale and bias."""
    x = _float_input(node)
    rank = len(x.shape)
    groups = int(node.attr("num_groups"))
    epsilon = float(node.attr("epsilon", 1e-5))
    if node.version >= 21:
        stash = int(node.attr("stash_type", TensorProto.FLOAT))
        if stash != TensorProto.FLOAT:
            raise node.reject("stash_type", stash, "afc computes the statistics in float32 (1)")
    if rank < 3:
        raise node.error(f"the input must be [N, C, D1, ...], got {si.fmt(x.shape)}")
    rest = list(x.shape[1:])
    if rest.count(DYN) > 1 or x.shape[1] == DYN:
        raise node.symbolic_error("the channel and spatial dims")
    channels = x.shape[1]
    if groups < 1 or channels % groups:
        raise node.error(f"num_groups={groups} does not divide the {channels} channels")
    grouped = node.emit1(graph.ReshapeOp, [x], {"shape": [0, groups, -1]})
    y = _unit_layer_norm(node, grouped, 2, epsilon)
    y = node.emit1(graph.ReshapeOp, [y], {"shape": [0, *(-1 if d == DYN else d for d in rest)]})
    scale, bias = node.input(1), node.input(2)
    if node.version < 21:  # one value per group: channel c is in group c // (C / G)
        owner = node.const(np.arange(channels, dtype=np.int64) // (channels // groups), i64)
        scale, bias = (node.emit1(graph.GatherOp, [p, owner], {"axis": 0}) for p in (scale, bias))
    return _affine(node, y, scale, bias, rank)


def _axes(node: Node, axes: Sequence[int], rank: int) -> list[int]:
    return sorted(node.axis(a, rank) for a in axes)


@OPS.register("MeanVarianceNormalization")
def convert_mean_variance_normalization(node: Node) -> list[Value]:
    """MeanVarianceNormalization-13: (x - mean) / (sqrt(var) + 1e-9) over `axes`
    (default [0, 2, 3]), as ONNX's function body computes it."""
    x = _float_input(node)
    axes = _axes(node, node.ints_attr("axes", [0, 2, 3]) or [], len(x.shape))
    reduce = {"axes": axes, "keepdims": True}
    mean = node.emit1(graph.ReduceMeanOp, [x], reduce)
    d = node.emit1(graph.SubOp, [x, mean])
    var = node.emit1(graph.ReduceMeanOp, [node.emit1(graph.MulOp, [d, d])], reduce)
    std = node.emit1(graph.AddOp, [node.emit1(graph.SqrtOp, [var]), _scalar(node, 1e-9, x)])
    return node.emit(graph.DivOp, [d, std])


@OPS.register("LpNormalization")
def convert_lp_normalization(node: Node) -> list[Value]:
    """LpNormalization-1: x / ||x||_p along `axis`, p = 1 or 2; an all-zero vector stays
    0 (its norm is taken as 1, as ONNX's reference does)."""
    x = _float_input(node)
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        raise node.reject("p", p, "1 or 2")
    axes = _axes(node, [int(node.attr("axis", -1))], len(x.shape))
    reduce = {"axes": axes, "keepdims": True}
    if p == 1:
        norm = node.emit1(graph.ReduceSumOp, [node.emit1(graph.AbsOp, [x])], reduce)
    else:
        total = node.emit1(graph.ReduceSumOp, [node.emit1(graph.MulOp, [x, x])], reduce)
        norm = node.emit1(graph.SqrtOp, [total])
    zero = node.emit1(graph.EqualOp, [norm, _scalar(node, 0.0, x)])
    norm = node.emit1(graph.WhereOp, [zero, _scalar(node, 1.0, x), norm])
    return node.emit(graph.DivOp, [x, norm])


@OPS.register("LRN")
def convert_lrn(node: Node) -> list[Value]:
    """LRN-13: x / (bias + alpha / size * sum of x^2 over the channel window
    [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta; the window sum is a sum of
    `size` shifted slices of x^2 zero-padded along the channels."""
    x = _float_input(node)
    size = int(node.attr("size"))
    alpha = float(node.attr("alpha", 1e-4))
    beta = float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    rank = len(x.shape)
    if size < 1:
        raise node.error(f"size={size} must be >= 1")
    if rank < 3:
        raise node.error(f"the input must be [N, C, D1, ...], got {si.fmt(x.shape)}")
    channels = x.shape[1]
    if channels == DYN:
        raise node.symbolic_error("the channel count")
    before, after = (size - 1) // 2, math.ceil((size - 1) / 2)
    pads = [0] * (2 * rank)
    pads[1], pads[rank + 1] = before, after
    square = node.emit1(graph.MulOp, [x, x])
    padded = node.emit1(graph.PadOp, [square], {"pads": pads, "mode": "constant", "value": 0.0})
    total: Value | None = None
    for k in range(size):
        window = {"starts": [k], "ends": [k + channels], "axes": [1], "steps": [1]}
        part = node.emit1(graph.SliceOp, [padded], window)
        total = part if total is None else node.emit1(graph.AddOp, [total, part])
    assert total is not None
    base = node.emit1(graph.MulOp, [total, _scalar(node, alpha / size, x)])
    base = node.emit1(graph.AddOp, [base, _scalar(node, bias, x)])
    return node.emit(graph.DivOp, [x, node.emit1(graph.PowOp, [base, _scalar(node, beta, x)])])
