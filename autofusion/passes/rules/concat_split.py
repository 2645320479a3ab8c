"""SplitConvConcatFusionPass, SplitMatMulConcatFusionPass: a concat that feeds cube ops
becomes per-part cube ops, so the concat's GM round trip disappears.

Over the contracted axis (conv input channels, matmul/gemm K) the product is a sum of
per-part products with the weight sliced to match:

    conv(concat(a, b, axis=1), W, bias) = conv(a, W[:, :Ca], bias) + conv(b, W[:, Ca:])
    matmul(concat(a, b, axis=-1), W)    = a @ W[..., :Ka, :] + b @ W[..., Ka:, :]
    gemm(concat(a, b, K), B, C)         = gemm(a, B_a, C) + gemm(b, B_b)

The bias (and gemm's C) is added once, by the first part; an activation epilogue moves to
one elementwise op after the sum. Over an outer axis of the left operand (matmul rows or
batch, gemm M) the concat moves to the outputs, which are smaller when N < K:

    matmul(concat(a, b, axis=-2), W) = concat(a @ W, b @ W, axis=-2)

Preconditions: convolutions with group 1; part sizes along the concat axis static; a
matmul's right operand 2-D for a row/batch concat (a batched one would need slicing too),
and a bias or C that broadcasts along that axis. Weights are sliced at compile time when
they are constants (shape-only weights give shape-only slices), else by graph.slice.
Sums over the contracted axis need f32: per-part f16/bf16 products would be rounded
before they are added, where the whole product rounds once; row concats are exact.

The rewrite applies to every qualifying cube op the concat feeds at once (the concat only
disappears when none reads it), and only when the cost gate (split_cost.py) finds the
concat's GM round trip and launch worth more than the extra cube launches and the
partial sums' traffic.

Names: SplitConvConcatFusionPass is CANN's (FE node-optimize pass) for the same aim
around Conv2D: not materializing a concat in GM. CANN's version makes split -> conv ->
concat read and write with strides (StridedRead/StridedWrite); afc has no strided
views, so it splits the convolution. SplitMatMulConcatFusionPass is afc's name for the
matmul/gemm form, after it.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import Refusal
from autofusion.passes.rules.split_cost import (
    SplitFusionRule,
    is_compute_op,
    user_ops,
    users_in_order,
)

# the properties of a cube op that express its activation epilogue
ACTIVATION_PROPS = ("activation", "clip_min", "clip_max")


@dataclass(frozen=True)
class CubeSplit:
    """How one cube op that reads the concat is split."""

    cube: Operation
    contracted: bool  # True: a sum over the contracted axis; False: a concat of outputs
    weight_axis: int  # the weight axis sliced per part (contracted) ...
    out_axis: int  # ... or the output axis the part results are concatenated along


@dataclass(frozen=True)
class ConcatSplit:
    concat: graph.ConcatOp
    cubes: tuple[CubeSplit, ...]


class SplitConcatIntoCube(SplitFusionRule[ConcatSplit]):
    """Shared matching and rewriting of the conv and matmul forms."""

    anchors = (graph.ConcatOp,)
    cube_types: tuple[type[Operation], ...]

    @abstractmethod
    def check(self, concat: graph.ConcatOp, cube: Operation) -> CubeSplit | Refusal | None:
        """How `cube` (a user of the concat) is split, why it cannot be, or None if it
        does not read the concat as its split operand."""

    def structure(self, op: Operation) -> ConcatSplit | Refusal | None:
        if not isinstance(op, graph.ConcatOp) or not is_compute_op(op) or len(op.inputs) < 2:
            return None
        cubes = {u for u in user_ops(op.output) if isinstance(u, self.cube_types)}
        if not cubes:
            return None
        ordered = users_in_order(op, cubes)
        if isinstance(ordered, Refusal):
            return ordered
        found: list[CubeSplit] = []
        first: Refusal | None = None
        for user in ordered:
            verdict = self.check(op, user)
            if isinstance(verdict, Refusal):
                first = first or verdict
            elif verdict is not None:
                found.append(verdict)
        if not found:
            return first
        axis = si.normalize_axis(op.axis.value.data, len(m.shape(op.output)))
        if any(m.shape(v)[axis] == DYN for v in op.inputs):
            return Refusal("a part's size along the concat axis is dynamic")
        return ConcatSplit(op, tuple(found))

    def core(self, op: Operation, match: ConcatSplit) -> list[Operation]:
        return [match.concat, *(c.cube for c in match.cubes)]

    def describe(self, match: ConcatSplit) -> str:
        return f"split into per-part cube ops ({len(match.concat.inputs)} parts)"

    def rewrite(self, op: Operation, match: ConcatSplit, rewriter: PatternRewriter) -> None:
        concat = match.concat
        axis = si.normalize_axis(concat.axis.value.data, len(m.shape(concat.output)))
        for split in match.cubes:
            cube = split.cube
            assert isinstance(cube, graph.GraphOp)
            hint = cube.results[0].name_hint or "y"
            new_ops: list[Operation] = []
            results: list[SSAValue] = []
            start = 0
            for i, part in enumerate(concat.inputs):
                size = m.shape(part)[axis]
                operands = [part, *cube.operands[1:]]
                props = dict(cube.properties)
                if split.contracted:
                    sliced, weight = self.slice_weight(
                        cube.operands[1], split.weight_axis, start, start + size, i
                    )
                    new_ops += sliced
                    # the bias (gemm's C) is added once, by the first part; the
                    # activation applies to the sum
                    operands = [part, weight, *(cube.operands[2:] if i == 0 else [])]
                    props = {k: v for k, v in props.items() if k not in ACTIVATION_PROPS}
                new = type(cube).make(operands, props)
                new.results[0].name_hint = f"{hint}_part{i}"
                new_ops.append(new)
                results.append(new.results[0])
                start += size
            if split.contracted:
                total = results[0]
                for r in results[1:]:
                    add = graph.AddOp.make([total, r])
                    add.results[0].name_hint = f"{hint}_sum"
                    new_ops.append(add)
                    total = add.results[0]
                act = activation_op(total, dict(cube.properties))
                if act is not None:
                    new_ops.append(act)
            else:
                new_ops.append(graph.ConcatOp.make(results, {"axis": split.out_axis}))
            # the last op's result takes the cube op's name
            new_ops[-1].results[0].name_hint = cube.results[0].name_hint
            location = m.fused_location([concat, cube])
            for created in new_ops:
                created.location = location
            rewriter.replace(cube, new_ops)

    def slice_weight(
        self, weight: SSAValue, axis: int, start: int, end: int, index: int
    ) -> tuple[list[Operation], SSAValue]:
        """weight[start:end] along `axis`: a new constant when it is one, else a slice."""
        shape = list(m.shape(weight))
        shape[axis] = end - start
        if m.constant_op(weight) is not None:
            values = None if self.estimating else m.constant_array(weight)
            if values is not None:
                values = np.take(np.asarray(values), np.arange(start, end), axis=axis)
            name = f"{m.constant_name(weight, weight.name_hint or 'weight')}.part{index}"
            t = graph.tensor(shape, m.tensor_type(weight).element_type)
            const = m.make_constant(values, t, name)
            return [const], const.result
        sl = graph.SliceOp.make(
            [weight], {"starts": [start], "ends": [end], "axes": [axis], "steps": [1]}
        )
        sl.results[0].name_hint = f"{weight.name_hint or 'weight'}_part{index}"
        return [sl], sl.results[0]


def activation_op(value: SSAValue, props: dict[str, Attribute]) -> Operation | None:
    """The elementwise op of a cube op's activation epilogue (graph.ACTIVATIONS)."""
    act = props.get("activation")
    if not isinstance(act, StringAttr):
        return None
    simple: dict[str, type[graph.GraphOp]] = {
        "relu": graph.ReluOp,
        "silu": graph.SiluOp,
        "sigmoid": graph.SigmoidOp,
    }
    if act.data in simple:
        return simple[act.data].make([value])
    if act.data in ("gelu", "gelu_tanh"):
        return graph.GeluOp.make(
            [value], {"approximate": "tanh" if act.data == "gelu_tanh" else "none"}
        )
    assert act.data == "clip", f"unknown activation {act.data}"
    bounds = {"min": props.get("clip_min"), "max": props.get("clip_max")}
    return graph.ClipOp.make([value], {k: v for k, v in bounds.items() if v is not None})


def _f32_sum(cube: Operation) -> Refusal | None:
    elt = dtypes.type_name(m.tensor_type(cube.results[0]).element_type)
    if elt != "f32":
        return Refusal(
            f"the partial products of a {elt} {cube.name} would be rounded to {elt} "
            "before they are summed"
        )
    return None


class SplitConvConcat(SplitConcatIntoCube):
    rule_name = "SplitConvConcatFusionPass"
    pattern = "Concat(channels)->Conv2D"
    cube_types = (graph.Conv2dOp,)

    def check(self, concat: graph.ConcatOp, cube: Operation) -> CubeSplit | Refusal | None:
        assert isinstance(cube, graph.Conv2dOp)
        if cube.input != concat.output or cube.weight == concat.output:
            return None
        axis = si.normalize_axis(concat.axis.value.data, 4)
        if axis != 1:
            return Refusal(f"the concat joins axis {axis}, not the convolution's input channels")
        if cube.group.value.data != 1:
            return Refusal(f"a grouped convolution (group {cube.group.value.data})")
        return _f32_sum(cube) or CubeSplit(cube, True, 1, 1)


class SplitMatMulConcat(SplitConcatIntoCube):
    rule_name = "SplitMatMulConcatFusionPass"
    pattern = "Concat->MatMul|Gemm(left operand)"
    cube_types = (graph.MatmulOp, graph.GemmOp)

    def check(self, concat: graph.ConcatOp, cube: Operation) -> CubeSplit | Refusal | None:
        lhs, rhs = cube.operands[0], cube.operands[1]
        if lhs != concat.output or rhs == concat.output:
            return None
        rank = len(m.shape(lhs))
        axis = si.normalize_axis(concat.axis.value.data, rank)
        if isinstance(cube, graph.GemmOp):
            p = graph.Props(cube.properties, cube.name)
            k_axis = 0 if p.flag("trans_a") else 1
            if axis == k_axis:
                return _f32_sum(cube) or CubeSplit(cube, True, 1 if p.flag("trans_b") else 0, 0)
            if cube.c is not None and _varies_along(m.shape(cube.c), 2, 0):
                return Refusal("C varies along M: each part would need its rows of C")
            return CubeSplit(cube, False, 0, 0)
        assert isinstance(cube, graph.MatmulOp)
        rhs_rank = len(m.shape(rhs))
        if rank < 2 or rhs_rank < 2:
            return Refusal("a matrix-vector product")
        if axis == rank - 1:
            return _f32_sum(cube) or CubeSplit(cube, True, rhs_rank - 2, 0)
        if rhs_rank != 2:
            return Refusal(
                "a batched right operand would need slicing along the concat axis as well"
            )
        if cube.bias is not None and _varies_along(m.shape(cube.bias), rank, axis):
            return Refusal("the bias varies along the concat axis")
        return CubeSplit(cube, False, 0, axis)


def _varies_along(shape: tuple[int, ...], rank: int, axis: int) -> bool:
    """Whether a value of `shape` broadcast to rank `rank` has more than one entry along
    `axis` (numpy broadcasting aligns shapes at the right)."""
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    return padded[axis] != 1
