"""Partial rotary (graph.rope's rotary_dim, Phi): its semantics, verifier, recognition
from slice/rope/concat, the transpose sink through it, and its rows kernel (the first R
columns rotated with narrow [rows, R] cos/sin tables, the rest copied): the buffer level
and the emulated Ascend C against the interpreter, its UB budget, its refusals and its
hfusion export."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

from autofusion.codegen.emulate import run_function_emulated
from autofusion.diagnostics import LocatedVerifyError
from autofusion.dialects import buffer, graph
from autofusion.hardware import get_chip
from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.lowering.row_plan import RowPlan, narrow_tables, plan_rows
from autofusion.lowering.rows_template import queue_slots
from autofusion.lowering.template import GroupParts
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.fusion_rule import Refusal

sys.path.insert(0, str(Path(__file__).resolve().parent))
from differential import apply_pipeline, check_pass

RNG = np.random.default_rng(15)
X, T = "tensor<2x4x8x8xf32>", "tensor<1x1x8x4xf32>"


def rope_fn(props: str, x: str = X, table: str = T) -> str:
    return f"""
func.func @main(%x: {x}, %c: {table}, %s: {table}) -> {x} {{
  %r = graph.rope %x, %c, %s {{{props}}} : ({x}, {table}, {table}) -> {x}
  func.return %r : {x}
}}"""


@pytest.mark.parametrize("interleaved", [False, True])
def test_partial_rope_rotates_the_first_rotary_dim_features(interleaved: bool) -> None:
    x = RNG.standard_normal((2, 4, 8, 8)).astype(np.float32)
    ang = RNG.uniform(-3, 3, (1, 1, 8, 4)).astype(np.float32)
    cos, sin = np.cos(ang), np.sin(ang)
    text = rope_fn(f"interleaved = {str(interleaved).lower()}, rotary_dim = 4")
    module = parse_module(default_context(), text, "rope.mlir")
    got = run_function(module, {"arg0": x, "arg1": cos, "arg2": sin})["out0"]
    head = x[..., :4]
    if interleaved:
        rot = np.stack([-head[..., 1::2], head[..., 0::2]], axis=-1).reshape(head.shape)
    else:
        rot = np.concatenate([-head[..., 2:], head[..., :2]], axis=-1)
    np.testing.assert_allclose(got[..., :4], head * cos + rot * sin, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[..., 4:], x[..., 4:])


@pytest.mark.parametrize(
    ("props", "table", "message"),
    [
        ("interleaved = false, rotary_dim = 3", T, "rotary_dim 3 must be even"),
        ("interleaved = false, rotary_dim = 10", T, "rotary_dim 10 must be even"),
        (
            "interleaved = false, rotary_dim = 4",
            "tensor<1x1x8x8xf32>",
            "cos 1x1x8x8 does not broadcast to 2x4x8x4",
        ),
    ],
)
def test_partial_rope_verifier(props: str, table: str, message: str) -> None:
    with pytest.raises(LocatedVerifyError, match=f"bad.mlir:3:3: 'graph.rope': {message}"):
        parse_module(default_context(), rope_fn(props, table=table), "bad.mlir")


# Phi's attention head: the q projection's [B, S, H, D] transposed to [B, H, S, D], rope
# on the first 4 of 8 features, the rest passed through, and attention on the result
PHI_HEAD = """
func.func @main(%p: tensor<2x8x4x8xf32>, %c: tensor<1x1x8x4xf32>, %s: tensor<1x1x8x4xf32>) -> tensor<2x4x8x8xf32> {
  %q = graph.transpose %p {perm = [0, 2, 1, 3]} : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %rot = graph.slice %q {axes = [3], ends = [4], starts = [0], steps = [1]} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %pass = graph.slice %q {axes = [3], ends = [9223372036854775807], starts = [4], steps = [1]} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %qc = graph.mul %rot, %c : (tensor<2x4x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<2x4x8x4xf32>
  %lo = graph.slice %rot {axes = [3], ends = [2], starts = [0], steps = [1]} : tensor<2x4x8x4xf32> -> tensor<2x4x8x2xf32>
  %hi = graph.slice %rot {axes = [3], ends = [4], starts = [2], steps = [1]} : tensor<2x4x8x4xf32> -> tensor<2x4x8x2xf32>
  %nh = graph.neg %hi : tensor<2x4x8x2xf32>
  %turned = graph.concat %nh, %lo {axis = -1} : (tensor<2x4x8x2xf32>, tensor<2x4x8x2xf32>) -> tensor<2x4x8x4xf32>
  %ts = graph.mul %turned, %s : (tensor<2x4x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<2x4x8x4xf32>
  %roped = graph.add %qc, %ts : tensor<2x4x8x4xf32>
  %y = graph.concat %roped, %pass {axis = -1} : (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x8x8xf32>
  func.return %y : tensor<2x4x8x8xf32>
}"""


def test_graph_fusion_folds_partial_rotary_and_sinks_the_transpose() -> None:
    after = check_pass(
        PHI_HEAD,
        "graph-fusion{only=RotaryPositionEmbeddingFusionPass,PartialRotaryFusionPass,"
        "RopeTransposeSinkPass}",
    )
    module = parse_module(default_context(), after, "after.mlir")
    ropes = [op for op in module.walk() if isinstance(op, graph.RopeOp)]
    assert len(ropes) == 1
    p = graph.Props(ropes[0].properties, ropes[0].name)
    assert p.integer("rotary_dim") == 4
    # the rope reads the projection's BSND tensor; one transpose after it, no slice/concat
    assert ropes[0].input.type.get_shape() == (2, 8, 4, 8)  # type: ignore[attr-defined]
    names = [op.name for op in module.walk()]
    assert names.count("graph.transpose") == 1 and "graph.concat" not in names
    assert "graph.slice" not in names


def test_partial_rope_compiles_as_a_rows_kernel_and_checks(tmp_path: Path) -> None:
    """A partial rope is one generated rows kernel, no library op; --check compares the
    buffer level and the exported fused.onnx (Slice, rope, Concat) on ORT."""
    pytest.importorskip("onnxruntime")
    from autofusion.driver.compile import CompileOptions, compile_model

    path = tmp_path / "rope.mlir"
    path.write_text(rope_fn("interleaved = false, rotary_dim = 4"))
    c = compile_model(str(path), CompileOptions(chip="Ascend910B1", check=True))
    assert c.ub_result is not None and c.check is not None
    assert c.ub_result.library_ops == []
    assert c.fused is not None
    templates = [
        graph.Props(op.properties, op.name).text("template")
        for op in c.fused.walk()
        if isinstance(op, graph.FusionGroupOp)
    ]
    assert templates == ["rows"]
    checked = {r["what"]: r["ok"] for r in c.check["comparisons"]}
    assert checked == {
        "interpreter: fused graph": True,
        "interpreter: buffer kernels": True,
        "ONNX Runtime: fused.onnx vs interpreter": True,
    }


def partial_rope(x: str, table: str, props: str, elt: str) -> str:
    x, table = f"tensor<{x}x{elt}>", f"tensor<{table}x{elt}>"
    return f"""
func.func @main(%x: {x}, %c: {table}, %s: {table}) -> {x} {{
  %r = graph.rope %x, %c, %s {{{props}}} : ({x}, {table}, {table}) -> {x}
  func.return %r : {x}
}}"""


# (x, cos/sin table, rope properties): how the tables broadcast to the view's rows
CASES = {
    # Phi after the transpose sink: BSND, the table indexed by the position (mapped rows);
    # halves of 2 (8 bytes): rotated by Gather
    "bsnd": ("2x8x4x8", "1x8x1x4", "interleaved = false, rotary_dim = 4"),
    # BNSD with halves of 8 (32 bytes in float32): rotated by two copies within UB
    "aligned_halves": ("2x3x8x24", "1x1x8x16", "interleaved = false, rotary_dim = 16"),
    # per-row tables (a full narrow input), the pairs rotated (GPT-J)
    "interleaved": ("2x8x10", "2x8x4", "interleaved = true, rotary_dim = 4"),
    # dynamic batch and sequence: the table rows mapped at run time
    "dynamic": ("?x?x4x8", "1x?x1x4", "interleaved = false, rotary_dim = 4"),
    # a whole-row interleaved rope (GPT-J), for comparison
    "interleaved_full": ("2x8x8", "8x8", "interleaved = true"),
    # one table row for every row
    "one_row": ("3x5x12", "6", "interleaved = false, rotary_dim = 6"),
}


def lowered(text: str, chip: str) -> object:
    module = parse_module(default_context(), text, "rope.mlir")
    return apply_pipeline(module, f"set-target{{chip={chip}}},ub-fusion,lower-to-buffer")


def assert_rows_kernel(module: object) -> None:
    names = [op.name for op in module.walk()]  # type: ignore[attr-defined]
    assert names.count("buffer.kernel") == 1 and "graph.rope" not in names


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_partial_rope_kernel_equals_the_interpreter(case: str, elt: str) -> None:
    """Graph interpreter, buffer interpreter and (with g++) the emulated Ascend C agree."""
    text = partial_rope(*CASES[case], elt)
    graph_module = parse_module(default_context(), text, "rope.mlir")
    feeds = random_inputs(find_function(graph_module), 3)
    want = run_function(graph_module, feeds)["out0"].astype(np.float64)
    module = lowered(text, "Ascend910B1")
    assert_rows_kernel(module)
    tol = 1e-5 if elt == "f32" else 2e-3
    got = run_function(module, feeds)["out0"]
    np.testing.assert_allclose(got.astype(np.float64), want, tol, tol)
    if shutil.which("g++") is not None:
        emulated = run_function_emulated(module, feeds)["out0"]
        np.testing.assert_allclose(emulated.astype(np.float64), want, tol, tol)


@pytest.mark.parametrize("chip", ["Ascend910", "Ascend310P3"])
def test_partial_rope_on_chips_without_a2_gather(chip: str) -> None:
    """910 (no Gather: scalar moves; no DataCopyPad: 32-byte table rows) and 310P."""
    text = partial_rope("2x8x4x16", "1x8x1x8", "interleaved = false, rotary_dim = 8", "f32")
    graph_module = parse_module(default_context(), text, "rope.mlir")
    feeds = random_inputs(find_function(graph_module), 5)
    want = run_function(graph_module, feeds)["out0"]
    module = lowered(text, chip)
    assert_rows_kernel(module)
    names = {op.name for op in module.walk()}
    assert ("buffer.vgather" in names) == (chip == "Ascend310P3")
    np.testing.assert_allclose(run_function(module, feeds)["out0"], want, 1e-5, 1e-5)


def _plan(text: str, chip: str = "Ascend910B1") -> RowPlan | Refusal:
    f = find_function(parse_module(default_context(), text, "rope.mlir"))
    ops = [op for op in f.body.ops if not isinstance(op, func.ReturnOp)]
    outputs = [ops[-1].results[0]]
    spec = get_chip(chip)
    parts = GroupParts(ops, list(f.args), outputs)
    return plan_rows(parts, spec.ub_bytes, queue_slots(spec), spec.data_copy_pad)


def test_ub_budget_counts_the_narrow_tables() -> None:
    """Each table costs narrow_stride (R padded) float32 and queue elements per row of D
    columns; the kernel's table queues are a quarter of x's when R = D / 4."""
    text = partial_rope("2x8x4x64", "1x8x1x16", "interleaved = false, rotary_dim = 16", "f16")
    plan = _plan(text)
    assert isinstance(plan, RowPlan)
    assert plan.narrow_stride == 16 and plan.in_depth == 2 and plan.column_bytes_per_row == 0
    assert plan.narrow_bytes_per_row == 2 * 16 * (4 + 2 * 2)
    assert plan.max_table_rows == plan.max_tile_elems // 64
    assert plan.ub_bytes == (
        plan.tile_bytes_per_elem * plan.max_tile_elems
        + plan.narrow_bytes_per_row * plan.max_table_rows
    )
    module = lowered(text, "Ascend910B1")
    queues = [op for op in module.walk() if isinstance(op, buffer.AllocQueueOp)]
    sizes = sorted(op.max_bytes.value.data for op in queues)
    assert len(sizes) == 4 and sizes[0] == sizes[1] and sizes[0] * 4 == sizes[2] == sizes[3]


NEG_TABLE = """
func.func @main(%x: tensor<2x8x8xf32>, %c: tensor<8x4xf32>, %s: tensor<8x4xf32>) -> tensor<2x8x8xf32> {
  %n = graph.neg %c : tensor<8x4xf32>
  %r = graph.rope %x, %n, %s {interleaved = false, rotary_dim = 4} : (tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  func.return %r : tensor<2x8x8xf32>
}"""


def test_narrow_tables_are_inputs_read_by_partial_ropes_only() -> None:
    """A table computed in the kernel, or read there by another op, is refused by name:
    its [..., R] rows are not the view's D columns."""
    why = _plan(NEG_TABLE)
    assert isinstance(why, Refusal)
    assert why.reason == "a partial rope's cos must be a kernel input of rotary_dim 4 columns"
    f = find_function(parse_module(default_context(), NEG_TABLE, "rope.mlir"))
    neg, rope = list(f.body.ops)[:2]
    x, c, s = f.args
    # with the neg outside the group, its result is the rope's table
    assert narrow_tables([rope], [x, neg.results[0], s]) == {neg.results[0]: 4, s: 4}
    # the rope's cos table is also the neg's operand inside the group
    rope.operands[1] = c
    shared = narrow_tables([neg, rope], [x, c, s])
    assert shared == Refusal("graph.neg reads a partial rope's table as a full-width value")


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_hfusion_exports_a_partial_rope(elt: str) -> None:
    """The hfusion export slices x[..., :R], rotates it and concatenates x[..., R:]; its
    program runs to the graph's outputs. An interleaved one stays refused by name."""
    from autofusion.codegen.hfusion_export import Refusal as ExportRefusal
    from autofusion.codegen.hfusion_export import export_module, hfusion_text, run_export
    from autofusion.passes.ub_fusion import UbFusionPass

    text = partial_rope(*CASES["bsnd"][:2], "interleaved = false, rotary_dim = 4", elt)
    module = parse_module(default_context(), text, "rope.mlir")
    UbFusionPass().apply(default_context(), module)
    export = export_module(module, 8)
    text = hfusion_text(module, 8)
    assert text.count("tensor.extract_slice") == 4 and text.count("tensor.concat") == 2
    feeds = random_inputs(find_function(module), 1)
    want = run_function(module, feeds)["out0"].astype(np.float64)
    got = run_export(export, module, feeds, None)["out0"].astype(np.float64)
    tol = 1e-5 if elt == "f32" else 2e-3
    np.testing.assert_allclose(got, want, tol, tol)
    inter = parse_module(default_context(), partial_rope(*CASES["interleaved"], elt), "i.mlir")
    UbFusionPass().apply(default_context(), inter)
    with pytest.raises(ExportRefusal, match=r"graph\.rope: the interleaved form is not exported"):
        export_module(inter, 8)
