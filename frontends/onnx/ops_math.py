"""Converters of ONNX compute operators: elementwise math, reductions, NN layers.

Each converter reads every attribute of the operator versions `OPS` lists for it (an
attribute value it cannot express is an error) and builds graph ops with `Node.emit`,
which folds them when all operands are known. Operator versions are cited
as `Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import f32, i1
from xdsl.ir import Attribute

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import graph, graph_library, graph_math
from autofusion.dialects import graph_quant as gq
from autofusion.dialects import shape_inference as si
from autofusion.narrow_types import E8M0, ROUND_MODES
from frontends.onnx.importer import Const, Node, OpConverters, Value, element_type, probe_dims
from frontends.onnx.ops_legacy import along_axis

OPS = OpConverters(
    versions={
        "Abs": (13,),
        "Add": (13, 14),
        "And": (7,),
        "AveragePool": (11, 19, 22),
        "BatchNormalization": (9, 14, 15),
        "Cast": (13, 19, 21, 23, 24, 25, 28),
        "CastLike": (15, 19, 21, 23, 24, 25),
        "Clip": (13,),
        "Conv": (11, 22),
        "Cos": (7, 22),
        "Div": (13, 14),
        "Elu": (6, 22),
        "Equal": (13, 19),
        "Erf": (13,),
        "Exp": (13,),
        "Gemm": (13,),
        "GlobalAveragePool": (1, 22),
        "GlobalMaxPool": (1, 22),
        "Greater": (13,),
        "GreaterOrEqual": (12, 16),
        "HardSigmoid": (6, 22),
        "HardSwish": (14, 22),
        "LayerNormalization": (17,),
        "LeakyRelu": (6, 16),
        "Less": (13,),
        "LessOrEqual": (12, 16),
        "Log": (13,),
        "LogSoftmax": (13,),
        "MatMul": (13,),
        "Max": (13,),
        "MaxPool": (12, 22),
        "Mean": (13,),
        "Min": (13,),
        "Mish": (18, 22),
        "Mul": (13, 14),
        "Neg": (13,),
        "Not": (1,),
        "Or": (7,),
        "PRelu": (9, 16),
        "Pow": (13, 15),
        "Reciprocal": (13,),
        "ReduceL1": (13, 18),
        "ReduceL2": (13, 18),
        "ReduceLogSum": (13, 18, 28),
        "ReduceLogSumExp": (13, 18, 28),
        "ReduceMax": (13, 18, 20),
        "ReduceMean": (13, 18),
        "ReduceMin": (13, 18, 20),
        "ReduceProd": (13, 18),
        "ReduceSum": (13,),
        "ReduceSumSquare": (13, 18),
        "Relu": (13, 14),
        "Selu": (6, 22),
        "Sigmoid": (13,),
        "Sin": (7, 22),
        "Softmax": (13,),
        "Softplus": (1, 22),
        "Softsign": (1, 22),
        "Sqrt": (13,),
        "Sub": (13, 14),
        "Sum": (13,),
        "Tanh": (13,),
        "ThresholdedRelu": (10, 22),
        "Xor": (7,),
    }
)


def _scalar(node: Node, value: float, like: Value) -> Const:
    """A rank-0 constant with `like`'s element type."""
    return node.const(np.asarray(value), like.elt)


def _rank(v: Value) -> int:
    return len(v.shape)


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------

UNARY: dict[str, type[graph.GraphOp]] = {
    "Neg": graph.NegOp,
    "Abs": graph.AbsOp,
    "Exp": graph.ExpOp,
    "Log": graph.LogOp,
    "Sqrt": graph.SqrtOp,
    "Reciprocal": graph.ReciprocalOp,
    "Relu": graph.ReluOp,
    "Sigmoid": graph.SigmoidOp,
    "Tanh": graph.TanhOp,
    "Erf": graph.ErfOp,
    "Sin": graph.SinOp,
    "Cos": graph.CosOp,
    "Not": graph.NotOp,
}


@OPS.register(*UNARY)
def convert_unary(node: Node) -> list[Value]:
    """Neg-13, Abs-13, Exp-13, Log-13, Sqrt-13, Reciprocal-13, Relu-14, Sigmoid-13,
    Tanh-13, Erf-13, Sin-7, Cos-7, Not-1: one graph op each."""
    return node.emit(UNARY[node.op_type], [node.input(0)])


BINARY: dict[str, type[graph.GraphOp]] = {
    "Add": graph.AddOp,
    "Sub": graph.SubOp,
    "Mul": graph.MulOp,
    "Div": graph.DivOp,
    "And": graph.AndOp,
    "Or": graph.OrOp,
    "Equal": graph.EqualOp,
    "Less": graph.LessOp,
    "Greater": graph.GreaterOp,
}


@OPS.register(*BINARY)
def convert_binary(node: Node) -> list[Value]:
    """Add-14, Sub-14, Mul-14, Div-14, And-7, Or-7, Equal-13, Less-13, Greater-13."""
    return node.emit(BINARY[node.op_type], [node.input(0), node.input(1)])


@OPS.register("LessOrEqual", "GreaterOrEqual")
def convert_compare_or_equal(node: Node) -> list[Value]:
    """LessOrEqual-16 / GreaterOrEqual-16 as (a < b) | (a == b): false on NaN, like ONNX."""
    a, b = node.input(0), node.input(1)
    strict = graph.LessOp if node.op_type == "LessOrEqual" else graph.GreaterOp
    lt = node.emit1(strict, [a, b])
    eq = node.emit1(graph.EqualOp, [a, b])
    return node.emit(graph.OrOp, [lt, eq])


@OPS.register("Xor")
def convert_xor(node: Node) -> list[Value]:
    """Xor-7 on booleans: a != b."""
    return node.emit(graph.NotOp, [node.emit1(graph.EqualOp, [node.input(0), node.input(1)])])


@OPS.register("Pow")
def convert_pow(node: Node) -> list[Value]:
    """Pow-15: the exponent may have another type than the base; it is cast to the base's.
    An integer base is graph_library's int_pow, with the exponent as given."""
    x, y = node.input(0), node.input(1)
    if dtypes.is_integer(x.elt) and x.elt != i1:
        return node.emit(graph_library.IntPowOp, [x, y])
    if y.elt != x.elt:
        y = node.emit1(graph.CastOp, [y], result_types=[graph.tensor(y.shape, x.elt)])
    return node.emit(graph.PowOp, [x, y])


VARIADIC: dict[str, type[graph.GraphOp]] = {
    "Max": graph.MaxOp,
    "Min": graph.MinOp,
    "Sum": graph.AddOp,
    "Mean": graph.AddOp,
}


@OPS.register(*VARIADIC)
def convert_variadic(node: Node) -> list[Value]:
    """Max-13, Min-13, Sum-13, Mean-13: a left fold of the binary op (Mean divides by n)."""
    values = node.inputs()
    if not values:
        raise node.error("needs at least one input")
    acc = values[0]
    for v in values[1:]:
        acc = node.emit1(VARIADIC[node.op_type], [acc, v])
    if node.op_type == "Mean" and len(values) > 1:
        acc = node.emit1(graph.DivOp, [acc, _scalar(node, len(values), acc)])
    return [acc]


@OPS.register("Clip")
def convert_clip(node: Node) -> list[Value]:
    """Clip-11 to -13: bounds are optional inputs; constant ones become the op's
    properties. Clip-6 gives them as attributes (default: the float range)."""
    x = node.input(0)
    bounds: dict[str, float] = {}
    if node.version < 11:
        low, high = (
            float(node.attr("min", -3.4028234663852886e38)),
            float(node.attr("max", 3.4028234663852886e38)),
        )
        return node.emit(graph.ClipOp, [x], {"min": low, "max": high})
    result = x
    for i, key, op in ((1, "min", graph.MaxOp), (2, "max", graph.MinOp)):
        b = node.opt_input(i)
        if b is None:
            continue
        if isinstance(b, Const):
            if b.array.size != 1:
                raise node.error(f"{key} must be a scalar, got shape {si.fmt(b.shape)}")
            bounds[key] = float(b.array.reshape(()))
        else:
            result = node.emit1(op, [result, b])  # a computed bound: max/min ops
    if not bounds:
        return [result]
    return node.emit(graph.ClipOp, [result], {k: float(v) for k, v in bounds.items()})


@OPS.register("LeakyRelu")
def convert_leaky_relu(node: Node) -> list[Value]:
    """LeakyRelu-16: x < 0 ? alpha * x : x."""
    x = node.input(0)
    alpha = float(node.attr("alpha", 0.01))
    neg = node.emit1(graph.LessOp, [x, _scalar(node, 0, x)])
    scaled = node.emit1(graph.MulOp, [x, _scalar(node, alpha, x)])
    return node.emit(graph.WhereOp, [neg, scaled, x])


@OPS.register("PRelu")
def convert_prelu(node: Node) -> list[Value]:
    """PRelu-16: x < 0 ? slope * x : x (slope broadcasts to x)."""
    x, slope = node.input(0), node.input(1)
    neg = node.emit1(graph.LessOp, [x, _scalar(node, 0, x)])
    scaled = node.emit1(graph.MulOp, [x, slope])
    return node.emit(graph.WhereOp, [neg, scaled, x])


def _expm1_scaled(node: Node, x: Value, alpha: float) -> Value:
    e = node.emit1(graph.ExpOp, [x])
    em1 = node.emit1(graph.SubOp, [e, _scalar(node, 1, x)])
    return node.emit1(graph.MulOp, [em1, _scalar(node, alpha, x)])


@OPS.register("Elu")
def convert_elu(node: Node) -> list[Value]:
    """Elu-6: x < 0 ? alpha * (exp(x) - 1) : x."""
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.0))
    neg = node.emit1(graph.LessOp, [x, _scalar(node, 0, x)])
    return node.emit(graph.WhereOp, [neg, _expm1_scaled(node, x, alpha), x])


@OPS.register("Selu")
def convert_selu(node: Node) -> list[Value]:
    """Selu-6: gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)."""
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    pos = node.emit1(graph.GreaterOp, [x, _scalar(node, 0, x)])
    y = node.emit1(graph.WhereOp, [pos, x, _expm1_scaled(node, x, alpha)])
    return node.emit(graph.MulOp, [y, _scalar(node, gamma, x)])


@OPS.register("ThresholdedRelu")
def convert_thresholded_relu(node: Node) -> list[Value]:
    """ThresholdedRelu-10: x > alpha ? x : 0."""
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.0))
    keep = node.emit1(graph.GreaterOp, [x, _scalar(node, alpha, x)])
    return node.emit(graph.WhereOp, [keep, x, _scalar(node, 0, x)])


def _hard_sigmoid(node: Node, x: Value, alpha: float, beta: float) -> Value:
    y = node.emit1(graph.MulOp, [x, _scalar(node, alpha, x)])
    y = node.emit1(graph.AddOp, [y, _scalar(node, beta, x)])
    return node.emit1(graph.ClipOp, [y], {"min": 0.0, "max": 1.0})


@OPS.register("HardSigmoid")
def convert_hard_sigmoid(node: Node) -> list[Value]:
    """HardSigmoid-6: max(0, min(1, alpha * x + beta))."""
    alpha = float(node.attr("alpha", 0.2))
    beta = float(node.attr("beta", 0.5))
    return [_hard_sigmoid(node, node.input(0), alpha, beta)]


@OPS.register("HardSwish")
def convert_hard_swish(node: Node) -> list[Value]:
    """HardSwish-14: x * HardSigmoid(x, alpha=1/6, beta=0.5)."""
    x = node.input(0)
    return node.emit(graph.MulOp, [x, _hard_sigmoid(node, x, 1 / 6, 0.5)])


def _softplus(node: Node, x: Value) -> Value:
    e = node.emit1(graph.ExpOp, [x])
    return node.emit1(graph.LogOp, [node.emit1(graph.AddOp, [e, _scalar(node, 1, x)])])


@OPS.register("Softplus")
def convert_softplus(node: Node) -> list[Value]:
    """Softplus-1: ln(exp(x) + 1)."""
    return [_softplus(node, node.input(0))]


@OPS.register("Softsign")
def convert_softsign(node: Node) -> list[Value]:
    """Softsign-1: x / (1 + |x|)."""
    x = node.input(0)
    den = node.emit1(graph.AddOp, [node.emit1(graph.AbsOp, [x]), _scalar(node, 1, x)])
    return node.emit(graph.DivOp, [x, den])


@OPS.register("Mish")
def convert_mish(node: Node) -> list[Value]:
    """Mish-18: x * tanh(softplus(x))."""
    x = node.input(0)
    return node.emit(graph.MulOp, [x, node.emit1(graph.TanhOp, [_softplus(node, x)])])


# --------------------------------------------------------------------------------------
# Softmax and reductions
# --------------------------------------------------------------------------------------


@OPS.register("Softmax")
def convert_softmax(node: Node) -> list[Value]:
    """Softmax-13: along one axis (default -1); -1 and -11 over a 2-D flattening."""
    return along_axis(node, lambda x, axis: node.emit(graph.SoftmaxOp, [x], {"axis": axis}))


@OPS.register("LogSoftmax")
def convert_log_softmax(node: Node) -> list[Value]:
    """LogSoftmax-13: (x - max) - ln(sum(exp(x - max))) along one axis; -1 and -11 over a
    2-D flattening."""

    def log_softmax(x: Value, axis: int) -> list[Value]:
        keep = {"axes": [axis], "keepdims": True}
        shifted = node.emit1(graph.SubOp, [x, node.emit1(graph.ReduceMaxOp, [x], keep)])
        total = node.emit1(graph.ReduceSumOp, [node.emit1(graph.ExpOp, [shifted])], keep)
        return node.emit(graph.SubOp, [shifted, node.emit1(graph.LogOp, [total])])

    return along_axis(node, log_softmax)


def _reduce_axes(node: Node) -> list[int] | None:
    """The axes of a Reduce* node; None means "do nothing" (noop_with_empty_axes).

    ReduceSum takes axes as an input from version 13, the other reductions from version
    18; before that they are an attribute (in ReduceSum-1 and -11 too). Empty axes reduce everything unless
    noop_with_empty_axes is set.
    """
    if (node.op_type == "ReduceSum" and node.version >= 13) or node.version >= 18:
        axes = node.ints_input(1, "axes") or []
        noop = bool(node.attr("noop_with_empty_axes", 0))
    else:
        axes = node.ints_attr("axes") or []
        noop = False
    if not axes and noop:
        return None
    return axes


REDUCE: dict[str, type[graph.GraphOp]] = {
    "ReduceSum": graph.ReduceSumOp,
    "ReduceMean": graph.ReduceMeanOp,
    "ReduceMax": graph.ReduceMaxOp,
    "ReduceMin": graph.ReduceMinOp,
    "ReduceProd": graph_math.ReduceProdOp,
}


@OPS.register(
    *REDUCE,
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
)
def convert_reduce(node: Node) -> list[Value]:
    """ReduceSum-13, ReduceMean/Max/Min/Prod-13 and -18, and the composite reductions
    ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp (13 and 18)."""
    x = node.input(0)
    axes = _reduce_axes(node)
    keepdims = bool(node.attr("keepdims", 1))
    if axes is None:
        return [x]
    props = {"axes": axes, "keepdims": keepdims}
    if node.op_type in REDUCE:
        return node.emit(REDUCE[node.op_type], [x], props)
    pre: Value = x
    if node.op_type in ("ReduceSumSquare", "ReduceL2"):
        pre = node.emit1(graph.MulOp, [x, x])
    elif node.op_type == "ReduceL1":
        pre = node.emit1(graph.AbsOp, [x])
    elif node.op_type == "ReduceLogSumExp":
        pre = node.emit1(graph.ExpOp, [x])
    total = node.emit1(graph.ReduceSumOp, [pre], props)
    if node.op_type == "ReduceL2":
        return node.emit(graph.SqrtOp, [total])
    if node.op_type in ("ReduceLogSum", "ReduceLogSumExp"):
        return node.emit(graph.LogOp, [total])
    return [total]


# --------------------------------------------------------------------------------------
# Matrix products and convolution
# --------------------------------------------------------------------------------------


@OPS.register("MatMul")
def convert_matmul(node: Node) -> list[Value]:
    """MatMul-13: numpy matmul."""
    return node.emit(graph.MatmulOp, [node.input(0), node.input(1)])


@OPS.register("Gemm")
def convert_gemm(node: Node) -> list[Value]:
    """Gemm-13: alpha * op(A) op(B) + beta * C, C optional and broadcast to [M, N]."""
    operands = [node.input(0), node.input(1)]
    c = node.opt_input(2)
    if c is not None:
        operands.append(c)
    props = {
        "trans_a": bool(node.attr("transA", 0)),
        "trans_b": bool(node.attr("transB", 0)),
        "alpha": float(node.attr("alpha", 1.0)),
        "beta": float(node.attr("beta", 1.0)),
    }
    return node.emit(graph.GemmOp, operands, props)


def _window_pads(
    node: Node, x: Value, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> list[int]:
    """pads ([top, left, bottom, right]) from auto_pad and pads (Conv-11, MaxPool-12, AveragePool-11)."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    pads = node.ints_attr("pads")
    if auto_pad == "NOTSET":
        return pads if pads is not None else [0] * (2 * len(kernel))
    if pads is not None and any(pads):
        raise node.error(f"pads cannot be combined with auto_pad={auto_pad}")
    if auto_pad == "VALID":
        return [0] * (2 * len(kernel))
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.reject("auto_pad", auto_pad, "NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    spatial = x.shape[2:]
    if si.DYN in spatial:
        raise node.error(f"auto_pad={auto_pad} needs static spatial dims, got {si.fmt(x.shape)}")
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        # SAME_UPPER puts the extra pad at the end, SAME_LOWER at the beginning
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _check_spatial(node: Node, x: Value) -> int:
    """The number of spatial dims of an NC... input: 1 or 2 (1-D runs as 2-D with H = 1)."""
    if _rank(x) not in (3, 4):
        raise node.error(
            f"only 1-D and 2-D (NCW, NCHW) inputs are supported, got {si.fmt(x.shape)}"
        )
    return _rank(x) - 2


def _insert_unit_dim(node: Node, x: Value, axis: int) -> Value:
    """`x` with a size-1 dim inserted at `axis` (1-D windows run as 2-D ones)."""
    from frontends.onnx.ops_tensor import reshape_to

    a, b = probe_dims(x)
    return reshape_to(node, x, [*a[:axis], 1, *a[axis:]], [*b[:axis], 1, *b[axis:]])


def _drop_unit_dim(node: Node, x: Value, axis: int) -> Value:
    from frontends.onnx.ops_tensor import reshape_to

    a, b = probe_dims(x)
    return reshape_to(node, x, [*a[:axis], *a[axis + 1 :]], [*b[:axis], *b[axis + 1 :]])


def _as_2d(values: Sequence[int], fill: int) -> list[int]:
    """1-D window parameters as 2-D ones with a unit H dim: [k] -> [fill, k]."""
    return [fill, *values]


def _pads_2d(pads: Sequence[int]) -> list[int]:
    """1-D pads [begin, end] as 2-D [top, left, bottom, right] = [0, begin, 0, end]."""
    return [0, pads[0], 0, pads[1]]


def conv_window(node: Node, x: Value, w: Value) -> tuple[Value, Value, dict[str, object], int]:
    """Conv-11's window attributes as graph.conv2d properties: (x, w, props, spatial), a
    1-D x and w given a unit H dim (drop it from the result with `_drop_unit_dim`)."""
    spatial = _check_spatial(node, x)
    if _rank(w) != _rank(x):
        raise node.error(f"weight {si.fmt(w.shape)} does not match input {si.fmt(x.shape)}")
    kernel = list(w.shape[2:])
    given = node.ints_attr("kernel_shape")
    if given is not None and given != kernel:
        raise node.error(f"kernel_shape {given} differs from the weight's {kernel}")
    strides = node.ints_attr("strides", [1] * spatial) or []
    dilations = node.ints_attr("dilations", [1] * spatial) or []
    pads = _window_pads(node, x, kernel, strides, dilations)
    group = int(node.attr("group", 1))
    if spatial == 1:
        x, w = _insert_unit_dim(node, x, 2), _insert_unit_dim(node, w, 2)
        strides, dilations, pads = _as_2d(strides, 1), _as_2d(dilations, 1), _pads_2d(pads)
    props = {"strides": strides, "pads": pads, "dilations": dilations, "group": group}
    return x, w, props, spatial


@OPS.register("Conv")
def convert_conv(node: Node) -> list[Value]:
    """Conv-11 in 1-D and 2-D (input [N, C, (H,) W], weight [M, C/group, (kH,) kW])."""
    x, w, props, spatial = conv_window(node, node.input(0), node.input(1))
    b = node.opt_input(2)
    operands = [x, w] if b is None else [x, w, b]
    y = node.emit1(graph.Conv2dOp, operands, props)
    return [_drop_unit_dim(node, y, 2) if spatial == 1 else y]


# --------------------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------------------


@OPS.register("BatchNormalization")
def convert_batch_norm(node: Node) -> list[Value]:
    """BatchNormalization-15 (and -14, -9, and -7 with spatial=1), inference only:
    training_mode must be 0."""
    if node.version < 9 and int(node.attr("spatial", 1)) != 1:
        raise node.reject("spatial", node.attr("spatial"), "only 1, statistics per channel")
    training = int(node.attr("training_mode", 0))
    if training:
        raise node.reject("training_mode", training, "only inference, training_mode=0")
    node.attr("momentum", 0.9)  # only updates running statistics in training
    if any(node.proto.output[1:]):
        raise node.error("the running mean/var outputs exist only in training mode")
    operands = [node.input(i) for i in range(5)]
    return node.emit(graph.BatchNormOp, operands, {"epsilon": float(node.attr("epsilon", 1e-5))})


@OPS.register("LayerNormalization")
def convert_layer_norm(node: Node) -> list[Value]:
    """LayerNormalization-17: normalize over [axis, rank).

    The optional Mean and InvStdDev outputs (kept dims, computed in float32 as
    stash_type=1 says) are built from reductions only when the model uses them.
    """
    stash = int(node.attr("stash_type", 1))
    if stash != 1:
        raise node.reject("stash_type", stash, "statistics are computed in float32")
    x = node.input(0)
    operands = [x, node.input(1)]
    bias = node.opt_input(2)
    if bias is not None:
        operands.append(bias)
    axis = int(node.attr("axis", -1))
    epsilon = float(node.attr("epsilon", 1e-5))
    outs = node.emit(graph.LayerNormOp, operands, {"axis": axis, "epsilon": epsilon})
    if any(node.proto.output[1:]):
        rank = _rank(x)
        first = axis + rank if axis < 0 else axis
        keep = {"axes": list(range(first, rank)), "keepdims": True}
        xf = cast_to(node, x, f32)
        mean = node.emit1(graph.ReduceMeanOp, [xf], keep)
        d = node.emit1(graph.SubOp, [xf, mean])
        var = node.emit1(graph.ReduceMeanOp, [node.emit1(graph.MulOp, [d, d])], keep)
        inv = node.emit1(
            graph.RsqrtOp, [node.emit1(graph.AddOp, [var, _scalar(node, epsilon, var)])]
        )
        outs += [mean, inv]
    return outs


# --------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------


@OPS.register("MaxPool", "AveragePool")
def convert_pool(node: Node) -> list[Value]:
    """MaxPool-12/22 and AveragePool-11/19/22 in 1-D, 2-D and 3-D (MaxPool's Indices
    output in 1-D and 2-D). AveragePool has dilations from version 19 on."""
    x = node.input(0)
    spatial = _rank(x) - 2 if _rank(x) == 5 else _check_spatial(node, x)
    kernel = node.ints_attr("kernel_shape")
    if kernel is None or len(kernel) != spatial:
        raise node.error(f"kernel_shape must have {spatial} values, got {kernel}")
    strides = node.ints_attr("strides", [1] * spatial) or []
    dilations = [1] * spatial
    if node.op_type == "MaxPool" or node.version >= 19:
        dilations = node.ints_attr("dilations", dilations) or []
    pads = _window_pads(node, x, kernel, strides, dilations)
    if node.op_type == "MaxPool":
        if any(node.proto.output[1:]):
            return _max_pool_with_indices(node, x, (kernel, strides, dilations, pads))
        node.attr("storage_order", 0)  # only affects Indices
    if spatial == 3:
        return [_pool_3d(node, x, (kernel, strides, dilations, pads))]
    if spatial == 1:
        x = _insert_unit_dim(node, x, 2)
        kernel, strides, dilations = _as_2d(kernel, 1), _as_2d(strides, 1), _as_2d(dilations, 1)
        pads = _pads_2d(pads)
    y = _pool_2d(node, x, (kernel, strides, dilations, pads))
    return [_drop_unit_dim(node, y, 2) if spatial == 1 else y]


# a pooling window: kernel_shape, strides, dilations and pads ([begins..., ends...])
Window = tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int]]


def _max_pool_with_indices(node: Node, x: Value, window: Window) -> list[Value]:
    """MaxPool with its Indices output as graph.max_pool2d_with_indices; a 1-D pool runs
    with a unit H dim, where both storage orders give the same flat index."""
    kernel, strides, dilations, pads = window
    storage_order = int(node.attr("storage_order", 0))
    if storage_order not in (0, 1):
        raise node.reject("storage_order", storage_order, "0 (row major) or 1 (column major)")
    spatial = len(kernel)
    if spatial == 3:
        raise node.error("the Indices output of a 3-D MaxPool is not supported")
    if spatial == 1:
        x = _insert_unit_dim(node, x, 2)
        kernel, strides, dilations = _as_2d(kernel, 1), _as_2d(strides, 1), _as_2d(dilations, 1)
        pads = _pads_2d(pads)
    props = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "pads": list(pads),
        "dilations": list(dilations),
        "ceil_mode": bool(node.attr("ceil_mode", 0)),
        "column_major": bool(storage_order),
    }
    outs = node.emit(graph_library.MaxPoolWithIndicesOp, [x], props)
    return [_drop_unit_dim(node, y, 2) for y in outs] if spatial == 1 else outs


def _pool_2d(node: Node, x: Value, window: Window) -> Value:
    kernel, strides, dilations, pads = window
    props: dict[str, object] = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "pads": list(pads),
        "ceil_mode": bool(node.attr("ceil_mode", 0)),
    }
    if node.op_type == "MaxPool":
        props["dilations"] = list(dilations)
        return node.emit1(graph.MaxPool2dOp, [x], props)
    props["count_include_pad"] = bool(node.attr("count_include_pad", 0))
    if any(d != 1 for d in dilations):  # AveragePool-19's dilations
        props["dilations"] = list(dilations)
    return node.emit1(graph.AvgPool2dOp, [x], props)


def _pool_3d(node: Node, x: Value, window: Window) -> Value:
    """A 3-D (NCDHW) pool as graph.max_pool3d / avg_pool3d (dilations included)."""
    kernel, strides, dilations, pads = window
    props: dict[str, object] = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "pads": list(pads),
        "dilations": list(dilations),
        "ceil_mode": bool(node.attr("ceil_mode", 0)),
    }
    if node.op_type == "MaxPool":
        return node.emit1(graph_library.MaxPool3dOp, [x], props)
    props["count_include_pad"] = bool(node.attr("count_include_pad", 0))
    return node.emit1(graph_library.AvgPool3dOp, [x], props)


@OPS.register("GlobalAveragePool")
def convert_global_average_pool(node: Node) -> list[Value]:
    """GlobalAveragePool-1: mean over the spatial dims, kept as 1."""
    return node.emit(graph.GlobalAvgPoolOp, [node.input(0)])


@OPS.register("GlobalMaxPool")
def convert_global_max_pool(node: Node) -> list[Value]:
    """GlobalMaxPool-1: max over the spatial dims, kept as 1."""
    x = node.input(0)
    if _rank(x) < 3:
        raise node.error(f"expects an (N, C, spatial...) input, got {si.fmt(x.shape)}")
    axes = list(range(2, _rank(x)))
    return node.emit(graph.ReduceMaxOp, [x], {"axes": axes, "keepdims": True})


# --------------------------------------------------------------------------------------
# Type conversion
# --------------------------------------------------------------------------------------


def cast_to(node: Node, x: Value, elt: object) -> Value:
    """`x` converted to element type `elt` (no op when it already has it)."""
    if x.elt == elt:
        return x
    return node.emit1(graph.CastOp, [x], result_types=[graph.tensor(x.shape, elt)])  # type: ignore[arg-type]


def _cast(node: Node, x: Value, elt: Attribute) -> Value:
    """Cast-13..25 of `x` to `elt`: saturate (version 19 on) concerns float8 and E8M0
    targets, round_mode (24 on) E8M0 ones; a non-default one becomes the graph.cast's."""
    saturate = int(node.attr("saturate", 1)) if node.version >= 19 else 1
    mode = str(node.attr("round_mode", "up")) if node.version >= 24 else "up"
    if mode not in ROUND_MODES:
        raise node.reject("round_mode", mode, ", ".join(ROUND_MODES))
    name = dtypes.type_name(elt)
    props: dict[str, object] = {}
    if not saturate and (name in gq.FLOAT8 or name == E8M0):
        props["saturate"] = False
    if mode != "up" and name == E8M0:
        props["round_mode"] = mode
    if not props:
        return cast_to(node, x, elt)
    return node.emit1(graph.CastOp, [x], props, [graph.tensor(x.shape, elt)])


@OPS.register("Cast")
def convert_cast(node: Node) -> list[Value]:
    """Cast-13..25 to a supported element type (float to integer truncates; to float8,
    float4 and 4/2-bit integers as autofusion/narrow_types.py says)."""
    to = int(node.attr("to"))
    try:
        elt = element_type(to, "the cast target")
    except UserError as e:
        raise node.error(e.message) from e
    return [_cast(node, node.input(0), elt)]


@OPS.register("CastLike")
def convert_cast_like(node: Node) -> list[Value]:
    """CastLike-15..25: cast to the element type of the second input (saturate and
    round_mode as in Cast)."""
    return [_cast(node, node.input(0), node.input(1).elt)]
