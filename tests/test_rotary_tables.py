"""The rotary cos/sin tables as one generated vector kernel.

sin and cos are built from basic vector calls (lowering/row_trig.py); the kernel is
compared with the graph interpreter (numpy's sin/cos) at the buffer level and through the
emulated Ascend C, over angles of thousands of radians (a 4k-token prefill) and negative
ones, where the range reduction matters. The Llama layer's tables then need no cube op,
concat or library cos/sin.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import graph
from autofusion.driver.compile import compile_model
from autofusion.driver.pipeline import CompileOptions
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

ROOT = Path(__file__).resolve().parents[1]

TABLES = """
func.func @tables(%pos: tensor<?x1xf32>) -> (tensor<?x8xT>, tensor<?x8xT>) {
  %g:2 = graph.fusion_group (%p = %pos : tensor<?x1xf32>) -> (tensor<?x8xT>, tensor<?x8xT>) {
    %f = graph.constant dense<[[1.0, 0.1, 0.01, 0.001, 1.0, 0.1, 0.01, 0.001]]> : tensor<1x8xf32>
    %emb = graph.mul %p, %f : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
    %c = graph.cos %emb : tensor<?x8xf32>
    %s = graph.sin %emb : tensor<?x8xf32>
CASTS
    graph.yield %cy, %sy : tensor<?x8xT>, tensor<?x8xT>
  }
  func.return %g#0, %g#1 : tensor<?x8xT>, tensor<?x8xT>
}
"""


def tables(elt: str) -> str:
    if elt == "f32":
        casts = (
            "    %cy = graph.mul %c, %f : (tensor<?x8xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>\n"
        )
        casts += "    %sy = graph.neg %s : tensor<?x8xf32>"
    else:
        casts = f"    %cy = graph.cast %c : tensor<?x8xf32> -> tensor<?x8x{elt}>\n"
        casts += f"    %sy = graph.cast %s : tensor<?x8xf32> -> tensor<?x8x{elt}>"
    return TABLES.replace("CASTS", casts).replace("xT>", f"x{elt}>")


def positions() -> np.ndarray:
    far = np.arange(0, 4099, dtype=np.float64)
    negative = -np.arange(1, 200) * 7.3
    return np.concatenate([far, negative]).astype(np.float32).reshape(-1, 1)


def lowered(text: str) -> ModuleOp:
    module = parse_module(default_context(), text, "tables.mlir")
    return apply_pipeline(module, "set-target{chip=Ascend910B1},lower-to-buffer")


@pytest.mark.parametrize(("elt", "tolerance"), [("f32", 4e-7), ("f16", 4.9e-4)])
def test_sin_cos_kernel_matches_numpy(elt: str, tolerance: float) -> None:
    """Buffer level: within float32 rounding (f32), or one f16 ulp near 1 (f16)."""
    text = tables(elt)
    feeds = {"arg0": positions()}
    want = run_function(parse_module(default_context(), text, "tables.mlir"), feeds)
    got = run_function(lowered(text), feeds)
    for key in want:
        w, g = np.asarray(want[key], np.float64), np.asarray(got[key], np.float64)
        assert np.abs(w - g).max() <= tolerance, key


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
def test_sin_cos_emulated_equals_the_buffer_level() -> None:
    """The generated Ascend C (Casts to int32 for rint/floor, Muls/Adds/Mul/Add) computes
    what the buffer interpreter does."""
    module = lowered(tables("f32"))
    feeds = {"arg0": positions()}
    want, got = run_function(module, feeds), run_function_emulated(module, feeds)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=0, atol=2e-7, err_msg=key)


def test_llama_tables_are_one_vector_kernel() -> None:
    """examples/llama_layer.afc: pos @ inv_freq, the concat, cos, sin and their casts
    end up in one rows kernel; no matmul reads inv_freq and no cos/sin/concat is left
    outside a kernel."""
    result = compile_model(
        str(ROOT / "examples" / "llama_layer.afc"), CompileOptions(), None, "ub-fusion"
    )
    fused = result.fused
    assert fused is not None
    outside = [op for op in fused.walk() if not _inside_group(op)]
    assert not [op for op in outside if isinstance(op, (graph.CosOp, graph.SinOp))]
    assert not [op for op in outside if isinstance(op, graph.ConcatOp)]
    groups = [op for op in fused.walk() if isinstance(op, graph.FusionGroupOp)]
    table = [g for g in groups if any(isinstance(o, graph.CosOp) for o in g.walk())]
    assert len(table) == 1
    body = [type(o) for o in table[0].walk() if not isinstance(o, graph.FusionGroupOp)]
    assert graph.SinOp in body and graph.MulOp in body and graph.MatmulOp not in body


def _inside_group(op: object) -> bool:
    parent = getattr(op, "parent_op", lambda: None)()
    while parent is not None:
        if isinstance(parent, graph.FusionGroupOp):
            return True
        parent = parent.parent_op()
    return False


ROPE = """
func.func @rope(%x: tensor<?x3x8xT>, %cos: tensor<?x1x8xT>, %sin: tensor<?x1x8xT>) -> tensor<?x3x8xT> {
  %g = graph.fusion_group (%xx = %x : tensor<?x3x8xT>, %cc = %cos : tensor<?x1x8xT>, %ss = %sin : tensor<?x1x8xT>) -> tensor<?x3x8xT> {
    %y = graph.rope %xx, %cc, %ss {interleaved = false} : (tensor<?x3x8xT>, tensor<?x1x8xT>, tensor<?x1x8xT>) -> tensor<?x3x8xT>
    graph.yield %y : tensor<?x3x8xT>
  }
  func.return %g : tensor<?x3x8xT>
}
"""


def rope_feeds(rows: int, elt: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(rows)
    dtype = np.float32 if elt == "f32" else np.float16
    return {
        "arg0": rng.standard_normal((rows, 3, 8)).astype(dtype),
        "arg1": rng.standard_normal((rows, 1, 8)).astype(dtype),
        "arg2": rng.standard_normal((rows, 1, 8)).astype(dtype),
    }


@pytest.mark.parametrize(
    ("chip", "elt"), [("Ascend910B1", "f32"), ("Ascend910B1", "f16"), ("Ascend910", "f32")]
)
def test_rope_with_unaligned_halves(chip: str, elt: str) -> None:
    """Head dim 8 (halves of 16 bytes): a rows kernel rotating by Gather (by the scalar
    unit on 910, whose rows must be 32-byte multiples: f32), not a library op; the buffer
    level equals the graph level."""
    text = ROPE.replace("xT>", f"x{elt}>")
    module = apply_pipeline(
        parse_module(default_context(), text, "rope.mlir"),
        f"set-target{{chip={chip}}},lower-to-buffer",
    )
    names = {op.name for op in module.walk()}
    assert ("buffer.vgather" in names) == (chip == "Ascend910B1")
    tol = 2e-6 if elt == "f32" else 2e-3
    for rows in (1, 5, 700):
        feeds = rope_feeds(rows, elt)
        want = run_function(parse_module(default_context(), text, "rope.mlir"), feeds)
        got = run_function(module, feeds)
        np.testing.assert_allclose(
            np.asarray(got["out0"], np.float64), np.asarray(want["out0"], np.float64), tol, tol
        )


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
def test_rope_gather_emulated() -> None:
    """The emitted Gather (uint32 byte offsets) rotates as the buffer interpreter does."""
    text = ROPE.replace("xT>", "xf16>")
    module = apply_pipeline(
        parse_module(default_context(), text, "rope.mlir"),
        "set-target{chip=Ascend910B1},lower-to-buffer",
    )
    for rows in (1, 700):
        feeds = rope_feeds(rows, "f16")
        want, got = run_function(module, feeds), run_function_emulated(module, feeds)
        np.testing.assert_array_equal(got["out0"], want["out0"])
