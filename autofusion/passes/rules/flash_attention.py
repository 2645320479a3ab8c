"""FlashAttentionFusionPass: decomposed scaled dot-product attention -> graph.flash_attention.

    out = softmax(scale * q @ k^T (+ mask | where(mask, ., -inf)) , axis=-1) @ v

is recognised from the P·V matmul (the anchor) backwards, in the forms exporters produce:

- scale: a Mul or Div by a splat constant on the scores, on q, on k (before or after
  Kᵀ), on both (the sqrt-split scale), or none; the factors multiply;
- mask: an additive float mask (`s + m`; also a matmul bias that MatMulBiasAddFusionPass
  folded into Q·Kᵀ), or a boolean one, `where(m, s, -inf)` (true = attend; the inverted
  `where(m, -inf, s)` reads m as it is with mask_polarity = "hide", and a single-use
  `graph.not` of m flips the polarity and goes: no [Sq, Skv] copy; a `not` with other
  users stays and is the mask) or `where(m, s, lowest)` with the dtype's
  lowest finite value (torch.finfo.min; it becomes the additive mask
  `where(m, 0, lowest)`, the same scores wherever |s| < 1e31 in f32). A constant mask
  that is exactly the top-left causal pattern (tril over [Sq, Skv], 0/-inf or
  0/lowest when additive) becomes `causal = true`; a constant all-zero additive or
  all-true boolean mask is dropped; other masks stay a mask operand (one at most,
  except that two additive masks, T5's relative-position bias and padding mask, become
  their sum: the same scores up to one rounding, exact where either adds 0); the
  causal mask by position of self-attention, `where(p[j] > p[i], -inf, s)` with the
  keys' and the queries' ids both reshapes of one 1-D integer vector p (transformers
  and examples/llama_layer.afc write greater(p[1, S], p[S, 1])), becomes p itself as
  the integer mask, which the kernel compares block by block: no [S, S] mask is built;
- the head reshapes and transposes around the attention: each of q, k and v is traced
  back through single-use transposes (and q, k through scale factors), so
  [B,S,H*D] -> reshape -> transpose -> attention -> transpose -> reshape loses all four
  transposes with layout BSND; the layout (BNSD or BSND) is the one that leaves the
  fewest transposes (BNSD on a tie);
- grouped-query attention: transformers' repeat_kv (reshape to [B,Hkv,1,S,D], expand
  to [B,Hkv,n,S,D], reshape to [B,Hkv*n,S,D]) on both k and v is removed, since query
  head h reads key/value head h // n in graph.flash_attention; a dynamic B or S must
  provably carry through (a reshape's 0 copies it, or its -1 is the one dynamic dim
  left with equal static products; the expand keeps it with 1);
- a softmax computed in float32 by an f16/bf16 model, `cast(softmax(cast(s, f32)), T)`
  with T the scores' type (HF's eager attention does this): the cast pair is absorbed,
  since graph.flash_attention computes the scores and the softmax in float32 anyway
  (its docstring and interpreter) and rounds only its result, where the decomposed
  form also rounds the scores and the probabilities to T;
- the torch frontend's guard for fully masked rows, `where(max(s) == -inf, 0, p)` after
  the softmax: graph.flash_attention's masked_row = "zero" (its default) defines such a
  row as 0 too (as torch SDPA and FlashAttention kernels do), so the guard is absorbed.
  torch's SDPA decomposition (transformers 5.x at its default attention, both
  exporters) guards with `where(isnan(p), 0, p)`: the same for finite q, k and mask (a
  NaN row there is a fully masked one); absorbed too. Without a guard (HF eager's
  `where(m, -inf, s)` + softmax) the decomposed softmax of an all -inf row is NaN: the
  op gets masked_row = "nan" when its mask can hide a whole row (a boolean mask, or an
  additive one not known to be finite), so the rewrite keeps those NaNs;
- Kᵀ written on the heads flattened into the batch, reshape(transpose(reshape(k,
  [B*H, S, D]), [0, 2, 1]), [B, H, D, S]) (the SDPA decomposition), also straight from
  repeat_kv's 5-D expand;

Preconditions (refused with the reason otherwise): softmax over the last axis; 4-D
operands; scale factors are splat constants and their product is > 0; an additive mask
is added after all scaling; the mask broadcasts to [B, Hq, Sq, Skv] without enlarging
the scores; Kᵀ is a transpose that swaps exactly the sequence and head-dim axes of a
BNSD or BSND key; the P·V and Q·Kᵀ matmuls have no epilogue (bias only as above);
the scores and probabilities have no other user. A transpose, scale or repeat_kv on
q, k or v that has other users is not absorbed; it stays, and the operand is taken
after it. A cast pair around the softmax must widen the scores' type to f32 and narrow
back to it (other casts change what P·V multiplies; refused). Not recognised: rank-3
attention (batched over B*H), bottom-right aligned causal masks (they stay a mask
operand).

The operands are traced back to the head reshapes of the projections, never into the
projections, so HorizontalMatMulFusionPass (QKV merge, whose split outputs feed those
reshapes) may run before or after this rule. Named as CANN's FlashAttentionFusionPass
(MatMul->Mul->Softmax->MatMul into FlashAttentionScore; msprof-analyze advisor
rules/op_fusion_pass.yaml).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from xdsl.dialects.builtin import IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_math import IsNanOp
from autofusion.dialects.shape_inference import ShapeError
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal

Perm = tuple[int, ...]
BNSD: Perm = (0, 1, 2, 3)
BSND: Perm = (0, 2, 1, 3)
LAYOUTS: dict[str, Perm] = {"BNSD": BNSD, "BSND": BSND}
SWAP_LAST: Perm = (0, 1, 3, 2)
# ops looked at along one chain (scores, or one operand): the neighbourhood is bounded
CHAIN_LIMIT = 8


# --------------------------------------------------------------------------------------
# Matched pieces
# --------------------------------------------------------------------------------------


@dataclass
class Operand:
    """q, k or v: the logical [B, H, S, D] operand is transpose(source, perm) * scale."""

    source: SSAValue
    perm: Perm
    scale: float = 1.0
    repeats: int = 1  # the GQA group size whose repeat_kv was removed
    ops: list[Operation] = field(default_factory=list)
    first_transpose: Perm | None = None  # perm right after the first transpose traced

    def shape(self) -> tuple[int, ...]:
        dims = m.shape(self.source)
        return tuple(dims[p] for p in self.perm)


@dataclass
class Mask:
    """One mask of the scores, as found."""

    # "add" (s + value), "bool" (where(value, s, -inf)), "fill" (lowest, not -inf),
    # "positions" (value: the position ids; -inf where the key's is after the query's)
    kind: str
    value: SSAValue
    inverted: bool = False  # where(value, fill, s): true = masked
    fill: SSAValue | None = None
    plus: SSAValue | None = None  # a second additive mask: the mask is value + plus
    peeled: list[Operation] = field(default_factory=list)  # single-use `not`s looked through


@dataclass
class Attention:
    anchor: graph.MatmulOp
    q: Operand
    k: Operand
    v: Operand
    scale: float
    mask: Mask | None
    causal: bool
    layout: str
    out_transpose: graph.TransposeOp | None
    ops: list[Operation]
    nan_rows: bool = False  # no guard absorbed and the mask can hide a whole row


# --------------------------------------------------------------------------------------
# Steps of the scores chain
# --------------------------------------------------------------------------------------


def _perm(op: graph.TransposeOp) -> Perm:
    return graph.Props(op.properties, op.name).integers("perm")


def _scale_step(op: Operation) -> tuple[SSAValue, float] | None:
    """(the scaled tensor, factor) if `op` multiplies or divides it by a splat constant."""
    if isinstance(op, graph.MulOp):
        for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            f = m.splat_value(c)
            if f is not None and m.constant_op(x) is None and m.shape(op.output) == m.shape(x):
                return x, f
    if isinstance(op, graph.DivOp):
        f = m.splat_value(op.rhs)
        if f is not None and f != 0 and m.shape(op.output) == m.shape(op.lhs):
            return op.lhs, 1.0 / f
    return None


@dataclass
class WhereStep:
    scores: SSAValue
    condition: SSAValue
    fill: SSAValue
    fill_value: float
    inverted: bool


def _where_step(op: Operation) -> WhereStep | None:
    """where() that keeps the scores on one side and a splat constant on the other."""
    if not isinstance(op, graph.WhereOp):
        return None
    for s, fill, inverted in (
        (op.true_value, op.false_value, False),
        (op.false_value, op.true_value, True),
    ):
        f = m.splat_value(fill)
        if f is not None and m.constant_op(s) is None and m.shape(op.output) == m.shape(s):
            return WhereStep(s, op.condition, fill, f, inverted)
    return None


def _upstream(value: SSAValue) -> list[SSAValue]:
    """The score values a chain op computes `value` from."""
    op = value.owner
    if not isinstance(op, Operation):
        return []
    if (step := _scale_step(op)) is not None:
        return [step[0]]
    if (where := _where_step(op)) is not None:
        return [where.scores]
    if isinstance(op, graph.AddOp):
        return [op.lhs, op.rhs]
    return []


def _reaches_matmul(value: SSAValue, budget: int) -> bool:
    if isinstance(value.owner, graph.MatmulOp):
        return True
    return budget > 0 and any(_reaches_matmul(u, budget - 1) for u in _upstream(value))


def lowest(element_type: Attribute) -> float:
    """The lowest finite value of a float type (torch.finfo(dtype).min)."""
    if dtypes.type_name(element_type) == "bf16":
        return -float.fromhex("0x1.fep127")
    return float(np.finfo(dtypes.storage_dtype(element_type)).min)


def _bool_mask(condition: SSAValue, inverted: bool) -> Mask:
    """The boolean mask of where(condition, s, -inf) (or, inverted, where(condition, -inf,
    s)), looking through single-use `graph.not`s: each flips the polarity."""
    mask = Mask("bool", condition, inverted)
    while (negated := m.producer(mask.value, graph.NotOp)) is not None:
        if not negated.output.has_one_use():
            break  # the `not` stays for its other users; the attention reads it
        mask.value, mask.inverted = negated.input, not mask.inverted
        mask.peeled.append(negated)
    return mask


@dataclass
class Scores:
    qk: graph.MatmulOp
    post_scale: float
    masks: list[Mask]
    ops: list[Operation]  # from the softmax input's producer up to, without, qk


def _scores(value: SSAValue) -> Scores | Refusal | None:
    """The chain from Q·Kᵀ to the softmax input; None if `value` is not attention scores."""
    scale = 1.0
    masks: list[Mask] = []
    ops: list[Operation] = []
    for _ in range(CHAIN_LIMIT):
        op = value.owner
        if isinstance(op, graph.MatmulOp):
            return Scores(op, scale, masks, ops)
        if not isinstance(op, Operation):
            return None
        if (step := _scale_step(op)) is not None:
            value, factor = step
            scale *= factor
        elif (where := _where_step(op)) is not None:
            elt = m.tensor_type(where.scores).element_type
            if where.fill_value == -math.inf:
                masks.append(_bool_mask(where.condition, where.inverted))
            elif where.fill_value == lowest(elt):
                if scale != 1.0:
                    return Refusal("the scores are scaled after a where() mask fills them")
                masks.append(Mask("fill", where.condition, where.inverted, where.fill))
            else:
                return Refusal(
                    f"where() fills masked scores with {where.fill_value}, not -inf or "
                    f"the lowest {elt} value"
                )
            value = where.scores
        elif isinstance(op, graph.AddOp):
            sides = [x for x in (op.lhs, op.rhs) if _reaches_matmul(x, CHAIN_LIMIT)]
            if len(sides) != 1:
                return None
            value = sides[0]
            if m.shape(op.output) != m.shape(value):
                return Refusal("the additive mask broadcasts the scores to a larger shape")
            if scale != 1.0:
                return Refusal("the scores are scaled after the mask is added")
            masks.append(Mask("add", op.rhs if value is op.lhs else op.lhs))
        else:
            return None
        ops.append(op)
    return None


# --------------------------------------------------------------------------------------
# Operands: transposes, scale factors and repeat_kv traced back
# --------------------------------------------------------------------------------------


def _repeat_kv(op: Operation) -> tuple[SSAValue, int, list[Operation]] | None:
    """(kv, n, [expand, reshape]) if `op` is the last reshape of repeat_kv(kv, n)."""
    if not isinstance(op, graph.ReshapeOp):
        return None
    found = _repeated(op.input, m.shape(op.output))
    if found is None:
        return None
    # a dynamic dim of the result must provably be the one of [B, Hkv, n, S, D]
    if not _carries(op, {0: 0, 2: 3}):
        return None
    return found


def _dims_from(op: graph.ReshapeOp) -> dict[int, int] | None:
    """For each dynamic dim of the reshape's result, the input dim it provably equals
    (copied by a 0, or the one dynamic input dim left for the -1 when the static
    dims on both sides have the same product); None if one is not provable."""
    ins, outs = m.shape(op.input), m.shape(op.output)
    spec = graph.Props(op.properties, op.name).integers("shape")
    dims: dict[int, int] = {}
    inferred: list[int] = []
    for i, (s, d) in enumerate(zip(spec, outs)):
        if d != si.DYN:
            continue
        if s == 0:
            dims[i] = i
        elif s == -1:
            inferred.append(i)
        else:
            return None
    rest = [i for i, d in enumerate(ins) if d == si.DYN and i not in dims.values()]
    if not inferred and not rest:
        return dims
    static = [math.prod(d for d in x if d != si.DYN) for x in (ins, outs)]
    if len(inferred) != 1 or len(rest) != 1 or static[0] != static[1]:
        return None
    dims[inferred[0]] = rest[0]
    return dims


def _carries(op: graph.ReshapeOp, dims: dict[int, int]) -> bool:
    """Whether each dynamic result dim of `op` provably equals its input dim in `dims`
    (result axis -> input axis)."""
    found = _dims_from(op)
    return found is not None and all(dims.get(o) == i for o, i in found.items())


def _repeated(
    value: SSAValue, out: tuple[int, ...]
) -> tuple[SSAValue, int, list[Operation]] | None:
    """(kv, n, [expand, reshape]) if `value` is repeat_kv(kv, n) before its last reshape to
    `out` = [B, Hkv * n, S, D]: expand(reshape(kv, [B, Hkv, 1, S, D]), [B, Hkv, n, S, D]).
    Dynamic B and S must provably carry through (reshapes copy them with 0 or infer
    them with -1; the expand keeps them with 1)."""
    expand = m.producer(value, graph.ExpandOp)
    if expand is None or not expand.output.has_one_use():
        return None
    first = m.producer(expand.input, graph.ReshapeOp)
    if first is None or not first.output.has_one_use():
        return None
    kv, one, rep = (m.shape(v) for v in (first.input, first.output, expand.output))
    if len(kv) != 4 or len(rep) != 5 or len(out) != 4:
        return None
    b, groups, s, d = kv
    n = rep[2]
    if one != (b, groups, 1, s, d) or rep != (b, groups, n, s, d) or n < 1:
        return None
    if out != (b, groups * n, s, d) or min(groups, d) < 0:
        return None
    if not _carries(first, {0: 0, 3: 2}) or not _keeps_dynamic(expand):
        return None
    return first.input, n, [expand, first]


def _keeps_dynamic(expand: graph.ExpandOp) -> bool:
    """Whether the expand keeps each dynamic dim of its input (a 1 or -1 there)."""
    ins = m.shape(expand.input)
    spec = graph.Props(expand.properties, expand.name).integers("shape")
    lead = len(ins) - len(spec)
    return all(i < lead or spec[i - lead] in (1, -1) for i, d in enumerate(ins) if d == si.DYN)


@dataclass
class FlatTranspose:
    source: SSAValue
    perm: Perm
    repeats: int
    ops: list[Operation]


def _flat_transpose(op: Operation, repeat: bool) -> FlatTranspose | None:
    """`op` = reshape(transpose3(reshape(x, [B*H, S, D]))) back to 4-D: a transpose of the
    last two axes done on the heads flattened into the batch (torch's SDPA decomposition
    writes Kᵀ so), the same as transpose(x, perm). With `repeat`, x may be repeat_kv's
    expand before its last reshape ([B, Hkv, n, S, D], flattened at once)."""
    if not isinstance(op, graph.ReshapeOp):
        return None
    t = m.producer(op.input, graph.TransposeOp)
    flat = m.producer(t.input, graph.ReshapeOp) if t is not None else None
    if t is None or flat is None or not t.output.has_one_use():
        return None
    if not flat.output.has_one_use() or len(_perm(t)) != 3 or _perm(t)[0] != 0:
        return None
    x = m.shape(flat.input)
    if len(x) not in (4, 5) or min(x) < 0:
        return None
    x4 = (x[0], math.prod(x[1:-2]), x[-2], x[-1])
    perm = (0, 1, *(p + 1 for p in _perm(t)[1:]))
    if m.shape(flat.output) != (x4[0] * x4[1], *x4[2:]):
        return None
    if m.shape(op.output) != tuple(x4[p] for p in perm):
        return None
    if len(x) == 4:
        return FlatTranspose(flat.input, perm, 1, [t, flat])
    found = _repeated(flat.input, x4) if repeat and perm[1] == 1 else None
    if found is None:
        return None
    return FlatTranspose(found[0], perm, found[1], [t, flat, *found[2]])


def _peel(value: SSAValue, perm: Perm, scale: bool, repeat: bool) -> Operand:
    """Trace an operand back through single-use transposes, scale factors and repeat_kv."""
    x = Operand(value, perm)
    for _ in range(CHAIN_LIMIT):
        if not x.source.has_one_use():
            break
        op = x.source.owner
        can_repeat = repeat and x.repeats == 1 and x.perm[1] == 1
        flat = _flat_transpose(op, can_repeat) if isinstance(op, Operation) else None
        if isinstance(op, graph.TransposeOp) or flat is not None:
            if flat is not None:
                x.source, inner_perm = flat.source, flat.perm
            else:
                assert isinstance(op, graph.TransposeOp)
                x.source, inner_perm = op.input, _perm(op)
            x.perm = m.compose_perms(inner_perm, x.perm)
            if x.first_transpose is None:
                x.first_transpose = x.perm
            if flat is not None:
                x.repeats *= flat.repeats
                x.ops += flat.ops
        elif scale and isinstance(op, Operation) and (step := _scale_step(op)) is not None:
            x.source, factor = step
            x.scale *= factor
        elif repeat and x.repeats == 1 and x.perm[1] == 1:
            # repeat_kv repeats axis 1 of its result, which must be the logical head axis
            found = _repeat_kv(op) if isinstance(op, Operation) else None
            if found is None:
                break
            x.source, x.repeats, inner = found
            x.ops += inner
        else:
            break
        assert isinstance(op, Operation)
        x.ops.append(op)
    return x


def _inverse(perm: Perm) -> Perm:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _operand_perm(x: Operand, layout: str) -> Perm:
    """The transpose of x.source that gives the operand in `layout`."""
    return m.compose_perms(x.perm, LAYOUTS[layout])


def _output_perm(layout: str, out_transpose: graph.TransposeOp | None) -> Perm:
    """The transpose of the flash result that gives the value it replaces."""
    back = _inverse(LAYOUTS[layout])
    if out_transpose is None:
        return back
    return m.compose_perms(back, _perm(out_transpose))


def _cost(q: Operand, k: Operand, v: Operand, layout: str, out_t: graph.TransposeOp | None) -> int:
    """Transposes left around the flash op with `layout`."""
    perms = [_operand_perm(x, layout) for x in (q, k, v)] + [_output_perm(layout, out_t)]
    return sum(not m.is_identity_perm(p) for p in perms)


# --------------------------------------------------------------------------------------
# Masks: causal and no-op
# --------------------------------------------------------------------------------------


def _keep(mask: Mask, sq: int, skv: int) -> np.ndarray | None:
    """Where a constant mask lets scores through, broadcast to [..., sq, skv]; None if unknown.

    An additive mask lets a score through unless it adds -inf or the lowest value.
    """
    arr = m.constant_array(mask.value)
    if arr is None or arr.ndim < 2:
        return None
    try:
        arr = np.broadcast_to(arr, (*arr.shape[:-2], sq, skv))
    except ValueError:
        return None
    if mask.kind == "add":
        floor = lowest(m.tensor_type(mask.value).element_type)
        return cast(np.ndarray, ~((arr == -np.inf) | (arr <= floor)))
    keep = arr.astype(bool)
    return ~keep if mask.inverted else keep


def _is_noop(mask: Mask) -> bool:
    arr = m.constant_array(mask.value)
    if arr is None:
        return False
    if mask.kind == "add":
        return bool(np.all(arr == 0))
    return bool(np.all(arr != mask.inverted))


def _is_causal(mask: Mask, sq: int, skv: int) -> bool:
    keep = _keep(mask, sq, skv)
    if keep is None:
        return False
    tril = np.tril(np.ones((sq, skv), bool))
    if not np.array_equal(keep, np.broadcast_to(tril, keep.shape)):
        return False
    if mask.kind == "add":  # kept scores must get exactly 0 added
        arr = np.broadcast_to(m.constant_array(mask.value), keep.shape)  # type: ignore[arg-type]
        return bool(np.all(arr[keep] == 0))
    return True


# --------------------------------------------------------------------------------------
# The guard and the rule
# --------------------------------------------------------------------------------------


def _nan_guard(where: graph.WhereOp) -> tuple[SSAValue, list[Operation]] | None:
    """(probabilities, guard ops) if `where` is where(isnan(p), 0, softmax(s)) (the
    torch SDPA decomposition of transformers' masked attention, dynamo and TorchScript).

    A softmax row is NaN exactly when its scores are all -inf (a fully masked row, which
    graph.flash_attention also makes 0) or hold a NaN or +inf (non-finite q, k or mask,
    where the guard gives 0 and the fused op NaN): the same numbers for finite operands.
    """
    softmax = m.producer(where.false_value, graph.SoftmaxOp)
    isnan = m.producer(where.condition, IsNanOp)
    if softmax is None or isnan is None or isnan.input is not where.false_value:
        return None
    if not isnan.output.has_one_use() or where.false_value.uses.get_length() != 2:
        return None
    return where.false_value, [where, isnan]


def _guard(probs: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """(probabilities, guard ops) if `probs` is where(reduce_max(s) == -inf, 0, softmax(s))
    or where(isnan(softmax(s)), 0, softmax(s))."""
    where = probs.owner
    if not isinstance(where, graph.WhereOp) or m.splat_value(where.true_value) != 0.0:
        return None
    if (nan_guard := _nan_guard(where)) is not None:
        return nan_guard
    softmax = m.producer(where.false_value, graph.SoftmaxOp)
    equal = m.producer(where.condition, graph.EqualOp)
    if softmax is None or equal is None or not equal.output.has_one_use():
        return None
    for row_max, inf in ((equal.lhs, equal.rhs), (equal.rhs, equal.lhs)):
        reduce = m.producer(row_max, graph.ReduceMaxOp)
        if (
            reduce is not None
            and m.splat_value(inf) == -math.inf
            and reduce.input is softmax.input
            and reduce.output.has_one_use()
            and reduce.reduced_axes() == (len(m.shape(reduce.input)) - 1,)
        ):
            return where.false_value, [where, equal, reduce]
    return None


def _float32_softmax(
    probs: SSAValue,
) -> tuple[graph.SoftmaxOp, SSAValue, list[Operation]] | Refusal | None:
    """(softmax, scores, [cast, cast]) if `probs` is cast(softmax(cast(scores, f32)), T)
    with T the scores' element type: a softmax in float32 of f16/bf16 scores."""
    narrow = m.producer(probs, graph.CastOp)
    if narrow is None:
        return None
    softmax = m.producer(narrow.input, graph.SoftmaxOp)
    widen = m.producer(softmax.input, graph.CastOp) if softmax is not None else None
    if softmax is None or widen is None:
        return None
    scores_t = dtypes.type_name(m.tensor_type(widen.input).element_type)
    soft_t = dtypes.type_name(m.tensor_type(softmax.input).element_type)
    out_t = dtypes.type_name(m.tensor_type(probs).element_type)
    if soft_t != "f32" or scores_t not in ("f16", "bf16", "f32") or out_t != scores_t:
        return Refusal(
            f"the softmax runs in {soft_t} between casts from {scores_t} and to {out_t}; "
            "only a float32 softmax of scores cast back to their own type is absorbed"
        )
    if not widen.output.has_one_use() or not narrow.input.has_one_use():
        return Refusal("a cast around the softmax has other users")
    return softmax, widen.input, [narrow, widen]


def _flash_type(
    q: Operand,
    k: Operand,
    v: Operand,
    mask_type: Attribute | None,
    props: dict[str, Attribute],
    layout: str,
) -> tuple[int, ...]:
    """The flash op's result shape; raises ShapeError if its operands do not fit."""
    types = [
        graph.tensor([x.shape()[i] for i in LAYOUTS[layout]], m.tensor_type(x.source).element_type)
        for x in (q, k, v)
    ]
    if mask_type is not None:
        types.append(cast(TensorType, mask_type))
    (out,) = graph.FlashAttentionOp.infer(types, graph.Props(props, "graph.flash_attention"))
    return out.get_shape()


def _structure_refusal(
    op: graph.MatmulOp, softmax: graph.SoftmaxOp, guard_ops: list[Operation], found: Scores
) -> Refusal | None:
    """The attention's shape, axis, epilogues, and intermediates used by it alone."""
    qk = found.qk
    rank = len(m.shape(softmax.input))
    if rank != 4 or len(m.shape(qk.lhs)) != 4 or len(m.shape(op.rhs)) != 4:
        return Refusal(f"the attention is {rank}-D; graph.flash_attention takes 4-D operands")
    axis = graph.Props(softmax.properties, softmax.name).integer("axis")
    if axis not in (-1, rank - 1):
        return Refusal(f"the softmax is over axis {axis}, not the last axis")
    for cube in (op, qk):
        if "activation" in cube.properties:
            return Refusal(f"the {cube.name} applies an activation")
    if op.bias is not None:
        return Refusal("the P·V matmul adds a bias")
    if qk.bias is not None and found.post_scale != 1.0:
        return Refusal("the Q·Kᵀ matmul's bias is scaled with the scores")
    # the guard's reduce_max reads the softmax input too, its is_nan the softmax output
    reads_scores = any(isinstance(g, graph.ReduceMaxOp) for g in guard_ops)
    reads_probs = any(isinstance(g, IsNanOp) for g in guard_ops)
    chain = [*found.ops, qk]
    if chain[0].results[0].uses.get_length() != 1 + reads_scores:
        return Refusal(f"the scores ({chain[0].name}) have other users")
    for inner in chain[1:]:
        if not inner.results[0].has_one_use():
            return Refusal(f"an intermediate of the scores ({inner.name}) has other users")
    if softmax.output.uses.get_length() != 1 + reads_probs or not op.lhs.has_one_use():
        return Refusal("the softmax probabilities have other users")
    return None


def _operands(op: graph.MatmulOp, qk: graph.MatmulOp) -> tuple[Operand, Operand, Operand] | Refusal:
    """q, k and v traced back; repeat_kv is removed only when both k and v have it."""
    q = _peel(qk.lhs, BNSD, scale=True, repeat=False)
    k = _peel(qk.rhs, SWAP_LAST, scale=True, repeat=True)
    if k.first_transpose is None:
        return Refusal("the key operand of Q·Kᵀ is not a single-use transpose")
    if k.first_transpose not in (BNSD, BSND):
        kt = list(m.compose_perms(k.first_transpose, SWAP_LAST))
        return Refusal(
            f"Kᵀ (perm {kt}) does not swap exactly the sequence and head-dim axes of a "
            "BNSD or BSND key"
        )
    v = _peel(op.rhs, BNSD, scale=False, repeat=True)
    if k.repeats != v.repeats:
        k = _peel(qk.rhs, SWAP_LAST, scale=True, repeat=False)
        v = _peel(op.rhs, BNSD, scale=False, repeat=False)
    return q, k, v


def _position_ids(value: SSAValue, queries: bool) -> SSAValue | None:
    """p if `value` is a reshape of a 1-D i32/i64 vector p to [1.., S] (the keys' axis)
    or, with `queries`, to [1.., S, 1] (the queries' axis)."""
    reshape = m.producer(value, graph.ReshapeOp)
    if reshape is None or len(m.shape(reshape.input)) != 1:
        return None
    elt = m.tensor_type(reshape.input).element_type
    if not isinstance(elt, IntegerType) or elt.width.data not in (32, 64):
        return None
    # only size-1 dims join the [S] (so a dynamic S stays S)
    want = (m.shape(reshape.input)[0], *((1,) if queries else ()))
    out = m.shape(value)
    lead = len(out) - len(want)
    if lead < 0 or any(d != 1 for d in out[:lead]) or out[lead:] != want:
        return None
    return reshape.input


def _position_mask(mask: Mask) -> SSAValue | None:
    """The position ids p if `mask` hides exactly the keys after the query by position:
    where(p[j] > p[i], -inf, s) (transformers' causal mask from the position ids),
    written as greater(p_keys, p_queries) or less(p_queries, p_keys)."""
    if mask.kind != "bool" or not mask.inverted:
        return None
    compare = mask.value.owner
    if isinstance(compare, graph.GreaterOp):
        keys, queries = compare.lhs, compare.rhs
    elif isinstance(compare, graph.LessOp):
        keys, queries = compare.rhs, compare.lhs
    else:
        return None
    p = _position_ids(keys, queries=False)
    if p is None or _position_ids(queries, queries=True) is not p:
        return None
    return p


def _mask_plan(masks: list[Mask], sq: int, skv: int) -> tuple[Mask | None, bool] | Refusal:
    """(the mask operand, causal): no-op masks dropped, the causal one made a flag, a
    causal mask by position made the position ids."""
    causal = False
    kept: list[Mask] = []
    for mask in masks:
        if _is_noop(mask):
            continue
        if (positions := _position_mask(mask)) is not None and sq == skv:
            kept.append(Mask("positions", positions))
            continue
        if not causal and sq >= 0 and skv >= 0 and _is_causal(mask, sq, skv):
            causal = True
            continue
        kept.append(mask)
    if len(kept) == 2 and all(k.kind == "add" for k in kept):
        # T5: a relative-position bias and the padding mask, added one after the other
        return Mask("add", kept[1].value, plus=kept[0].value), causal
    if len(kept) > 1:
        return Refusal(f"{len(kept)} masks apply; graph.flash_attention takes one")
    return (kept[0] if kept else None), causal


def _mask_type(mask: Mask | None, scores: SSAValue) -> Attribute | None:
    if mask is None:
        return None
    if mask.kind == "fill":  # becomes where(m, 0, lowest) in the scores' type
        return graph.tensor(m.shape(mask.value), m.tensor_type(scores).element_type)
    if mask.plus is not None:
        types = [m.tensor_type(mask.value), m.tensor_type(mask.plus)]
        return graph.AddOp.infer(types, graph.Props({}, "graph.add"))[0]
    return m.tensor_type(mask.value)


class FuseFlashAttention(FusionRule[Attention]):
    rule_name = "FlashAttentionFusionPass"
    pattern = "MatMul(Q,K^T)->[Mul|Div]->[Add|Where mask]->[Cast]->Softmax->[Cast]->MatMul(V)"
    anchors = (graph.MatmulOp,)

    def match(self, op: Operation) -> Attention | Refusal | None:
        assert isinstance(op, graph.MatmulOp)
        guard = _guard(op.lhs)
        probs, guard_ops = guard if guard is not None else (op.lhs, [])
        softmax = m.producer(probs, graph.SoftmaxOp)
        scores = softmax.input if softmax is not None else None
        casts: list[Operation] = []
        if softmax is None and guard is None:
            widened = _float32_softmax(probs)
            if widened is None or isinstance(widened, Refusal):
                return widened
            softmax, scores, casts = widened
        if softmax is None or scores is None:
            return None
        found = _scores(scores)
        if found is None or isinstance(found, Refusal):
            return found
        if (refusal := _structure_refusal(op, softmax, guard_ops, found)) is not None:
            return refusal
        qk = found.qk
        operands = _operands(op, qk)
        if isinstance(operands, Refusal):
            return operands
        q, k, v = operands
        scale = q.scale * k.scale * found.post_scale
        if not (scale > 0 and found.post_scale > 0 and math.isfinite(scale)):
            return Refusal(f"the softmax scale {scale} is not positive")
        masks = [*found.masks, *([Mask("add", qk.bias)] if qk.bias is not None else [])]
        _, _, sq, skv = m.shape(softmax.input)
        plan = _mask_plan(masks, sq, skv)
        if isinstance(plan, Refusal):
            return plan
        mask, causal = plan

        user = m.sole_user(op.output)
        out_t = user if isinstance(user, graph.TransposeOp) else None
        costs = {name: _cost(q, k, v, name, out_t) for name in LAYOUTS}
        layout = min(LAYOUTS, key=lambda name: costs[name])  # BNSD first: wins ties
        if out_t is not None and not m.is_identity_perm(_output_perm(layout, out_t)):
            out_t = None  # the output transpose stays as it is, reading the result
        nan_rows = not guard_ops and _can_hide_row(mask)
        props: dict[str, Attribute] = {
            "scale": graph.float_attr(scale),
            "causal": graph.bool_attr(causal),
            "layout": StringAttr(layout),
            **{k: StringAttr(v) for k, v in _mask_forms(mask, nan_rows).items()},
        }
        try:
            out = _flash_type(q, k, v, _mask_type(mask, scores), props, layout)
        except ShapeError as e:
            return Refusal(f"graph.flash_attention does not fit: {e}")
        replaced = out_t.output if out_t is not None else op.output
        if tuple(out[p] for p in _output_perm(layout, out_t)) != m.shape(replaced):
            return Refusal("the fused result would not have the attention's shape")
        ops: list[Operation] = [
            op,
            *casts,
            softmax,
            *guard_ops,
            *found.ops,
            *(o for mask in found.masks for o in mask.peeled),
            qk,
            *q.ops,
            *k.ops,
            *v.ops,
        ]
        if out_t is not None:
            ops.append(out_t)
        return Attention(op, q, k, v, scale, mask, causal, layout, out_t, ops, nan_rows)

    def rewrite(self, op: Operation, match: Attention, rewriter: PatternRewriter) -> None:
        new_ops: list[Operation] = []

        def transposed(value: SSAValue, perm: Perm) -> SSAValue:
            if m.is_identity_perm(perm):
                return value
            t = graph.TransposeOp.make([value], {"perm": list(perm)})
            new_ops.append(t)
            if value.name_hint is not None:
                t.results[0].name_hint = f"{value.name_hint}_{match.layout.lower()}"
            return t.results[0]

        operands = [
            transposed(x.source, _operand_perm(x, match.layout))
            for x in (match.q, match.k, match.v)
        ]
        if match.mask is not None:
            operands.append(_mask_operand(match.mask, new_ops))
        flash = graph.FlashAttentionOp.make(
            operands,
            {
                "scale": match.scale,
                "causal": match.causal,
                "layout": match.layout,
                **_mask_forms(match.mask, match.nan_rows),
            },
        )
        new_ops.append(flash)
        result = transposed(flash.results[0], _output_perm(match.layout, match.out_transpose))
        location = m.fused_location(match.ops)
        for new in new_ops:
            new.location = location
        if match.out_transpose is None:
            rewriter.replace(op, new_ops, [result])
            return
        rewriter.insert(new_ops)
        rewriter.replace_all_uses_with(match.out_transpose.output, result)
        rewriter.erase(match.out_transpose)
        rewriter.erase(op)


def _can_hide_row(mask: Mask | None) -> bool:
    """Whether the mask operand can hide every key of a query row (its scores all -inf):
    a boolean mask, or an additive one not known to be finite. A top-left causal flag,
    a causal mask by position (a query keeps its own key) and the lowest-value fill
    never do."""
    if mask is None or mask.kind in ("positions", "fill"):
        return False
    if mask.kind == "bool":
        return True
    parts = [mask.value, *([mask.plus] if mask.plus is not None else [])]
    return not all(_finite(x, CHAIN_LIMIT) for x in parts)


def _finite(value: SSAValue, budget: int) -> bool:
    """Whether `value` is provably finite: a constant without inf or NaN, or a where(),
    reshape or expand of such (transformers' `where(m, 0, finfo.min)` masks)."""
    arr = m.constant_array(value)
    if arr is not None:
        return bool(np.all(np.isfinite(arr)))
    op = value.owner
    if budget <= 0 or not isinstance(op, graph.WhereOp | graph.ReshapeOp | graph.ExpandOp):
        return False
    data = [op.true_value, op.false_value] if isinstance(op, graph.WhereOp) else [op.input]
    return all(_finite(x, budget - 1) for x in data)


def _mask_forms(mask: Mask | None, nan_rows: bool) -> dict[str, str]:
    """graph.flash_attention's mask_polarity and masked_row where they are not the
    defaults: "hide" for an inverted boolean mask, "nan" for an unguarded softmax."""
    forms: dict[str, str] = {}
    if mask is not None and mask.kind == "bool" and mask.inverted:
        forms["mask_polarity"] = "hide"
    if nan_rows:
        forms["masked_row"] = "nan"
    return forms


def _mask_operand(mask: Mask, new_ops: list[Operation]) -> SSAValue:
    """The mask as graph.flash_attention takes it (i1: true = attend, or true = hidden
    with mask_polarity "hide"; float: added)."""
    if mask.kind == "add" and mask.plus is not None:
        total = graph.AddOp.make([mask.value, mask.plus])
        new_ops.append(total)
        return total.results[0]
    if mask.kind in ("add", "positions"):
        return mask.value
    if mask.kind == "bool":
        return mask.value
    assert mask.fill is not None
    fill_t = m.tensor_type(mask.fill)
    zero = m.make_constant(np.zeros(fill_t.get_shape()), fill_t, "attention.mask_zero")
    keep, drop = zero.result, mask.fill
    branches = [drop, keep] if mask.inverted else [keep, drop]
    where = graph.WhereOp.make([mask.value, *branches])
    new_ops += [zero, where]
    return where.results[0]
