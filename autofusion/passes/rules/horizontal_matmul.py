"""HorizontalMatMulFusionPass: sibling matmuls on one input become one matmul and a split.

    y_i = x @ W_i + b_i   (i = 1..n, W_i constant)
    ->  y = x @ concat(W_1..W_n) + concat(b_1..b_n);  y_1..y_n = split(y, last axis)

This is QKV merging (the Q, K and V projections of an attention read the same hidden
state); a gated MLP's gate and up projections are left apart (below). The input is read from GM
once instead of n times, and one larger cube op tiles better than n small ones. Each
output column is the same dot product as before, so the numbers do not change.

Siblings are the graph.matmul (or graph.gemm) ops that take the same value as their
left operand; the rewrite is anchored at the first of them in block order, where the
merged op is placed (every user of a sibling comes after it). Preconditions, refused
with the reason: the weights are constants (values or shape-only) of the same rank and
leading dims, used by nothing else (merging would otherwise store them twice); the ops
are of one kind with the same transposes (gemm trans_a/trans_b) and alpha; their
activation epilogues agree. A bias is the op's own bias (gemm: beta * C, C a vector
over the columns) or the op's single user when that is an add of a constant over the
last axis (which MatMulBiasAddFusionPass would fold, but only after this rule has
merged the siblings, since the walk meets the matmuls first); siblings without one get
zeros. The merged bias is a constant too.

Not merged: siblings whose products all meet in one elementwise op and nowhere else
(a gated MLP's swiglu(x @ W_gate, x @ W_up)). Apart, that op is the epilogue of the
later matmul, which reads the earlier product once; merged, it is a vector kernel of
its own that reads the whole merged output back, a live intermediate twice the size
(the Qwen2.5-7B FFN: 155 MB instead of 78 MB, in a 192 MB L2 that the weights stream
through; docs/ub-fusion.md). The shared input's second read is all the merge would
save, and it comes from L2. For the same reason a product that goes through an
activation (an epilogue already, or a GELU/ReLU/SiLU/sigmoid op as the sole user of it or
of its bias add) stays apart: an MLP's up projection, read with Q, K and V in a
parallel block (Phi, GPT-J); apart, FFNFusionPass (or the activation epilogue) keeps
its [S, 4H] intermediate on chip; merged, the activation re-reads its slice from GM.

Interaction with FlashAttentionFusionPass: attention operands are traced back from the
attention to the head reshape of each projection, never into the projection itself, so
whether the projections were merged (split outputs) or not, the attention is
recognised the same; the order of the two rules does not matter. CANN has no graph
fusion pass of this name; it is afc's, in CANN's style (peers: TVM
CombineParallelDense, ONNX Runtime's merge_qkv_weights).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal
from autofusion.passes.rules.gelu import parse_gelu

CubeOp = graph.MatmulOp | graph.GemmOp
EPILOGUE_PROPS = ("activation", "clip_min", "clip_max")
ACTIVATIONS = (graph.GeluOp, graph.ReluOp, graph.SiluOp, graph.SigmoidOp)
# ops from x to the last mul of a decomposed GELU (tanh form: pow, mul, add, mul, tanh,
# add, mul, mul)
GELU_DEPTH = 8


@dataclass
class Sibling:
    op: CubeOp
    weight: graph.ConstantOp
    columns: int
    bias: SSAValue | None  # a constant over the columns, or None
    bias_scale: float  # gemm beta
    add: graph.AddOp | None  # the absorbed bias add, if any

    @property
    def result(self) -> SSAValue:
        return self.add.output if self.add is not None else self.op.output


@dataclass
class Merge:
    siblings: list[Sibling]
    concat_axis: int  # of the weights


def _lhs(op: Operation) -> SSAValue | None:
    if isinstance(op, graph.MatmulOp):
        return op.lhs
    if isinstance(op, graph.GemmOp):
        return op.a
    return None


def _rhs(op: CubeOp) -> SSAValue:
    return op.rhs if isinstance(op, graph.MatmulOp) else op.b


def _own_bias(op: CubeOp) -> SSAValue | None:
    return op.bias if isinstance(op, graph.MatmulOp) else op.c


def _signature(op: CubeOp) -> tuple[object, ...]:
    """What siblings must share besides the input: kind, transposes, alpha."""
    if isinstance(op, graph.MatmulOp):
        return ("graph.matmul",)
    p = graph.Props(op.properties, op.name)
    return ("graph.gemm", p.flag("trans_a"), p.flag("trans_b"), p.real("alpha"))


def _epilogue(op: CubeOp) -> dict[str, Attribute]:
    return {k: op.properties[k] for k in EPILOGUE_PROPS if k in op.properties}


def _column_vector(value: SSAValue, columns: int) -> bool:
    """Whether `value` broadcasts along the columns only ([], [1], [N], [1, N], ...)."""
    dims = m.shape(value)
    return all(d == 1 for d in dims[:-1]) and (not dims or dims[-1] in (1, columns))


def _siblings(x: SSAValue, anchor: Operation) -> list[CubeOp]:
    """The cube ops in `anchor`'s block taking `x` as their left operand (once)."""
    found: list[CubeOp] = []
    for use in x.uses:
        op = use.operation
        if (
            isinstance(op, CubeOp)
            and use.index == 0
            and op.parent is anchor.parent
            and _rhs(op) is not x
            and op not in found
        ):
            found.append(op)
    return found


def _first_of(op: Operation, siblings: list[CubeOp], x: SSAValue) -> bool:
    """Whether no other sibling precedes `op`: a walk back to x's definition, no further."""
    others = {id(s) for s in siblings if s is not op}
    stop = x.owner if isinstance(x.owner, Operation) else None
    cur = op.prev_op
    while cur is not None and cur is not stop:
        if id(cur) in others:
            return False
        cur = cur.prev_op
    return True


def _in_block_order(first: CubeOp, siblings: list[CubeOp]) -> list[CubeOp]:
    """`siblings` in block order, found by a walk from the first to the last of them."""
    pending = {id(s) for s in siblings}
    ordered: list[CubeOp] = []
    cur: Operation | None = first
    while cur is not None and pending:
        if id(cur) in pending:
            pending.discard(id(cur))
            ordered.append(cast(CubeOp, cur))
        cur = cur.next_op
    return ordered


def _bias_add(op: CubeOp, columns: int) -> graph.AddOp | None:
    """The op's single user when it adds a constant over the columns."""
    add = m.sole_user(op.output)
    if not isinstance(add, graph.AddOp) or add.lhs is add.rhs:
        return None
    other = add.rhs if add.lhs is op.output else add.lhs
    if m.constant_op(other) is None or not _column_vector(other, columns):
        return None
    if m.shape(add.output) != m.shape(op.output):
        return None
    return add


def _sibling(op: CubeOp, concat_axis: int) -> Sibling | Refusal:
    weight = m.constant_op(_rhs(op))
    assert weight is not None
    columns = m.shape(_rhs(op))[concat_axis]
    if any(u.operation is not op for u in weight.result.uses):
        return Refusal(
            f"weight '{m.constant_name(weight.result, weight.result.name_hint or '?')}' has other users: "
            "merging would store it twice"
        )
    scale = 1.0
    bias = _own_bias(op)
    if isinstance(op, graph.GemmOp):
        scale = graph.Props(op.properties, op.name).real("beta")
    if bias is not None and (m.constant_op(bias) is None or not _column_vector(bias, columns)):
        return Refusal("a bias is not a constant vector over the output columns")
    add = None if _epilogue(op) else _bias_add(op, columns)
    return Sibling(op, weight, columns, bias, scale, add)


def _joined_by_one_op(siblings: list[Sibling]) -> Operation | None:
    """The elementwise/broadcast op where every sibling's product ends up, through
    single-use elementwise/broadcast chains of a few ops (swiglu(gate, up), or silu(gate)
    * up before SwiGluFusionPass has run), if there is one."""
    vector = (graph.FusionKind.ELEMENTWISE, graph.FusionKind.BROADCAST)
    reach: list[list[Operation]] = []
    for s in siblings:
        chain: list[Operation] = []
        v = s.result
        for _ in range(4):
            user = m.sole_user(v)
            if user is None or graph.fusion_kind(user) not in vector or len(user.results) != 1:
                break
            chain.append(user)
            v = user.results[0]
        reach.append(chain)
    common = [op for op in reach[0] if all(op in r for r in reach[1:])]
    return common[0] if common else None


def _activated(op: CubeOp) -> bool:
    """Whether the product goes through an activation (its epilogue, or the sole user of
    the product or its bias add): an MLP's up projection, which stays apart."""
    if "activation" in op.properties:
        return True
    value = op.output
    add = m.sole_user(value)
    if isinstance(add, graph.AddOp):
        value = add.output
    return isinstance(m.sole_user(value), ACTIVATIONS) or _decomposed_gelu_of(value)


def _decomposed_gelu_of(x: SSAValue) -> bool:
    """Whether a GELU of `x` not yet recognised (the walk meets the projection before the
    GELU's last mul) ends within a few ops of it."""
    frontier: list[SSAValue] = [x]
    seen: set[int] = set()
    for _ in range(GELU_DEPTH):
        users = [u.operation for v in frontier for u in v.uses]
        for user in users:
            found = parse_gelu(user) if isinstance(user, graph.MulOp) else None
            if found is not None and found.x is x:
                return True
        frontier = [r for u in users if id(u) not in seen for r in u.results]
        seen.update(id(u) for u in users)
    return False


class MergeSiblingMatMuls(FusionRule[Merge]):
    rule_name = "HorizontalMatMulFusionPass"
    pattern = "MatMul|Gemm x N (one input, constant weights)->MatMul+Split"
    anchors = (graph.MatmulOp, graph.GemmOp)

    def match(self, op: Operation) -> Merge | Refusal | None:
        assert isinstance(op, CubeOp)
        x = _lhs(op)
        assert x is not None
        if m.constant_op(_rhs(op)) is None:
            return None
        ops = _siblings(x, op)
        constant = [s for s in ops if m.constant_op(_rhs(s)) is not None]
        plain = [s for s in constant if not _activated(s)]
        if 2 <= len(plain) < len(constant):
            # Q, K, V merge; the up projection read with them (a parallel block) stays apart
            if op not in plain:
                return None
            ops = constant = plain
        if len(ops) < 2 or not _first_of(op, constant, x):
            return None  # nothing to merge, or the merge is anchored at an earlier sibling
        if len(constant) < 2:
            return Refusal("the other matmuls reading this input have non-constant weights")
        constant = _in_block_order(op, constant)
        if any(_signature(s) != _signature(op) for s in constant):
            return Refusal("the sibling matmuls differ in kind, transposes or alpha")
        if any(_epilogue(s) != _epilogue(op) for s in constant):
            return Refusal("the sibling matmuls apply different activation epilogues")
        w_dims = [m.shape(_rhs(s)) for s in constant]
        if any(len(d) < 2 or d[:-2] != w_dims[0][:-2] for d in w_dims):
            return Refusal("the weights differ in rank or batch dims")
        trans_b = isinstance(op, graph.GemmOp) and bool(_signature(op)[2])
        axis = len(w_dims[0]) - (2 if trans_b else 1)
        reduced = len(w_dims[0]) - (1 if trans_b else 2)
        if any(d[reduced] != w_dims[0][reduced] for d in w_dims):
            return Refusal("the weights differ in their reduced dim")
        siblings: list[Sibling] = []
        for s in constant:
            sib = _sibling(s, axis)
            if isinstance(sib, Refusal):
                return sib
            siblings.append(sib)
        joined = _joined_by_one_op(siblings)
        if joined is not None:
            return Refusal(
                f"the products meet only in one {joined.name}: apart, it is the later "
                "matmul's epilogue; merged, a kernel re-reading the whole merged output"
            )
        if len(plain) < 2:
            return Refusal(
                "the products go through an activation: an MLP's up projection stays "
                "apart, its activation an epilogue"
            )
        return Merge(siblings, axis)

    def rewrite(self, op: Operation, match: Merge, rewriter: PatternRewriter) -> None:
        first = match.siblings[0].op
        x = _lhs(first)
        assert x is not None
        new_ops: list[Operation] = []
        weight = _concat_constants(
            [s.weight.result for s in match.siblings], match.concat_axis, "weight"
        )
        new_ops.append(weight)
        operands = [x, weight.result]
        props = dict(first.properties)
        bias = _merged_bias(match.siblings)
        if bias is not None:
            new_ops.append(bias)
            operands.append(bias.result)
            if isinstance(first, graph.GemmOp):
                props["beta"] = graph.float_attr(1.0)
        merged = type(first).make(operands, props)
        out_rank = len(m.shape(merged.results[0]))
        split = graph.SplitOp.make(
            [merged.results[0]],
            {"axis": out_rank - 1, "sizes": [s.columns for s in match.siblings]},
        )
        absorbed = [s.add for s in match.siblings if s.add is not None]
        location = m.fused_location([*(s.op for s in match.siblings), *absorbed])
        merged.location = location
        split.location = location
        new_ops += [merged, split]
        rewriter.insert(new_ops)
        for s, part in zip(match.siblings, split.results):
            part.name_hint = s.result.name_hint
            rewriter.replace_all_uses_with(s.result, part)
        for dead in [*absorbed, *(s.op for s in match.siblings)]:
            rewriter.erase(dead)


def _merged_name(values: list[SSAValue], what: str) -> str:
    """The dotted components the names share (else the first name), then merged.<what>.

    attn.q.weight and attn.k.weight give attn.merged.weight; fc1.weight and fc2.weight
    give fc1.merged.weight; val_44 and val_51 give val_44.merged.weight.
    """
    names = [m.constant_name(v, "") for v in values]
    common: list[str] = []
    for components in zip(*(n.split(".")[:-1] for n in names)):
        if len(set(components)) != 1:
            break
        common.append(components[0])
    if not common and names[0]:
        common = names[0].split(".")[:-1] or [names[0]]
    return ".".join([*common, "merged", what])


def _concat_constants(values: list[SSAValue], axis: int, what: str) -> graph.ConstantOp:
    arrays = [m.constant_array(v) for v in values]
    dims = list(m.shape(values[0]))
    dims[axis] = sum(m.shape(v)[axis] for v in values)
    t = graph.tensor(dims, m.tensor_type(values[0]).element_type)
    data = None
    if all(a is not None for a in arrays):
        data = np.concatenate([a for a in arrays if a is not None], axis=axis)
    return m.make_constant(data, t, _merged_name(values, what))


def _merged_bias(siblings: list[Sibling]) -> graph.ConstantOp | None:
    """One bias vector over all columns (beta folded in), or None if no sibling has one."""
    if all(s.bias is None and s.add is None for s in siblings):
        return None
    parts: list[np.ndarray] | None = []
    elt = m.tensor_type(siblings[0].op.output).element_type
    for s in siblings:
        total = np.zeros(s.columns, np.float64)
        for value, scale in ((s.bias, s.bias_scale), (_addend(s), 1.0)):
            if value is None:
                continue
            arr = m.constant_array(value)
            if arr is None:
                parts = None  # a shape-only bias makes the merged bias shape-only
                break
            total = total + scale * np.broadcast_to(
                np.asarray(arr, np.float64).reshape(-1), (s.columns,)
            )
        if parts is None:
            break
        parts.append(total)
    columns = sum(s.columns for s in siblings)
    data = np.concatenate(parts) if parts is not None else None
    named = [v for s in siblings for v in (s.bias, _addend(s)) if v is not None]
    return m.make_constant(data, graph.tensor([columns], elt), _merged_name(named, "bias"))


def _addend(s: Sibling) -> SSAValue | None:
    if s.add is None:
        return None
    return s.add.rhs if s.add.lhs is s.op.output else s.add.lhs
