"""Channel-major transposes folded into the rows kernel (autofusion/lowering/row_transpose.py):
ConvNeXt's NCHW -> NHWC before its LayerNorm and NHWC -> NCHW before its residual add
become the kernel's addressing. Each case is run before fusion, after ub-fusion, at the
buffer level and (with g++) as emulated Ascend C, and must agree.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.dialects import buffer, graph
from autofusion.interpreter import find_function, run_function
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.row_tiling import TileBudget, rows_tiling
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline, assert_close

TOLERANCE = {"f32": (2e-5, 2e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}


def T(shape: tuple[int, ...], e: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{e}>"


def norm_sandwich(e: str, n: int = 2, c: int = 8, h: int = 4, w: int = 6) -> str:
    """ConvNeXt's channels-first LayerNorm: NCHW -> NHWC, norm over C, back to NCHW; the
    NHWC norm is also a result (the block's residual in the stem)."""
    x, y, v = T((n, c, h, w), e), T((n, h, w, c), e), T((c,), e)
    return f"""
func.func @main(%x: {x}, %g: {v}, %b: {v}) -> ({x}, {y}) {{
  %t = graph.transpose %x {{perm = [0, 2, 3, 1]}} : {x} -> {y}
  %n = graph.layer_norm %t, %g, %b {{axis = -1, epsilon = 1.0e-06}} : ({y}, {v}, {v}) -> {y}
  %r = graph.transpose %n {{perm = [0, 3, 1, 2]}} : {y} -> {x}
  func.return %r, %n : {x}, {y}
}}"""


def scale_residual(e: str, n: int = 200, c: int = 8, h: int = 1, w: int = 3) -> str:
    """A ConvNeXt block's end: layer scale in NHWC written back as NCHW (no reduction, so
    only the transpose makes the tiles hold whole rows: 3 pixels, tiles of several
    images), then the residual add in NCHW, a kernel of its own."""
    x, y, v = T((n, c, h, w), e), T((n, h, w, c), e), T((c,), e)
    return f"""
func.func @main(%f: {y}, %s: {v}, %res: {x}) -> {x} {{
  %m = graph.mul %f, %s : ({y}, {v}) -> {y}
  %t = graph.transpose %m {{perm = [0, 3, 1, 2]}} : {y} -> {x}
  %o = graph.add %res, %t : {x}
  func.return %o : {x}
}}"""


def tokens_norm(e: str, n: int = 2, c: int = 16, p: int = 50) -> str:
    """Rank 3 [B, C, P] -> [B, P, C] (a ViT-style patch flatten) into a LayerNorm and a
    GELU: 50 pixels per image, tiles of a divisor of 50 rows."""
    x, y, v = T((n, c, p), e), T((n, p, c), e), T((c,), e)
    return f"""
func.func @main(%x: {x}, %g: {v}, %b: {v}) -> {y} {{
  %t = graph.transpose %x {{perm = [0, 2, 1]}} : {x} -> {y}
  %n = graph.layer_norm %t, %g, %b {{axis = -1, epsilon = 1.0e-05}} : ({y}, {v}, {v}) -> {y}
  %a = graph.gelu %n {{approximate = "none"}} : {y}
  func.return %a : {y}
}}"""


CASES = {
    "norm_sandwich": norm_sandwich,
    "scale_residual": scale_residual,
    "tokens_norm": tokens_norm,
}
KERNELS = {"norm_sandwich": 1, "scale_residual": 2, "tokens_norm": 1}


def feeds(module: ModuleOp, seed: int) -> dict[str, np.ndarray]:
    f = find_function(module)
    rng = np.random.default_rng(seed)
    return {
        f"arg{i}": dtypes.to_storage(rng.standard_normal(t.get_shape()), t.element_type)
        for i, t in enumerate(f.function_type.inputs.data)
    }


def fused_and_lowered(text: str, chip: str = "Ascend910B1") -> tuple[ModuleOp, ModuleOp, str]:
    ctx = default_context()
    fused = apply_pipeline(
        parse_module(ctx, text, "t.mlir"), f"set-target{{chip={chip}}},ub-fusion"
    )
    lowered = apply_pipeline(fused.clone(), "lower-to-buffer")
    return fused, lowered, module_to_text(ctx, fused)


def outside_transposes(module: ModuleOp) -> int:
    f = find_function(module)
    return sum(isinstance(op, graph.TransposeOp) for op in f.body.ops)


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_transposes_fold_into_one_rows_kernel(case: str, elt: str) -> None:
    text = CASES[case](elt)
    ctx = default_context()
    before = parse_module(ctx, text, "before.mlir")
    inputs = feeds(before, seed=len(case))
    fused, lowered, _ = fused_and_lowered(text)
    assert outside_transposes(before) > 0
    assert outside_transposes(fused) == 0
    f = find_function(fused)
    assert sum(isinstance(op, graph.FusionGroupOp) for op in f.body.ops) == KERNELS[case]
    want = run_function(before, inputs)
    assert_close(run_function(fused, inputs), want, *TOLERANCE[elt])
    assert_close(run_function(lowered, inputs), want, *TOLERANCE[elt])


def test_the_kernel_copies_runs_and_gathers() -> None:
    """Per image run: one strided copy of C blocks in, one Gather each way."""
    _, lowered, _ = fused_and_lowered(norm_sandwich("f16"))
    (kernel,) = (op for op in lowered.ops if isinstance(op, buffer.KernelOp))
    gathers = [op for op in kernel.walk() if isinstance(op, buffer.VGatherOp)]
    assert len(gathers) == 2


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize(("case", "elt"), [("norm_sandwich", "f16"), ("scale_residual", "f32")])
def test_emulated_kernel_equals_the_interpreter(case: str, elt: str) -> None:
    from autofusion.codegen.emulate import run_function_emulated

    text = CASES[case](elt)
    before = parse_module(default_context(), text, "before.mlir")
    inputs = feeds(before, seed=3)
    _, lowered, _ = fused_and_lowered(text)
    assert_close(
        run_function_emulated(lowered, inputs), run_function(before, inputs), *TOLERANCE[elt]
    )


@pytest.mark.parametrize("chip", ["Ascend910", "Ascend310P3"])
def test_chips_without_data_copy_pad_keep_the_transposes(chip: str) -> None:
    fused, _, _ = fused_and_lowered(norm_sandwich("f16"), chip)
    assert outside_transposes(fused) == 2


def test_a_transpose_that_keeps_the_innermost_axis_stays_a_library_op() -> None:
    y, x = T((2, 4, 6, 8), "f32"), T((2, 6, 4, 8), "f32")
    text = f"""
func.func @main(%x: {y}) -> {x} {{
  %e = graph.exp %x : {y}
  %t = graph.transpose %e {{perm = [0, 2, 1, 3]}} : {y} -> {x}
  func.return %t : {x}
}}"""
    fused, _, _ = fused_and_lowered(text)
    assert outside_transposes(fused) == 1


@pytest.mark.parametrize("pixels", [1, 3, 6, 50, 3136])
@pytest.mark.parametrize("rows_per_tile", [1, 2, 5, 7, 15, 64, 300])
def test_tiles_hold_whole_image_runs(pixels: int, rows_per_tile: int) -> None:
    """The tile's rows divide the image's pixels or are a multiple of them, and no more
    than the tiling without images would take."""
    cols, cores = 8, 4
    budget = TileBudget(rows_per_tile * cols, cols, True, pixels)
    rows = 7 * pixels
    t = rows_tiling(IntOps(), rows, cols, budget, cores)
    plain = rows_tiling(IntOps(), rows, cols, TileBudget(rows_per_tile * cols, cols, True), cores)
    assert 1 <= t.tile_rows <= plain.tile_rows
    assert pixels % t.tile_rows == 0 or t.tile_rows % pixels == 0
    assert t.tiles * t.tile_rows >= rows
