"""Decode-shaped cube kernels: M = 1 .. 17 rows, through the buffer interpreter and the
emulated Ascend C (g++).

A decode step has one row (B * S = 1), and M = 17 over 16-row tiles leaves a one-row
tail tile. An Mmad with m = 1 runs in GEMV mode on the chip and reads L0A as one
contiguous row (Mmad.md), so the lowering pads m to 16 (mmad_rules.py); the emulator
models GEMV, so an unpadded kernel gives wrong numbers here too. Accumulating Mmads on
small tiles need PipeBarrier<PIPE_M> between them; the emulator reports a missing one as
a pipe race with the kernel file and line. K = 40 is above one fractal row for every
element type (16 halves, 8 floats), where GEMV and the Zz fractals disagree.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.codegen.emulate import EmulatedKernels, run_function_emulated
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer_verifier
from autofusion.interpreter import run_function
from autofusion.lowering import attention_plan, ffn_tiles, matmul_tiling
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")

SPLIT = "Ascend910B1"
ROWS = range(1, 18)
E = "f16"


def T(shape: tuple[int, ...], e: str = E) -> str:
    return f"tensor<{'x'.join('?' if d < 0 else str(d) for d in shape)}x{e}>"


CASES = {
    # M x 40 @ 40 x 72 + gelu: 5 N tiles, two K steps that accumulate
    "mm": f"""
func.func @mm(%a: {T((-1, 40))}, %b: {T((40, 72))}) -> {T((-1, 72))} {{
  %mm = graph.matmul %a, %b : ({T((-1, 40))}, {T((40, 72))}) -> {T((-1, 72))}
  %y = graph.gelu %mm {{approximate = "none"}} : {T((-1, 72))}
  func.return %y : {T((-1, 72))}
}}""",
    # M query rows against 40 keys (head dim 32): QK^T has k = 32, PV k = 32 keys
    "fa": f"""
func.func @fa(%q: {T((1, 2, -1, 32))}, %k: {T((1, 1, 40, 32))}, %v: {T((1, 1, 40, 32))}, %r: {T((1, 2, -1, 32))}) -> {T((1, 2, -1, 32))} {{
  %fa = graph.flash_attention %q, %k, %v {{scale = 0.2, causal = false, layout = "BNSD"}} : ({T((1, 2, -1, 32))}, {T((1, 1, 40, 32))}, {T((1, 1, 40, 32))}) -> {T((1, 2, -1, 32))}
  %y = graph.add %fa, %r : {T((1, 2, -1, 32))}
  func.return %y : {T((1, 2, -1, 32))}
}}""",
    # SwiGLU MLP: M x 40 -> 48 -> 40
    "ffn": f"""
func.func @ffn(%x: {T((-1, 40))}, %wg: {T((40, 48))}, %wu: {T((40, 48))}, %wd: {T((48, 40))}) -> {T((-1, 40))} {{
  %g = graph.matmul %x, %wg : ({T((-1, 40))}, {T((40, 48))}) -> {T((-1, 48))}
  %sg = graph.sigmoid %g : {T((-1, 48))}
  %a = graph.mul %g, %sg : {T((-1, 48))}
  %u = graph.matmul %x, %wu : ({T((-1, 40))}, {T((40, 48))}) -> {T((-1, 48))}
  %p = graph.mul %a, %u : {T((-1, 48))}
  %d = graph.matmul %p, %wd : ({T((-1, 48))}, {T((48, 40))}) -> {T((-1, 40))}
  func.return %d : {T((-1, 40))}
}}""",
}
TEXT = "\n".join(CASES.values())


@pytest.fixture(scope="module")
def sixteen_row_tiles() -> Iterator[None]:
    """16-row M tiles (M = 17 leaves a one-row tail) and 32-deep K steps (K = 40 takes
    two, which accumulate; the first is above one fractal row)."""
    with pytest.MonkeyPatch.context() as mp:
        for module in (matmul_tiling, ffn_tiles):
            mp.setattr(module, "MN_CANDIDATES", ((16, 16),))
            mp.setattr(module, "K_CANDIDATES", (32,))
            mp.setattr(module, "STEP_K", (1,))
        mp.setattr(ffn_tiles, "BAND_CANDIDATES", (16,))
        mp.setattr(attention_plan, "Q_CANDIDATES", (16,))
        mp.setattr(attention_plan, "KV_CANDIDATES", (32,))
        yield


@pytest.fixture(scope="module")
def compiled(sixteen_row_tiles: None) -> tuple[ModuleOp, ModuleOp, EmulatedKernels]:
    """(graph module, lowered module, its compiled kernels)."""
    graph_module = parse_module(default_context(), TEXT, "decode.mlir")
    lowered = apply_pipeline(
        parse_module(default_context(), TEXT, "decode.mlir"),
        f"set-target{{chip={SPLIT}}},graph-fusion,ub-fusion,lower-to-buffer",
    )
    return graph_module, lowered, EmulatedKernels(lowered)


def feeds(module: ModuleOp, entry: str, rows: int) -> dict[str, np.ndarray]:
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    rng = np.random.default_rng(rows)
    out = {}
    for i, t in enumerate(f.function_type.inputs.data):
        shape = tuple(rows if d < 0 else d for d in t.get_shape())
        scale = 0.3 if i else 1.0
        out[f"arg{i}"] = dtypes.to_storage(rng.standard_normal(shape) * scale, t.element_type)
    return out


def close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> bool:
    for key, value in want.items():
        w, g = value.astype(np.float64), got[key].astype(np.float64)
        scale = max(1.0, float(np.abs(w).max()))
        if np.isnan(g).any() or not np.allclose(g, w, rtol=2e-3, atol=2e-3 * scale):
            return False
    return True


@pytest.mark.parametrize("case", sorted(CASES))
def test_decode_rows_match_the_graph(
    case: str, compiled: tuple[ModuleOp, ModuleOp, EmulatedKernels]
) -> None:
    """Every M in 1..17, interpreted and emulated, gives the graph's numbers."""
    graph_module, lowered, kernels = compiled
    kernel = next(n for n in kernels.files if n.startswith(f"op_kernel/{case}_kernel"))
    assert "afc::Max(" in kernels.files[kernel]  # the padded m
    for rows in ROWS:
        inputs = feeds(graph_module, case, rows)
        want = run_function(graph_module, inputs, entry=case)
        assert close(run_function(lowered, inputs, entry=case), want), (case, rows)
        emulated = run_function_emulated(lowered, inputs, entry=case, kernels=kernels)
        assert close(emulated, want), (case, rows, "emulated")


def unverified(monkeypatch: pytest.MonkeyPatch, text: str) -> ModuleOp:
    """`text` parsed without the mmad rules (as a printer fed unchecked IR would see it)."""
    monkeypatch.setattr(buffer_verifier, "verify_mmads", lambda kernel, name: None)
    return parse_module(default_context(), text, "unchecked.mlir")


def test_unpadded_m_is_rejected_and_wrong_on_the_chip(
    compiled: tuple[ModuleOp, ModuleOp, EmulatedKernels], monkeypatch: pytest.MonkeyPatch
) -> None:
    """m = min(tm, M - row) unpadded: the verifier rejects it; forced through, the buffer
    interpreter (row-major, blind to fractals) still matches, but the emulated chip in
    GEMV mode reads L0A as a row and the decode step is wrong."""
    graph_module, lowered, _ = compiled
    text = module_to_text(default_context(), lowered)
    unpadded, count = re.subn(
        r"arith\.maxsi (%m\w*), %c16 : index", r"arith.maxsi \1, %c1 : index", text
    )
    assert count >= 3
    with pytest.raises(Exception, match=r"buffer\.mmad with m = %mmad_m\w* may run with m = 1"):
        parse_module(default_context(), unpadded, "unpadded.mlir")
    module = unverified(monkeypatch, unpadded)
    inputs = feeds(graph_module, "mm", 1)
    want = run_function(graph_module, inputs, entry="mm")
    assert close(run_function(module, inputs, entry="mm"), want)
    assert not close(run_function_emulated(module, inputs, entry="mm"), want)


def test_missing_pipe_m_barrier_is_a_pipe_race(
    compiled: tuple[ModuleOp, ModuleOp, EmulatedKernels], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the barriers the verifier rejects the kernel; forced through, the emulator
    reports the second K step's Mmad as a pipe race, naming the kernel file and line."""
    graph_module, lowered, _ = compiled
    text = module_to_text(default_context(), lowered)
    bare, count = re.subn(r"\n\s*buffer\.pipe_barrier \"M\" small_mmad\([^)]*\)", "", text)
    assert count >= 3
    with pytest.raises(Exception, match=r'no buffer\.pipe_barrier "M" between them'):
        parse_module(default_context(), bare, "bare.mlir")
    module = unverified(monkeypatch, bare)
    inputs = feeds(graph_module, "mm", 5)
    with pytest.raises(
        UserError,
        match=r"Mmad at op_kernel/mm_kernel\d+\.cpp:\d+: pipe race: accumulates into L0C .* "
        r"no PipeBarrier<PIPE_M>",
    ):
        run_function_emulated(module, inputs, entry="mm")
