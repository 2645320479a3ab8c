"""Reference semantics of the graph dialect's indexing ops (autofusion/dialects/graph_indexing.py)
on numpy; constant folding uses the same code (interpreter.folding)."""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.utils.exceptions import InterpretationError

from autofusion.dialects import graph_indexing as gi
from autofusion.dialects import shape_inference as si
from autofusion.interpreter.graph import Array, _props, _result

# ScatterElements/ScatterND reductions as unbuffered numpy ufuncs (duplicates accumulate)
_REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _wrapped(op_name: str, indices: Array, size: int) -> Array:
    """Indices with negative ones counted from the back; out-of-range ones are an error."""
    idx = np.asarray(indices, dtype=np.int64)
    if np.any((idx < -size) | (idx >= size)):
        raise InterpretationError(f"{op_name}: an index is outside [{-size}, {size})")
    return np.where(idx < 0, idx + size, idx)


def _element_coords(indices: Array, axis: int) -> tuple[Array, ...]:
    """Full coordinates of each element of `indices`, with `axis` replaced by its value."""
    coords: list[Array] = list(np.indices(indices.shape, sparse=True))
    coords[axis] = indices
    return tuple(np.broadcast_arrays(*coords))


def _scatter(out: Array, where: tuple[Array, ...], updates: Array, reduction: str) -> Array:
    if reduction == "none":
        out[where] = updates
    else:
        _REDUCE[reduction].at(out, where, updates)
    return out


def unique(x: Array, axis: int | None, sort: bool) -> tuple[Array, Array, Array, Array]:
    """ONNX Unique: entries sorted (or by first occurrence), first indices, inverse, counts."""
    if axis is None:
        flat = x.reshape(-1)
        values, first, inverse, counts = np.unique(
            flat, return_index=True, return_inverse=True, return_counts=True
        )
    else:
        values, first, inverse, counts = np.unique(
            x, return_index=True, return_inverse=True, return_counts=True, axis=axis
        )
    inverse = inverse.reshape(-1)
    if not sort:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return values, first, inverse, counts


@register_impls
class GraphIndexingFunctions(InterpreterFunctions):
    """numpy implementations of the graph dialect's indexing ops."""

    @impl(gi.GatherElementsOp)
    def run_gather_elements(
        self, i: Interpreter, op: gi.GatherElementsOp, args: PythonValues
    ) -> PythonValues:
        data, indices = args
        axis = si.normalize_axis(_props(op).integer("axis"), data.ndim)
        idx = _wrapped(op.name, indices, data.shape[axis])
        return (_result(op, np.take_along_axis(data, idx, axis=axis)),)

    @impl(gi.ScatterElementsOp)
    def run_scatter_elements(
        self, i: Interpreter, op: gi.ScatterElementsOp, args: PythonValues
    ) -> PythonValues:
        data, indices, updates = args
        p = _props(op)
        axis = si.normalize_axis(p.integer("axis"), data.ndim)
        idx = _wrapped(op.name, indices, data.shape[axis])
        where = _element_coords(idx, axis)
        return (_result(op, _scatter(data.copy(), where, updates, p.text("reduction"))),)

    @impl(gi.ScatterNDOp)
    def run_scatter_nd(
        self, i: Interpreter, op: gi.ScatterNDOp, args: PythonValues
    ) -> PythonValues:
        data, indices, updates = args
        k = indices.shape[-1]
        where = tuple(_wrapped(op.name, indices[..., j], data.shape[j]) for j in range(k))
        out = _scatter(data.copy(), where, updates, _props(op).text("reduction"))
        return (_result(op, out),)

    @impl(gi.OneHotOp)
    def run_one_hot(self, i: Interpreter, op: gi.OneHotOp, args: PythonValues) -> PythonValues:
        indices, values = args
        p = _props(op)
        depth = p.integer("depth")
        idx = np.asarray(indices).astype(np.int64)  # ONNX casts float indices to int
        idx = np.where(idx < 0, idx + depth, idx)
        hot = idx[..., None] == np.arange(depth)  # out of range: no match, all off
        axis = si.normalize_axis(p.integer("axis"), idx.ndim + 1)
        hot = np.moveaxis(hot, -1, axis)
        return (_result(op, np.where(hot, values[1], values[0])),)

    @impl(gi.ReverseSequenceOp)
    def run_reverse_sequence(
        self, i: Interpreter, op: gi.ReverseSequenceOp, args: PythonValues
    ) -> PythonValues:
        x, lens = args
        p = _props(op)
        batch_axis, time_axis = p.integer("batch_axis"), p.integer("time_axis")
        out = x.copy()
        steps = x.shape[time_axis]
        for b, n in enumerate(np.asarray(lens).reshape(-1)):
            if not 0 <= n <= steps:
                raise InterpretationError(f"{op.name}: sequence length {n} not in [0, {steps}]")
            src = [slice(None)] * x.ndim
            src[batch_axis] = slice(b, b + 1)
            dst = list(src)
            src[time_axis] = slice(int(n) - 1, None, -1) if n else slice(0, 0)
            dst[time_axis] = slice(0, int(n))
            out[tuple(dst)] = x[tuple(src)]
        return (_result(op, out),)

    @impl(gi.CompressOp)
    def run_compress(self, i: Interpreter, op: gi.CompressOp, args: PythonValues) -> PythonValues:
        x, cond = args
        p = _props(op)
        axis = p.integer("axis") if p.has("axis") else None
        return (_result(op, np.compress(np.asarray(cond, bool), x, axis=axis)),)

    @impl(gi.NonZeroOp)
    def run_non_zero(self, i: Interpreter, op: gi.NonZeroOp, args: PythonValues) -> PythonValues:
        (x,) = args
        if x.ndim == 0:  # a scalar has no coordinates: [0, 1] if it is non-zero, else [0, 0]
            out = np.zeros((0, int(x != 0)), np.int64)
        else:
            out = np.asarray(np.nonzero(x), dtype=np.int64)
        return (_result(op, out),)

    @impl(gi.UniqueOp)
    def run_unique(self, i: Interpreter, op: gi.UniqueOp, args: PythonValues) -> PythonValues:
        (x,) = args
        p = _props(op)
        axis = si.normalize_axis(p.integer("axis"), x.ndim) if p.has("axis") else None
        values, first, inverse, counts = unique(x, axis, p.flag("sorted"))
        return tuple(_result(op, v, k) for k, v in enumerate((values, first, inverse, counts)))
