"""Per-op facts (dialects/op_facts.py): every graph op answers them, and the numbers of the
cube ops, which the cost model and the fusion report take from them, are pinned."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from xdsl.dialects.builtin import TensorType, f16, f32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import ParseError
from xdsl.utils.test_value import create_ssa_value

from autofusion.diagnostics import LocatedVerifyError, UserError
from autofusion.dialects import graph
from autofusion.dialects.op_facts import OperandRole, OpFacts, is_view, reads_through
from autofusion.dialects.shape_inference import DYN
from autofusion.fusion.cost import op_cost
from autofusion.hardware import get_chip
from autofusion.mlir_io import default_context, parse_module
from autofusion.report import _op_traffic, operand_roles, tensor_key

S, H, T, B = (
    OperandRole.STREAMED,
    OperandRole.HOT,
    OperandRole.TRANSIENT,
    OperandRole.BANDED,
)
# ops that compute nothing themselves: a group's facts are its plan's, yield ends it
STRUCTURAL = {graph.FusionGroupOp, graph.YieldOp}
CORPUS = Path(__file__).parent / "filecheck"


def value(shape: Sequence[int], elt: object = f32) -> SSAValue:
    return create_ssa_value(TensorType(elt, list(shape)))


def make(cls: type[graph.GraphOp], operands: list[SSAValue], **props: object) -> Operation:
    return cls.make(operands, props)


@pytest.mark.parametrize("cls", list(graph.Graph.operations), ids=lambda c: c.name)
def test_every_graph_op_states_its_facts(cls: type[Operation]) -> None:
    """A new graph op without facts fails here (and cannot be built: they are abstract)."""
    if cls in STRUCTURAL:
        assert not issubclass(cls, OpFacts)
        return
    assert issubclass(cls, OpFacts), f"{cls.name} does not implement op_facts.OpFacts"
    assert not inspect.isabstract(cls), f"{cls.name} lacks {sorted(cls.__abstractmethods__)}"


def _corpus_ops() -> list[Operation]:
    """The graph ops of every lit test input that parses (chunks of split-input files)."""
    ctx = default_context()
    ops: list[Operation] = []
    for path in sorted(CORPUS.glob("**/*.mlir")):
        for chunk in path.read_text(errors="replace").split("// -----"):
            if "graph." not in chunk:
                continue
            try:
                module = parse_module(ctx, chunk, str(path))
            except (UserError, LocatedVerifyError, ParseError):  # deliberate errors
                continue
            ops += [op for op in module.walk() if isinstance(op, OpFacts)]
    return ops


def test_corpus_ops_answer_consistently() -> None:
    """On every graph op of the lit inputs: one read count and role per operand, finite
    non-negative work, and cube FLOPs on every cube op."""
    ops = _corpus_ops()
    assert len({op.name for op in ops}) >= 100
    for op in ops:
        work = op.flops(64)
        reads = op.operand_reads(64)
        roles = op.operand_roles(64)
        assert len(reads) == len(roles) == len(op.operands), op.name
        assert all(math.isfinite(n) and n >= 0 for n in (*reads, work.cube, work.vector))
        if graph.fusion_kind(op) == graph.FusionKind.CUBE:
            assert work.cube > 0, op.name


def test_matmul_facts() -> None:
    a, b, bias = value([2, 64, 128]), value([128, 32]), value([32])
    op = make(graph.MatmulOp, [a, b, bias], activation="gelu")
    assert isinstance(op, OpFacts)
    work = op.flops(1)
    assert work.cube == 2.0 * 2 * 64 * 32 * 128
    # the epilogue: gelu (22) and the bias add per result element
    assert op.vector_weight() == 23 and work.vector == 23 * 2 * 64 * 32
    # A is read by every column of B, B by every row of both batches, bias by every row
    assert op.operand_reads(1) == (32.0, 128.0, 128.0)
    assert op.operand_roles(1) == (B, T, H)


def test_matmul_full_bias_is_read_once() -> None:
    op = make(graph.MatmulOp, [value([64, 128]), value([128, 32]), value([64, 32])])
    assert isinstance(op, OpFacts)
    assert op.operand_reads(1)[2] == 1.0 and op.operand_roles(1) == (B, T, S)


def test_gemm_contracts_over_transposed_a() -> None:
    op = make(
        graph.GemmOp,
        [value([128, 64]), value([128, 32])],
        trans_a=True,
        trans_b=False,
        alpha=1.0,
        beta=1.0,
    )
    assert isinstance(op, OpFacts)
    assert op.flops(1).cube == 2.0 * 64 * 32 * 128
    assert op.operand_reads(1) == (32.0, 64.0)


def test_conv_facts() -> None:
    x, w, bias = value([1, 16, 32, 32]), value([32, 16, 3, 3]), value([32])
    op = make(
        graph.Conv2dOp,
        [x, w, bias],
        strides=[1, 1],
        pads=[1, 1, 1, 1],
        dilations=[1, 1],
        group=1,
    )
    assert isinstance(op, OpFacts)
    macs = 32 * 32 * 32 * 16 * 9  # each of the 32x32x32 outputs sums 16 x 3 x 3 products
    assert op.flops(1).cube == 2.0 * macs
    assert op.vector_weight() == 1  # the bias add
    # the feature map is read by every output channel's 3x3 taps, the weight at every pixel
    assert op.operand_reads(1) == (macs / (16 * 32 * 32), 32.0 * 32, 32.0 * 32 * 32 / 32)
    assert op.operand_roles(1) == (T, H, H)


def _ffn(residual: bool = True) -> graph.FfnOp:
    x = value([4, 64])
    gate, up, down = value([64, 128]), value([64, 128]), value([128, 64])
    res = value([4, 64]) if residual else None
    return graph.FfnOp.from_parts(x, [gate, up], down, "swiglu", bias2=value([64]), residual=res)


def test_ffn_facts() -> None:
    op = _ffn()
    work = op.flops(1)
    # up: 4 x 64 x (128 + 128) products; down: 4 x 128 x 64
    assert work.cube == 2.0 * 4 * (64 * 256 + 128 * 64)
    # swiglu on the intermediate (silu 6 + mul), bias2 and residual adds on the result
    assert work.vector == 4 * (7 * 128 + 2 * 64)
    assert op.operand_reads(1) == (256.0, 4.0, 4.0, 4.0, 4.0, 1.0)
    assert op.operand_roles(1) == (B, T, T, T, H, S)


def test_ffn_with_a_merged_gate_and_up_weight() -> None:
    x, merged, down = value([4, 64]), value([64, 256]), value([128, 64])
    op = graph.FfnOp.from_parts(x, [merged], down, "geglu", bias1=[value([256])])
    work = op.flops(1)
    assert work.cube == 2.0 * 4 * (64 * 256 + 128 * 64)
    # bias1 adds on both halves, gelu (22) and the mul on the intermediate, no epilogue
    assert work.vector == 4 * (256 + 23 * 128)
    assert op.operand_reads(1) == (256.0, 4.0, 4.0, 4.0)
    assert op.operand_roles(1) == (B, T, T, H)


def test_flash_attention_facts() -> None:
    # grouped-query attention: 2 query heads share 1 key/value head
    q, k, v = value([1, 2, 16, 32]), value([1, 1, 8, 32]), value([1, 1, 8, 16])
    op = make(graph.FlashAttentionOp, [q, k, v], scale=0.125, causal=False, layout="BNSD")
    assert isinstance(op, OpFacts)
    rows, skv = 2 * 16, 8
    assert op.flops(1).cube == 2.0 * rows * skv * (32 + 16)
    assert op.flops(1).vector == 7 * rows * skv  # the softmax over the scores
    # each query element meets every key; each key and value element every query row of
    # the two heads that share it
    assert op.operand_reads(1) == (8.0, 32.0, 32.0)
    assert op.operand_roles(1) == (S, H, H)


def test_dynamic_dims_take_the_dynamic_size() -> None:
    a, b = value([DYN, 64]), value([64, 32])
    op = make(graph.MatmulOp, [a, b])
    assert isinstance(op, OpFacts)
    assert op.flops(10).cube == 2.0 * 10 * 32 * 64


def test_elementwise_facts_count_elements_not_bytes() -> None:
    """A widening cast reads each element once (its input has fewer bytes than its
    result, but is not broadcast); a broadcast operand is re-read."""
    cast = graph.CastOp.to(value([8, 256], f16), f32)
    assert cast.operand_reads(1) == (1.0,) and cast.operand_roles(1) == (S,)
    add = make(graph.AddOp, [value([8, 256]), value([256])])
    assert isinstance(add, OpFacts)
    assert add.operand_reads(1) == (1.0, 8.0) and add.operand_roles(1) == (S, H)
    exp = make(graph.ExpOp, [value([8, 256])])
    assert isinstance(exp, OpFacts)
    assert exp.flops(1).vector == 2 * 8 * 256 and exp.flops(1).cube == 0


def test_data_movement_reads_each_element_once() -> None:
    parts = [value([4, 8]), value([4, 8])]
    concat = make(graph.ConcatOp, parts, axis=0)
    assert isinstance(concat, OpFacts)
    assert concat.operand_roles(1) == (S, S) and concat.flops(1).vector == 0
    table, ids = value([1000, 64]), value([4, 16], i64)
    gather = make(graph.GatherOp, [table, ids], axis=0)
    assert isinstance(gather, OpFacts)
    assert gather.operand_reads(1) == (4 * 16 / 1000, 1.0)
    assert gather.operand_roles(1) == (S, S)


def test_views() -> None:
    x = value([4, 8])
    reshape = make(graph.ReshapeOp, [x], shape=[32])
    sl = make(graph.SliceOp, [x], starts=[0], ends=[4], axes=[1], steps=[1])
    relu = make(graph.ReluOp, [x])
    assert is_view(reshape) and reads_through(reshape)
    assert not is_view(sl) and reads_through(sl)
    assert not is_view(relu) and not reads_through(relu)


def test_cost_model_takes_ffn_flops_from_the_op() -> None:
    """op_cost had no ffn case (0 cube FLOPs, elementwise work): it now costs both
    projections on the cube cores."""
    op = _ffn()
    chip = get_chip("Ascend910B1")
    cost = op_cost(op, chip)
    assert cost.cube_flops == op.flops(1).cube > 0
    assert cost.vector_work == 0 and cost.cube_cores_used == chip.cube_cores


def _roles_by_name(op: Operation, keys: Mapping[object, str]) -> tuple[set[str], set[str]]:
    traffic = _op_traffic(op, get_chip("Ascend910B1"), 1)
    return {keys[k] for k in traffic.hot}, {keys[k] for k in traffic.transient}


def test_report_roles_of_an_ffn_kernel_come_from_the_op() -> None:
    op = _ffn()
    names = dict(zip(op.operands, ("x", "gate", "up", "down", "bias2", "residual")))
    keys = {tensor_key(v): n for v, n in names.items()}
    assert _roles_by_name(op, keys) == ({"x", "bias2"}, {"gate", "up", "down"})


def test_banded_operand_past_half_the_l2_is_transient() -> None:
    chip = get_chip("Ascend910B1")
    rows = chip.l2_bytes // (2 * 4 * 1024) + 1  # A just over half the L2
    a, b = value([rows, 1024]), value([1024, 64])
    op = make(graph.MatmulOp, [a, b])
    assert operand_roles(op, chip, 1) == ([], [a, b])
    small = make(graph.MatmulOp, [value([64, 1024]), b])
    assert operand_roles(small, chip, 1) == ([small.operands[0]], [b])
