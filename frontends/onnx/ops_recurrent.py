"""Converters of ONNX recurrent layers: LSTM, GRU and RNN, unrolled over a static sequence.

Each layer becomes graph ops the fusion passes already know: one matmul of the whole input
sequence by W per direction, then per time step a matmul by R, adds, the gate activations
and elementwise muls, with graph.slice / graph.split / graph.concat for the steps and the
gates. That is exactly ONNX's math (https://onnx.ai/onnx/operators/onnx__LSTM.html and
its GRU and RNN pages) and keeps every step fusible; ONNX export writes these primitive
ops back, not the layer. A sequence length known only at run time is refused.
Versions: `Op-7` (opset 13), `Op-14` adds `layout`, `Op-22` adds bfloat16.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Attribute

from autofusion.dialects import graph
from frontends.onnx.importer import Const, Node, OpConverters, Value, probe_dims
from frontends.onnx.ops_control import stack, take

OPS = OpConverters(versions={"LSTM": (7, 14, 22), "GRU": (7, 14, 22), "RNN": (7, 14, 22)})

# op type -> (gates in W's rows, in ONNX's order; default activations of one direction)
LAYERS: dict[str, tuple[int, tuple[str, ...]]] = {
    "LSTM": (4, ("Sigmoid", "Tanh", "Tanh")),
    "GRU": (3, ("Sigmoid", "Tanh")),
    "RNN": (1, ("Tanh",)),
}

DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


@dataclass
class Layer:
    """One recurrent node being unrolled: its node, sizes and per-step helpers."""

    node: Node
    elt: Attribute
    hidden: int
    clip: float | None
    input_forget: bool = False  # LSTM: f = 1 - i
    linear_before_reset: bool = False  # GRU: r applies after R's product and its bias

    def scalar(self, value: float) -> Const:
        return self.node.const(np.asarray(value, dtype=np.float32), self.elt)

    def binary(self, cls: type[graph.GraphOp], a: Value, b: Value) -> Value:
        return self.node.emit1(cls, [a, b])

    def add(self, *terms: Value | None) -> Value:
        """The sum of the given terms; a constant zero term (from the zero state before
        the first step) is left out where that does not change the result's shape."""
        given = [t for t in terms if t is not None]
        kept = [t for t in given if not _is_zero(t)]
        if kept and _broadcast(kept) == _broadcast(given):
            given = kept
        out = given[0]
        for t in given[1:]:
            out = self.binary(graph.AddOp, out, t)
        return out

    def mul(self, a: Value, b: Value) -> Value:
        return self.binary(graph.MulOp, a, b)

    def cols(self, x: Value, start: int, count: int) -> Value:
        """Columns [start, start + count) of the last axis of `x` (a 1-D or 2-D value)."""
        axis = len(x.shape) - 1
        props = {"starts": [start], "ends": [start + count], "axes": [axis], "steps": [1]}
        return self.node.emit1(graph.SliceOp, [x], props)

    def gates(self, x: Value, count: int) -> list[Value]:
        return [self.cols(x, k * self.hidden, self.hidden) for k in range(count)]

    def matmul_t(self, h: Value, w: Value) -> Value:
        """h @ w^T for a weight w of [rows, cols]."""
        wt = self.node.emit1(graph.TransposeOp, [w], {"perm": [1, 0]})
        return self.node.emit1(graph.MatmulOp, [h, wt])

    def activate(self, act: Activation, x: Value) -> Value:
        if self.clip is not None:
            x = self.node.emit1(graph.ClipOp, [x], {"min": -self.clip, "max": self.clip})
        return act(self, x)


Activation = Callable[[Layer, Value], Value]


def _is_zero(v: Value) -> bool:
    return isinstance(v, Const) and not v.array.any()


def _broadcast(values: Sequence[Value]) -> tuple[int, ...]:
    """The broadcast shape of `values` under probe assignment A."""
    return tuple(np.broadcast_shapes(*(probe_dims(v)[0] for v in values)))


def _unary(cls: type[graph.GraphOp]) -> Callable[[float, float], Activation]:
    return lambda alpha, beta: lambda lay, x: lay.node.emit1(cls, [x])


def _affine(alpha: float, beta: float) -> Activation:
    return lambda lay, x: lay.add(lay.mul(x, lay.scalar(alpha)), lay.scalar(beta))


def _scaled_tanh(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        inner = lay.node.emit1(graph.TanhOp, [lay.mul(x, lay.scalar(beta))])
        return lay.mul(inner, lay.scalar(alpha))

    return act


def _hard_sigmoid(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        y = lay.add(lay.mul(x, lay.scalar(alpha)), lay.scalar(beta))
        return lay.node.emit1(graph.ClipOp, [y], {"min": 0.0, "max": 1.0})

    return act


def _leaky_relu(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        neg = lay.binary(graph.MinOp, x, lay.scalar(0.0))
        return lay.add(lay.node.emit1(graph.ReluOp, [x]), lay.mul(neg, lay.scalar(alpha)))

    return act


def _thresholded_relu(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        above = lay.binary(graph.GreaterOp, x, lay.scalar(alpha))
        return lay.node.emit1(graph.WhereOp, [above, x, lay.scalar(0.0)])

    return act


def _elu(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        neg = lay.binary(graph.MinOp, x, lay.scalar(0.0))
        em1 = lay.binary(graph.SubOp, lay.node.emit1(graph.ExpOp, [neg]), lay.scalar(1.0))
        return lay.add(lay.node.emit1(graph.ReluOp, [x]), lay.mul(em1, lay.scalar(alpha)))

    return act


def _softsign(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        denom = lay.add(lay.node.emit1(graph.AbsOp, [x]), lay.scalar(1.0))
        return lay.binary(graph.DivOp, x, denom)

    return act


def _softplus(alpha: float, beta: float) -> Activation:
    def act(lay: Layer, x: Value) -> Value:
        e = lay.add(lay.node.emit1(graph.ExpOp, [x]), lay.scalar(1.0))
        return lay.node.emit1(graph.LogOp, [e])

    return act


# activation name (as ONNX spells it, case-insensitive) -> (builder, default alpha, beta;
# None where the activation takes no such parameter); defaults are those of the ONNX
# operator of the same name
ACTIVATIONS: dict[str, tuple[Callable[[float, float], Activation], float | None, float | None]] = {
    "relu": (_unary(graph.ReluOp), None, None),
    "tanh": (_unary(graph.TanhOp), None, None),
    "sigmoid": (_unary(graph.SigmoidOp), None, None),
    "affine": (_affine, 1.0, 0.0),
    "leakyrelu": (_leaky_relu, 0.01, None),
    "thresholdedrelu": (_thresholded_relu, 1.0, None),
    "scaledtanh": (_scaled_tanh, 1.0, 1.0),
    "hardsigmoid": (_hard_sigmoid, 0.2, 0.5),
    "elu": (_elu, 1.0, None),
    "softsign": (_softsign, None, None),
    "softplus": (_softplus, None, None),
}


def _activations(node: Node, defaults: Sequence[str], directions: int) -> list[list[Activation]]:
    """The activations of each direction; alphas and betas are consumed in order by the
    activations that take them."""
    names = node.attr("activations", None) or list(defaults) * directions
    if len(names) != len(defaults) * directions:
        raise node.error(
            f"attribute activations has {len(names)} entries, expected "
            f"{len(defaults) * directions} ({len(defaults)} per direction)"
        )
    alphas = [float(a) for a in node.attr("activation_alpha", [])]
    betas = [float(b) for b in node.attr("activation_beta", [])]
    built: list[Activation] = []
    for name in names:
        entry = ACTIVATIONS.get(str(name).lower())
        if entry is None:
            raise node.reject("activations", name, ", ".join(sorted(ACTIVATIONS)))
        make, alpha, beta = entry
        a = alphas.pop(0) if alpha is not None and alphas else alpha
        b = betas.pop(0) if beta is not None and betas else beta
        built.append(make(a or 0.0, b or 0.0))
    per = len(defaults)
    return [built[d * per : (d + 1) * per] for d in range(directions)]


@dataclass
class Direction:
    """The weights of one direction (W: [G*H, I], R: [G*H, H], the bias halves [G*H])."""

    w: Value
    r: Value
    wb: Value | None
    rb: Value | None
    peep: Value | None
    acts: list[Activation]


def _step_lstm(lay: Layer, d: Direction, xw: Value, state: list[Value]) -> list[Value]:
    """One LSTM step (gates i, o, f, c): the new [H, C]."""
    h, c = state
    pre = lay.gates(lay.add(xw, lay.matmul_t(h, d.r), d.rb), 4)
    p_i, p_o, p_f = lay.gates(d.peep, 3) if d.peep is not None else (None, None, None)
    f, g, hact = d.acts
    i = lay.activate(f, lay.add(pre[0], lay.mul(p_i, c) if p_i is not None else None))
    if lay.input_forget:
        forget = lay.binary(graph.SubOp, lay.scalar(1.0), i)
    else:
        forget = lay.activate(f, lay.add(pre[2], lay.mul(p_f, c) if p_f is not None else None))
    c_new = lay.add(lay.mul(forget, c), lay.mul(i, lay.activate(g, pre[3])))
    o = lay.activate(f, lay.add(pre[1], lay.mul(p_o, c_new) if p_o is not None else None))
    return [lay.mul(o, lay.activate(hact, c_new)), c_new]


def _step_gru(lay: Layer, d: Direction, xw: Value, state: list[Value]) -> list[Value]:
    """One GRU step (gates z, r, h): the new [H]."""
    (h,) = state
    x_z, x_r, x_h = lay.gates(xw, 3)
    rows = [lay.node.emit1(graph.SliceOp, [d.r], _rows(k, lay.hidden)) for k in range(3)]
    rb: list[Value | None] = [None] * 3 if d.rb is None else list(lay.gates(d.rb, 3))
    f, g = d.acts
    z = lay.activate(f, lay.add(x_z, lay.matmul_t(h, rows[0]), rb[0]))
    r = lay.activate(f, lay.add(x_r, lay.matmul_t(h, rows[1]), rb[1]))
    if lay.linear_before_reset:
        inner = lay.mul(r, lay.add(lay.matmul_t(h, rows[2]), rb[2]))
    else:
        inner = lay.add(lay.matmul_t(lay.mul(r, h), rows[2]), rb[2])
    cand = lay.activate(g, lay.add(x_h, inner))
    one_minus_z = lay.binary(graph.SubOp, lay.scalar(1.0), z)
    return [lay.add(lay.mul(one_minus_z, cand), lay.mul(z, h))]


def _step_rnn(lay: Layer, d: Direction, xw: Value, state: list[Value]) -> list[Value]:
    """One RNN step: the new [H]."""
    (h,) = state
    return [lay.activate(d.acts[0], lay.add(xw, lay.matmul_t(h, d.r), d.rb))]


def _rows(k: int, hidden: int) -> dict[str, list[int]]:
    return {"starts": [k * hidden], "ends": [(k + 1) * hidden], "axes": [0], "steps": [1]}


Step = Callable[[Layer, Direction, Value, list[Value]], list[Value]]

# op type -> (its step, the number of its state values: H, and C for LSTM)
STEPS: dict[str, tuple[Step, int]] = {
    "LSTM": (_step_lstm, 2),
    "GRU": (_step_gru, 1),
    "RNN": (_step_rnn, 1),
}


def _direction(lay: Layer, k: int, acts: list[Activation]) -> Direction:
    """The weights of direction `k` (bias halves folded where GRU allows: Rb of the h gate
    stays apart, as linear_before_reset needs it inside r's product)."""
    node = lay.node
    gates = LAYERS[node.op_type][0]
    w, r = take(node, node.input(1), 0, k), take(node, node.input(2), 0, k)
    b = node.opt_input(3)
    wb = rb = None
    if b is not None:
        b = take(node, b, 0, k)
        wb, rb = (
            lay.cols(b, 0, gates * lay.hidden),
            lay.cols(b, gates * lay.hidden, gates * lay.hidden),
        )
        if node.op_type != "GRU":
            wb, rb = lay.add(wb, rb), None
    p = node.opt_input(7) if node.op_type == "LSTM" else None
    peep = take(node, p, 0, k) if p is not None else None
    return Direction(w, r, wb, rb, peep, acts)


def _initial(lay: Layer, i: int, k: int, batch_first: bool) -> Value:
    """Initial state input `i` of direction `k`, as [B, H]; zeros ([1, H], broadcast) when
    it is omitted."""
    v = lay.node.opt_input(i)
    if v is None:
        return lay.node.const(np.zeros((1, lay.hidden), np.float32), lay.elt)
    return take(lay.node, v, 1 if batch_first else 0, k)


def _lengths_mask(node: Node, seq: int, batch: int) -> np.ndarray | None:
    """sequence_lens as a [seq, batch, 1] 0/1 mask of live steps; None when every sequence
    is full length."""
    lens = node.ints_input(4, "sequence_lens")
    if lens is None or all(n == seq for n in lens):
        return None
    if len(lens) != batch or any(not 0 <= n <= seq for n in lens):
        raise node.error(f"sequence_lens {lens} does not fit batch {batch} and length {seq}")
    return (np.arange(seq)[:, None] < np.asarray(lens)[None, :])[:, :, None]


def _mask_step(lay: Layer, mask: np.ndarray, new: list[Value], old: list[Value]) -> list[Value]:
    """Where `mask` ([B, 1] of 0/1) is 0 the step is past the sequence: keep the old state."""
    live = lay.node.const(mask.astype(np.float32), lay.elt)
    dead = lay.node.const(1.0 - mask.astype(np.float32), lay.elt)
    return [lay.add(lay.mul(live, n), lay.mul(dead, o)) for n, o in zip(new, old)]


@OPS.register(*LAYERS)
def convert_recurrent(node: Node) -> list[Value]:
    """LSTM / GRU / RNN (7, 14, 22): unrolled over the static sequence length.

    Outputs Y [S, D, B, H] (layout 1: [B, S, D, H]), Y_h and (LSTM) Y_c [D, B, H]
    (layout 1: [B, D, H]); steps past a sequence's length give zeros in Y and keep the state.
    """
    _, default_acts = LAYERS[node.op_type]
    step, n_state = STEPS[node.op_type]
    hidden = int(node.attr("hidden_size"))
    direction = str(node.attr("direction", "forward"))
    if direction not in DIRECTIONS:
        raise node.reject("direction", direction, ", ".join(DIRECTIONS))
    reverses = DIRECTIONS[direction]
    batch_first = bool(node.attr("layout", 0)) if node.version >= 14 else False
    clip = node.attr("clip", None)
    x = node.input(0)
    lay = Layer(node, x.elt, hidden, None if clip is None else float(clip))
    lay.input_forget = node.op_type == "LSTM" and bool(node.attr("input_forget", 0))
    lay.linear_before_reset = node.op_type == "GRU" and bool(node.attr("linear_before_reset", 0))
    acts = _activations(node, default_acts, len(reverses))
    if batch_first:
        x = node.emit1(graph.TransposeOp, [x], {"perm": [1, 0, 2]})
    a, b = probe_dims(x)
    if a[0] != b[0]:
        raise node.symbolic_error("the sequence length (dim 0 of X, or dim 1 with layout=1)")
    seq = a[0]
    if seq == 0:
        raise node.error("the sequence is empty (length 0)")
    mask = _lengths_mask(node, seq, a[1])
    ys: list[Value] = []
    finals: list[list[Value]] = []
    for k, reverse in enumerate(reverses):
        d = _direction(lay, k, acts[k])
        xw = node.emit1(graph.MatmulOp, [x, node.emit1(graph.TransposeOp, [d.w], {"perm": [1, 0]})])
        if d.wb is not None:
            xw = lay.add(xw, d.wb)
        state = [_initial(lay, 5 + j, k, batch_first) for j in range(n_state)]
        outs: list[Value] = [x] * seq
        for t in reversed(range(seq)) if reverse else range(seq):
            new = step(lay, d, take(node, xw, 0, t), state)
            if mask is None:
                state, outs[t] = new, new[0]
            else:
                state = _mask_step(lay, mask[t], new, state)
                outs[t] = lay.mul(node.const(mask[t].astype(np.float32), lay.elt), new[0])
        ys.append(stack(node, outs, 0))
        finals.append(state)
    y = stack(node, ys, 1)
    if batch_first:
        y = node.emit1(graph.TransposeOp, [y], {"perm": [2, 0, 1, 3]})
    results = [y]
    for j in range(n_state):
        last = stack(node, [f[j] for f in finals], 1 if batch_first else 0)
        results.append(last)
    return results
