"""The q/k/v split of a merged QKV projection folds into its readers with a dynamic
batch and sequence (issue 15, point 1: examples/llama_layer.afc takes x: f16[B, S, 32]).

A part's token rows are the static width of the projection's output apart; only their
count is dynamic. The rope kernels read their part as a strided view whose leading
dynamic dims are one contiguous block (row_views.Strided), the kernel taking their
runtime sizes from the projection's output; the BSND attention reads v's columns
(attention_views.py). B and S differ in every run here, so a kernel that took one for
the other would be caught (afc compile --check gives every dynamic dim one size).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f16
from xdsl.utils.test_value import create_ssa_value

from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import buffer, graph
from autofusion.dialects.shape_inference import DYN
from autofusion.interpreter import run_function
from autofusion.lowering.row_views import InputView, Strided, input_view
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

LAYER = """
func.func @qkv(%qkv: tensor<?x?x64xf16>, %cos: tensor<?x1x8xf16>, %sin: tensor<?x1x8xf16>) -> tensor<?x?x4x8xf16> {
  %q, %k, %v = graph.split %qkv {axis = 2, sizes = [32, 16, 16]} : tensor<?x?x64xf16> -> (tensor<?x?x32xf16>, tensor<?x?x16xf16>, tensor<?x?x16xf16>)
  %q4 = graph.reshape %q {shape = [0, 0, 4, 8]} : tensor<?x?x32xf16> -> tensor<?x?x4x8xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<?x?x4x8xf16>, tensor<?x1x8xf16>, tensor<?x1x8xf16>) -> tensor<?x?x4x8xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 8]} : tensor<?x?x16xf16> -> tensor<?x?x2x8xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<?x?x2x8xf16>, tensor<?x1x8xf16>, tensor<?x1x8xf16>) -> tensor<?x?x2x8xf16>
  %v4 = graph.reshape %v {shape = [0, 0, 2, 8]} : tensor<?x?x16xf16> -> tensor<?x?x2x8xf16>
  %o = graph.flash_attention %qr, %kr, %v4 {scale = 0.35355339 : f32, causal = true, layout = "BSND"} : (tensor<?x?x4x8xf16>, tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>) -> tensor<?x?x4x8xf16>
  func.return %o : tensor<?x?x4x8xf16>
}
"""

# a view kernel alone: the q columns of [B, S, 64], as a copy kernel of its own
COPY = """
func.func @copy(%x: tensor<?x?x64xf16>) -> tensor<?x?x4x8xf16> {
  %q = graph.slice %x {axes = [2], ends = [40], starts = [8], steps = [1]} : (tensor<?x?x64xf16>) -> tensor<?x?x32xf16>
  %q4 = graph.reshape %q {shape = [0, 0, 4, 8]} : tensor<?x?x32xf16> -> tensor<?x?x4x8xf16>
  func.return %q4 : tensor<?x?x4x8xf16>
}
"""

SIZES = [(2, 40), (3, 1), (1, 7)]


def feeds(b: int, s: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(b * 100 + s)
    return {
        "arg0": (rng.standard_normal((b, s, 64)) * 0.5).astype(np.float16),
        "arg1": rng.standard_normal((s, 1, 8)).astype(np.float16),
        "arg2": rng.standard_normal((s, 1, 8)).astype(np.float16),
    }


def fused(text: str) -> ModuleOp:
    module = parse_module(default_context(), text, "qkv.mlir")
    return apply_pipeline(module, "set-target{chip=Ascend910B1},split-fusion,ub-fusion")


def test_split_folds_with_dynamic_token_dims() -> None:
    """No split and no copy kernel: two ropes and the attention read the projection."""
    module = fused(LAYER)
    assert not [op for op in module.walk() if isinstance(op, graph.SplitOp)]
    groups = [g for g in module.walk() if isinstance(g, graph.FusionGroupOp)]
    assert len(groups) == 3
    for g in groups:
        assert str(g.operands[0].type) == "tensor<?x?x64xf16>"


@pytest.mark.parametrize(("b", "s"), SIZES)
def test_fused_and_buffer_level_equal_the_interpreter(b: int, s: int) -> None:
    inputs = feeds(b, s)
    want = run_function(parse_module(default_context(), LAYER, "qkv.mlir"), inputs)
    module = fused(LAYER)
    got = run_function(module, inputs)
    np.testing.assert_array_equal(got["out0"], want["out0"])
    lowered = apply_pipeline(module, "lower-to-buffer")
    got = run_function(lowered, inputs)
    assert got["out0"].shape == (b, s, 4, 8)
    w, g = np.asarray(want["out0"], np.float64), np.asarray(got["out0"], np.float64)
    assert np.abs(w - g).max() <= 2e-3  # f16 rounding of q, k and the output


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
def test_emulated_equals_the_buffer_level() -> None:
    """The generated Ascend C reads the dynamic strided views as the buffer level does."""
    lowered = apply_pipeline(fused(LAYER), "lower-to-buffer")
    for b, s in SIZES[:2]:
        inputs = feeds(b, s)
        want, got = run_function(lowered, inputs), run_function_emulated(lowered, inputs)
        np.testing.assert_array_equal(got["out0"], want["out0"])


def test_copy_kernel_of_a_dynamic_view() -> None:
    """A view with dynamic B and S alone is a rows copy kernel (not a library op) whose
    output has the source's B and S."""
    module = parse_module(default_context(), COPY, "copy.mlir")
    lowered = apply_pipeline(module, "set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer")
    assert [k.template.data for k in lowered.walk() if isinstance(k, buffer.KernelOp)] == ["rows"]
    x = np.arange(3 * 5 * 64, dtype=np.float32).astype(np.float16).reshape(3, 5, 64)
    got = run_function(lowered, {"arg0": x})["out0"]
    np.testing.assert_array_equal(got, x[:, :, 8:40].reshape(3, 5, 4, 8))


def test_strided_views_of_leading_dynamic_dims() -> None:
    """[B, S, 64]: B is contiguous over S (stride DYN), S's rows 64 apart; q's 4 heads of
    8 columns are rows of the view split before the head dim, read with two strides."""
    base = Strided.contiguous([DYN, DYN, 64])
    assert base == Strided((DYN, DYN, 64), (DYN, 64, 1))
    assert Strided.contiguous([DYN, 4, DYN]) is None
    heads = base.reshaped([DYN, DYN, 8, 8])
    assert heads == Strided((DYN, DYN, 8, 8), (DYN, 64, 8, 1))
    # the reshape may not merge or split the dynamic dims: the kernel reads their sizes
    # from the source one by one
    assert base.reshaped([DYN, 64]) is None
    assert base.reshaped([DYN, DYN, DYN, 8]) is None
    source = create_ssa_value(TensorType(f16, [DYN, DYN, 64]))
    q = Strided((DYN, DYN, 4, 8), (DYN, 64, 8, 1), 8)  # columns 8..40 as 4 heads
    found = input_view(source, q, (DYN, DYN, 4, 8), 3)
    assert found == InputView(source, offset=8, run=4, row_stride=8, run_stride=64)
