"""FFNFusionPass: a feed-forward block becomes one graph.ffn.

    y = [residual +] act(x @ W1 [+ b1]) @ W2 [+ b2]  ->  graph.ffn

CANN's name and op: the FFN fusion of the CANN graph engine builds the FFN operator
(torch_npu `npu_ffn(x, weight1, weight2, activation, bias1=, bias2=)`, hiascend PyTorch
API reference "torch_npu.npu_ffn": y = activation(x @ W1 + b1) @ W2 + b2, activations
fastgelu/gelu/relu/silu and the gated geglu/swiglu/reglu). graph.ffn adds the residual
of the Llama/Qwen form h + mlp(norm(h)).

The rule anchors on the down projection (a graph.matmul, or a graph.gemm without
transposed A, alpha 1) and traces its left operand back, through reshapes, to one of
the forms the other rules leave:

* gated: graph.swiglu(gate, up) (SwiGluFusionPass); mul(act(gate), up) with act a
  graph.silu, graph.gelu (erf or tanh) or graph.relu (swiglu, geglu, geglu_tanh, reglu);
  mul(gate', up) where gate' is the gate projection with that activation as its
  epilogue (MatMulActivationFusionPass; T5 v1.1's and Gemma's tanh-GELU MLPs come so);
* plain: a projection with an activation epilogue (relu, gelu, gelu_tanh, silu, sigmoid),
  or such an activation op on a projection.

The gate and up values are projections (matmul/gemm, through reshapes) of one input, or
the two halves of one merged projection (a graph.split into two equal parts, or two
unit-step slices of the last axis: HorizontalMatMulFusionPass's merge), gate first.
The down projection's single user, when it is an add of a value of the same shape, is
the residual, also when the sum feeds a norm (the next layer's input norm): the FFN's
kernel adds it where the product is, and the norm reads the sum once
(AddLayerNormFusionPass / AddRmsNormFusionGraphPass leave such an add to the FFN).

Preconditions, each refused with the reason: every weight is a graph.constant or an
argument of the function (a weight computed in the graph is no FFN weight; a transposed
gemm weight must be a constant, which the rewrite transposes); weights are 2-D; biases
are vectors over the projection's columns; every intermediate (projection outputs, the
activation, the product, the views between) has no other user; the gate and up
projections read the same input; one element type throughout. A projection bias or
epilogue the rule has not seen folded yet (an add of a bias vector after the matmul)
is no match: MatMulBiasAddFusionPass folds it first, and the walker comes back.

Numbers: graph.ffn rounds where the decomposed ops round (its docstring), except that a
gated product through an activation epilogue (mul(matmul(.., act), up)) is taken as
geglu/reglu/swiglu, whose rounding of act(gate) differs from the epilogue's by at most
one rounding of the element type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.dialects.graph_fused import FFN_GATED, FFN_PLAIN
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal

CubeOp = graph.MatmulOp | graph.GemmOp
# the gated activation of mul(act(gate), up), by the gate's activation (graph.ACTIVATIONS)
GATED_BY_ACTIVATION = {gate: gated for gated, gate in FFN_GATED.items()}
# the activation ops of an FFN, by their graph.ACTIVATIONS name (graph.gelu's depends on
# its `approximate`: `_activation`)
ACTIVATION_OPS: dict[type[Operation], str] = {
    graph.ReluOp: "relu",
    graph.SiluOp: "silu",
    graph.SigmoidOp: "sigmoid",
    graph.GeluOp: "gelu",
}
MAX_VIEWS = 3


@dataclass
class Projection:
    """A matmul/gemm x @ W [+ b] [-> act], seen from the value the FFN reads of it."""

    op: CubeOp
    lhs: SSAValue
    weight: SSAValue
    transposed: bool  # a gemm's trans_b: the weight is [N, K]
    bias: SSAValue | None
    activation: str | None
    half: int | None = None  # which half of a merged projection (split or slice) is used
    between: list[Operation] = field(default_factory=list)  # views, split/slices


@dataclass
class Ffn:
    down: Projection
    activation: str
    w1: list[Projection]  # one (plain, or merged gate/up) or two (gate, up)
    residual: SSAValue | None
    add: graph.AddOp | None
    consumed: list[Operation]  # every op the rewrite removes, the anchor first


def _is_weight(v: SSAValue) -> bool:
    """A graph.constant or an argument of the enclosing function."""
    if m.constant_op(v) is not None:
        return True
    owner = v.owner
    return isinstance(owner, Block) and isinstance(owner.parent_op(), func.FuncOp)


def _cube(op: Operation) -> Projection | Refusal | None:
    """The projection `op` is, if it is a matmul/gemm an FFN can take."""
    if isinstance(op, graph.MatmulOp):
        lhs, w, bias = op.lhs, op.rhs, op.bias
        transposed = False
    elif isinstance(op, graph.GemmOp):
        p = graph.Props(op.properties, op.name)
        if p.flag("trans_a") or p.real("alpha") != 1.0:
            return Refusal("a gemm with a transposed A or alpha != 1 is no FFN projection")
        if op.c is not None and p.real("beta") != 1.0:
            return Refusal("a gemm bias scaled by beta != 1 is no FFN projection bias")
        lhs, w, bias = op.a, op.b, op.c
        transposed = p.flag("trans_b")
    else:
        return None
    if len(m.shape(w)) != 2 or len(m.shape(lhs)) < 2:
        return Refusal(f"{op.name} is not an [..., K] x [K, N] product with a 2-D weight")
    if not _is_weight(w):
        return Refusal(
            f"the weight of {op.name} is computed in the graph: graph.ffn reads its weights "
            "from GM as given"
        )
    if transposed and m.constant_op(w) is None:
        return Refusal("a transposed gemm weight that is no constant cannot be laid out [K, N]")
    if bias is not None and len(m.shape(bias)) != 1:
        return Refusal(f"the bias of {op.name} is not a vector over its columns")
    props = graph.Props(op.properties, op.name)
    act = props.text("activation") if props.has("activation") else None
    return Projection(op, lhs, w, transposed, bias, act)


def _through_views(value: SSAValue, between: list[Operation]) -> SSAValue:
    """`value` without the single-use reshapes in front of it (recorded in `between`)."""
    for _ in range(MAX_VIEWS):
        owner = value.owner
        if not isinstance(owner, graph.ReshapeOp) or not m.single_use(owner.output):
            break
        if m.shape(owner.output)[-1:] != m.shape(owner.input)[-1:]:
            break  # the rows must stay rows: only leading dims may be reshaped
        between.append(owner)
        value = owner.input
    return value


def _source(value: SSAValue) -> SSAValue:
    """The data `value` reads: reshapes in front of it skipped (any number of users)."""
    for _ in range(MAX_VIEWS):
        owner = value.owner
        if not isinstance(owner, graph.ReshapeOp):
            break
        value = owner.input
    return value


def _half(value: SSAValue) -> tuple[SSAValue, int, Operation] | None:
    """(merged value, half, the split/slice) when `value` is one half of the last axis."""
    owner = value.owner
    if isinstance(owner, graph.SplitOp):
        rank = len(m.shape(owner.input))
        p = graph.Props(owner.properties, owner.name)
        sizes = p.integers("sizes")
        axis = p.integer("axis")
        if len(sizes) == 2 and sizes[0] == sizes[1] and axis in (-1, rank - 1):
            return owner.input, owner.results.index(value), owner
        return None
    if isinstance(owner, graph.SliceOp):
        p = graph.Props(owner.properties, owner.name)
        rank = len(m.shape(owner.input))
        width = m.shape(owner.input)[-1]
        if p.integers("axes") not in ((-1,), (rank - 1,)) or p.integers("steps") != (1,):
            return None
        start, end = p.integers("starts")[0], p.integers("ends")[0]
        if width % 2 or (start, end) not in ((0, width // 2), (width // 2, width)):
            return None
        return owner.input, int(start != 0), owner
    return None


def _projection(value: SSAValue) -> Projection | Refusal | None:
    """The projection whose output `value` is (through single-use views), or one half of
    a merged projection's."""
    between: list[Operation] = []
    value = _through_views(value, between)
    half = None
    found = _half(value)
    if found is not None:
        merged, half, cut = found
        if not m.single_use(value):
            return Refusal("a half of the merged gate/up projection has other users")
        between.append(cut)
        value = _through_views(merged, between)
    owner = value.owner
    if not isinstance(owner, Operation):
        return None
    proj = _cube(owner)
    if proj is None or isinstance(proj, Refusal):
        return proj
    if half is None and not m.single_use(value):
        return Refusal(f"the output of {owner.name} has other users than the FFN")
    proj.half = half
    proj.between = between
    return proj


def _activation(op: Operation) -> str | None:
    """The graph.ACTIVATIONS name of `op` if it is one of ACTIVATION_OPS."""
    if isinstance(op, graph.GeluOp):
        approx = graph.Props(op.properties, op.name).text("approximate")
        return "gelu_tanh" if approx == "tanh" else "gelu"
    return ACTIVATION_OPS.get(type(op))


def _gated(
    product: Operation,
) -> tuple[str, Projection, Projection, list[Operation]] | Refusal | None:
    """(activation, gate, up, the activation op if any) of a gated product."""
    # (activation, gate value, up value, activation op, whether the gate projection
    # applies the activation as its epilogue)
    pairs: list[tuple[str, SSAValue, SSAValue, list[Operation], bool]] = []
    if isinstance(product, graph.SwigluOp):
        if not m.shape(product.gate) == m.shape(product.up) == m.shape(product.output):
            return Refusal("the gate and up values of the swiglu broadcast")
        pairs.append(("swiglu", product.gate, product.up, [], False))
    elif isinstance(product, graph.MulOp):
        if not m.shape(product.lhs) == m.shape(product.rhs) == m.shape(product.output):
            return None
        for a, up_value in m.commuted(product):
            act_op = a.owner
            if not isinstance(act_op, Operation):
                continue
            act = _activation(act_op)
            if act in GATED_BY_ACTIVATION and m.single_use(a):
                gated = GATED_BY_ACTIVATION[act]
                pairs.append((gated, act_op.operands[0], up_value, [act_op], False))
            elif isinstance(act_op, CubeOp) and "activation" in act_op.properties:
                act = graph.Props(act_op.properties, act_op.name).text("activation")
                if act in GATED_BY_ACTIVATION:
                    pairs.append((GATED_BY_ACTIVATION[act], a, up_value, [], True))
    refusal: Refusal | None = None
    for act, gate_v, up_v, extra, epilogue in pairs:
        gate, up = _projection(gate_v), _projection(up_v)
        if gate is None or up is None:
            continue
        if isinstance(gate, Refusal) or isinstance(up, Refusal):
            refusal = refusal or cast(Refusal, gate if isinstance(gate, Refusal) else up)
            continue
        if up.activation is not None or (gate.activation is not None) != epilogue:
            refusal = refusal or Refusal("the gate or up projection applies another activation")
            continue
        return act, gate, up, extra
    return refusal


def _plain(
    value_op: Operation, value: SSAValue
) -> tuple[str, Projection, list[Operation]] | Refusal | None:
    """(activation, projection, ops between) of act(x @ W1 + b1)."""
    if isinstance(value_op, CubeOp):
        proj = _projection(value)
        if proj is None or isinstance(proj, Refusal):
            return proj
        if proj.activation not in FFN_PLAIN:
            return None
        return proj.activation, proj, []
    act = _activation(value_op)
    if act not in FFN_PLAIN:
        return None
    proj = _projection(value_op.operands[0])
    if proj is None or isinstance(proj, Refusal):
        return proj
    if proj.activation is not None:
        return Refusal("the first projection already applies an activation")
    return act, proj, [value_op]


def _bias_add(op: Operation) -> graph.AddOp | None:
    """The single user of `op` when it adds a vector over the last axis (a bias)."""
    add = m.sole_user(op.results[0])
    if not isinstance(add, graph.AddOp) or add.lhs is add.rhs:
        return None
    other = add.rhs if add.lhs is op.results[0] else add.lhs
    dims = m.shape(other)
    out = m.shape(op.results[0])
    if dims and dims[-1] == out[-1] and all(d == 1 for d in dims[:-1]) and dims != out:
        return add
    return None


class FuseFfn(FusionRule[Ffn]):
    rule_name = "FFNFusionPass"
    pattern = "MatMul->Activation|SwiGlu->MatMul[->Add(residual)]"
    anchors = (graph.MatmulOp, graph.GemmOp)
    # the ffn kernel needs SyncAll<false> and the L0C -> GM atomic add (Atlas A2/A3);
    # CANN's FFN op is an A2/A3 op as well
    chip_modes = ("split",)

    def match(self, op: Operation) -> Ffn | Refusal | None:
        down = _cube(op)
        if down is None:
            return None
        between: list[Operation] = []
        g_in = _through_views(op.operands[0], between)
        producer = g_in.owner
        if not isinstance(producer, Operation):
            return None
        form = self._first_projection(producer, g_in)
        if form is None:
            return None  # no FFN before this matmul (most matmuls)
        if isinstance(down, Refusal):
            return down
        if isinstance(form, Refusal):
            return form
        act, w1, consumed = form
        if down.activation is not None:
            return Refusal("the down projection applies an activation of its own")
        if not m.single_use(g_in):
            return Refusal("the activation's output has other users than the down projection")
        if down.bias is None and _bias_add(op) is not None:
            return None  # MatMulBiasAddFusionPass folds it first; the walker comes back
        x = w1[0].lhs
        values = (x, down.weight, *(p.weight for p in w1))
        if len({m.tensor_type(v).element_type for v in values}) != 1:
            return Refusal("the projections mix element types")
        residual, add = self._residual(op, down, x)
        ops = [op, *between, *consumed, *([add] if add is not None else [])]
        return Ffn(down, act, w1, residual, add, list(dict.fromkeys(ops)))

    @staticmethod
    def _first_projection(
        producer: Operation, g_in: SSAValue
    ) -> tuple[str, list[Projection], list[Operation]] | Refusal | None:
        """(activation, weight1 projections, their ops) of the value the down projection
        reads: a gated product or a plain activation of a projection."""
        gated = _gated(producer)
        if isinstance(gated, Refusal):
            return gated
        if gated is None:
            plain = _plain(producer, g_in)
            if plain is None or isinstance(plain, Refusal):
                return plain
            act, proj, extra = plain
            return act, [proj], [*extra, *proj.between, proj.op]
        act, gate, up, extra = gated
        consumed = [producer, *extra]
        for p in (gate, up):
            consumed += [*p.between, p.op]
        if gate.half is None and up.half is None:
            if _source(gate.lhs) is not _source(up.lhs) or m.shape(gate.lhs) != m.shape(up.lhs):
                return Refusal("the gate and up projections read different inputs")
            return act, [gate, up], consumed
        if gate.op is not up.op or {gate.half, up.half} != {0, 1}:
            return Refusal("the gate and up halves come from different projections")
        swapped = [gate.weight, *([gate.bias] if gate.bias is not None else [])]
        if gate.half == 1 and not m.all_constant(swapped):
            return Refusal(
                "the merged projection stores its up half first and its weight is no "
                "constant to reorder"
            )
        return act, [gate], consumed

    @staticmethod
    def _residual(
        op: Operation, down: Projection, x: SSAValue
    ) -> tuple[SSAValue | None, graph.AddOp | None]:
        """The residual the FFN can add: the down projection's single user is an add of
        a value of the same shape."""
        add = m.sole_user(op.results[0])
        if not isinstance(add, graph.AddOp) or add.lhs is add.rhs:
            return None, None
        other = add.rhs if add.lhs is op.results[0] else add.lhs
        out = (*m.shape(x)[:-1], m.shape(down.weight)[0 if down.transposed else 1])
        if not m.shape(other) == m.shape(add.output) == m.shape(op.results[0]) == out:
            return None, None
        if m.tensor_type(other).element_type != m.tensor_type(x).element_type:
            return None, None
        return other, add

    def rewrite(self, op: Operation, match: Ffn, rewriter: PatternRewriter) -> None:
        new_ops: list[Operation] = []

        def weight(p: Projection) -> SSAValue:
            w = p.weight
            swap = p.half == 1  # the merged weight stores up before gate
            if not p.transposed and not swap:
                return w
            arr = m.constant_array(w)
            dims = list(m.shape(w))
            if p.transposed:
                dims = dims[::-1]
                arr = arr.T if arr is not None else None
            if swap and arr is not None:
                arr = np.concatenate(np.split(arr, 2, axis=1)[::-1], axis=1)
            t = graph.tensor(dims, m.tensor_type(w).element_type)
            c = m.make_constant(arr, t, m.constant_name(w, "ffn.weight"))
            new_ops.append(c)
            return c.result

        def bias(p: Projection) -> SSAValue | None:
            b = p.bias
            if b is None or p.half != 1:
                return b
            arr = m.constant_array(b)
            if arr is not None:
                arr = np.concatenate(np.split(np.asarray(arr), 2)[::-1])
            c = m.make_constant(arr, m.tensor_type(b), m.constant_name(b, "ffn.bias"))
            new_ops.append(c)
            return c.result

        w1 = [weight(p) for p in match.w1]
        b1 = [bias(p) for p in match.w1]
        if any(b is not None for b in b1) and any(b is None for b in b1):
            b1 = [b if b is not None else self._zeros(p, new_ops) for b, p in zip(b1, match.w1)]
        bias1 = [b for b in b1 if b is not None]
        down = match.down
        ffn = graph.FfnOp.from_parts(
            match.w1[0].lhs,
            w1,
            weight(down),
            match.activation,
            bias1,
            down.bias,
            match.residual,
        )
        new_ops.append(ffn)
        root = match.add if match.add is not None else op
        out: SSAValue = ffn.output
        if m.shape(out) != m.shape(root.results[0]):
            reshape = graph.ReshapeOp.make([out], {"shape": list(m.shape(root.results[0]))})
            new_ops.append(reshape)
            out = reshape.results[0]
        ffn.location = m.fused_location(match.consumed)
        out.name_hint = root.results[0].name_hint
        rewriter.replace(root, new_ops, [out])
        m.erase_dead(rewriter, [o for o in match.consumed if o is not root])

    @staticmethod
    def _zeros(p: Projection, new_ops: list[Operation]) -> SSAValue:
        cols = m.shape(p.weight)[0 if p.transposed else 1]
        t = graph.tensor([cols], m.tensor_type(p.weight).element_type)
        c = m.make_constant(np.zeros(cols), t, "ffn.zero_bias")
        new_ops.append(c)
        return c.result
