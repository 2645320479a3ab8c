"""The q/k/v split of a merged QKV projection folds into its readers (issue 15, point 1).

SplitSliceFusionPass makes the split one slice per part; the ropes join the projection
as its epilogue (rope_epilogue.py) and the BSND attention kernel reads its parts in place
(attention_views.py: token rows as wide as the projection's output). The fused graph,
its buffer-level kernels and their emulated Ascend C compute what the original does.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import buffer, graph
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

B, S, HQ, HKV, D = 2, 40, 4, 2, 16
HIDDEN, WIDTH = 32, (HQ + 2 * HKV) * D

QKV = f"""
func.func @qkv(%x: tensor<{B}x{S}x{HIDDEN}xf16>, %w: tensor<{HIDDEN}x{WIDTH}xf16>, %cos: tensor<{S}x1x{D}xf16>, %sin: tensor<{S}x1x{D}xf16>) -> tensor<{B}x{S}x{HQ}x{D}xf16> {{
  %qkv = graph.matmul %x, %w : (tensor<{B}x{S}x{HIDDEN}xf16>, tensor<{HIDDEN}x{WIDTH}xf16>) -> tensor<{B}x{S}x{WIDTH}xf16>
  %q, %k, %v = graph.split %qkv {{axis = 2, sizes = [{HQ * D}, {HKV * D}, {HKV * D}]}} : tensor<{B}x{S}x{WIDTH}xf16> -> (tensor<{B}x{S}x{HQ * D}xf16>, tensor<{B}x{S}x{HKV * D}xf16>, tensor<{B}x{S}x{HKV * D}xf16>)
  %q4 = graph.reshape %q {{shape = [0, 0, {HQ}, {D}]}} : tensor<{B}x{S}x{HQ * D}xf16> -> tensor<{B}x{S}x{HQ}x{D}xf16>
  %k4 = graph.reshape %k {{shape = [0, 0, {HKV}, {D}]}} : tensor<{B}x{S}x{HKV * D}xf16> -> tensor<{B}x{S}x{HKV}x{D}xf16>
  %v4 = graph.reshape %v {{shape = [0, 0, {HKV}, {D}]}} : tensor<{B}x{S}x{HKV * D}xf16> -> tensor<{B}x{S}x{HKV}x{D}xf16>
ROPE
  %o = graph.flash_attention Q, K, %v4 {{scale = 0.25 : f32, causal = true, layout = "BSND"}} : (tensor<{B}x{S}x{HQ}x{D}xf16>, tensor<{B}x{S}x{HKV}x{D}xf16>, tensor<{B}x{S}x{HKV}x{D}xf16>) -> tensor<{B}x{S}x{HQ}x{D}xf16>
  func.return %o : tensor<{B}x{S}x{HQ}x{D}xf16>
}}
"""

ROPE = f"""
  %qr = graph.rope %q4, %cos, %sin {{interleaved = false}} : (tensor<{B}x{S}x{HQ}x{D}xf16>, tensor<{S}x1x{D}xf16>, tensor<{S}x1x{D}xf16>) -> tensor<{B}x{S}x{HQ}x{D}xf16>
  %kr = graph.rope %k4, %cos, %sin {{interleaved = false}} : (tensor<{B}x{S}x{HKV}x{D}xf16>, tensor<{S}x1x{D}xf16>, tensor<{S}x1x{D}xf16>) -> tensor<{B}x{S}x{HKV}x{D}xf16>"""


def layer(rope: bool) -> str:
    """The projection, its split and attention; with rope on q and k or without."""
    if rope:
        return QKV.replace("ROPE", ROPE).replace("Q, K,", "%qr, %kr,")
    return QKV.replace("ROPE", "").replace("Q, K,", "%q4, %k4,")


def feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(15)
    return {
        "arg0": (rng.standard_normal((B, S, HIDDEN)) * 0.5).astype(np.float16),
        "arg1": (rng.standard_normal((HIDDEN, WIDTH)) * 0.3).astype(np.float16),
        "arg2": rng.standard_normal((S, 1, D)).astype(np.float16),
        "arg3": rng.standard_normal((S, 1, D)).astype(np.float16),
    }


def fused(text: str) -> ModuleOp:
    module = parse_module(default_context(), text, "qkv.mlir")
    return apply_pipeline(module, "set-target{chip=Ascend910B1},split-fusion,ub-fusion")


def attention_group(module: ModuleOp) -> graph.FusionGroupOp:
    groups = [
        g
        for g in module.walk()
        if isinstance(g, graph.FusionGroupOp)
        and any(isinstance(o, graph.FlashAttentionOp) for o in g.walk())
    ]
    assert len(groups) == 1
    return groups[0]


@pytest.mark.parametrize("rope", [True, False])
def test_split_folds_into_its_readers(rope: bool) -> None:
    """No split and no copy kernel: without rope the attention reads q, k and v as slices
    of the projection's output; with rope the projection takes the ropes as its epilogue
    and writes q, k and v (v's slice moves to it: fusion/view_placement.py)."""
    module = fused(layer(rope))
    assert not [op for op in module.walk() if isinstance(op, graph.SplitOp)]
    groups = [g for g in module.walk() if isinstance(g, graph.FusionGroupOp)]
    assert len(groups) == 2
    for g in groups:
        body = [o for o in g.walk() if o is not g and not isinstance(o, graph.YieldOp)]
        assert not all(isinstance(o, graph.SliceOp | graph.ReshapeOp) for o in body)
    slices = [o for o in attention_group(module).walk() if isinstance(o, graph.SliceOp)]
    assert len(slices) == (0 if rope else 3)


@pytest.mark.parametrize("rope", [True, False])
def test_fused_and_buffer_level_equal_the_interpreter(rope: bool) -> None:
    text = layer(rope)
    inputs = feeds()
    want = run_function(parse_module(default_context(), text, "qkv.mlir"), inputs)
    module = fused(text)
    got = run_function(module, inputs)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    lowered = apply_pipeline(module, "lower-to-buffer")
    kernels = {k.sym_name.data: k for k in lowered.walk() if isinstance(k, buffer.KernelOp)}
    attention = [k for k in kernels.values() if k.template.data == "attention"]
    # q, k and v come from one GM tensor without rope; with rope q and k are the ropes'
    assert len(attention) == 1 and attention[0].num_inputs.value.data == (3 if rope else 1)
    got = run_function(lowered, inputs)
    for key in want:
        w, g = np.asarray(want[key], np.float64), np.asarray(got[key], np.float64)
        assert np.abs(w - g).max() <= 2e-3, key  # f16 rounding of q, k and the output


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize("rope", [True, False])
def test_emulated_equals_the_buffer_level(rope: bool) -> None:
    """The generated Ascend C reads the strided views as the buffer interpreter does."""
    lowered = apply_pipeline(fused(layer(rope)), "lower-to-buffer")
    inputs = feeds()
    want, got = run_function(lowered, inputs), run_function_emulated(lowered, inputs)
    for key in want:
        w, g = np.asarray(want[key], np.float64), np.asarray(got[key], np.float64)
        assert np.abs(w - g).max() <= 1e-3, key  # one f16 ulp of the output
