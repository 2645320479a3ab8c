"""Converters of ONNX control flow: If, Loop and Scan, resolved at import time.

The graph dialect has no regions of control flow, so control flow that is known at compile
time is taken apart here: an `If` whose condition is a constant becomes its chosen
branch's nodes (converted inline by the same converters, the outer scope visible); a
`Loop` whose trip count (or whose condition) is known, and every `Scan` over static-length
inputs, is unrolled into one copy of its body per iteration, with the scan slices and
stacked outputs built from graph.slice / graph.reshape / graph.concat. Anything only known
at run time is refused, naming the node and the value. Versions are cited as
`Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import i1, i64

from autofusion.dialects import graph
from frontends.onnx.importer import Const, Item, Node, OpConverters, Sym, Tensor, Value, probe_dims
from frontends.onnx.ops_tensor import reshape_to

# the later versions of If/Loop/Scan only add element types, sequences and
# optionals (which afc refuses as values, not as operator versions)
OPS = OpConverters(
    versions={
        "If": (13, 16, 19, 21, 23, 24, 25),
        "Loop": (13, 16, 19, 21, 23, 24, 25),
        "Scan": (11, 16, 19, 21, 23, 24, 25),
    }
)

# a Loop with no trip count runs while its condition, computed from constants, holds; this
# many iterations at most are unrolled
MAX_UNROLL = 4096


# --------------------------------------------------------------------------------------
# Slicing one step out of a sequence, and stacking steps into one
# --------------------------------------------------------------------------------------


def take(node: Node, x: Value, axis: int, index: int) -> Value:
    """`x[..., index, ...]` along `axis`, that axis dropped (a static index)."""
    props = {"starts": [index], "ends": [index + 1], "axes": [axis], "steps": [1]}
    step = node.emit1(graph.SliceOp, [x], props)
    a, b = probe_dims(step)
    return reshape_to(node, step, (*a[:axis], *a[axis + 1 :]), (*b[:axis], *b[axis + 1 :]))


def stack(node: Node, parts: Sequence[Value], axis: int) -> Value:
    """The `parts` (of one shape) stacked along a new axis `axis`."""
    grown = []
    for p in parts:
        a, b = probe_dims(p)
        grown.append(reshape_to(node, p, (*a[:axis], 1, *a[axis:]), (*b[:axis], 1, *b[axis:])))
    return grown[0] if len(grown) == 1 else node.emit1(graph.ConcatOp, grown, {"axis": axis})


def _scalar(node: Node, what: str, value: Value, i: int | None = None) -> np.ndarray:
    """The single element of `value` (input `i`, or a body output), which must be known at
    compile time."""
    if isinstance(value, Tensor):
        where = f"{what} (input #{i})" if i is not None else what
        raise node.error(
            f"{where} must be a constant, but it is computed at run time (afc resolves "
            f"{node.op_type} only when it is known at compile time)"
        )
    if isinstance(value, Sym):
        raise node.symbolic_error(what)
    if value.array.size != 1:
        raise node.error(f"{what} must hold one element, got shape {list(value.shape)}")
    return value.array.reshape(-1)[0]


def _graph(node: Node, name: str) -> onnx.GraphProto:
    body = node.attr(name)
    if not isinstance(body, onnx.GraphProto):
        raise node.error(f"attribute '{name}' must be a graph")
    return body


def _outputs(node: Node, values: Sequence[Item], what: str) -> list[Item]:
    if len(values) != len(node.proto.output):
        raise node.error(
            f"{what} gives {len(values)} outputs, but the node has {len(node.proto.output)}"
        )
    return list(values)


# --------------------------------------------------------------------------------------
# If
# --------------------------------------------------------------------------------------


@OPS.register("If")
def convert_if(node: Node) -> list[Item]:
    """If-13: the branch the constant condition chooses, inlined."""
    then_branch, else_branch = _graph(node, "then_branch"), _graph(node, "else_branch")
    cond = bool(_scalar(node, "the condition", node.input(0), 0))
    branch, name = (then_branch, "then_branch") if cond else (else_branch, "else_branch")
    taken = node.importer.convert_subgraph(node, branch, [], name)
    return _outputs(node, taken, name)


# --------------------------------------------------------------------------------------
# Loop
# --------------------------------------------------------------------------------------


def _iteration_const(node: Node, k: int) -> Const:
    return Const(np.asarray(k, dtype=np.int64), i64, f"{node.name}_iter{k}")


def _bool_const(node: Node, value: bool) -> Const:
    return Const(np.asarray(value, dtype=np.bool_), i1, f"{node.name}_cond")


@OPS.register("Loop")
def convert_loop(node: Node) -> list[Item]:
    """Loop-13: unrolled; the trip count M, or else every iteration's condition, must be
    known at compile time (a body's cond output computed at run time is refused). Loop-carried
    sequences and optionals (Loop-13/16) are compile-time values like the rest."""
    body = _graph(node, "body")
    trip_in = node.opt_input(0)
    trip = None if trip_in is None else int(_scalar(node, "the trip count M", trip_in, 0))
    cond_in = node.opt_input(1)
    cond = True if cond_in is None else bool(_scalar(node, "the condition", cond_in, 1))
    carried: list[Item] = []
    for i in range(2, node.num_inputs):
        v = node.opt_item(i)
        if v is None:
            raise node.error(f"loop-carried input #{i} is required")
        carried.append(v)
    n_carried = len(carried)
    n_scan = len(body.output) - 1 - n_carried
    if n_scan < 0:
        raise node.error(
            f"the body has {len(body.output)} outputs; it needs the condition and "
            f"{n_carried} loop-carried values"
        )
    steps: list[list[Item]] = []
    k = 0
    while cond and (trip is None or k < trip):
        if trip is None and k >= MAX_UNROLL:
            raise node.error(f"the loop runs past {MAX_UNROLL} iterations with no trip count M")
        args = [_iteration_const(node, k), _bool_const(node, cond), *carried]
        outs = node.importer.convert_subgraph(node, body, args, f"iter{k}")
        what = f"the body's condition output at iteration {k}"
        cond = bool(_scalar(node, what, node.tensor(outs[0], what)))
        carried = outs[1 : 1 + n_carried]
        steps.append(outs[1 + n_carried :])
        k += 1
    if n_scan and not steps:
        raise node.error("the loop runs no iteration, so its scan outputs have no shape")
    scans: list[Item] = []
    for j in range(n_scan):
        what = f"scan output #{j} of the body"
        scans.append(stack(node, [node.tensor(s[j], what) for s in steps], 0))
    return _outputs(node, carried + scans, "the loop")


# --------------------------------------------------------------------------------------
# Scan
# --------------------------------------------------------------------------------------


def _axes(node: Node, name: str, count: int, ranks: Sequence[int]) -> list[int]:
    given = node.ints_attr(name, [0] * count)
    assert given is not None
    if len(given) != count:
        raise node.error(f"attribute {name} has {len(given)} entries, expected {count}")
    out = []
    for axis, rank in zip(given, ranks):
        if not -rank <= axis < rank:
            raise node.error(f"attribute {name}: axis {axis} is out of range for rank {rank}")
        out.append(axis + rank if axis < 0 else axis)
    return out


def _directions(node: Node, name: str, count: int) -> list[int]:
    given = node.ints_attr(name, [0] * count)
    assert given is not None
    if len(given) != count or any(d not in (0, 1) for d in given):
        raise node.error(f"attribute {name}={given} must give 0 or 1 for each of {count}")
    return given


def _unroll_scan(
    node: Node, body: onnx.GraphProto, states: list[Value], scan_in: list[Value], scope: str
) -> tuple[list[Value], list[list[Value]]]:
    """The body run over the scan inputs, unrolled: the final states and, per step, the
    scan output elements. The attributes scan_input_axes and scan_input_directions (for
    Scan-8, its sequence axis 0 after the batch is taken, and directions) say how."""
    n_in = len(scan_in)
    if node.version >= 9:
        in_axes = _axes(node, "scan_input_axes", n_in, [len(v.shape) for v in scan_in])
        in_dirs = _directions(node, "scan_input_directions", n_in)
    else:
        in_axes, in_dirs = [0] * n_in, _directions(node, "directions", n_in)
    lengths = set()
    for v, axis in zip(scan_in, in_axes):
        a, b = probe_dims(v)
        if a[axis] != b[axis]:
            raise node.symbolic_error(f"the sequence length (dim {axis} of a scan input)")
        lengths.add(a[axis])
    if len(lengths) != 1:
        raise node.error(f"the scan inputs have different sequence lengths {sorted(lengths)}")
    length = lengths.pop()
    if length == 0 and len(body.output) > len(states):
        raise node.error("the scan inputs are empty, so its scan outputs have no shape")
    steps: list[list[Value]] = []
    for t in range(length):
        slices = [
            take(node, v, axis, length - 1 - t if rev else t)
            for v, axis, rev in zip(scan_in, in_axes, in_dirs)
        ]
        outs = node.importer.convert_subgraph(node, body, [*states, *slices], f"{scope}iter{t}")
        outs_t = [node.tensor(v, f"output #{j} of the body") for j, v in enumerate(outs)]
        states = outs_t[: len(states)]
        steps.append(outs_t[len(states) :])
    return states, steps


def _split_inputs(node: Node, values: list[Value]) -> tuple[list[Value], list[Value]]:
    """The (states, scan inputs) of Scan's variadic input."""
    n_in = int(node.attr("num_scan_inputs"))
    n_state = len(values) - n_in
    if n_in < 1 or n_state < 0:
        raise node.error(f"num_scan_inputs={n_in} does not fit its {len(values)} inputs")
    return values[:n_state], values[n_state:]


@OPS.register("Scan")
def convert_scan(node: Node) -> list[Item]:
    """Scan-9/11/16...: unrolled over the static length of its scan inputs."""
    if node.version < 9:
        return _convert_batched_scan(node)
    body = _graph(node, "body")
    states, scan_in = _split_inputs(node, node.inputs())
    n_out = len(body.output) - len(states)
    out_dirs = _directions(node, "scan_output_directions", n_out)
    states, steps = _unroll_scan(node, body, states, scan_in, "")
    ranks = [len(v.shape) + 1 for v in steps[0]] if steps else [1] * n_out
    out_axes = _axes(node, "scan_output_axes", n_out, ranks)
    scans = []
    for j, (axis, rev) in enumerate(zip(out_axes, out_dirs)):
        parts = [s[j] for s in steps]
        scans.append(stack(node, parts[::-1] if rev else parts, axis))
    return _outputs(node, states + scans, "the scan")


def _convert_batched_scan(node: Node) -> list[Item]:
    """Scan-8: every state and scan input has a batch axis 0 (scan inputs their sequence
    axis 1), and the body runs on each batch row as Scan-9 runs; the results are the
    rows stacked. sequence_lens (input #0), when given, must be the full length for every
    row: the padding of shorter sequences is not implemented."""
    body = _graph(node, "body")
    values = [node.input(i) for i in range(1, len(node.proto.input))]
    states, scan_in = _split_inputs(node, values)
    a, b = probe_dims(values[0])
    if a[0] != b[0]:
        raise node.symbolic_error("the batch size of a Scan-8")
    lengths = node.const_input(0, "sequence_lens")
    full = {probe_dims(v)[0][1] for v in scan_in}
    if lengths is not None and set(np.asarray(lengths).reshape(-1).tolist()) - full:
        raise node.error(
            f"sequence_lens {np.asarray(lengths).tolist()} is shorter than the scan inputs' "
            f"length {sorted(full)}: variable-length sequences are not supported"
        )
    rows = []
    for row in range(a[0]):
        row_states = [take(node, v, 0, row) for v in states]
        row_scans = [take(node, v, 0, row) for v in scan_in]
        finals, steps = _unroll_scan(node, body, row_states, row_scans, f"batch{row}/")
        n_out = len(body.output) - len(states)
        rows.append(finals + [stack(node, [s[j] for s in steps], 0) for j in range(n_out)])
    outs = [stack(node, [r[k] for r in rows], 0) for k in range(len(rows[0]))] if rows else []
    return _outputs(node, outs, "the scan")
