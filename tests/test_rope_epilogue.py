"""The rope epilogue of a matmul (lowering/rope_epilogue.py, rope_epilogue_emit.py): the
column range of a rope in a (merged QKV) matmul's output and the named refusals, and the
fused kernel against the interpreter at the buffer level (the emulator) on split and
coupled chips, and its Ascend C compiled with g++ and run by the emulator."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from xdsl.ir import Operation

from autofusion import dtypes
from autofusion.codegen.emulate import EmulatedKernels, run_function_emulated
from autofusion.dialects import graph
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering import matmul_tiling
from autofusion.lowering.rope_epilogue import (
    RopeColumns,
    RopeEpilogue,
    rope_columns,
    rope_epilogue,
)
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes.fusion_rule import Refusal

from differential import apply_pipeline

QKV = """
func.func @main(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: {table}, %sin: {table}) -> (tensor<2x16x4x8xf16>, tensor<2x16x2x8xf16>) {{
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  {cut}
  %q4 = graph.reshape %q {{shape = [0, 0, 4, 8]}} : tensor<2x16x32xf16> -> tensor<2x16x4x8xf16>
  %k4 = graph.reshape %k {{shape = [0, 0, 2, 8]}} : tensor<2x16x16xf16> -> tensor<2x16x2x8xf16>
  %qr = graph.rope %q4, %cos, %sin {{interleaved = false}} : (tensor<2x16x4x8xf16>, {table}, {table}) -> tensor<2x16x4x8xf16>
  %kr = graph.rope %k4, %cos, %sin {{interleaved = false}} : (tensor<2x16x2x8xf16>, {table}, {table}) -> tensor<2x16x2x8xf16>
  func.return %qr, %kr : tensor<2x16x4x8xf16>, tensor<2x16x2x8xf16>
}}
"""
SPLIT = (
    "%q, %k, %v = graph.split %y {axis = 2, sizes = [32, 16, 16]} : tensor<2x16x64xf16> -> "
    "(tensor<2x16x32xf16>, tensor<2x16x16xf16>, tensor<2x16x16xf16>)"
)


def _slice(name: str, start: int, stop: int) -> str:
    return (
        f"%{name} = graph.slice %y {{starts = [{start}], ends = [{stop}], axes = [-1], "
        f"steps = [1]}} : tensor<2x16x64xf16> -> tensor<2x16x{stop - start}xf16>"
    )


def _ops(cut: str, table: str = "tensor<1x16x1x8xf16>") -> tuple[Operation, list[Operation]]:
    module = parse_module(default_context(), QKV.format(cut=cut, table=table), "qkv.mlir")
    ops = [op for op in module.walk() if isinstance(op, graph.GraphOp)]
    root = next(op for op in ops if isinstance(op, graph.MatmulOp))
    return root, [op for op in ops if isinstance(op, graph.RopeOp)]


@pytest.mark.parametrize(
    "cut, ranges",
    [
        (SPLIT, [(0, 4), (32, 2)]),
        (_slice("q", 0, 32) + "\n  " + _slice("k", 32, 48), [(0, 4), (32, 2)]),
        (_slice("q", 16, 48) + "\n  " + _slice("k", 48, 64), [(16, 4), (48, 2)]),
    ],
)
@pytest.mark.parametrize("table", ["tensor<1x16x1x8xf16>", "tensor<16x1x8xf16>"])
def test_merged_qkv_columns(cut: str, ranges: list[tuple[int, int]], table: str) -> None:
    root, ropes = _ops(cut, table)
    found = [rope_columns(root.results[0], r) for r in ropes]
    assert all(isinstance(f, RopeColumns) for f in found)
    assert [(f.start, f.heads) for f in found if isinstance(f, RopeColumns)] == ranges
    assert all(f.head_dim == 8 for f in found if isinstance(f, RopeColumns))
    taken = rope_epilogue(root, ropes, [r.results[0] for r in ropes])
    assert isinstance(taken, RopeEpilogue)
    assert [(o.start, o.stop, o.roped) for o in taken.outputs] == [
        (s, s + h * 8, True) for s, h in ranges
    ]


def test_merged_qkv_outputs_take_their_columns() -> None:
    """v's split result read outside is a plain output of its columns; the product
    itself, read outside too, one of all of them."""
    root, ropes = _ops(SPLIT)
    split = next(iter(root.results[0].uses)).operation
    v = split.results[2]
    outs = [ropes[0].results[0], ropes[1].results[0], v, root.results[0]]
    taken = rope_epilogue(root, ropes, outs)
    assert isinstance(taken, RopeEpilogue)
    assert [(o.start, o.stop, o.roped) for o in taken.outputs] == [
        (0, 32, True),
        (32, 48, True),
        (48, 64, False),
        (0, 64, False),
    ]


def test_partial_rope_is_refused() -> None:
    text = (
        rope_after_matmul((2, 16), 32, 4, 16, "f16")
        .replace("{interleaved = false}", "{interleaved = false, rotary_dim = 8}")
        .replace("tensor<16x1x16xf16>", "tensor<16x1x8xf16>")
    )
    module = parse_module(default_context(), text, "g.mlir")
    ops = [op for op in module.walk() if isinstance(op, graph.GraphOp)]
    root = next(op for op in ops if isinstance(op, graph.MatmulOp))
    rope = next(op for op in ops if isinstance(op, graph.RopeOp))
    found = rope_columns(root.results[0], rope)
    assert isinstance(found, Refusal)
    assert (
        found.reason == "a partial rope (rotary_dim 8) has no cube epilogue: it rotates whole heads"
    )


@pytest.mark.parametrize(
    "cut, table, reason",
    [
        (
            _slice("q", 4, 36) + "\n  " + _slice("k", 36, 52),
            "tensor<1x16x1x8xf16>",
            "the rope's columns [4, 36) are not whole heads of dim 8",
        ),
        (
            SPLIT.replace("axis = 2", "axis = -1"),
            "tensor<2x16x1x8xf16>",
            "the rope's cos table of shape 2x16x1x8 is not indexed by the output row",
        ),
    ],
)
def test_refusals_name_the_rope(cut: str, table: str, reason: str) -> None:
    root, ropes = _ops(cut, table)
    found = rope_columns(root.results[0], ropes[0])
    assert isinstance(found, Refusal)
    assert found.reason.startswith(reason)
    why = rope_epilogue(root, ropes, [])
    assert isinstance(why, Refusal)
    assert why.reason.startswith(f"graph.rope after a cube op: {reason}")


# ---- the fused kernel against the interpreter ------------------------------------------


def T(shape: tuple[int, ...], elt: str) -> str:
    return f"tensor<{'x'.join('?' if d < 0 else str(d) for d in shape)}x{elt}>"


def rope_after_matmul(rows: tuple[int, ...], k: int, heads: int, d: int, elt: str) -> str:
    """x[*rows, k] @ w[k, heads*d], reshaped to heads, roped with [S, 1, D] tables."""
    n = heads * d
    x, w, y, r = T((*rows, k), elt), T((k, n), elt), T((*rows, n), elt), T((*rows, heads, d), elt)
    table = T((rows[-1], 1, d), elt)
    keep = ", ".join(["0"] * len(rows))
    return f"""
func.func @main(%x: {x}, %w: {w}, %cos: {table}, %sin: {table}) -> {r} {{
  %y = graph.matmul %x, %w : ({x}, {w}) -> {y}
  %h = graph.reshape %y {{shape = [{keep}, {heads}, {d}]}} : {y} -> {r}
  %o = graph.rope %h, %cos, %sin {{interleaved = false}} : ({r}, {table}, {table}) -> {r}
  func.return %o : {r}
}}"""


@pytest.fixture
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """32 x 32 output tiles: M and N tails, several N tiles of whole heads."""
    monkeypatch.setattr(matmul_tiling, "MN_CANDIDATES", ((32, 32), (16, 16)))
    monkeypatch.setattr(matmul_tiling, "K_CANDIDATES", (16,))
    monkeypatch.setattr(matmul_tiling, "STEP_K", (2,))
    yield


def fused_matches(
    text: str, chip: str, elt: str, shapes: list[tuple[int, ...]] | None = None
) -> str:
    """ub-fusion + lower-to-buffer: one matmul kernel whose outputs equal the graph's
    (`shapes`: the arguments' shapes where they have dynamic dims)."""
    before = parse_module(default_context(), text, "g.mlir")
    after = apply_pipeline(
        parse_module(default_context(), text, "g.mlir"),
        f"set-target{{chip={chip}}},ub-fusion,lower-to-buffer",
    )
    ir = module_to_text(default_context(), after)
    assert ir.count("buffer.launch") == 1 and 'template = "matmul"' in ir
    rng = np.random.default_rng(7)
    args = before.body.block.first_op.args  # type: ignore[union-attr]
    feeds = {}
    for i, arg in enumerate(args):
        shape = shapes[i] if shapes is not None else arg.type.get_shape()  # type: ignore[attr-defined]
        feeds[f"arg{i}"] = dtypes.to_storage(rng.standard_normal(shape), dtypes.ELEMENT_TYPES[elt])
    want, got = run_function(before, feeds), run_function(after, feeds)
    tol = {"f32": 1e-5, "f16": 2e-3}[elt]
    for key in want:
        w, g = want[key].astype(np.float64), got[key].astype(np.float64)
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=key)
    return ir


@pytest.mark.parametrize(
    ("chip", "elt"),
    [("Ascend910B1", "f16"), ("Ascend910B1", "f32"), ("Ascend910", "f16"), ("Ascend310P3", "f16")],
)
@pytest.mark.parametrize(
    ("rows", "k", "heads", "d"),
    [((2, 20), 32, 4, 16), ((37,), 16, 6, 8), ((2, 20), 32, 2, 32)],
)
def test_rope_runs_as_the_matmuls_epilogue(
    chip: str, elt: str, rows: tuple[int, ...], k: int, heads: int, d: int, small_tiles: None
) -> None:
    if not get_chip(chip).data_copy_pad and d * int(elt[1:]) // 8 % 32:
        pytest.skip(f"table rows under 32 bytes: {chip} has no DataCopyPad")
    ir = fused_matches(rope_after_matmul(rows, k, heads, d, elt), chip, elt)
    assert not re.search(r"= graph\.\w+ ", ir)  # no graph op is left outside the kernel


@pytest.mark.parametrize(("rows", "heads", "d"), [((1, 40), 4, 32), ((1, 24), 3, 128)])
def test_rope_epilogue_with_the_chips_own_tiles(rows: tuple[int, ...], heads: int, d: int) -> None:
    ir = fused_matches(rope_after_matmul(rows, 32, heads, d, "f16"), "Ascend910B1", "f16")
    assert ir.count("buffer.vgather") == 1


def test_rope_epilogue_with_dynamic_batch_and_sequence(small_tiles: None) -> None:
    """[?, S, K] @ [K, N] with [S, 1, D] tables: the output's dynamic dims are the
    product's (the heads are static)."""
    text = rope_after_matmul((-1, -2), 32, 4, 16, "f16")
    shapes = [(3, 21, 32), (32, 64), (21, 1, 16), (21, 1, 16)]
    ir = fused_matches(text, "Ascend910B1", "f16", shapes)
    assert ir.count("buffer.launch") == 1


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize("chip", ["Ascend910B1", "Ascend910", "Ascend310P3"])
def test_rope_epilogue_ascendc_matches_the_graph(chip: str, small_tiles: None) -> None:
    """The kernel's Ascend C, emulated (a mix kernel with its workspace on 910B1; L0C ->
    UB on the coupled chips, by scalar moves instead of Gather on 910)."""
    text = rope_after_matmul((2, 20), 32, 4, 16, "f16")
    emulated_matches(text, chip, [(2, 20, 32), (32, 64), (20, 1, 16), (20, 1, 16)], 3)


def emulated_matches(text: str, chip: str, shapes: list[tuple[int, ...]], seed: int) -> None:
    """The f16 graph's fused kernels as Ascend C, compiled and emulated, against the
    interpreter on random arguments of `shapes`."""
    before = parse_module(default_context(), text, "g.mlir")
    after = apply_pipeline(
        parse_module(default_context(), text, "g.mlir"),
        f"set-target{{chip={chip}}},ub-fusion,lower-to-buffer",
    )
    rng = np.random.default_rng(seed)
    feeds = {
        f"arg{i}": dtypes.to_storage(rng.standard_normal(s), dtypes.ELEMENT_TYPES["f16"])
        for i, s in enumerate(shapes)
    }
    want = run_function(before, feeds)
    got = run_function_emulated(after, feeds, kernels=EmulatedKernels(after))
    for key in want:
        w, g = want[key].astype(np.float64), got[key].astype(np.float64)
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3 * float(np.abs(w).max()))
