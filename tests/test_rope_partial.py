"""Partial rotary (graph.rope's rotary_dim, Phi): its semantics, verifier, recognition
from slice/rope/concat, the transpose sink through it, its buffer-level form and export."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from autofusion.diagnostics import LocatedVerifyError
from autofusion.dialects import graph
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

sys.path.insert(0, str(Path(__file__).resolve().parent))
from differential import check_pass

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


def test_partial_rope_compiles_as_a_library_op_and_checks(tmp_path: Path) -> None:
    """The rows kernel refuses rotary_dim by name; the op stays a library op, and --check
    compares the buffer level and the exported fused.onnx (Slice, rope, Concat) on ORT."""
    pytest.importorskip("onnxruntime")
    from autofusion.driver.compile import CompileOptions, compile_model

    path = tmp_path / "rope.mlir"
    path.write_text(rope_fn("interleaved = false, rotary_dim = 4"))
    c = compile_model(str(path), CompileOptions(chip="Ascend910B1", check=True))
    assert c.ub_result is not None and c.check is not None
    reasons = [why for op, why in c.ub_result.library_ops if isinstance(op, graph.RopeOp)]
    assert reasons == ["graph.rope with rotary_dim: the rows kernel rotates whole rows only"]
    checked = {r["what"]: r["ok"] for r in c.check["comparisons"]}
    assert checked == {
        "interpreter: fused graph": True,
        "interpreter: buffer kernels": True,
        "ONNX Runtime: fused.onnx vs interpreter": True,
    }
