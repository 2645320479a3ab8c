"""The rope epilogue on a merged QKV matmul (lowering/rope_epilogue.py): q and k are
rotated on their column ranges of one matmul's output, v is written as it is, each to
its own tensor, by one matmul kernel; against the interpreter at the buffer level with
and without a bias, and as Ascend C compiled with g++ and emulated. On 910B1 only: the
chips without DataCopyPad keep the column slices as library ops, so there the ropes
never meet the matmul."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from test_rope_epilogue import emulated_matches, fused_matches, small_tiles  # noqa: F401

from autofusion import dtypes
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline


def T(shape: tuple[int, ...], elt: str) -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}x{elt}>"


def merged_qkv(
    rows: tuple[int, int], k: int, heads: tuple[int, int], d: int, elt: str, bias: bool | str
) -> str:
    """x[B, S, k] @ w[k, (hq + 2 hkv) d] (+ bias), sliced into q, k and v, reshaped to
    heads; q and k roped with [S, D] tables, v returned as it is. bias = "add": the bias
    is a graph.add after the matmul (as the norm prologue's rewrite leaves it), which
    the ropes read their columns through (rope_epilogue.product_chain)."""
    hq, hkv = heads
    n = (hq + 2 * hkv) * d
    b, s = rows
    x, w, y = T((b, s, k), elt), T((k, n), elt), T((b, s, n), elt)
    tab = T((s, d), elt)
    qs, ks = T((b, s, hq * d), elt), T((b, s, hkv * d), elt)
    q4, k4 = T((b, s, hq, d), elt), T((b, s, hkv, d), elt)
    fold = bias is True
    operands = "%x, %w, %b" if fold else "%x, %w"
    types = f"{x}, {w}, {T((n,), elt)}" if fold else f"{x}, {w}"
    bias_arg = f", %b: {T((n,), elt)}" if bias else ""

    def cut(name: str, start: int, stop: int, t: str) -> str:
        return (
            f"%{name} = graph.slice %y {{starts = [{start}], ends = [{stop}], axes = [-1], "
            f"steps = [1]}} : {y} -> {t}"
        )

    qn, kn = hq * d, hkv * d
    product = f"%y = graph.matmul {operands} : ({types}) -> {y}"
    if bias == "add":
        product = (
            f"%p = graph.matmul {operands} : ({types}) -> {y}\n"
            f"  %y = graph.add %p, %b : ({y}, {T((n,), elt)}) -> {y}"
        )
    return f"""
func.func @main(%x: {x}, %w: {w}{bias_arg}, %cos: {tab}, %sin: {tab}) -> ({q4}, {k4}, {k4}) {{
  {product}
  {cut("q", 0, qn, qs)}
  {cut("k", qn, qn + kn, ks)}
  {cut("v", qn + kn, n, ks)}
  %q4 = graph.reshape %q {{shape = [0, 0, {hq}, {d}]}} : {qs} -> {q4}
  %k4 = graph.reshape %k {{shape = [0, 0, {hkv}, {d}]}} : {ks} -> {k4}
  %v4 = graph.reshape %v {{shape = [0, 0, {hkv}, {d}]}} : {ks} -> {k4}
{rope_tail(s, d, q4, k4, elt)}"""


def rope_tail(s: int, d: int, q4: str, k4: str, elt: str) -> str:
    """The function's end after %q4, %k4 and %v4 (its q, k and v heads, of types q4, k4
    and k4): the [s, d] tables' head reshapes, q and k roped, q, k and v returned."""
    tab, tab4 = T((s, d), elt), T((1, s, 1, d), elt)
    return f"""  %c4 = graph.reshape %cos {{shape = [1, {s}, 1, {d}]}} : {tab} -> {tab4}
  %s4 = graph.reshape %sin {{shape = [1, {s}, 1, {d}]}} : {tab} -> {tab4}
  %qr = graph.rope %q4, %c4, %s4 {{interleaved = false}} : ({q4}, {tab4}, {tab4}) -> {q4}
  %kr = graph.rope %k4, %c4, %s4 {{interleaved = false}} : ({k4}, {tab4}, {tab4}) -> {k4}
  func.return %qr, %kr, %v4 : {q4}, {k4}, {k4}
}}"""


@pytest.mark.usefixtures("small_tiles")
@pytest.mark.parametrize(("chip", "elt"), [("Ascend910B1", "f16"), ("Ascend910B1", "f32")])
@pytest.mark.parametrize("bias", [False, True, "add"])
@pytest.mark.parametrize(("heads", "d"), [((4, 2), 16), ((2, 1), 32), ((3, 1), 16)])
def test_merged_qkv_ropes_run_in_one_kernel(
    chip: str, elt: str, bias: bool | str, heads: tuple[int, int], d: int
) -> None:
    ir = fused_matches(merged_qkv((2, 20), 32, heads, d, elt, bias), chip, elt)
    # the product's columns go to three outputs, each taking its own range of a tile
    assert ir.count("scf.if") >= 3


@pytest.mark.usefixtures("small_tiles")
def test_ranges_that_split_a_tile() -> None:
    """800 rows keep every core busy with whole 32-column tiles, so the tile [32, 64)
    holds q's last head and k's only one: each output takes its part of it."""
    fused_matches(merged_qkv((2, 400), 32, (3, 1), 16, "f16", True), "Ascend910B1", "f16")


def test_merged_qkv_with_the_chips_own_tiles() -> None:
    """Tiles wider than a range: one N tile holds q, k and v columns."""
    ir = fused_matches(merged_qkv((1, 40), 32, (4, 2), 32, "f16", True), "Ascend910B1", "f16")
    assert ir.count("buffer.vgather") == 1


@pytest.mark.usefixtures("small_tiles")
@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize("chip", ["Ascend910B1"])
@pytest.mark.parametrize("bias", [True, "add"])
def test_merged_qkv_ascendc_matches_the_graph(chip: str, bias: bool | str) -> None:
    """The kernel's Ascend C, emulated, with a bias (applied before the rope), in the
    matmul or as an add the ropes read through."""
    text = merged_qkv((2, 20), 32, (4, 2), 16, "f16", bias)
    emulated_matches(text, chip, [(2, 20, 32), (32, 128), (128,), (20, 16), (20, 16)], 5)


def test_attention_reads_what_the_projection_writes() -> None:
    """The QKV matmul with its rope epilogue and v's slice (moved to it from the
    attention: fusion/view_placement.py), then the attention on q, k and v: two kernels
    whose buffer-level run equals the graph's."""
    text = (
        merged_qkv((1, 64), 32, (4, 2), 16, "f16", True)
        .replace(
            "func.return %qr, %kr, %v4 : tensor<1x64x4x16xf16>, tensor<1x64x2x16xf16>, "
            "tensor<1x64x2x16xf16>",
            '%o = graph.flash_attention %qr, %kr, %v4 {scale = 0.25 : f32, causal = true, layout = "BSND"} '
            ": (tensor<1x64x4x16xf16>, tensor<1x64x2x16xf16>, tensor<1x64x2x16xf16>) -> "
            "tensor<1x64x4x16xf16>\n  func.return %o : tensor<1x64x4x16xf16>",
        )
        .replace(
            "-> (tensor<1x64x4x16xf16>, tensor<1x64x2x16xf16>, tensor<1x64x2x16xf16>) {",
            "-> tensor<1x64x4x16xf16> {",
        )
    )
    before = parse_module(default_context(), text, "g.mlir")
    after = apply_pipeline(
        parse_module(default_context(), text, "g.mlir"),
        "set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer",
    )
    ir = module_to_text(default_context(), after)
    assert ir.count("buffer.launch") == 2
    assert re.search(r"%v, %qr, %kr = buffer.launch @\w+ .*template = \"matmul\"", ir)
    rng = np.random.default_rng(11)
    shapes = [(1, 64, 32), (32, 128), (128,), (64, 16), (64, 16)]
    feeds = {
        f"arg{i}": dtypes.to_storage(rng.standard_normal(s) * 0.5, dtypes.ELEMENT_TYPES["f16"])
        for i, s in enumerate(shapes)
    }
    want, got = run_function(before, feeds), run_function(after, feeds)
    for key in want:
        w, g = want[key].astype(np.float64), got[key].astype(np.float64)
        np.testing.assert_allclose(g, w, rtol=4e-3, atol=4e-3 * max(1.0, float(np.abs(w).max())))
