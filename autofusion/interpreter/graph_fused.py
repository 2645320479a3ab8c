"""Reference semantics of the named fused graph ops (see autofusion/dialects/graph_fused.py).

Each implementation follows the formula in the op's docstring, in float32, so that a
fusion rewrite is checked against the decomposed ops it replaces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.dialects.builtin import TensorType, i1
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_fused import FFN_GATED, AddNormOp, is_position_mask
from autofusion.interpreter.graph import (
    _ACTIVATIONS,
    Array,
    _compute,
    _props,
    _quiet,
    _result,
    normalize,
    sigmoid,
)


@dataclass(frozen=True)
class AttentionForm:
    """graph.flash_attention's properties that shape its scores and softmax."""

    scale: float
    causal: bool = False
    softcap: float | None = None
    masked_row: float = 0.0  # what a fully masked row gives: 0, or NaN (masked_row = "nan")


def attention(
    q: Array, k: Array, v: Array, mask: Array | None, mask_is_bool: bool, form: AttentionForm
) -> Array:
    """softmax(cap(scale * q k^T) + mask) v on [B, H, S, D] arrays, with GQA head
    mapping (an i1 mask is true = attend); a fully masked row gives form.masked_row."""
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        # query head h reads kv head h // (hq // hkv): transformers' repeat_kv
        k = np.repeat(k, hq // hkv, axis=1)
        v = np.repeat(v, hq // hkv, axis=1)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(form.scale)
    if form.softcap is not None:
        s = np.float32(form.softcap) * np.tanh(s / np.float32(form.softcap))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask_is_bool else s + mask
    if form.causal:
        sq, skv = s.shape[-2], s.shape[-1]
        s = np.where(np.tril(np.ones((sq, skv), bool)), s, -np.inf)
    row_max = s.max(axis=-1, keepdims=True)
    e = np.exp(s - row_max)
    p = e / e.sum(axis=-1, keepdims=True)
    # a fully masked row (all scores -inf) attends to nothing: 0, as torch SDPA gives;
    # or NaN, as the plain softmax gives
    p = np.where(row_max == -np.inf, np.float32(form.masked_row), p)
    return cast(Array, np.matmul(p, v))


def rotate(x: Array, interleaved: bool) -> Array:
    if interleaved:
        out = np.empty_like(x)
        out[..., 0::2] = -x[..., 1::2]
        out[..., 1::2] = x[..., 0::2]
        return out
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def ffn(op: graph.FfnOp, args: PythonValues) -> Array:
    """graph.ffn's formula (its docstring) in float32, rounding to the element type
    where the decomposed ops would round."""
    element_type = cast(TensorType, op.output.type).element_type

    def rounded(v: Array) -> Array:
        return _compute(dtypes.to_storage(np.asarray(v, np.float32), element_type))

    vals = [_compute(a) for a in args]
    n_w1, n_b1 = len(op.weight1), len(op.bias1)
    x, w1, w2 = vals[0], vals[1 : 1 + n_w1], vals[1 + n_w1]
    rest = vals[2 + n_w1 :]
    b1, rest = rest[:n_b1], rest[n_b1:]
    b2 = rest.pop(0) if op.bias2 is not None else None
    residual = rest.pop(0) if op.residual is not None else None
    act = op.activation.data
    if len(w1) == 1 and op.gated:  # one merged [K1, 2F] weight: gate first, then up
        f = w1[0].shape[1] // 2
        w1 = [w1[0][:, :f], w1[0][:, f:]]
        b1 = [b1[0][:f], b1[0][f:]] if b1 else []
    h = [np.matmul(x, w) for w in w1]
    eps = _props(op).opt_real("norm_epsilon")
    if eps is not None:  # x is RMS-normalised first, g folded into W1 (graph.ffn's docstring)
        rstd = 1 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + np.float32(eps))
        h = [rounded(v) * rstd for v in h]
    h = [v + (b1[i] if b1 else 0) for i, v in enumerate(h)]
    if act in FFN_GATED:
        gate, up = rounded(h[0]), rounded(h[1])
        if act == "swiglu":
            g = rounded(_ACTIVATIONS["silu"](gate) * up)
        else:
            g = rounded(rounded(_ACTIVATIONS[FFN_GATED[act]](gate)) * up)
    else:
        g = rounded(_ACTIVATIONS[act](h[0]))
    y = np.matmul(g, w2) + (b2 if b2 is not None else 0)
    return y + residual if residual is not None else y


def _norm_axes(x: Array, axis: int) -> tuple[int, ...]:
    return tuple(range(si.normalize_axis(axis, x.ndim), x.ndim))


@register_impls
class GraphFusedFunctions(InterpreterFunctions):
    """numpy implementations of the named fused graph ops."""

    @impl(graph.FlashAttentionOp)
    def run_flash_attention(
        self, i: Interpreter, op: graph.FlashAttentionOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        q, k, v = (_compute(a) for a in args[:3])
        bsnd = p.text("layout") == "BSND"
        if bsnd:
            q, k, v = (np.swapaxes(a, 1, 2) for a in (q, k, v))
        mask = None
        mask_is_bool = False
        if len(args) == 4 and is_position_mask(op.operands[3]):
            # keep key j for query i where pos[j] <= pos[i]: the [Sq, Skv] mask the
            # kernel never builds
            pos = np.asarray(args[3])
            mask, mask_is_bool = pos[None, :] <= pos[:, None], True
        elif len(args) == 4:
            mask_is_bool = cast(TensorType, op.operands[3].type).element_type == i1
            mask = args[3] if mask_is_bool else _compute(args[3])
            if op.mask_hides:  # true = hidden
                mask = np.logical_not(mask)
        form = AttentionForm(
            p.real("scale"),
            p.flag("causal"),
            p.opt_real("softcap"),
            math.nan if op.nan_rows else 0.0,
        )
        out = _quiet(lambda: attention(q, k, v, mask, mask_is_bool, form))
        if bsnd:
            out = np.swapaxes(out, 1, 2)
        return (_result(op, np.ascontiguousarray(out)),)

    @impl(graph.FfnOp)
    def run_ffn(self, i: Interpreter, op: graph.FfnOp, args: PythonValues) -> PythonValues:
        return (_result(op, _quiet(lambda: ffn(op, args))),)

    @impl(graph.RopeOp)
    def run_rope(self, i: Interpreter, op: graph.RopeOp, args: PythonValues) -> PythonValues:
        x, cos, sin = (_compute(a) for a in args)
        p = _props(op)
        inter = p.flag("interleaved")
        if not p.has("rotary_dim"):
            return (_result(op, x * cos + rotate(x, inter) * sin),)
        # partial rotary: rotate x[..., :R], pass x[..., R:] through
        r = p.integer("rotary_dim")
        head, tail = x[..., :r], x[..., r:]
        return (_result(op, np.concatenate([head * cos + rotate(head, inter) * sin, tail], -1)),)

    @impl(graph.SwigluOp)
    def run_swiglu(self, i: Interpreter, op: graph.SwigluOp, args: PythonValues) -> PythonValues:
        gate, up = (_compute(a) for a in args)
        return (_result(op, _quiet(lambda: gate * sigmoid(gate) * up)),)

    def run_add_norm(self, op: AddNormOp, args: PythonValues, center: bool) -> PythonValues:
        p = _props(op)
        x, r = _compute(args[0]), _compute(args[1])
        # the sum is rounded to the storage type before it is normalized, as the
        # unfused add would have stored it
        total = _result(op, x + r, 1)
        s = _compute(total)
        y = normalize(s, _norm_axes(s, p.integer("axis")), p.real("epsilon"), center)
        y = y * _compute(args[2])
        if len(args) == 4:
            y = y + _compute(args[3])
        return (_result(op, y, 0), total)

    @impl(graph.AddLayerNormOp)
    def run_add_layer_norm(
        self, i: Interpreter, op: graph.AddLayerNormOp, args: PythonValues
    ) -> PythonValues:
        return self.run_add_norm(op, args, center=True)

    @impl(graph.AddRmsNormOp)
    def run_add_rms_norm(
        self, i: Interpreter, op: graph.AddRmsNormOp, args: PythonValues
    ) -> PythonValues:
        return self.run_add_norm(op, args, center=False)

    @impl(graph.LayerNormStatsOp)
    def run_layer_norm_stats(
        self, i: Interpreter, op: graph.LayerNormStatsOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        x = _compute(args[0])
        axes = _norm_axes(x, p.integer("axis"))
        mean = x.mean(axis=axes, keepdims=True)
        d = x - mean
        rstd = 1 / np.sqrt((d * d).mean(axis=axes, keepdims=True) + p.real("epsilon"))
        # float32 statistics (the op's result type), as the whole norm keeps them
        return (_result(op, mean, 0), _result(op, rstd, 1))

    @impl(graph.RmsNormStatsOp)
    def run_rms_norm_stats(
        self, i: Interpreter, op: graph.RmsNormStatsOp, args: PythonValues
    ) -> PythonValues:
        p = _props(op)
        x = _compute(args[0])
        axes = _norm_axes(x, p.integer("axis"))
        return (
            _result(op, 1 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + p.real("epsilon"))),
        )

    @impl(graph.LayerNormApplyOp)
    def run_layer_norm_apply(
        self, i: Interpreter, op: graph.LayerNormApplyOp, args: PythonValues
    ) -> PythonValues:
        x, mean, rstd, scale = (_compute(a) for a in args[:4])
        y = (x - mean) * rstd * scale
        if len(args) == 5:
            y = y + _compute(args[4])
        return (_result(op, y),)

    @impl(graph.RmsNormApplyOp)
    def run_rms_norm_apply(
        self, i: Interpreter, op: graph.RmsNormApplyOp, args: PythonValues
    ) -> PythonValues:
        x, rstd, scale = (_compute(a) for a in args)
        return (_result(op, x * rstd * scale),)
