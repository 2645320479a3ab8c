"""Converters of ONNX operators that become library ops
(autofusion/dialects/graph_library.py): NonMaxSuppression, BitCast, Det, TensorScatter and
TfIdfVectorizer. NonMaxSuppression's
limits (max_output_boxes_per_class, iou_threshold, score_threshold) must be known at
import time. Versions are cited as `Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

import numpy as np

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import graph_library as gl
from autofusion.dialects.graph_vision import reals_attr
from frontends.onnx.importer import Node, OpConverters, Value, element_type

OPS = OpConverters(
    versions={
        "NonMaxSuppression": (10, 11),
        "BitCast": (26,),
        "Det": (11, 22),
        "TensorScatter": (24,),
        "TfIdfVectorizer": (9,),
    }
)


def _scalar_input(node: Node, i: int, what: str) -> float | None:
    arr = node.const_input(i, what)
    if arr is None or np.asarray(arr).size == 0:
        return None
    if np.asarray(arr).size != 1:
        raise node.error(f"{what} (input #{i}) must hold one value, got {np.asarray(arr).size}")
    return float(np.asarray(arr).reshape(()))


@OPS.register("NonMaxSuppression")
def convert_non_max_suppression(node: Node) -> list[Value]:
    """NonMaxSuppression-10 and -11 (the same semantics): [n, 3] selected indices."""
    most = _scalar_input(node, 2, "max_output_boxes_per_class")
    iou = _scalar_input(node, 3, "iou_threshold")
    least = _scalar_input(node, 4, "score_threshold")
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        raise node.reject("center_point_box", center, "0 or 1")
    props: dict[str, object] = {
        "center_point_box": bool(center),
        "max_output_boxes_per_class": max(int(most or 0), 0),
        "iou_threshold": 0.0 if iou is None else iou,
    }
    if least is not None:
        props["score_threshold"] = least
    return node.emit(gl.NonMaxSuppressionOp, [node.input(0), node.input(1)], props)


@OPS.register("Det")
def convert_det(node: Node) -> list[Value]:
    """Det-11/22 (22 adds bf16): the determinants of the trailing square matrices."""
    return node.emit(gl.DetOp, [node.input(0)])


@OPS.register("TensorScatter")
def convert_tensor_scatter(node: Node) -> list[Value]:
    """TensorScatter-24: the KV-cache update, linear or circular, along `axis`."""
    mode = node.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise node.reject("mode", mode, "linear or circular")
    operands = [node.input(0), node.input(1)]
    start = node.opt_input(2)
    if start is not None:
        operands.append(start)
    props = {"axis": int(node.attr("axis", -2)), "circular": mode == "circular"}
    return node.emit(gl.TensorScatterOp, operands, props)


@OPS.register("TfIdfVectorizer")
def convert_tfidf_vectorizer(node: Node) -> list[Value]:
    """TfIdfVectorizer-9 on int32/int64 tokens (pool_int64s); string tokens have no
    element type in afc and are refused with it."""
    if node.attr("pool_strings", None) is not None:
        raise node.error("pool_strings is not supported (string tokens have no element type)")
    pool = node.ints_attr("pool_int64s")
    if pool is None:
        raise node.error("pool_int64s is required")
    lengths = ("min_gram_length", "max_gram_length", "max_skip_count")
    props: dict[str, object] = {name: int(node.attr(name)) for name in lengths}
    props |= {"mode": str(node.attr("mode")), "pool": pool}
    props["ngram_counts"] = node.ints_attr("ngram_counts")
    props["ngram_indexes"] = node.ints_attr("ngram_indexes")
    weights = node.attr("weights", None)
    if weights is not None:
        props["weights"] = reals_attr([float(w) for w in weights])
    return node.emit(gl.TfIdfVectorizerOp, [node.input(0)], props)


@OPS.register("BitCast")
def convert_bit_cast(node: Node) -> list[Value]:
    """BitCast-26: the input's bits as `to`, which must have the input's width."""
    x = node.input(0)
    elt = element_type(int(node.attr("to")), "attribute to")
    names = (dtypes.type_name(x.elt), dtypes.type_name(elt))
    if "bf16" in names:
        raise node.error("BitCast from or to BFLOAT16 is not supported")
    if dtypes.byte_width(x.elt) != dtypes.byte_width(elt):
        raise node.error(f"BitCast needs types of one width, got {x.elt} and {elt}")
    return node.emit(gl.BitCastOp, [x], result_types=[graph.tensor(x.shape, elt)])
