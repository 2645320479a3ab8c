"""Converters from ATen ops to graph ops, one per ATen overload.

`CONVERTERS` maps an overload's name (`aten.add.Tensor`) to a function that reads the
node's arguments through `Args` and emits graph ops through the `Importer`; its keys
are the frontend's coverage (README.md lists them with their mapping). A converter reads
every argument it honours; `Args.check_unused` rejects any other argument that is not
at its default value.

Result element types follow torch: a converter casts operands to the dtype torch
computes in (its type promotion, read from the FX node's metadata) and the importer
checks every converted result against torch's shape and dtype.

Literal tensors (arange, full, ones, scalar_tensor, ...) have no converter: the importer
evaluates them with torch and imports the values (see `Importer._fold`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Attribute, SSAValue

from autofusion import dtypes
from autofusion.dialects import graph
from frontends.torch.importer import (
    Args,
    Importer,
    UnsupportedOp,
    Value,
    element_type,
    target_name,
)

if TYPE_CHECKING:
    from torch.fx import Node

Converter = Callable[[Importer, Args], Value]

CONVERTERS: dict[str, Converter] = {}


def converts(*names: str) -> Callable[[Converter], Converter]:
    """Register a converter for the ATen overloads `names`."""

    def register(fn: Converter) -> Converter:
        for name in names:
            assert name not in CONVERTERS, f"two converters for {name}"
            CONVERTERS[name] = fn
        return fn

    return register


# Ops that only appear when part of the model runs in training mode.
_TRAINING_OPS = (
    "aten.native_dropout.default",
    "aten._native_batch_norm_legit.default",
    "aten._native_batch_norm_legit_functional.default",
)


def convert(importer: Importer, node: Node) -> Value:
    """Import one call node with its registered converter."""
    name = target_name(node)
    converter = CONVERTERS.get(name)
    if converter is None:
        hint = ""
        if name in _TRAINING_OPS:
            hint = "; it comes from a module in training mode: call .eval() on it"
        raise UnsupportedOp(f"unsupported PyTorch op {name} (node '{node.name}'){hint}")
    args = Args(importer, node)
    value = converter(importer, args)
    args.check_unused()
    return value


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _type(value: SSAValue) -> TensorType:
    return cast(TensorType, value.type)


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(_type(value).get_shape())


def _elt(value: SSAValue) -> Attribute:
    return _type(value).element_type


def _axis(a: Args, dim: int, rank: int) -> int:
    """A torch dim (possibly negative) as an axis in [0, rank)."""
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise a.error(f"dim {dim} is out of range for rank {rank}")
    return dim % rank if rank else 0


def _operand(cx: Importer, a: Args, name: str, elt: Attribute) -> SSAValue:
    """A tensor-or-number argument as a tensor of element type `elt`."""
    value = a.tensor_or_scalar(name)
    if isinstance(value, SSAValue):
        return cx.cast(value, elt)
    return cx.scalar(value, elt)


def _promoted(a: Args, lhs: str, rhs: str) -> Attribute:
    """The element type torch computes `lhs op rhs` in (its type promotion)."""
    import torch

    def probe(value: Any) -> Any:
        # meta tensors carry shape and dtype only; result_type needs nothing else
        if isinstance(value, torch.Tensor):
            return torch.empty(value.shape, dtype=value.dtype, device="meta")
        return value

    return element_type(torch.result_type(probe(a.meta_of(lhs)), probe(a.meta_of(rhs))))


def _pair(a: Args, name: str, values: Sequence[int], n: int) -> list[int]:
    """A per-spatial-dim list given with one value for all dims or one per dim."""
    if len(values) == 1:
        return list(values) * n
    if len(values) != n:
        raise a.error(f"argument '{name}' has {len(values)} values, expected 1 or {n}")
    return list(values)


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------

_UNARY: dict[str, type[graph.GraphOp]] = {
    "aten.relu.default": graph.ReluOp,
    "aten.sigmoid.default": graph.SigmoidOp,
    "aten.tanh.default": graph.TanhOp,
    "aten.exp.default": graph.ExpOp,
    "aten.log.default": graph.LogOp,
    "aten.sqrt.default": graph.SqrtOp,
    "aten.rsqrt.default": graph.RsqrtOp,
    "aten.reciprocal.default": graph.ReciprocalOp,
    "aten.neg.default": graph.NegOp,
    "aten.abs.default": graph.AbsOp,
    "aten.erf.default": graph.ErfOp,
    "aten.sin.default": graph.SinOp,
    "aten.cos.default": graph.CosOp,
    "aten.silu.default": graph.SiluOp,
}


def _unary(op_type: type[graph.GraphOp]) -> Converter:
    def convert_unary(cx: Importer, a: Args) -> Value:
        # integer inputs of float functions (sqrt, exp, ...) are promoted by torch
        return cx.op(op_type, [cx.cast(a.tensor("self"), a.out_elt)])

    return convert_unary


for _name, _op_type in _UNARY.items():
    converts(_name)(_unary(_op_type))


@converts("aten.gelu.default")
def _gelu(cx: Importer, a: Args) -> Value:
    approximate = a.text("approximate")
    if approximate not in graph.GELU_APPROXIMATIONS:
        raise a.error(f"approximate='{approximate}' is not supported")
    return cx.op(graph.GeluOp, [a.tensor("self")], {"approximate": approximate})


_ARITHMETIC: dict[str, type[graph.GraphOp]] = {
    "add": graph.AddOp,
    "sub": graph.SubOp,
    "mul": graph.MulOp,
    "div": graph.DivOp,
    "maximum": graph.MaxOp,
    "minimum": graph.MinOp,
}


def _arithmetic(op_type: type[graph.GraphOp]) -> Converter:
    def convert_arithmetic(cx: Importer, a: Args) -> Value:
        # torch promotes both operands to the result dtype (int / int divides as floats)
        elt = a.out_elt
        x = _operand(cx, a, "self", elt)
        alpha = a.raw("alpha") if "alpha" in a else 1  # add/sub: self + alpha * other
        other = a.tensor_or_scalar("other")
        if not isinstance(other, SSAValue):
            y = cx.scalar(other * alpha, elt)
        else:
            y = cx.cast(other, elt)
            if alpha != 1:
                y = cx.op(graph.MulOp, [y, cx.scalar(alpha, elt)])
        return cx.op(op_type, [x, y])

    return convert_arithmetic


for _packet, _op_type in _ARITHMETIC.items():
    _overloads = ("Tensor", "Scalar") if _packet in ("add", "sub", "mul", "div") else ("default",)
    for _overload in _overloads:
        converts(f"aten.{_packet}.{_overload}")(_arithmetic(_op_type))


def _comparison(kind: str) -> Converter:
    def convert_comparison(cx: Importer, a: Args) -> Value:
        elt = _promoted(a, "self", "other")
        x = _operand(cx, a, "self", elt)
        y = _operand(cx, a, "other", elt)
        if kind == "eq":
            return cx.op(graph.EqualOp, [x, y])
        if kind == "ne":  # NaN != NaN is true, as not(equal) gives
            return cx.op(graph.NotOp, [cx.op(graph.EqualOp, [x, y])])
        if kind in ("lt", "gt"):
            return cx.op(graph.LessOp if kind == "lt" else graph.GreaterOp, [x, y])
        # le/ge as (lt or eq): exact for NaN too, unlike not(gt)
        strict = cx.op(graph.LessOp if kind == "le" else graph.GreaterOp, [x, y])
        return cx.op(graph.OrOp, [strict, cx.op(graph.EqualOp, [x, y])])

    return convert_comparison


for _kind in ("eq", "ne", "lt", "le", "gt", "ge"):
    for _overload in ("Tensor", "Scalar"):
        converts(f"aten.{_kind}.{_overload}")(_comparison(_kind))


def _logical(kind: str, bool_only: bool) -> Converter:
    def convert_logical(cx: Importer, a: Args) -> Value:
        if bool_only and any(
            element_type(a.meta_of(n).dtype) != i1 for n in ("self", "other") if a.is_tensor(n)
        ):
            raise a.error("bitwise operations are supported on bool tensors only")
        x = _operand(cx, a, "self", i1)
        y = _operand(cx, a, "other", i1)
        if kind == "and":
            return cx.op(graph.AndOp, [x, y])
        if kind == "or":
            return cx.op(graph.OrOp, [x, y])
        return cx.op(graph.NotOp, [cx.op(graph.EqualOp, [x, y])])  # xor

    return convert_logical


for _kind in ("and", "or", "xor"):
    converts(f"aten.logical_{_kind}.default")(_logical(_kind, bool_only=False))
    converts(f"aten.bitwise_{_kind}.Tensor")(_logical(_kind, bool_only=True))


@converts("aten.logical_not.default", "aten.bitwise_not.default")
def _not(cx: Importer, a: Args) -> Value:
    if a.name == "aten.bitwise_not.default" and element_type(a.meta_of("self").dtype) != i1:
        raise a.error("bitwise operations are supported on bool tensors only")
    return cx.op(graph.NotOp, [cx.cast(a.tensor("self"), i1)])


@converts("aten.where.self")
def _where(cx: Importer, a: Args) -> Value:
    condition = cx.cast(a.tensor("condition"), i1)
    x = _operand(cx, a, "self", a.out_elt)
    y = _operand(cx, a, "other", a.out_elt)
    return cx.op(graph.WhereOp, [condition, x, y])


@converts("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def _pow(cx: Importer, a: Args) -> Value:
    elt = a.out_elt
    return cx.op(graph.PowOp, [_operand(cx, a, "self", elt), _operand(cx, a, "exponent", elt)])


def _clip(cx: Importer, a: Args, x: SSAValue, lo: float | None, hi: float | None) -> Value:
    if lo is None and hi is None:
        raise a.error("at least one of min and max must be given")
    props: dict[str, object] = {}
    if lo is not None:
        props["min"] = float(lo)
    if hi is not None:
        props["max"] = float(hi)
    return cx.op(graph.ClipOp, [cx.cast(x, a.out_elt)], props)


@converts("aten.clamp.default")
def _clamp(cx: Importer, a: Args) -> Value:
    return _clip(cx, a, a.tensor("self"), a.opt_real("min"), a.opt_real("max"))


@converts("aten.hardtanh.default")
def _hardtanh(cx: Importer, a: Args) -> Value:
    return _clip(cx, a, a.tensor("self"), a.real("min_val"), a.real("max_val"))


@converts("aten.clamp.Tensor")
def _clamp_tensor(cx: Importer, a: Args) -> Value:
    elt = a.out_elt
    y = cx.cast(a.tensor("self"), elt)
    if a.raw("min") is not None:
        y = cx.op(graph.MaxOp, [y, _operand(cx, a, "min", elt)])
    if a.raw("max") is not None:
        y = cx.op(graph.MinOp, [y, _operand(cx, a, "max", elt)])
    return y


@converts("aten.leaky_relu.default")
def _leaky_relu(cx: Importer, a: Args) -> Value:
    """x > 0 ? x : x * negative_slope."""
    x = a.tensor("self")
    elt = _elt(x)
    scaled = cx.op(graph.MulOp, [x, cx.scalar(a.real("negative_slope"), elt)])
    positive = cx.op(graph.GreaterOp, [x, cx.scalar(0, elt)])
    return cx.op(graph.WhereOp, [positive, x, scaled])


@converts("aten._to_copy.default")
def _to_copy(cx: Importer, a: Args) -> Value:
    # device, layout, pinning and memory format do not change the values
    a.ignore("dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format")
    return cx.cast(a.tensor("self"), a.out_elt)


@converts("aten.clone.default", "aten.alias.default")
def _identity(cx: Importer, a: Args) -> Value:
    a.ignore("memory_format")  # clone: a layout choice, the values are the same
    return a.tensor("self")


# --------------------------------------------------------------------------------------
# Reductions and softmax
# --------------------------------------------------------------------------------------


def _reduce(op_type: type[graph.GraphOp]) -> Converter:
    def convert_reduce(cx: Importer, a: Args) -> Value:
        # torch reduces in the result dtype (sum of bool/int is int64; dtype= casts first)
        a.ignore("dtype")
        x = cx.cast(a.tensor("self"), a.out_elt)
        rank = len(_shape(x))
        dims = a.opt_integers("dim") if "dim" in a else None
        axes = sorted({_axis(a, d, rank) for d in dims or []})  # [] / None: all axes
        keepdims = a.flag("keepdim") if "keepdim" in a else False
        return cx.op(op_type, [x], {"axes": axes, "keepdims": keepdims})

    return convert_reduce


for _names, _op_type in (
    (("aten.sum.dim_IntList",), graph.ReduceSumOp),
    (("aten.mean.dim", "aten.mean.default"), graph.ReduceMeanOp),
    (("aten.amax.default",), graph.ReduceMaxOp),
    (("aten.amin.default",), graph.ReduceMinOp),
):
    converts(*_names)(_reduce(_op_type))


@converts("aten._softmax.default")
def _softmax(cx: Importer, a: Args) -> Value:
    if a.flag("half_to_float"):
        raise a.error("half_to_float=True is not supported")
    x = a.tensor("self")
    return cx.op(graph.SoftmaxOp, [x], {"axis": _axis(a, a.integer("dim"), len(_shape(x)))})


@converts("aten._log_softmax.default")
def _log_softmax(cx: Importer, a: Args) -> Value:
    """(x - max) - log(sum(exp(x - max))), the stable form."""
    if a.flag("half_to_float"):
        raise a.error("half_to_float=True is not supported")
    x = a.tensor("self")
    reduce = {"axes": [_axis(a, a.integer("dim"), len(_shape(x)))], "keepdims": True}
    shifted = cx.op(graph.SubOp, [x, cx.op(graph.ReduceMaxOp, [x], reduce)])
    total = cx.op(graph.ReduceSumOp, [cx.op(graph.ExpOp, [shifted])], reduce)
    return cx.op(graph.SubOp, [shifted, cx.op(graph.LogOp, [total])])


@converts("aten.max.dim")
def _max_dim(cx: Importer, a: Args) -> Value:
    """The maximum along a dim; the indices result is not supported."""
    x = a.tensor("self")
    props = {"axes": [_axis(a, a.integer("dim"), len(_shape(x)))], "keepdims": a.flag("keepdim")}
    return [cx.op(graph.ReduceMaxOp, [x], props), None]


# --------------------------------------------------------------------------------------
# Matrix products, convolution, normalization
# --------------------------------------------------------------------------------------


@converts("aten.mm.default", "aten.bmm.default")
def _mm(cx: Importer, a: Args) -> Value:
    return cx.op(graph.MatmulOp, [a.tensor("self"), a.tensor("mat2")])


@converts("aten.matmul.default")
def _matmul(cx: Importer, a: Args) -> Value:
    return cx.op(graph.MatmulOp, [a.tensor("self"), a.tensor("other")])


@converts("aten.addmm.default")
def _addmm(cx: Importer, a: Args) -> Value:
    """beta * self + alpha * (mat1 @ mat2)."""
    operands = [a.tensor("mat1"), a.tensor("mat2"), a.tensor("self")]
    props = {
        "trans_a": False,
        "trans_b": False,
        "alpha": a.real("alpha"),
        "beta": a.real("beta"),
    }
    return cx.op(graph.GemmOp, operands, props)


@converts("aten.linear.default")
def _linear(cx: Importer, a: Args) -> Value:
    """input @ weight.T + bias as one gemm on the input flattened to 2-D.

    The weight keeps torch's [out, in] layout (trans_b), so it needs no transpose.
    """
    x, w, b = a.tensor("input"), a.tensor("weight"), a.opt_tensor("bias")
    shape = _shape(x)
    if len(_shape(w)) != 2:
        raise a.error(f"the weight must be 2-D, got {len(_shape(w))}-D")
    rows = math.prod(shape[:-1])
    x2 = cx.reshape(x, [rows, shape[-1]])
    operands = [x2, w] if b is None else [x2, w, b]
    props = {"trans_a": False, "trans_b": True, "alpha": 1.0, "beta": 1.0}
    return cx.reshape(cx.op(graph.GemmOp, operands, props), a.out_shape)


@converts("aten.convolution.default")
def _convolution(cx: Importer, a: Args) -> Value:
    """Conv2d directly; conv1d as a conv2d over height 1."""
    x, w, b = a.tensor("input"), a.tensor("weight"), a.opt_tensor("bias")
    if a.flag("transposed"):
        raise a.error("transposed convolution is not supported")
    a.ignore("output_padding")  # only meaningful for transposed convolution
    n = len(a.integers("stride"))
    if n not in (1, 2) or len(_shape(x)) != n + 2:
        raise a.error(
            f"only 1-D and 2-D convolutions of batched input are supported, got a {n}-D "
            f"convolution of a {len(_shape(x))}-D input"
        )
    stride = _pair(a, "stride", a.integers("stride"), n)
    padding = _pair(a, "padding", a.integers("padding"), n)
    dilation = _pair(a, "dilation", a.integers("dilation"), n)
    if n == 1:
        # [N, C, L] -> [N, C, 1, L]; the weight [M, C/g, K] -> [M, C/g, 1, K]
        xs, ws = _shape(x), _shape(w)
        x = cx.reshape(x, [xs[0], xs[1], 1, xs[2]])
        w = cx.reshape(w, [ws[0], ws[1], 1, ws[2]])
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
    props = {
        "strides": stride,
        "pads": [*padding, *padding],  # [top, left] then [bottom, right]
        "dilations": dilation,
        "group": a.integer("groups"),
    }
    y = cx.op(graph.Conv2dOp, [x, w] if b is None else [x, w, b], props)
    return cx.reshape(y, a.out_shape)


@converts("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(cx: Importer, a: Args) -> Value:
    """Inference batch norm; torch's saved mean/rstd results are not supported."""
    x = a.tensor("input")
    elt = _elt(x)
    channels = _shape(x)[1]
    scale = a.opt_tensor("weight")
    if scale is None:
        scale = cx.splat(1.0, [channels], elt)
    bias = a.opt_tensor("bias")
    if bias is None:
        bias = cx.splat(0.0, [channels], elt)
    mean, var = a.tensor("running_mean"), a.tensor("running_var")
    a.ignore("momentum")  # only updates running statistics in training
    y = cx.op(graph.BatchNormOp, [x, scale, bias, mean, var], {"epsilon": a.real("eps")})
    return [y, None, None]


def _norm_scale(cx: Importer, a: Args, normalized: list[int], elt: Attribute) -> SSAValue:
    """The weight of a norm, or ones when it has none (graph norms require a scale)."""
    scale = a.opt_tensor("weight")
    return cx.splat(1.0, normalized, elt) if scale is None else scale


@converts("aten.layer_norm.default")
def _layer_norm(cx: Importer, a: Args) -> Value:
    x = a.tensor("input")
    normalized = a.integers("normalized_shape")
    scale = _norm_scale(cx, a, normalized, _elt(x))
    bias = a.opt_tensor("bias")
    a.ignore("cudnn_enable")  # a backend choice
    props = {"axis": len(_shape(x)) - len(normalized), "epsilon": a.real("eps")}
    return cx.op(graph.LayerNormOp, [x, scale] if bias is None else [x, scale, bias], props)


@converts("aten.rms_norm.default")
def _rms_norm(cx: Importer, a: Args) -> Value:
    import torch

    x = a.tensor("input")
    normalized = a.integers("normalized_shape")
    scale = _norm_scale(cx, a, normalized, _elt(x))
    eps = a.opt_real("eps")
    if eps is None:  # torch's default: the machine epsilon of the input dtype
        eps = float(torch.finfo(a.meta_of("input").dtype).eps)
    props = {"axis": len(_shape(x)) - len(normalized), "epsilon": eps}
    return cx.op(graph.RmsNormOp, [x, scale], props)


# --------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------


def _pool_props(a: Args) -> dict[str, object]:
    kernel = _pair(a, "kernel_size", a.integers("kernel_size"), 2)
    stride = a.integers("stride")
    padding = _pair(a, "padding", a.integers("padding"), 2)
    return {
        "kernel_shape": kernel,
        "strides": _pair(a, "stride", stride, 2) if stride else kernel,  # [] = kernel
        "pads": [*padding, *padding],
        "ceil_mode": a.flag("ceil_mode"),
    }


@converts("aten.max_pool2d_with_indices.default")
def _max_pool2d(cx: Importer, a: Args) -> Value:
    """Max pooling; the indices result is not supported."""
    props = _pool_props(a)
    props["dilations"] = _pair(a, "dilation", a.integers("dilation"), 2)
    return [cx.op(graph.MaxPool2dOp, [a.tensor("self")], props), None]


@converts("aten.avg_pool2d.default")
def _avg_pool2d(cx: Importer, a: Args) -> Value:
    props = _pool_props(a)
    props["count_include_pad"] = a.flag("count_include_pad")
    return cx.op(graph.AvgPool2dOp, [a.tensor("self")], props)


@converts("aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(cx: Importer, a: Args) -> Value:
    """Global average pooling, or average pooling when the output size divides the input."""
    x = a.tensor("self")
    shape = _shape(x)
    out = _pair(a, "output_size", a.integers("output_size"), 2)
    if len(shape) != 4:
        raise a.error(f"expects a 4-D NCHW input, got rank {len(shape)}")
    if out == [1, 1]:
        return cx.op(graph.GlobalAvgPoolOp, [x])
    if shape[2] % out[0] or shape[3] % out[1]:
        raise a.error(
            f"output size {out} does not divide the input size {list(shape[2:])}; "
            "only uniform windows are supported"
        )
    kernel = [shape[2] // out[0], shape[3] // out[1]]
    props = {
        "kernel_shape": kernel,
        "strides": kernel,
        "pads": [0, 0, 0, 0],
        "ceil_mode": False,
        "count_include_pad": False,
    }
    return cx.op(graph.AvgPool2dOp, [x], props)


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


@converts("aten.view.default", "aten.unsqueeze.default", "aten.squeeze.dims")
def _reshape(cx: Importer, a: Args) -> Value:
    # all of these are reshapes to the static result shape torch computed
    a.ignore("size", "dim")
    return cx.reshape(a.tensor("self"), a.out_shape)


@converts("aten.permute.default")
def _permute(cx: Importer, a: Args) -> Value:
    x = a.tensor("self")
    rank = len(_shape(x))
    perm = [_axis(a, d, rank) for d in a.integers("dims")]
    if perm == list(range(rank)):
        return x
    return cx.op(graph.TransposeOp, [x], {"perm": perm})


@converts("aten.expand.default")
def _expand(cx: Importer, a: Args) -> Value:
    a.ignore("size", "implicit")  # the size is torch's static result shape
    x = a.tensor("self")
    if _shape(x) == a.out_shape:
        return x
    return cx.op(graph.ExpandOp, [x], {"shape": list(a.out_shape)})


@converts("aten.repeat.default")
def _repeat(cx: Importer, a: Args) -> Value:
    """Tile: [d0, d1] -> [1, d0, 1, d1] -> expand to [r0, d0, r1, d1] -> [r0*d0, r1*d1]."""
    x = a.tensor("self")
    repeats = a.integers("repeats")
    dims = [1] * (len(repeats) - len(_shape(x))) + list(_shape(x))  # leading reps add dims
    if len(dims) != len(repeats):
        raise a.error(f"{len(repeats)} repeats for a rank-{len(_shape(x))} input")
    y = cx.reshape(x, [v for d in dims for v in (1, d)])
    expanded = [v for r, d in zip(repeats, dims) for v in (r, d)]
    if _shape(y) != tuple(expanded):
        y = cx.op(graph.ExpandOp, [y], {"shape": expanded})
    return cx.reshape(y, a.out_shape)


@converts("aten.cat.default")
def _cat(cx: Importer, a: Args) -> Value:
    rank = len(a.out_shape)
    # torch skips 1-D empty tensors in cat (legacy behaviour); so do we
    tensors = [
        cx.cast(t, a.out_elt) for t in a.tensors("tensors") if not (_shape(t) == (0,) and rank != 1)
    ]
    if len(tensors) == 1:
        return tensors[0]
    return cx.op(graph.ConcatOp, tensors, {"axis": _axis(a, a.integer("dim"), rank)})


@converts("aten.split_with_sizes.default")
def _split_with_sizes(cx: Importer, a: Args) -> Value:
    x = a.tensor("self")
    axis = _axis(a, a.integer("dim"), len(_shape(x)))
    return list(
        cx.make(graph.SplitOp, [x], {"axis": axis, "sizes": a.integers("split_sizes")}).results
    )


@converts("aten.slice.Tensor")
def _slice(cx: Importer, a: Args) -> Value:
    x = a.tensor("self")
    shape = _shape(x)
    axis = _axis(a, a.integer("dim"), len(shape))
    start, end, step = a.opt_integer("start"), a.opt_integer("end"), a.integer("step")
    if step <= 0:
        raise a.error(f"step must be positive, got {step}")
    # python slice semantics, clamped to the dim: end = 2**63 - 1 becomes the size
    start, end, step = slice(start, end, step).indices(shape[axis])
    if (start, end, step) == (0, shape[axis], 1):
        return x
    props = {"starts": [start], "ends": [end], "axes": [axis], "steps": [step]}
    return cx.op(graph.SliceOp, [x], props)


@converts("aten.select.int")
def _select(cx: Importer, a: Args) -> Value:
    """x[..., index, ...]: a one-element slice, then a reshape that drops the dim."""
    x = a.tensor("self")
    shape = _shape(x)
    axis = _axis(a, a.integer("dim"), len(shape))
    index = a.integer("index")
    if not -shape[axis] <= index < shape[axis]:
        raise a.error(f"index {index} is out of range for dim {axis} of size {shape[axis]}")
    index %= shape[axis]
    props = {"starts": [index], "ends": [index + 1], "axes": [axis], "steps": [1]}
    return cx.reshape(cx.op(graph.SliceOp, [x], props), a.out_shape)


@converts("aten.embedding.default")
def _embedding(cx: Importer, a: Args) -> Value:
    # padding_idx and scale_grad_by_freq only change gradients; sparse the gradient type
    a.ignore("padding_idx", "scale_grad_by_freq", "sparse")
    return cx.op(graph.GatherOp, [a.tensor("weight"), a.tensor("indices")], {"axis": 0})


@converts("aten.index_select.default")
def _index_select(cx: Importer, a: Args) -> Value:
    x, index = a.tensor("self"), a.tensor("index")
    if not _shape(index):
        index = cx.reshape(index, [1])  # a 0-d index selects like a 1-element one
    axis = _axis(a, a.integer("dim"), len(_shape(x)))
    return cx.op(graph.GatherOp, [x, index], {"axis": axis})


@converts("aten.index.Tensor")
def _index(cx: Importer, a: Args) -> Value:
    """x[:, ..., idx]: one integer index tensor after full slices is a gather."""
    indices = a.raw("indices")
    given = [i for i, v in enumerate(indices) if v is not None]
    if len(given) != 1 or given[0] != len(indices) - 1:
        raise a.error("only indexing with one index tensor (after full slices) is supported")
    axis = given[0]
    index = a.resolve(indices[axis], "indices")
    if dtypes.type_name(_elt(index)) not in ("i32", "i64"):
        raise a.error(f"only integer index tensors are supported, got {_elt(index)}")
    return cx.op(graph.GatherOp, [a.tensor("self"), index], {"axis": axis})


def _onnx_pads(a: Args, rank: int) -> list[int]:
    """torch lists (begin, end) pairs from the last dim backwards; ONNX all begins first."""
    pad = a.integers("pad" if "pad" in a else "padding")
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise a.error(f"padding {pad} does not fit a rank-{rank} input")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i] = pad[2 * i]
        ends[rank - 1 - i] = pad[2 * i + 1]
    return [*begins, *ends]


@converts("aten.constant_pad_nd.default")
def _constant_pad_nd(cx: Importer, a: Args) -> Value:
    x = a.tensor("self")
    props = {"pads": _onnx_pads(a, len(_shape(x))), "mode": "constant", "value": a.real("value")}
    return cx.op(graph.PadOp, [x], props)


@converts(
    "aten.reflection_pad1d.default",
    "aten.reflection_pad2d.default",
    "aten.replication_pad1d.default",
    "aten.replication_pad2d.default",
)
def _reflection_pad(cx: Importer, a: Args) -> Value:
    """Reflect (mirror without the edge) and replicate (repeat the edge) padding."""
    x = a.tensor("self")
    mode = "reflect" if a.name.startswith("aten.reflection") else "edge"
    props = {"pads": _onnx_pads(a, len(_shape(x))), "mode": mode, "value": 0.0}
    return cx.op(graph.PadOp, [x], props)


# --------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------


@converts("aten.scaled_dot_product_attention.default")
def _scaled_dot_product_attention(cx: Importer, a: Args) -> Value:
    """softmax(q @ k^T * scale + mask) @ v, with torch's masking rules.

    A bool mask (or is_causal's lower-triangular one) keeps the scores where it is true
    and sets the rest to -inf; a float mask is added. Like torch, a row whose scores are
    all -inf gives zeros, not NaN: when a mask could mask a whole row, the softmax is
    followed by where(max(row) == -inf, 0, p). enable_gqa repeats each key/value head
    for its group of query heads.
    """
    q, k, v = a.tensor("query"), a.tensor("key"), a.tensor("value")
    elt = _elt(q)
    if a.real("dropout_p") != 0.0:
        raise a.error("dropout_p must be 0 (inference)")
    qs, ks = _shape(q), _shape(k)
    if len(qs) < 2 or len(ks) < 2:
        raise a.error("query and key must have rank >= 2")
    if a.flag("enable_gqa") and len(qs) >= 3 and qs[-3] != ks[-3]:
        k = _repeat_heads(cx, a, k, qs[-3])
        v = _repeat_heads(cx, a, v, qs[-3])
    scale = a.opt_real("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(qs[-1])
    rank = len(_shape(k))
    perm = [*range(rank - 2), rank - 1, rank - 2]
    kt = cx.op(graph.TransposeOp, [k], {"perm": perm})
    scores = cx.op(graph.MulOp, [cx.op(graph.MatmulOp, [q, kt]), cx.scalar(scale, elt)])
    length, source = qs[-2], ks[-2]

    may_mask_a_row = False
    if a.flag("is_causal"):
        if a.raw("attn_mask") is not None:
            raise a.error("attn_mask and is_causal cannot both be given")
        causal = np.tril(np.ones((length, source), dtype=np.bool_))
        keep = cx.literal(causal, i1, "causal_mask")
        scores = cx.op(graph.WhereOp, [keep, scores, cx.scalar(-math.inf, elt)])
        may_mask_a_row = not causal.any(axis=-1).all()
    elif a.raw("attn_mask") is not None:
        mask = a.tensor("attn_mask")
        known = a.folded("attn_mask")
        if _elt(mask) == i1:
            scores = cx.op(graph.WhereOp, [mask, scores, cx.scalar(-math.inf, elt)])
            may_mask_a_row = known is None or not bool(known.any(dim=-1).all())
        else:
            scores = cx.op(graph.AddOp, [scores, cx.cast(mask, elt)])
            may_mask_a_row = known is None or bool(known.isneginf().all(dim=-1).any())

    last = len(_shape(scores)) - 1
    probs = cx.op(graph.SoftmaxOp, [scores], {"axis": last})
    if may_mask_a_row:
        row_max = cx.op(graph.ReduceMaxOp, [scores], {"axes": [last], "keepdims": True})
        dead = cx.op(graph.EqualOp, [row_max, cx.scalar(-math.inf, elt)])
        probs = cx.op(graph.WhereOp, [dead, cx.scalar(0.0, elt), probs])
    return cx.op(graph.MatmulOp, [probs, v])


def _repeat_heads(cx: Importer, a: Args, x: SSAValue, heads: int) -> SSAValue:
    """[..., Hk, S, E] -> [..., heads, S, E], each head repeated heads/Hk times in place."""
    shape = _shape(x)
    groups = shape[-3]
    if heads % groups:
        raise a.error(f"{heads} query heads are not a multiple of {groups} key/value heads")
    lead = list(shape[:-3])
    rep = heads // groups
    x = cx.reshape(x, [*lead, groups, 1, *shape[-2:]])
    x = cx.op(graph.ExpandOp, [x], {"shape": [*lead, groups, rep, *shape[-2:]]})
    return cx.reshape(x, [*lead, heads, *shape[-2:]])
