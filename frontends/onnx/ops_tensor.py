"""Converters of ONNX data-movement and shape operators.

Shape-only operators (Shape, Size, ConstantOfShape, Range, Trilu on constants, ...)
are evaluated with numpy: their results are constants (or `Sym` values when they depend
on symbolic dims, see `importer`). Data movement becomes graph.reshape, transpose,
concat, split, slice, gather, expand and pad. Where an operand that fixes a shape
(Reshape's shape, Slice's ends, ...) depends on symbolic dims, it is expressed with the
graph ops' `0` (copy the input dim) and `-1` (infer / keep) conventions, or rejected.
Operator versions are cited as `Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import f32, i1, i64
from xdsl.ir import Attribute

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import (
    Const,
    Item,
    Node,
    OpConverters,
    Sym,
    Tensor,
    Value,
    element_type,
    probe_dims,
)

OPS = OpConverters(
    versions={
        "Concat": (13,),
        "Constant": (13, 19, 21, 23, 24, 25),
        "ConstantOfShape": (9, 20, 21, 23, 24, 25),
        "Dropout": (13, 22),
        "Expand": (13,),
        "Flatten": (13, 21, 23, 24, 25),
        "Gather": (13,),
        "GatherND": (13,),
        "Identity": (13, 14, 16, 19, 21, 23, 24, 25),
        "Pad": (13, 18, 19, 21, 23, 24, 25),
        "Range": (11, 27),
        "Reshape": (13, 14, 19, 21, 23, 24, 25),
        "Shape": (13, 15, 19, 21, 23, 24, 25),
        "Size": (13, 19, 21, 23, 24, 25),
        "Slice": (13,),
        "Split": (13, 18),
        "Squeeze": (13, 21, 23, 24, 25),
        "Tile": (13,),
        "Transpose": (13, 21, 23, 24, 25),
        "Trilu": (14,),
        "Unsqueeze": (13, 21, 23, 24, 25),
        "Where": (9, 16),
    }
)


INT64_MAX = 2**63 - 1


# --------------------------------------------------------------------------------------
# Pass-through and constants
# --------------------------------------------------------------------------------------


@OPS.register("Identity")
def convert_identity(node: Node) -> list[Item]:
    """Identity-13 to -25: the input itself, a tensor, or a sequence (Identity-14) or
    optional (Identity-16) resolved at compile time."""
    v = node.opt_item(0)
    if v is None:
        raise node.error("input #0 is required")
    return [v]


@OPS.register("Dropout")
def convert_dropout(node: Node) -> list[Value]:
    """Dropout-13 in inference: the input itself, and an all-true mask when asked for.
    Dropout-7 and -10 give the ratio as an attribute; Dropout-7's mask has the input's type."""
    x = node.input(0)
    if node.version < 12:
        node.attr("ratio", 0.5)  # unused in inference
        if len(node.proto.output) > 1 and node.proto.output[1]:
            if si.DYN in x.shape:
                raise node.symbolic_error("the mask output")
            elt = i1 if node.version >= 10 else x.elt
            return [x, node.const(np.ones(x.shape, dtypes.storage_dtype(elt)), elt, 1)]
        return [x]
    node.attr("seed", 0)  # only draws the training-mode mask
    training = node.const_input(2, "training_mode")
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise node.error("training_mode=true is not supported (inference only)")
    node.const_input(1, "ratio")  # unused in inference, but must be known
    if len(node.proto.output) > 1 and node.proto.output[1]:
        if si.DYN in x.shape:
            raise node.symbolic_error("the mask output")
        return [x, node.const(np.ones(x.shape, np.bool_), i1, 1)]
    return [x]


def tensor_proto_const(node: Node, t: onnx.TensorProto) -> Const:
    """A Const from a TensorProto attribute value."""
    try:
        elt = element_type(t.data_type, "the tensor")
    except UserError as e:
        raise node.error(e.message) from e
    array = np.asarray(numpy_helper.to_array(t, node.importer.base_dir))
    if dtypes.type_name(elt) == "bf16":
        array = array.astype(np.float32)  # bf16 is stored as float32 (autofusion.dtypes)
    return node.const(array, elt)


@OPS.register("Constant")
def convert_constant(node: Node) -> list[Value]:
    """Constant-13: value, value_float(s) or value_int(s); strings and sparse are unsupported."""
    given = [a.name for a in node.proto.attribute]
    if len(given) != 1:
        raise node.error(f"needs exactly one value attribute, got {given}")
    key = given[0]
    value = node.attr(key)
    if key == "value":
        return [tensor_proto_const(node, value)]
    if key == "value_float":
        return [node.const(np.asarray(value, np.float32), f32)]
    if key == "value_floats":
        return [node.const(np.asarray(value, np.float32).reshape(-1), f32)]
    if key == "value_int":
        return [node.const(np.asarray(value, np.int64), i64)]
    if key == "value_ints":
        return [node.const(np.asarray(value, np.int64).reshape(-1), i64)]
    raise node.error(f"attribute '{key}' is not supported (only numeric tensors)")


@OPS.register("ConstantOfShape")
def convert_constant_of_shape(node: Node) -> list[Value]:
    """ConstantOfShape-9: a tensor of the given shape filled with `value` (default 0.0f)."""
    shape = node.input(0)
    if isinstance(shape, Sym):
        raise node.symbolic_error("the shape")
    dims = node.ints_input(0, "shape") or []
    t = node.attr("value", None)
    if t is None:
        fill = node.const(np.zeros((), np.float32), f32)
    else:
        fill = tensor_proto_const(node, t)
        if fill.array.size != 1:
            raise node.error("value must hold exactly one element")
    if any(d < 0 for d in dims):
        raise node.error(f"shape {dims} has a negative dim")
    return [node.const(np.full(dims, fill.array.reshape(())), fill.elt)]


# Range-27's stash_type: the numpy type float16/bfloat16 ranges are computed in
RANGE_STASH: dict[int, type[np.floating]] = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
}


@OPS.register("Range")
def convert_range(node: Node) -> list[Value]:
    """Range-11/27: max(ceil((limit - start) / delta), 0) elements start, start + delta, ...

    Range-27 adds float16/bfloat16 and stash_type, the type (float or double) they are
    computed in before the result is rounded back.
    """
    values = [node.input(i) for i in range(3)]
    if any(isinstance(v, Sym) for v in values):
        raise node.symbolic_error("the length of the range")
    start, limit, delta = (node.const_input(i, "range bound") for i in range(3))
    assert start is not None and limit is not None and delta is not None
    s, lim, d = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    if node.version >= 27:
        stash = int(node.attr("stash_type", onnx.TensorProto.FLOAT))
        if stash not in RANGE_STASH:
            raise node.reject("stash_type", stash, "FLOAT (1) or DOUBLE (11)")
        if dtypes.type_name(values[0].elt) in ("f16", "bf16"):
            s, lim, d = (v.astype(RANGE_STASH[stash]) for v in (s, lim, d))
    if d == 0:
        raise node.error("delta must not be 0")
    count = max(int(np.ceil((lim - s) / d)), 0)
    out = s + np.arange(count, dtype=np.result_type(s, d)) * d
    return [node.const(out.astype(np.asarray(start).dtype), values[0].elt)]


# --------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------


@OPS.register("Shape")
def convert_shape(node: Node) -> list[Value]:
    """Shape-15 (start/end select a range of dims; Shape-13 has neither)."""
    x = node.input(0)
    rank = len(x.shape)
    start, end = 0, rank
    if node.version >= 15:
        start = int(node.attr("start", 0))
        end = int(node.attr("end", rank))
    # negative values count from the back; both are clamped to [0, rank]
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    dims = node.importer.dims_value(x, node)
    if isinstance(dims, Const):
        return [node.const(dims.array[start:end], i64)]
    assert isinstance(dims, Sym)
    return [_sym_or_const(node, dims.a[start:end], dims.b[start:end], i64)]


def _sym_or_const(node: Node, a: np.ndarray, b: np.ndarray, elt: Attribute) -> Value:
    """A Const when the values agree under both probe assignments, else a Sym."""
    if np.array_equal(a, b):
        return node.const(a, elt)
    return Sym(a, b, elt)


@OPS.register("Size")
def convert_size(node: Node) -> list[Value]:
    """Size-13: the number of elements, as an int64 scalar."""
    a, b = probe_dims(node.input(0))
    return [
        _sym_or_const(
            node, np.asarray(int(np.prod(a)), np.int64), np.asarray(int(np.prod(b)), np.int64), i64
        )
    ]


def _resolve_shape_arg(node: Node, x: Value, target: Value, what: str) -> list[int]:
    """Reshape's target as graph.reshape dims: a Sym element that is dim i of `x` becomes
    0 (copy), one other symbolic element becomes -1 (inferred)."""
    if isinstance(target, Tensor):
        raise node.computed_error(what, 1)
    if isinstance(target, Const):
        return [int(v) for v in target.array.reshape(-1)]
    xa, xb = probe_dims(x)
    spec: list[int] = []
    free = 0
    for i, (va, vb) in enumerate(zip(target.a.reshape(-1), target.b.reshape(-1))):
        if va == vb:
            spec.append(int(va))
            free += int(va) == -1
        elif i < len(xa) and (xa[i], xb[i]) == (va, vb):
            spec.append(0)
        else:
            spec.append(-1)
            free += 1
    if free > 1:
        raise node.symbolic_error(f"{what}, which has more than one inferred dim,")
    return spec


def reshape_to(node: Node, x: Value, dims_a: Sequence[int], dims_b: Sequence[int]) -> Value:
    """`x` reshaped to the shape given under both probe assignments."""
    target = _sym_or_const(node, np.asarray(dims_a, np.int64), np.asarray(dims_b, np.int64), i64)
    spec = _resolve_shape_arg(node, x, target, "the result shape")
    return node.emit1(graph.ReshapeOp, [x], {"shape": spec})


@OPS.register("Reshape")
def convert_reshape(node: Node) -> list[Value]:
    """Reshape-14: 0 copies a dim (allowzero=0) or is a zero dim (allowzero=1), -1 is
    inferred."""
    x, target = node.input(0), node.input(1)
    allowzero = int(node.attr("allowzero", 0)) if node.version >= 14 else 0
    if allowzero not in (0, 1):
        raise node.reject("allowzero", allowzero, "0 or 1")
    spec = _resolve_shape_arg(node, x, target, "the shape")
    # a 0 of a symbolic target may be a copied dim; a literal 0 is a 0 of a constant
    if allowzero and isinstance(target, Const) and 0 in spec:
        return [_reshape_to_empty(node, x, spec)]
    if allowzero and isinstance(target, Sym) and not (target.a.all() and target.b.all()):
        raise node.symbolic_error("a shape with a zero dim under allowzero=1")
    return node.emit(graph.ReshapeOp, [x], {"shape": spec})


def _reshape_to_empty(node: Node, x: Value, spec: Sequence[int]) -> Value:
    """Reshape-14 with allowzero=1 and a zero in the shape: the result has no elements, so
    the input has none either, and the result is the empty constant of shape `spec` (ONNX
    forbids -1 beside a literal 0, so every dim of the result is given)."""
    if -1 in spec:
        raise node.error(f"shape {list(spec)} has both 0 and -1, which allowzero=1 forbids")
    if 0 not in x.shape:
        raise node.error(
            f"cannot reshape {si.fmt(x.shape)} into {list(spec)}: only an input with a "
            "static zero dim has the result's zero elements"
        )
    return node.const(np.zeros(spec), x.elt)


@OPS.register("Flatten")
def convert_flatten(node: Node) -> list[Value]:
    """Flatten-13: [prod(d[:axis]), prod(d[axis:])]."""
    x = node.input(0)
    axis = int(node.attr("axis", 1))
    rank = len(x.shape)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    a, b = probe_dims(x)
    dims_a = [int(np.prod(a[:axis])), int(np.prod(a[axis:]))]
    dims_b = [int(np.prod(b[:axis])), int(np.prod(b[axis:]))]
    return [reshape_to(node, x, dims_a, dims_b)]


@OPS.register("Unsqueeze")
def convert_unsqueeze(node: Node) -> list[Value]:
    """Unsqueeze-13: axes (an input; an attribute before 13) of the output get size 1."""
    x = node.input(0)
    axes = node.ints_input(1, "axes") if node.version >= 13 else node.ints_attr("axes")
    if axes is None:
        raise node.error("axes (input #1) is required")
    out_rank = len(x.shape) + len(axes)
    norm = sorted(node.axis(a, out_rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise node.error(f"axes {axes} has duplicates")
    a, b = probe_dims(x)
    dims_a, dims_b = list(a), list(b)
    for ax in norm:
        dims_a.insert(ax, 1)
        dims_b.insert(ax, 1)
    return [reshape_to(node, x, dims_a, dims_b)]


@OPS.register("Squeeze")
def convert_squeeze(node: Node) -> list[Value]:
    """Squeeze-13: drop the given size-1 axes (an optional input, an attribute before 13;
    all size-1 dims if absent)."""
    x = node.input(0)
    a, b = probe_dims(x)
    rank = len(a)
    axes = node.ints_input(1, "axes") if node.version >= 13 else node.ints_attr("axes")
    if axes is None:
        if si.DYN in x.shape:
            raise node.symbolic_error("which dims are 1")
        norm = [i for i, d in enumerate(a) if d == 1]
    else:
        norm = [node.axis(ax, rank) for ax in axes]
    for ax in norm:
        if a[ax] != 1 or b[ax] != 1:
            raise node.error(f"cannot squeeze dim {ax} of {si.fmt(x.shape)}: it is not 1")
    dims_a = [d for i, d in enumerate(a) if i not in norm]
    dims_b = [d for i, d in enumerate(b) if i not in norm]
    return [reshape_to(node, x, dims_a, dims_b)]


@OPS.register("Transpose")
def convert_transpose(node: Node) -> list[Value]:
    """Transpose-13: perm defaults to reversing the dims."""
    x = node.input(0)
    perm = node.ints_attr("perm", list(reversed(range(len(x.shape)))))
    return node.emit(graph.TransposeOp, [x], {"perm": perm})


@OPS.register("Concat")
def convert_concat(node: Node) -> list[Value]:
    """Concat-13 along `axis`."""
    return node.emit(graph.ConcatOp, node.inputs(), {"axis": int(node.attr("axis"))})


@OPS.register("Split")
def convert_split(node: Node) -> list[Value]:
    """Split-13 (sizes as an optional input; an attribute before 13) and Split-18 (or
    num_outputs, last part smaller)."""
    x = node.input(0)
    rank = len(x.shape)
    axis = node.axis(int(node.attr("axis", 0)), rank)
    sizes = node.ints_input(1, "split") if node.version >= 13 else node.ints_attr("split")
    count = len(node.proto.output)
    num_outputs = node.attr("num_outputs", None) if node.version >= 18 else None
    if sizes is None:
        dim = x.shape[axis]
        if dim == si.DYN:
            raise node.symbolic_error("the split sizes")
        if num_outputs is not None:
            if int(num_outputs) != count:
                raise node.error(f"num_outputs={num_outputs} but the node has {count} outputs")
            part = -(-dim // count)
            sizes = [min(part, dim - k * part) for k in range(count)]
        else:
            if dim % count:
                raise node.error(f"dim {axis} ({dim}) does not split into {count} equal parts")
            sizes = [dim // count] * count
    elif num_outputs is not None:
        raise node.error("split and num_outputs cannot both be given")
    if len(sizes) != count:
        raise node.error(f"{len(sizes)} split sizes for {count} outputs")
    return node.emit(graph.SplitOp, [x], {"axis": axis, "sizes": sizes})


def _slice_bound(
    node: Node, index: int, n: int, default: int, x: Value, axes: Sequence[int], what: str
) -> list[int]:
    """Slice starts/ends: constants, or a Sym end that equals the data's dim (-> INT64_MAX)."""
    v = node.opt_input(index)
    if v is None:
        return [default] * n
    if isinstance(v, Tensor):
        raise node.computed_error(what, index)
    if isinstance(v, Const):
        return [int(e) for e in v.array.reshape(-1)]
    xa, xb = probe_dims(x)
    out = []
    for k, (va, vb) in enumerate(zip(v.a.reshape(-1), v.b.reshape(-1))):
        if va == vb:
            out.append(int(va))
            continue
        ax = axes[k]
        if what == "ends" and (xa[ax], xb[ax]) == (va, vb):
            out.append(INT64_MAX)  # up to the end of a symbolic dim
            continue
        raise node.symbolic_error(f"slice {what}")
    return out


def _onnx_slice_bounds(size: int, start: int, end: int, step: int) -> tuple[int, int]:
    """Start and end clamped as the Slice-13 spec says, written so that a python slice
    (graph.slice's semantics) selects the same elements."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        start = min(max(start, 0), size)
        end = min(max(end, 0), size)
        return start, end
    start = min(max(start, 0), size - 1)
    end = min(max(end, -1), size - 1)
    # a python slice reads -1 as the last element: "before index 0" is -(size + 1)
    return start, (-(size + 1) if end == -1 else end)


@OPS.register("Slice")
def convert_slice(node: Node) -> list[Value]:
    """Slice-13: starts, ends, optional axes and steps inputs."""
    x = node.input(0)
    rank = len(x.shape)
    starts_value = node.input(1)
    if len(starts_value.shape) != 1:
        raise node.error(f"starts must be 1-D, got {si.fmt(starts_value.shape)}")
    n = starts_value.shape[0]
    axes = node.ints_input(3, "axes")
    axes = list(range(n)) if axes is None else [node.axis(a, rank) for a in axes]
    steps = node.ints_input(4, "steps") or [1] * n
    starts = _slice_bound(node, 1, n, 0, x, axes, "starts")
    ends = _slice_bound(node, 2, n, INT64_MAX, x, axes, "ends")
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps must have the same length")
    for k, ax in enumerate(axes):
        if steps[k] == 0:
            raise node.error("steps must not be 0")
        if x.shape[ax] != si.DYN:
            starts[k], ends[k] = _onnx_slice_bounds(x.shape[ax], starts[k], ends[k], steps[k])
    props = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    return node.emit(graph.SliceOp, [x], props)


@OPS.register("Gather")
def convert_gather(node: Node) -> list[Value]:
    """Gather-13 along `axis`; negative indices count from the back."""
    data, indices = node.input(0), node.input(1)
    axis = int(node.attr("axis", 0))
    return node.emit(graph.GatherOp, [data, indices], {"axis": axis})


@OPS.register("GatherND")
def convert_gather_nd(node: Node) -> list[Value]:
    """GatherND-13 with constant indices: the first q dims of the data are flattened into
    one, and a graph.gather takes the flat indices. With batch_dims=b, each index is
    prefixed with its b batch coordinates, which gathers the same elements."""
    data = node.input(0)
    batch_dims = int(node.attr("batch_dims", 0))
    idx = node.const_input(1, "indices")
    assert idx is not None
    if batch_dims:
        if not 0 < batch_dims < min(idx.ndim, len(data.shape) + 1):
            raise node.reject("batch_dims", batch_dims, "fewer than the ranks of both inputs")
        if tuple(data.shape[:batch_dims]) != idx.shape[:batch_dims]:
            raise node.error(
                f"the batch dims of {si.fmt(data.shape)} and {si.fmt(idx.shape)} differ"
            )
        grid = np.indices(idx.shape[:-1])[:batch_dims]
        idx = np.concatenate([np.stack(list(grid), -1).astype(idx.dtype), idx], -1)
    q = idx.shape[-1] if idx.ndim else 0
    if idx.ndim == 0 or q > len(data.shape):
        raise node.error(f"indices of shape {si.fmt(idx.shape)} do not index {si.fmt(data.shape)}")
    lead = data.shape[:q]
    if si.DYN in lead:
        raise node.symbolic_error("the indexed dims")
    wrapped = np.where(idx < 0, idx + np.asarray(lead), idx)
    if np.any(wrapped < 0) or np.any(wrapped >= np.asarray(lead)):
        raise node.error("an index is out of range")
    flat = np.ravel_multi_index(tuple(np.moveaxis(wrapped, -1, 0)), lead) if q else wrapped[..., 0]
    a, b = probe_dims(data)
    merged = reshape_to(node, data, [int(np.prod(lead)), *a[q:]], [int(np.prod(lead)), *b[q:]])
    flat_idx = node.const(np.asarray(flat, np.int64), i64, 0)
    return node.emit(graph.GatherOp, [merged, flat_idx], {"axis": 0})


@OPS.register("Expand")
def convert_expand(node: Node) -> list[Value]:
    """Expand-13: broadcast to `shape` (numpy rules; a 1 keeps the input dim)."""
    x, target = node.input(0), node.input(1)
    if isinstance(target, Tensor):
        raise node.computed_error("the shape", 1)
    if isinstance(target, Const):
        spec = [int(v) for v in target.array.reshape(-1)]
        if any(d < 0 for d in spec):
            raise node.error(f"shape {spec} has a negative dim")
        return node.emit(graph.ExpandOp, [x], {"shape": spec})
    xa, xb = probe_dims(x)
    n = target.a.size
    offset = n - len(xa)
    spec = []
    for j, (va, vb) in enumerate(zip(target.a.reshape(-1), target.b.reshape(-1))):
        k = j - offset
        if va == vb:
            spec.append(int(va))
        elif k >= 0 and (xa[k], xb[k]) == (va, vb):
            spec.append(-1)  # the input's own (symbolic) dim
        else:
            raise node.symbolic_error("the expanded shape")
    return node.emit(graph.ExpandOp, [x], {"shape": spec})


@OPS.register("Tile")
def convert_tile(node: Node) -> list[Value]:
    """Tile-13: [d0, d1, ...] repeated [r0, r1, ...] is reshape to [1, d0, 1, d1, ...],
    expand to [r0, d0, r1, d1, ...] and reshape to [r0 * d0, ...]."""
    x = node.input(0)
    repeats = node.ints_input(1, "repeats")
    assert repeats is not None
    a, b = probe_dims(x)
    if len(repeats) != len(a):
        raise node.error(f"{len(repeats)} repeats for rank {len(a)}")
    if si.DYN in x.shape and any(r != 1 for r, d in zip(repeats, x.shape) if d == si.DYN):
        raise node.symbolic_error("tiling a symbolic dim")
    inter_a = [v for d in a for v in (1, d)]
    inter_b = [v for d in b for v in (1, d)]
    y = reshape_to(node, x, inter_a, inter_b)
    spec = [v for r, d in zip(repeats, x.shape) for v in (r, -1 if d == si.DYN else d)]
    y = node.emit1(graph.ExpandOp, [y], {"shape": spec})
    out_a = [r * d for r, d in zip(repeats, a)]
    out_b = [r * d for r, d in zip(repeats, b)]
    return [reshape_to(node, y, out_a, out_b)]


@OPS.register("Pad")
def convert_pad(node: Node) -> list[Value]:
    """Pad-13, Pad-18 (optional axes input), Pad-19 (adds mode wrap); Pad-2 and -11 too
    (see ops_legacy). Modes constant, reflect, edge and wrap, all graph.pad."""
    x = node.input(0)
    rank = len(x.shape)
    mode = node.attr("mode", "constant")
    modes = graph.PAD_MODES if node.version >= 19 else graph.PAD_MODES[:3]  # wrap is 19's
    if mode not in modes:
        raise node.reject("mode", mode, ", ".join(modes))
    value: np.ndarray | None
    if node.version < 11:  # Pad-2: pads and value are attributes
        pads = node.ints_attr("pads")
        value = np.asarray(node.attr("value", 0.0))
    else:
        pads = node.ints_input(1, "pads")
        value = node.const_input(2, "constant_value")
    assert pads is not None
    fill = 0.0 if value is None or value.size == 0 else float(np.asarray(value).reshape(-1)[0])
    axes = node.ints_input(3, "axes") if node.version >= 18 else None
    if axes is not None:
        norm = [node.axis(a, rank) for a in axes]
        if len(pads) != 2 * len(norm):
            raise node.error(f"{len(pads)} pads for {len(norm)} axes")
        full = [0] * (2 * rank)
        for k, ax in enumerate(norm):
            full[ax] = pads[k]
            full[ax + rank] = pads[k + len(norm)]
        pads = full
    return node.emit(graph.PadOp, [x], {"pads": pads, "mode": mode, "value": fill})


# --------------------------------------------------------------------------------------
# Selection and masks
# --------------------------------------------------------------------------------------


@OPS.register("Where")
def convert_where(node: Node) -> list[Value]:
    """Where-16: three-way broadcast select."""
    return node.emit(graph.WhereOp, [node.input(0), node.input(1), node.input(2)])


@OPS.register("Trilu")
def convert_trilu(node: Node) -> list[Value]:
    """Trilu-14: keep the upper (or lower) triangle of the last two dims from diagonal k.

    A constant input is folded with numpy; a computed one becomes a select with a
    constant mask (the last two dims must be static).
    """
    x = node.input(0)
    upper = bool(node.attr("upper", 1))
    k_arr = node.const_input(1, "k")
    k = 0 if k_arr is None else int(np.asarray(k_arr).reshape(()))
    if len(x.shape) < 2:
        raise node.error(f"expects rank >= 2, got {si.fmt(x.shape)}")
    n, m = x.shape[-2:]
    if si.DYN in (n, m):
        raise node.symbolic_error("the triangle mask")
    mask = np.triu(np.ones((n, m), np.bool_), k) if upper else np.tril(np.ones((n, m), np.bool_), k)
    if isinstance(x, Const):
        return [node.const(np.where(mask, x.array, np.zeros((), x.array.dtype)), x.elt)]
    zero = node.const(np.zeros((), np.float32), x.elt)
    return node.emit(graph.WhereOp, [node.const(mask, i1), x, zero])
