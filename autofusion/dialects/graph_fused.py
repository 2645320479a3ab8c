"""Named fused ops of the graph dialect: what graph fusion and split fusion produce.

Each op is exactly equivalent to a small subgraph of primitive graph ops (its docstring
gives the formula); the interpreter implements that formula, and the ONNX exporter emits
the subgraph as a model-local function where ONNX has no single op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i1,
    i32,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_base import (
    Fusible,
    FusionKind,
    GraphOp,
    Props,
    _check_epsilon,
    infer_norm,
    tensor,
)
from autofusion.dialects.op_facts import (
    SOFTMAX_WEIGHT,
    OperandRole,
    OpFacts,
    OpWork,
    StreamingFacts,
    activation_weight,
    dims,
    elements,
    uses_per_element,
)
from autofusion.dialects.shape_inference import DYN, ShapeError

ATTENTION_LAYOUTS = ("BNSD", "BSND")
# graph.flash_attention's mask_polarity and masked_row values; the first is the default
MASK_POLARITIES = ("keep", "hide")
MASKED_ROWS = ("zero", "nan")


def _same_element_type(types: Sequence[TensorType], what: Sequence[str]) -> None:
    first = types[0].element_type
    for t, name in zip(types[1:], what[1:]):
        if t.element_type != first:
            raise ShapeError(f"{name} has element type {t.element_type}, not {first}")


@irdl_op_definition
class FlashAttentionOp(GraphOp, OpFacts):
    """Scaled dot-product attention in one kernel (CANN FlashAttentionScore).

    With layout BNSD, query is [B, Hq, Sq, D], key [B, Hkv, Skv, D], value
    [B, Hkv, Skv, Dv] and the result [B, Hq, Sq, Dv]; BSND swaps the head and sequence
    axes of all four. Grouped-query attention: Hq is a multiple of Hkv and query head h
    reads key/value head h // (Hq / Hkv) (transformers' repeat_kv).

        s = scale * q @ k^T                       (per head, float32)
        s = softcap * tanh(s / softcap)           if softcap is given (Gemma 2; ONNX Attention)
        s = s + mask          if mask is float    (additive)
        s = where(mask, s, -inf) if mask is i1    (true = attend; mask_polarity = "hide":
                                                  where(mask, -inf, s), true = hidden)
        s[i, j] = -inf where mask[j] > mask[i]    if mask is integer (positions)
        s[i, j] = -inf for j > i if causal        (top-left aligned, as torch SDPA)
        p = softmax(s, axis=-1)
        p[i, :] = 0 where max(s[i, :]) == -inf    (a fully masked row attends to nothing;
                                                  masked_row = "nan": NaN there)
        out = p @ v

    A fully masked query row gives 0 (masked_row = "zero", the default, as torch SDPA
    and FlashAttention kernels do), or NaN (masked_row = "nan": what the plain softmax of
    all -inf gives, so that fusing an unguarded softmax keeps its numbers). The polarity
    "hide" lets HF eager's `where(m, -inf, s)` read m as it is, no `not` copy of an
    [Sq, Skv] mask (it applies to an i1 mask only). A float or i1 mask broadcasts to
    [B, Hq, Sq, Skv] whatever the layout. An integer (i32/i64) mask is the causal mask by
    position of self-attention: the position ids [S] of the queries, which are the keys
    (Sq = Skv); a key at a later position than the query is hidden (transformers'
    `key_pos > query_pos`), so no [Sq, Skv] mask is built.
    """

    name = "graph.flash_attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(FloatAttr)
    causal = prop_def(BoolAttr)
    layout = prop_def(StringAttr)
    softcap = opt_prop_def(FloatAttr)
    mask_polarity = opt_prop_def(StringAttr)  # MASK_POLARITIES; "keep" when absent
    masked_row = opt_prop_def(StringAttr)  # MASKED_ROWS; "zero" when absent
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        layout = p.text("layout")
        softcap = p.opt_real("softcap")
        if softcap is not None and not softcap > 0:
            raise ShapeError(f"softcap must be > 0, got {softcap}")
        if layout not in ATTENTION_LAYOUTS:
            raise ShapeError(f"layout must be one of {ATTENTION_LAYOUTS}")
        q, k, v = (t.get_shape() for t in types[:3])
        if any(len(s) != 4 for s in (q, k, v)):
            raise ShapeError("query, key and value must be 4-D")
        # logical views [B, H, S, D]
        order = (0, 1, 2, 3) if layout == "BNSD" else (0, 2, 1, 3)
        qb, kb, vb = ([s[i] for i in order] for s in (q, k, v))
        _same_element_type(types[:3], ("query", "key", "value"))
        for name, (a, b) in {
            "batch of key": (qb[0], kb[0]),
            "batch of value": (qb[0], vb[0]),
            "key and value heads": (kb[1], vb[1]),
            "key and value sequence": (kb[2], vb[2]),
            "head dim of query and key": (qb[3], kb[3]),
        }.items():
            if not si.dims_compatible(a, b):
                raise ShapeError(f"{name} differ: {a} vs {b}")
        if DYN not in (qb[1], kb[1]) and qb[1] % kb[1]:
            raise ShapeError(f"query heads {qb[1]} are not a multiple of key/value heads {kb[1]}")
        if (
            len(types) == 4
            and isinstance(types[3].element_type, IntegerType)
            and (types[3].element_type.width.data in (32, 64))
        ):
            pos = types[3].get_shape()
            seqs = (pos[0], qb[2], kb[2]) if len(pos) == 1 else ()
            if not seqs or not all(si.dims_compatible(a, b) for a in seqs for b in seqs):
                raise ShapeError(
                    f"position mask {si.fmt(pos)} must be [S] of query and key sequence "
                    f"{qb[2]} and {kb[2]}"
                )
        elif len(types) == 4:
            m = types[3]
            if m.element_type not in (i1, types[0].element_type):
                raise ShapeError(
                    f"mask must be i1, {types[0].element_type}, i32 or i64 (positions), "
                    f"got {m.element_type}"
                )
            full = (qb[0], qb[1], qb[2], kb[2])
            if not si.broadcasts_to(m.get_shape(), full):
                raise ShapeError(
                    f"mask {si.fmt(m.get_shape())} does not broadcast to {si.fmt(full)}"
                )
        if not p.real("scale") > 0:
            raise ShapeError("scale must be > 0")
        p.flag("causal")
        _check_mask_forms(p, types[3] if len(types) == 4 else None)
        out = [qb[0], qb[1], qb[2], vb[3]]
        out = [out[i] for i in order]
        return [tensor(out, types[0].element_type)]

    @property
    def mask_hides(self) -> bool:
        """Whether the i1 mask is true where a key is hidden (mask_polarity = "hide")."""
        return self.mask_polarity is not None and self.mask_polarity.data == "hide"

    @property
    def nan_rows(self) -> bool:
        """Whether a fully masked query row gives NaN (masked_row = "nan"), not 0."""
        return self.masked_row is not None and self.masked_row.data == "nan"

    # ---- facts (op_facts.OpFacts) ----------------------------------------------------

    def _scores(self, dynamic_size: int) -> tuple[int, int, int, int]:
        """(query rows B*Hq*Sq, Skv, D, Dv) with dynamic dims as `dynamic_size`."""
        q, key, value = (dims(v, dynamic_size) for v in (self.query, self.key, self.value))
        skv = key[1] if self.layout.data == "BSND" else key[2]
        rows = elements(self.query, dynamic_size) // max(q[3], 1)
        return rows, skv, q[3], value[3]

    def vector_weight(self) -> float:
        return 0.0  # no epilogue: the softmax works on the scores (flops)

    def flops(self, dynamic_size: int) -> OpWork:
        """Two GEMMs (q @ k^T, p @ v) and the softmax over the scores."""
        rows, skv, d, dv = self._scores(dynamic_size)
        return OpWork(2.0 * rows * skv * (d + dv), SOFTMAX_WEIGHT * rows * skv)

    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        """Each query element enters a product with every key; each key and value
        element with every query row of its heads; the mask once per score it
        broadcasts to."""
        rows, skv, d, dv = self._scores(dynamic_size)
        return (
            uses_per_element(rows * skv * d, self.query, dynamic_size),
            uses_per_element(rows * skv * d, self.key, dynamic_size),
            uses_per_element(rows * skv * dv, self.value, dynamic_size),
            *(
                uses_per_element(rows * (2 if is_position_mask(m) else skv), m, dynamic_size)
                for m in self.operands[3:]
            ),
        )

    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        """K, V and the mask are read again for every query block."""
        return (OperandRole.STREAMED, *(OperandRole.HOT for _ in self.operands[1:]))


def _check_mask_forms(p: Props, mask: TensorType | None) -> None:
    """mask_polarity and masked_row take their listed values; a polarity needs an i1 mask."""
    for name, allowed in (("mask_polarity", MASK_POLARITIES), ("masked_row", MASKED_ROWS)):
        if p.has(name) and p.text(name) not in allowed:
            raise ShapeError(f"{name} must be one of {allowed}, got {p.text(name)!r}")
    if p.has("mask_polarity") and (mask is None or mask.element_type != i1):
        raise ShapeError("mask_polarity applies to an i1 mask only")


def is_position_mask(mask: SSAValue) -> bool:
    """Whether a flash attention mask is the integer position vector (a causal mask by
    position, read once per query row and per key block, never as [Sq, Skv])."""
    return isinstance(cast(TensorType, mask.type).element_type, IntegerType) and (
        cast(TensorType, mask.type).element_type != i1
    )


@irdl_op_definition
class RopeOp(GraphOp, StreamingFacts):
    """Rotary position embedding (transformers' apply_rotary_pos_emb).

        y = x * cos + rotate(x) * sin
        rotate(x) = concat(-x[..., D/2:], x[..., :D/2])      (interleaved = false, Llama)
        rotate(x)[2i], rotate(x)[2i+1] = -x[2i+1], x[2i]      (interleaved = true, GPT-J)

    cos and sin broadcast to x, whose last dim D is even. With `rotary_dim` = R (partial
    rotary, Phi/GPT-NeoX's rotary_pct), the rotation applies to x[..., :R] only (cos and sin
    broadcast to that part, R even) and x[..., R:] passes through unchanged.
    """

    name = "graph.rope"
    VECTOR_WEIGHT: ClassVar[float] = 6
    input = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    output = result_def(TensorType)
    interleaved = prop_def(BoolAttr)
    rotary_dim = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        shape = x.get_shape()
        if not shape or (shape[-1] != DYN and shape[-1] % 2):
            raise ShapeError(f"the last dim of the input must be even, got {si.fmt(shape)}")
        rotated = shape
        if p.has("rotary_dim"):
            r = p.integer("rotary_dim")
            if r <= 0 or r % 2 or (shape[-1] != DYN and r > shape[-1]):
                raise ShapeError(
                    f"rotary_dim {r} must be even, positive and at most the last dim "
                    f"of {si.fmt(shape)}"
                )
            rotated = (*shape[:-1], r)
        _same_element_type(types, ("input", "cos", "sin"))
        for t, what in zip(types[1:], ("cos", "sin")):
            if not si.broadcasts_to(t.get_shape(), rotated):
                raise ShapeError(
                    f"{what} {si.fmt(t.get_shape())} does not broadcast to {si.fmt(rotated)}"
                )
        p.flag("interleaved")
        return [x]

    def vector_weight(self) -> float:
        """A partial rope does its arithmetic on rotary_dim of the D columns and copies
        the others (one operation per element)."""
        d = cast(TensorType, self.input.type).get_shape()[-1]
        p = Props(self.properties, self.name)
        if not p.has("rotary_dim") or d == DYN:
            return self.VECTOR_WEIGHT
        return 1 + (self.VECTOR_WEIGHT - 1) * p.integer("rotary_dim") / d


@irdl_op_definition
class SwigluOp(GraphOp, StreamingFacts):
    """SwiGLU gate: y = silu(gate) * up, with numpy broadcasting (CANN SwiGlu)."""

    name = "graph.swiglu"
    VECTOR_WEIGHT: ClassVar[float] = 7
    gate = operand_def(TensorType)
    up = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _same_element_type(types, ("gate", "up"))
        return [
            tensor(si.broadcast(types[0].get_shape(), types[1].get_shape()), types[0].element_type)
        ]


class AddNormOp(GraphOp, StreamingFacts):
    """Residual add followed by a norm; returns the norm and the sum (for the next residual).

    Subclasses declare their operands themselves: IRDL orders inherited operand
    definitions after a subclass's own, which would put `bias` first.
    """

    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x, r = types[0], types[1]
        if not si.shapes_compatible(x.get_shape(), r.get_shape()):
            raise ShapeError(
                f"residual {si.fmt(r.get_shape())} differs from input {si.fmt(x.get_shape())}"
            )
        _same_element_type(types[:2], ("input", "residual"))
        (y,) = infer_norm([x, *types[2:]], p)
        return [y, x]


@irdl_op_definition
class AddLayerNormOp(AddNormOp):
    """sum = x + residual; y = layer_norm(sum, scale, bias) (CANN AddLayerNorm)."""

    name = "graph.add_layer_norm"
    VECTOR_WEIGHT: ClassVar[float] = 10
    input = operand_def(TensorType)
    residual = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    sum = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)


@irdl_op_definition
class AddRmsNormOp(AddNormOp):
    """sum = x + residual; y = rms_norm(sum, scale) (CANN AddRmsNorm)."""

    name = "graph.add_rms_norm"
    VECTOR_WEIGHT: ClassVar[float] = 7
    input = operand_def(TensorType)
    residual = operand_def(TensorType)
    scale = operand_def(TensorType)
    output = result_def(TensorType)
    sum = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)


def _stats_shape(x: TensorType, p: Props) -> list[int]:
    shape = x.get_shape()
    axis = si.normalize_axis(p.integer("axis"), len(shape))
    return [*shape[:axis], *([1] * (len(shape) - axis))]


@irdl_op_definition
class LayerNormStatsOp(GraphOp, StreamingFacts):
    """The statistics half of a split layer norm, over axes [axis, rank), kept as size 1.

    mean = reduce_mean(x); rstd = 1 / sqrt(reduce_mean((x - mean)^2) + epsilon)

    Both are float32 whatever x's float type: a whole f16/bf16 norm keeps them in
    float32 too (CANN's LayerNorm outputs its mean and rstd in float32 as well), so the
    split norm rounds nothing the whole norm does not.
    """

    name = "graph.layer_norm_stats"
    VECTOR_WEIGHT: ClassVar[float] = 5
    input = operand_def(TensorType)
    mean = result_def(TensorType)
    rstd = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_epsilon(p)
        t = tensor(_stats_shape(types[0], p), f32)
        return [t, t]


@irdl_op_definition
class RmsNormStatsOp(GraphOp, StreamingFacts):
    """The statistics half of a split RMS norm: rstd = 1 / sqrt(mean(x^2) + epsilon),
    in float32 whatever x's float type (as LayerNormStatsOp)."""

    name = "graph.rms_norm_stats"
    VECTOR_WEIGHT: ClassVar[float] = 3
    input = operand_def(TensorType)
    rstd = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.REDUCE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        _check_epsilon(p)
        return [tensor(_stats_shape(types[0], p), f32)]


def _check_stats_operand(x: TensorType, stat: TensorType, p: Props, what: str) -> None:
    want = _stats_shape(x, p)
    if not si.shapes_compatible(stat.get_shape(), want):
        raise ShapeError(f"{what} has shape {si.fmt(stat.get_shape())}, expected {si.fmt(want)}")
    if stat.element_type != f32:
        raise ShapeError(f"{what} has element type {stat.element_type}, not f32")


def _check_norm_params(x: TensorType, params: Sequence[TensorType], p: Props) -> None:
    shape = x.get_shape()
    norm = shape[si.normalize_axis(p.integer("axis"), len(shape)) :]
    for t, what in zip(params, ("scale", "bias")):
        si.require_broadcast(t.get_shape(), norm, what)


@irdl_op_definition
class LayerNormApplyOp(GraphOp, StreamingFacts):
    """The normalize half of a split layer norm: y = (x - mean) * rstd * scale + bias,
    computed in float32 (mean and rstd are float32) and rounded once to x's type."""

    name = "graph.layer_norm_apply"
    VECTOR_WEIGHT: ClassVar[float] = 4
    input = operand_def(TensorType)
    mean = operand_def(TensorType)
    rstd = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        _same_element_type([x, *types[3:]], ("input", "scale", "bias"))
        _check_stats_operand(x, types[1], p, "mean")
        _check_stats_operand(x, types[2], p, "rstd")
        _check_norm_params(x, types[3:], p)
        return [x]


@irdl_op_definition
class RmsNormApplyOp(GraphOp, StreamingFacts):
    """The normalize half of a split RMS norm: y = x * rstd * scale, computed in float32
    (rstd is float32) and rounded once to x's type."""

    name = "graph.rms_norm_apply"
    VECTOR_WEIGHT: ClassVar[float] = 2
    input = operand_def(TensorType)
    rstd = operand_def(TensorType)
    scale = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Fusible(FusionKind.BROADCAST))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        x = types[0]
        _same_element_type([x, types[2]], ("input", "scale"))
        _check_stats_operand(x, types[1], p, "rstd")
        _check_norm_params(x, types[2:], p)
        return [x]


# graph.ffn activations: gated ones (act(gate) * up) with the activation of their gate,
# and plain ones (act(h)), named as graph.ACTIVATIONS names them. geglu_tanh is the
# gated tanh GELU of T5 v1.1 (gelu_new) and Gemma (gelu_pytorch_tanh); CANN's FFN has
# no such form, so on the NPU it is afc's own.
FFN_GATED = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh", "reglu": "relu"}
FFN_PLAIN = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid")
FFN_ACTIVATIONS = (*FFN_GATED, *FFN_PLAIN)
SEGMENTS = "operandSegmentSizes"


@irdl_op_definition
class FfnOp(GraphOp, OpFacts):
    """A feed-forward block in one op (CANN FFN; torch_npu npu_ffn):
    y = [residual +] act(x @ W1 + b1) @ W2 + b2.

    Operands: `input` x [..., K1]; `weight1`: one [K1, N1] matrix, or for a gated
    activation the gate and up matrices [K1, F] each; `weight2` [F, N2]; `bias1`: none
    or one [N1] vector per weight1 matrix; `bias2` [N2] (optional); `residual` (optional)
    of the result's shape [..., N2]. A gated activation with one merged weight1 has
    N1 = 2F: its first F columns are the gate, the last F the up projection (CANN's
    SwiGlu split convention, the order a merged gate_up_proj stores them in); a plain
    one has N1 = F. All operands share one float element type T. With round(.) the
    rounding to T, each projection is a graph.matmul (f32 accumulation, one rounding):

        gate = round(x @ W1g + b1g), up = round(x @ W1u + b1u)          (gated)
        swiglu:        g = round(silu(gate) * up)                        (graph.swiglu)
        geglu, geglu_tanh, reglu:
                       g = round(round(act(gate)) * up)                  (act, then mul)
        plain act:     g = round(act(x @ W1 + b1))    (a matmul with its activation epilogue)
        y = round(g @ W2 + b2 + residual)     (f32 accumulation, one rounding)

    `activation` is one of FFN_ACTIVATIONS (gelu and geglu use the erf form, gelu_tanh
    and geglu_tanh the tanh approximation). The operand groups are given by
    `operandSegmentSizes` (input, weight1, weight2, bias1, bias2, residual); build the op
    with `FfnOp.from_parts`.

    The residual joins the down projection's float32 sum before its one rounding (the
    decomposed graph rounds the projection, then the add): the ffn kernel starts its
    accumulator from the residual (docs/ub-fusion.md).

    `norm_epsilon` (optional): x is RMS-normalised over its last axis first, the norm's
    scale g already folded into W1 (W1 = diag(g) W1, as the matmul norm prologue folds
    it: passes/rules/norm_prologue.py). With rstd = 1 / sqrt(mean(x^2) + norm_epsilon)
    per row in float32, each projection is round(x @ W1) * rstd [+ b1] before the
    rounding above: rms_norm(x, g) @ W1 = diag(rstd) (x @ diag(g) W1).
    """

    name = "graph.ffn"
    input = operand_def(TensorType)
    weight1 = var_operand_def(TensorType)
    weight2 = operand_def(TensorType)
    bias1 = var_operand_def(TensorType)
    bias2 = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    output = result_def(TensorType)
    activation = prop_def(StringAttr)
    norm_epsilon = opt_prop_def(FloatAttr)  # x is RMS-normalised first (docstring)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure(), Fusible(FusionKind.CUBE))
    FLOAT_ONLY: ClassVar[bool] = True

    @classmethod
    def from_parts(
        cls,
        x: SSAValue,
        weight1: Sequence[SSAValue],
        weight2: SSAValue,
        activation: str,
        bias1: Sequence[SSAValue] = (),
        bias2: SSAValue | None = None,
        residual: SSAValue | None = None,
    ) -> FfnOp:
        sizes = [1, len(weight1), 1, len(bias1), int(bias2 is not None), int(residual is not None)]
        operands = [x, *weight1, weight2, *bias1]
        operands += [v for v in (bias2, residual) if v is not None]
        props = {"activation": activation, SEGMENTS: DenseArrayBase.from_list(i32, sizes)}
        op = cls.make(operands, props)
        assert isinstance(op, FfnOp)
        return op

    @property
    def gated(self) -> bool:
        return self.activation.data in FFN_GATED

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Props) -> list[TensorType]:
        act = p.text("activation")
        if act not in FFN_ACTIVATIONS:
            raise ShapeError(f"activation must be one of {FFN_ACTIVATIONS}, got {act!r}")
        eps = p.opt_real("norm_epsilon")
        if eps is not None and not eps > 0:
            raise ShapeError(f"norm_epsilon must be > 0, got {eps}")
        sizes = p.integers(SEGMENTS)
        if len(sizes) != 6 or sum(sizes) != len(types) or sizes[0] != 1 or sizes[2] != 1:
            raise ShapeError(f"{SEGMENTS} {list(sizes)} does not describe {len(types)} operands")
        n_w1, n_b1 = sizes[1], sizes[3]
        gated = act in FFN_GATED
        if n_w1 not in ((1, 2) if gated else (1,)):
            takes = "one merged or two weight1 matrices" if gated else "one weight1 matrix"
            raise ShapeError(f"{act} takes {takes}, got {n_w1}")
        if n_b1 not in (0, n_w1):
            raise ShapeError(f"bias1 has {n_b1} vectors for {n_w1} weight1 matrices")
        x, w1 = types[0], types[1 : 1 + n_w1]
        w2 = types[1 + n_w1]
        rest = list(types[2 + n_w1 :])
        b1, rest = rest[:n_b1], rest[n_b1:]
        b2 = rest.pop(0) if sizes[4] else None
        res = rest.pop(0) if sizes[5] else None
        names = ["input", *(["weight1"] * n_w1), "weight2", *(["bias1"] * n_b1)]
        names += [n for n, t in (("bias2", b2), ("residual", res)) if t is not None]
        _same_element_type(types, names)
        xs = x.get_shape()
        if len(xs) < 2:
            raise ShapeError(f"the input must have rank >= 2, got {si.fmt(xs)}")
        for t in (*w1, w2):
            if len(t.get_shape()) != 2:
                raise ShapeError(f"weights must be 2-D, got {si.fmt(t.get_shape())}")
        k1 = xs[-1]
        for t in w1:
            if not si.dims_compatible(t.get_shape()[0], k1):
                raise ShapeError(
                    f"weight1 {si.fmt(t.get_shape())} does not take the input's {k1} columns"
                )
        n1 = [t.get_shape()[1] for t in w1]
        if len(n1) == 2 and not si.dims_compatible(n1[0], n1[1]):
            raise ShapeError(f"the gate and up weights differ in width: {n1[0]} vs {n1[1]}")
        f = n1[0]
        if gated and n_w1 == 1:
            if f != DYN and f % 2:
                raise ShapeError(f"a merged gate/up weight1 has an even width, got {f}")
            f = f // 2 if f != DYN else DYN
        w2s = w2.get_shape()
        if not si.dims_compatible(w2s[0], f):
            raise ShapeError(f"weight2 {si.fmt(w2s)} does not take the {f} intermediate columns")
        for t, n in zip(b1, n1):
            if not si.shapes_compatible(t.get_shape(), (n,)):
                raise ShapeError(f"bias1 {si.fmt(t.get_shape())} is not a [{n}] vector")
        if b2 is not None and not si.shapes_compatible(b2.get_shape(), (w2s[1],)):
            raise ShapeError(f"bias2 {si.fmt(b2.get_shape())} is not a [{w2s[1]}] vector")
        out = [*xs[:-1], w2s[1]]
        if res is not None and not si.shapes_compatible(res.get_shape(), out):
            raise ShapeError(
                f"residual {si.fmt(res.get_shape())} differs from the result {si.fmt(out)}"
            )
        return [tensor(out, x.element_type)]

    # ---- facts (op_facts.OpFacts) ----------------------------------------------------

    def _sizes(self, dynamic_size: int) -> tuple[int, int, int, int, int]:
        """(rows M, K1, N1 summed over weight1, F, N2), dynamic dims as `dynamic_size`."""
        k1 = dims(self.input, dynamic_size)[-1]
        rows = elements(self.input, dynamic_size) // max(k1, 1)
        n1 = sum(dims(w, dynamic_size)[1] for w in self.weight1)
        f, n2 = dims(self.weight2, dynamic_size)
        return rows, k1, n1, f, n2

    def vector_weight(self) -> float:
        """The down projection's epilogue: bias2 and residual adds per result element."""
        return float(sum(v is not None for v in (self.bias2, self.residual)))

    def flops(self, dynamic_size: int) -> OpWork:
        """The up (x @ W1) and down (g @ W2) projections; vector work: bias1 adds and the
        activation (gated: times up) on the intermediate, the epilogue on the result."""
        rows, k1, n1, f, n2 = self._sizes(dynamic_size)
        act = self.activation.data
        gate = activation_weight(FFN_GATED.get(act, act)) + (1.0 if self.gated else 0.0)
        bias1 = sum(elements(b, dynamic_size) for b in self.bias1)  # N1 adds per row
        vector = rows * (bias1 + gate * f + self.vector_weight() * n2)
        return OpWork(2.0 * rows * (k1 * n1 + f * n2), vector)

    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        """x enters a product with every weight1 column, each weight1 and weight2 element
        with every row; biases and the residual are read once per row they add to."""
        rows, _, n1, _, _ = self._sizes(dynamic_size)
        reads = [float(n1)] + [float(rows)] * (len(self.weight1) + 1 + len(self.bias1))
        reads += [float(rows)] * (self.bias2 is not None) + [1.0] * (self.residual is not None)
        return tuple(r if elements(v, dynamic_size) else 0.0 for r, v in zip(reads, self.operands))

    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        """x is read again by every band (BANDED), each band of W1 and W2 by the M tiles
        one after the other (transient), the biases throughout (hot); the residual once."""
        roles = [OperandRole.BANDED]
        roles += [OperandRole.TRANSIENT] * (len(self.weight1) + 1)
        roles += [OperandRole.HOT] * (len(self.bias1) + (self.bias2 is not None))
        return (*roles, *[OperandRole.STREAMED] * (self.residual is not None))


FUSED_OPS = [
    FlashAttentionOp,
    FfnOp,
    RopeOp,
    SwigluOp,
    AddLayerNormOp,
    AddRmsNormOp,
    LayerNormStatsOp,
    RmsNormStatsOp,
    LayerNormApplyOp,
    RmsNormApplyOp,
]
