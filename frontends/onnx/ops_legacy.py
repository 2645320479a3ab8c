"""The operator versions of the opsets before 13, converted as ONNX Runtime runs them.

A model's opset resolves each of its operators to one version (its since_version). The
versions reached from opset 7 (numpy-style broadcasting) to 12 are listed here:

* `LEGACY_VERSIONS`: versions whose semantics are a newer version's, converted by the
  same converter. They lack element types, negative axes, or optional inputs and
  attributes that default to the newer behaviour. Where an attribute became an input
  (Squeeze/Unsqueeze axes, Split's split, ReduceSum's axes, Clip's bounds, Pad's pads,
  TopK's k, Upsample's scales), the converter reads it by version.
* `OPS.refused`: versions whose semantics afc does not implement, and what differs.

Softmax, LogSoftmax and Hardmax before version 13 normalize over the input flattened to 2-D
at `axis` (default 1): `along_axis` converts them so. Scatter-9 (and its deprecated alias
Scatter-11) is ScatterElements without a reduction; Resize-10 is Upsample-10. Versions
are cited as `Op-<since_version>` from https://onnx.ai/onnx/operators/ (the Changelog).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from frontends.onnx.importer import Node, OpConverters, OpVersions, Value, probe_dims
from frontends.onnx.ops_indexing import convert_scatter_elements
from frontends.onnx.ops_tensor import reshape_to

# op type -> the versions before those its converter was written against that have the
# same semantics (merged into its table's versions by frontends/onnx/converters.py)
LEGACY_VERSIONS: OpVersions = {
    # unary math: version 6 dropped consumed_inputs; 13 adds bf16
    **{
        op: (6,)
        for op in (
            "Abs",
            "Ceil",
            "Exp",
            "Floor",
            "Log",
            "Neg",
            "Reciprocal",
            "Relu",
            "Sigmoid",
            "Sqrt",
            "Tanh",
        )
    },
    # binary math and comparisons: numpy broadcasting from version 7
    **{op: (7,) for op in ("Add", "Sub", "Mul", "Div", "PRelu")},
    "Equal": (7, 11),
    "Greater": (7, 9),
    "Less": (7, 9),
    "Pow": (7, 12),
    "Max": (6, 8, 12),
    "Min": (6, 8, 12),
    "Mean": (6, 8),
    "Sum": (6, 8),
    "Mod": (10,),
    "Erf": (9,),
    "IsNaN": (9,),
    "Sign": (9,),
    "Clip": (6, 11, 12),
    "Gemm": (7, 9, 11),
    "MatMul": (1, 9),
    "Cast": (6, 9),
    "QuantizeLinear": (10,),
    "DequantizeLinear": (10,),
    # version 11 allows negative axes, 12 adds select_last_index (default off)
    "ArgMax": (1, 11, 12),
    "ArgMin": (1, 11, 12),
    **{
        op: (1, 11)
        for op in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMean",
            "ReduceProd",
            "ReduceSum",
            "ReduceSumSquare",
        )
    },
    "ReduceMax": (1, 11, 12),
    "ReduceMin": (1, 11, 12),
    "Softmax": (1, 11),
    "LogSoftmax": (1, 11),
    "Hardmax": (1, 11),
    "TopK": (1, 10),
    # normalization, convolution and pooling: later versions add dilations, ceil_mode
    # and count_include_pad with defaults that keep the older behaviour
    "BatchNormalization": (7,),
    "Conv": (1,),
    "ConvTranspose": (1,),
    "AveragePool": (7, 10),
    "MaxPool": (1, 8, 10, 11),
    "LpPool": (2,),
    "MaxUnpool": (9,),
    "Upsample": (7, 9),
    "Resize": (10, 11),
    "DepthToSpace": (1, 11),
    "SpaceToDepth": (1,),
    # tensors and shapes
    "Concat": (4, 11),
    "Constant": (1, 9, 11, 12),
    "Dropout": (7, 10, 12),
    "Expand": (8,),
    "Flatten": (1, 9, 11),
    "Gather": (1, 11),
    "GatherND": (11, 12),
    "Identity": (1,),
    "Pad": (2, 11),
    "Reshape": (5,),
    "Shape": (1,),
    "Size": (1,),
    "Slice": (10, 11),
    "Split": (2, 11),
    "Squeeze": (1, 11),
    "Unsqueeze": (1, 11),
    "Tile": (6,),
    "Transpose": (1,),
    # control flow: the later versions add element types, sequences and optionals
    "If": (1, 11),
    "Loop": (1, 11),
    "Scan": (8, 9),
}

OPS = OpConverters(
    versions={"Scatter": (9, 11)},
    refused={
        ("Slice", 1): (
            "Slice-1 takes starts, ends and axes as attributes (afc implements Slice-10 on)"
        ),
    },
)


def along_axis(node: Node, fn: Callable[[Value, int], list[Value]]) -> list[Value]:
    """`fn(x, axis)` for Softmax, LogSoftmax and Hardmax: along `axis` (default -1) from
    version 13; before that over the input flattened to 2-D at `axis` (default 1)."""
    x = node.input(0)
    if node.version >= 13:
        return fn(x, int(node.attr("axis", -1)))
    a, b = probe_dims(x)
    rank = len(a)
    axis = int(node.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    flat_a = [int(np.prod(a[:axis])), int(np.prod(a[axis:]))]
    flat_b = [int(np.prod(b[:axis])), int(np.prod(b[axis:]))]
    out = fn(reshape_to(node, x, flat_a, flat_b), 1)
    return [reshape_to(node, out[0], a, b)]


@OPS.register("Scatter")
def convert_scatter(node: Node) -> Sequence[Value | None]:
    """Scatter-9 and -11 (deprecated): ScatterElements-11 without a reduction."""
    return convert_scatter_elements(node)
