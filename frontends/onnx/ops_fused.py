"""Converters of ONNX's fused transformer operators (opset 23 on): Attention,
RMSNormalization and RotaryEmbedding import directly as graph.flash_attention,
graph.rms_norm and graph.rope.

Each attribute is honoured or refused by name. What graph.flash_attention does not take
itself (3-D inputs, a KV cache, a causal frontier that is not top-left, a mask shorter
than the keys, per-batch key lengths, sliding windows) is expressed around it with
primitive ops: reshapes and transposes, a concat, and a boolean mask of allowed keys.
Specs: https://onnx.ai/onnx/operators/onnx__Attention.html and the pages beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import f32, i1, i64
from xdsl.ir import Attribute

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from frontends.onnx.importer import Const, Node, OpConverters, Value

# Attention-24 adds nonpad_kv_seqlen; Attention-25 the sliding window attributes
OPS = OpConverters(
    versions={
        "Attention": (23, 24, 25),
        "RMSNormalization": (23,),
        "RotaryEmbedding": (23,),
    }
)

DYN = si.DYN
BNSD_SWAP = [0, 2, 1, 3]  # BSND <-> BNSD

# softmax_precision values afc honours: its attention computes the softmax in float32,
# at least as precise as each of these (ONNX Runtime's CPU kernel does the same)
SOFTMAX_PRECISIONS = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)


def _static(node: Node, dim: int, what: str) -> int:
    if dim == DYN:
        raise node.symbolic_error(what)
    return dim


def _split_heads(node: Node, x: Value, heads: int, what: str) -> Value:
    """[B, S, H * D] -> [B, S, H, D] (an ONNX Attention 3-D input)."""
    hidden = x.shape[2]
    if hidden != DYN and hidden % heads:
        raise node.error(f"{what} hidden size {hidden} is not a multiple of {heads} heads")
    return node.emit1(graph.ReshapeOp, [x], {"shape": [0, 0, heads, -1]})


def _and(node: Node, masks: Sequence[Value]) -> Value | None:
    out: Value | None = None
    for m in masks:
        out = m if out is None else node.emit1(graph.AndOp, [out, m])
    return out


class _Attention:
    """The pieces of one ONNX Attention node, in BNSD or BSND form."""

    def __init__(self, node: Node) -> None:
        self.node = node
        q, k, v = node.input(0), node.input(1), node.input(2)
        rank = len(q.shape)
        if rank not in (3, 4) or len(k.shape) != rank or len(v.shape) != rank:
            raise node.error(
                f"Q, K and V must all be 3-D or all 4-D, got ranks "
                f"{len(q.shape)}, {len(k.shape)}, {len(v.shape)}"
            )
        self.rank = rank
        hq = node.attr("q_num_heads", None)
        hkv = node.attr("kv_num_heads", None)
        if rank == 3:
            if hq is None or hkv is None:
                raise node.error("3-D inputs need the q_num_heads and kv_num_heads attributes")
            if hq <= 0 or hkv <= 0:
                raise node.error(f"q_num_heads={hq} and kv_num_heads={hkv} must be > 0")
            q = _split_heads(node, q, hq, "Q")
            k = _split_heads(node, k, hkv, "K")
            v = _split_heads(node, v, hkv, "V")
            self.layout = "BSND"
        else:
            for name, given, dim in (
                ("q_num_heads", hq, q.shape[1]),
                ("kv_num_heads", hkv, k.shape[1]),
            ):
                if given is not None and (node.version >= 25 or dim not in (DYN, given)):
                    raise node.error(f"{name}={given} is only for 3-D inputs (Q is 4-D)")
            self.layout = "BNSD"
        self.q, self.k, self.v = q, k, v

    def to_bnsd(self) -> None:
        if self.layout == "BSND":
            swap = {"perm": BNSD_SWAP}
            self.q, self.k, self.v = (
                self.node.emit1(graph.TransposeOp, [t], swap) for t in (self.q, self.k, self.v)
            )
            self.layout = "BNSD"


@dataclass(frozen=True)
class _Frontier:
    """Which keys each query may see besides the masks: sizes, causal, sliding window."""

    sq: int
    total: int
    causal: bool
    window: tuple[int, int] | None


def _allowed(node: Node, allowed: np.ndarray) -> Const:
    """A constant boolean mask of allowed keys."""
    return Const(allowed, i1, f"{node.output_name(0)}_allowed_keys")


def _offset_mask(node: Node, frontier: _Frontier, offset: int) -> Value:
    """Allowed keys [Sq, T] of query i at absolute position i + offset: j <= i + offset when
    causal; i + offset - left <= j <= i + offset + right for a sliding window."""
    sq, total = frontier.sq, frontier.total
    diff = np.arange(sq).reshape(sq, 1) + offset - np.arange(total).reshape(1, total)
    allowed = np.ones((sq, total), np.bool_)
    if frontier.causal:
        allowed &= diff >= 0
    if frontier.window is not None:
        left, right = frontier.window
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
    return _allowed(node, allowed)


def _batch_offset_mask(node: Node, nonpad: Value, frontier: _Frontier) -> Value:
    """Allowed keys [B, 1, Sq, T] with per-batch key lengths L[b]: j < L[b] (padding), and
    for query i at absolute position p = i + L[b] - Sq (bottom-right aligned to the valid
    keys) j <= p when causal, p - left <= j <= p + right for a sliding window."""
    sq, total = frontier.sq, frontier.total
    lengths = node.emit1(graph.ReshapeOp, [nonpad], {"shape": [-1, 1, 1, 1]})
    j = node.const(np.arange(total, dtype=np.int64), i64)
    masks = [node.emit1(graph.LessOp, [j, lengths])]
    # with rel = j - i + Sq:  j <= p  <=>  rel - 1 < L;  p - left <= j  <=>  L < rel + left + 1;
    # j <= p + right  <=>  rel - right - 1 < L
    rel = np.arange(total).reshape(1, total) - np.arange(sq).reshape(sq, 1) + sq
    below: list[np.ndarray] = []  # C < L
    above: list[np.ndarray] = []  # L < C
    if frontier.causal:
        below.append(rel - 1)
    if frontier.window is not None:
        left, right = frontier.window
        if left >= 0:
            above.append(rel + left + 1)
        if right >= 0:
            below.append(rel - right - 1)
    for c in below:
        masks.append(node.emit1(graph.LessOp, [node.const(c.astype(np.int64), i64), lengths]))
    for c in above:
        masks.append(node.emit1(graph.LessOp, [lengths, node.const(c.astype(np.int64), i64)]))
    out = _and(node, masks)
    assert out is not None
    return out


@OPS.register("Attention")
def convert_attention(node: Node) -> list[Value | None]:
    """Attention-23/24/25 as graph.flash_attention.

    3-D inputs [B, S, H * D] are split into heads and use layout BSND; past_key and
    past_value ([B, Hkv, P, D]) are concatenated before K and V along the sequence axis
    and returned as present_key and present_value. is_causal with no cache is
    flash_attention's top-left causal flag; with a cache (offset P) or per-batch key
    lengths (Attention-24 nonpad_kv_seqlen) the causal frontier, the key padding and the
    sliding window (Attention-25) become a boolean mask, combined with attn_mask. The 4th
    output (qk_matmul_output) is computed beside the fused op in primitive ops (`_Scores`).
    """
    a = _Attention(node)
    q_elt = a.q.elt
    for i, what in ((1, "K"), (2, "V")):
        if node.input(i).elt != q_elt:
            raise node.error(f"{what} has element type {node.input(i).elt}, Q has {q_elt}")
    causal = bool(node.attr("is_causal", 0))
    scale = node.attr("scale", None)
    softcap = float(node.attr("softcap", 0.0))
    if softcap < 0:
        raise node.error(f"softcap={softcap} must be >= 0")
    mode = int(node.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise node.error(f"qk_matmul_output_mode={mode} is not one of 0, 1, 2, 3")
    precision = node.attr("softmax_precision", None)
    if precision is not None and precision not in SOFTMAX_PRECISIONS:
        name = (
            TensorProto.DataType.Name(precision)
            if precision in TensorProto.DataType.values()
            else precision
        )
        raise node.reject(
            "softmax_precision",
            name,
            "afc computes the softmax in float32: FLOAT, FLOAT16 or BFLOAT16",
        )
    window: tuple[int, int] | None = None
    if node.version >= 25:
        left, right = (
            int(node.attr("left_window_size", -1)),
            int(node.attr("right_window_size", -1)),
        )
        if left < -1 or right < -1:
            raise node.error(f"window sizes ({left}, {right}) must be -1 or >= 0")
        if (left, right) != (-1, -1):
            window = (left, right)
    outs = node.proto.output
    want_scores = len(outs) > 3 and bool(outs[3])

    past_k, past_v = node.opt_input(4), node.opt_input(5)
    nonpad = node.opt_input(6)
    if (past_k is None) != (past_v is None):
        raise node.error("past_key and past_value must be given together")
    if nonpad is not None and past_k is not None:
        raise node.error("nonpad_kv_seqlen cannot be combined with past_key/past_value")
    want_present = any(outs[i] for i in (1, 2) if i < len(outs))
    offset = 0
    if past_k is not None or want_present or want_scores:
        a.to_bnsd()
    if past_k is not None and past_v is not None:
        for p, what in ((past_k, "past_key"), (past_v, "past_value")):
            if len(p.shape) != 4:
                raise node.error(f"{what} must be 4-D [B, Hkv, P, D], got {si.fmt(p.shape)}")
        offset = _static(node, past_k.shape[2], "the past length (is_causal offset)")
        a.k = node.emit1(graph.ConcatOp, [past_k, a.k], {"axis": 2})
        a.v = node.emit1(graph.ConcatOp, [past_v, a.v], {"axis": 2})
    present_k, present_v = a.k, a.v

    seq_axis = 1 if a.layout == "BSND" else 2
    sq, total = a.q.shape[seq_axis], a.k.shape[seq_axis]
    head_dim = _static(node, a.q.shape[3], "the head size (default scale)")
    scale = float(scale) if scale is not None else 1.0 / float(np.sqrt(head_dim))

    allowed: list[Value] = []
    flash_causal = causal and nonpad is None and offset == 0 and window is None
    if nonpad is not None or (causal and not flash_causal) or window is not None:
        frontier = _Frontier(
            _static(node, sq, "the query length"),
            _static(node, total, "the key length"),
            causal,
            window,
        )
        if nonpad is None:
            allowed.append(_offset_mask(node, frontier, offset))
        elif dtypes.type_name(nonpad.elt) != "i64":
            raise node.error(f"nonpad_kv_seqlen must be int64, got {nonpad.elt}")
        else:
            allowed.append(_batch_offset_mask(node, nonpad, frontier))

    mask = node.opt_input(3)
    if mask is not None:
        if mask.elt not in (i1, q_elt):  # any other type is an additive mask
            mask = _cast(node, mask, q_elt)
        if not mask.shape:
            raise node.error("attn_mask must have rank >= 1")
        width = mask.shape[-1]
        if width != total:
            # a mask narrower than the keys is padded with 'masked' (ONNX reference)
            short = _static(node, total, "the key length") - _static(node, width, "the mask width")
            if short < 0:
                raise node.error(f"attn_mask has {width} key columns, more than the {total} keys")
            pads = [0] * (2 * len(mask.shape))
            pads[-1] = short
            fill = 0.0 if mask.elt == i1 else -np.inf
            mask = node.emit1(
                graph.PadOp, [mask], {"pads": pads, "mode": "constant", "value": fill}
            )
        if mask.elt == i1:
            allowed.insert(0, mask)
            mask = None
    extra = _and(node, allowed)
    if extra is not None:
        if mask is None:
            mask = extra
        else:  # an additive mask where allowed, -inf elsewhere
            ninf = node.const(np.asarray(-np.inf), mask.elt)
            mask = node.emit1(graph.WhereOp, [extra, mask, ninf])

    props: dict[str, object] = {"scale": scale, "causal": flash_causal, "layout": a.layout}
    if softcap > 0:
        props["softcap"] = softcap
    operands = [a.q, a.k, a.v, *([mask] if mask is not None else [])]
    y = node.emit1(graph.FlashAttentionOp, operands, props)
    scores = None
    if want_scores:
        cap = softcap if softcap > 0 else None
        scores = _Scores(a, mask, flash_causal, scale, cap).emit(node, mode)
    if a.rank == 3:
        if a.layout == "BNSD":
            y = node.emit1(graph.TransposeOp, [y], {"perm": BNSD_SWAP})
        y = node.emit1(graph.ReshapeOp, [y], {"shape": [0, 0, -1]})
    return [y, present_k, present_v, scores]


class _Scores:
    """ONNX Attention's 4th output, qk_matmul_output, in primitive ops on BNSD operands
    (graph.flash_attention does not expose its scores): mode 0 and 1 the scaled (and
    softcapped) Q K^T, mode 2 with the mask added, mode 3 the softmax, 0 on fully masked
    rows, as ONNX's reference computes them."""

    def __init__(
        self, a: _Attention, mask: Value | None, causal: bool, scale: float, cap: float | None
    ) -> None:
        self.a, self.mask, self.causal, self.scale, self.cap = a, mask, causal, scale, cap

    def emit(self, node: Node, mode: int) -> Value:
        a = self.a
        q, k = a.q, a.k
        hq, hkv = q.shape[1], k.shape[1]
        if hq != hkv:  # query head h reads key head h // (Hq / Hkv)
            group = _static(node, hq, "the query heads") // _static(node, hkv, "the kv heads")
            heads = node.const(np.arange(hq, dtype=np.int64) // group, i64)
            k = node.emit1(graph.GatherOp, [k, heads], {"axis": 1})
        kt = node.emit1(graph.TransposeOp, [k], {"perm": [0, 1, 3, 2]})
        s = node.emit1(graph.MatmulOp, [q, kt])
        s = node.emit1(graph.MulOp, [s, node.const(np.asarray(self.scale), q.elt)])
        if self.cap is not None:
            cap = node.const(np.asarray(self.cap), q.elt)
            s = node.emit1(graph.DivOp, [s, cap])
            s = node.emit1(graph.MulOp, [node.emit1(graph.TanhOp, [s]), cap])
        if mode in (0, 1):
            return s
        ninf = node.const(np.asarray(-np.inf), q.elt)
        if self.mask is not None:
            if self.mask.elt == i1:
                s = node.emit1(graph.WhereOp, [self.mask, s, ninf])
            else:
                s = node.emit1(graph.AddOp, [s, self.mask])
        if self.causal:
            sq = _static(node, s.shape[2], "the query length")
            total = _static(node, s.shape[3], "the key length")
            tril = _offset_mask(node, _Frontier(sq, total, True, None), 0)
            s = node.emit1(graph.WhereOp, [tril, s, ninf])
        if mode == 2:
            return s
        p = node.emit1(graph.SoftmaxOp, [s], {"axis": -1})
        row_max = node.emit1(graph.ReduceMaxOp, [s], {"axes": [3], "keepdims": True})
        dead = node.emit1(graph.EqualOp, [row_max, ninf])
        return node.emit1(graph.WhereOp, [dead, node.const(np.asarray(0.0), q.elt), p])


@OPS.register("RMSNormalization")
def convert_rms_normalization(node: Node) -> list[Value]:
    """RMSNormalization-23 as graph.rms_norm over [axis, rank) (statistics in float32)."""
    x, scale = node.input(0), node.input(1)
    axis = int(node.attr("axis", -1))
    epsilon = float(node.attr("epsilon", 1e-5))
    stash = int(node.attr("stash_type", TensorProto.FLOAT))
    if stash != TensorProto.FLOAT:
        raise node.reject("stash_type", stash, "afc computes the statistics in float32 (1)")
    axis = node.axis(axis, len(x.shape))
    props = {"axis": axis, "epsilon": epsilon}
    if x.elt == scale.elt:
        return node.emit(graph.RmsNormOp, [x, scale], props)
    # X and scale of two float types: normalize in float32, give Y the scale's type (V)
    x32, scale32 = (_cast(node, v, f32) for v in (x, scale))
    return [_cast(node, node.emit1(graph.RmsNormOp, [x32, scale32], props), scale.elt)]


def _cast(node: Node, v: Value, elt: Attribute) -> Value:
    if v.elt == elt:
        return v
    return node.emit1(graph.CastOp, [v], result_types=[graph.tensor(v.shape, elt)])


@OPS.register("RotaryEmbedding")
def convert_rotary_embedding(node: Node) -> list[Value]:
    """RotaryEmbedding-23 as graph.rope.

    The input is [B, H, S, D], or [B, S, H * D] with num_heads; the caches are
    [max_position, R/2] indexed by position_ids [B, S], or [B, S, R/2] without them.
    graph.rope takes full-width cos/sin: each half-width row is repeated (interleaved,
    c0 c0 c1 c1 ...) or tiled (c0 c1 ... c0 c1 ...). Only the first R =
    rotary_embedding_dim (default D) features rotate; the rest pass through.
    """
    x, cos, sin = node.input(0), node.input(1), node.input(2)
    positions = node.opt_input(3)
    interleaved = bool(node.attr("interleaved", 0))
    heads = node.attr("num_heads", None)
    rot = int(node.attr("rotary_embedding_dim", 0))
    rank = len(x.shape)
    if rank == 3:
        if heads is None or heads <= 0:
            raise node.error("a 3-D input needs num_heads > 0")
        y_in = _split_heads(node, x, heads, "the input")  # [B, S, H, D]
        angles = [0, 0, 1]  # [B, S, R] -> [B, S, 1, R]: the same for every head
    elif rank == 4:
        y_in = x  # [B, H, S, D]
        angles = [0, 1, -1]  # [B, S, R] -> [B, 1, S, R]
    else:
        raise node.error(f"the input must be 3-D or 4-D, got {si.fmt(x.shape)}")
    d = _static(node, y_in.shape[3], "the head size")
    rot = rot or d
    if rot % 2 or rot > d:
        raise node.error(f"rotary_embedding_dim={rot} must be even and at most the head size {d}")
    if cos.elt != x.elt or sin.elt != x.elt:
        raise node.error(f"cos_cache and sin_cache must have the input's type {x.elt}")
    spec = _Angles(positions, interleaved, rot, angles)
    full = [
        _full_angles(node, c, what, spec) for c, what in ((cos, "cos_cache"), (sin, "sin_cache"))
    ]
    props: dict[str, object] = {"interleaved": interleaved}
    if rot < d:
        props["rotary_dim"] = rot  # graph.rope's partial rotary: x[..., rot:] passes through
    y = node.emit1(graph.RopeOp, [y_in, *full], props)
    if rank == 3:
        return node.emit(graph.ReshapeOp, [y], {"shape": [0, 0, -1]})
    return [y]


@dataclass(frozen=True)
class _Angles:
    """How a RotaryEmbedding cache becomes graph.rope's full-width cos/sin operand."""

    positions: Value | None  # position_ids [B, S], or None for a [B, S, R/2] cache
    interleaved: bool
    rot: int  # R, the number of rotated features
    shape: list[int]  # graph.reshape dims of [B, S, R] to the operand (R appended)


def _full_angles(node: Node, cache: Value, what: str, spec: _Angles) -> Value:
    rot = spec.rot
    if spec.positions is not None:
        if len(cache.shape) != 2:
            raise node.error(f"{what} must be 2-D [max_position, R/2] with position_ids")
        cache = node.emit1(graph.GatherOp, [cache, spec.positions], {"axis": 0})  # [B, S, R/2]
    elif len(cache.shape) != 3:
        raise node.error(f"{what} must be 3-D [B, S, R/2] without position_ids")
    if cache.shape[-1] not in (DYN, rot // 2):
        raise node.error(f"{what} has {cache.shape[-1]} columns, expected {rot // 2}")
    if spec.interleaved:  # c0 c0 c1 c1 ...
        pairs = node.emit1(graph.ReshapeOp, [cache], {"shape": [0, 0, -1, 1]})
        twice = node.emit1(graph.ConcatOp, [pairs, pairs], {"axis": 3})
        cache = node.emit1(graph.ReshapeOp, [twice], {"shape": [0, 0, rot]})
    else:  # c0 c1 ... c0 c1 ...
        cache = node.emit1(graph.ConcatOp, [cache, cache], {"axis": 2})
    return node.emit1(graph.ReshapeOp, [cache], {"shape": [*spec.shape, rot]})
