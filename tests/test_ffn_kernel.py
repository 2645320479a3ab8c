"""The ffn template: a graph.ffn as one mix kernel on split chips.

Each case is a decomposed MLP (what the frontends import) taken through graph-fusion,
ub-fusion and lower-to-buffer. The numbers are checked twice against graph.ffn's own
formula (the interpreter on the graph-fusion output): the buffer IR's interpretation,
and the generated Ascend C compiled with g++ against the emulation header. Small tiles
make interpreter-sized shapes run many bands, M tiles, K stages and N2 chunks with
tails, and more work items than the chip has cube cores (the round-robin deal).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.dialects import buffer, graph
from autofusion.dialects.target import set_target
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering import ffn_tiles
from autofusion.lowering.ffn_host import ffn_tiling
from autofusion.lowering.ffn_plan import FfnPlan, plan_ffn
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.template import group_parts
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes.ub_fusion import UbFusionPass

from differential import apply_pipeline, assert_close

SPLIT = "Ascend910B1"
TOLERANCE = {"f32": (2e-5, 2e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}


@pytest.fixture
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """32 x 32 output tiles, K stages of 2 x 16, bands of 32 columns."""
    monkeypatch.setattr(ffn_tiles, "MN_CANDIDATES", ((32, 32), (16, 16)))
    monkeypatch.setattr(ffn_tiles, "K_CANDIDATES", (16,))
    monkeypatch.setattr(ffn_tiles, "STEP_K", (2,))
    monkeypatch.setattr(ffn_tiles, "BAND_CANDIDATES", (32, 16))
    yield


def T(shape: tuple[int, ...], e: str) -> str:
    return f"tensor<{'x'.join('?' if d < 0 else str(d) for d in shape)}x{e}>"


def swiglu_residual(e: str, b: int = 2, s: int = 50, k: int = 40, f: int = 208, n: int = 40) -> str:
    """Qwen's MLP and its residual: h + (silu(x @ Wg) * (x @ Wu)) @ Wd. M = b * s rows
    (4 M tiles, a tail of 4), 7 bands (a tail of 16), K1 over 2 stages (a tail of 8),
    N2 in 2 chunks (a tail of 8): 28 items for 24 cube cores."""
    x, h = T((b, s, k), e), T((b, s, n), e)
    mid = T((b, s, f), e)
    return f"""
func.func @main(%x: {x}, %h: {h}, %wg: {T((k, f), e)}, %wu: {T((k, f), e)}, %wd: {T((f, n), e)}) -> {h} {{
  %g = graph.matmul %x, %wg : ({x}, {T((k, f), e)}) -> {mid}
  %sg = graph.sigmoid %g : {mid}
  %a = graph.mul %g, %sg : {mid}
  %u = graph.matmul %x, %wu : ({x}, {T((k, f), e)}) -> {mid}
  %p = graph.mul %a, %u : {mid}
  %d = graph.matmul %p, %wd : ({mid}, {T((f, n), e)}) -> {h}
  %y = graph.add %h, %d : {h}
  func.return %y : {h}
}}"""


def geglu_merged(e: str, m: int = 37, k: int = 24, f: int = 48, n: int = 20) -> str:
    """A merged gate/up weight with its bias, split in two; erf GeGLU; a down bias."""
    x, gu, half, y = T((m, k), e), T((m, 2 * f), e), T((m, f), e), T((m, n), e)
    return f"""
func.func @main(%x: {x}, %w13: {T((k, 2 * f), e)}, %b13: {T((2 * f,), e)}, %w2: {T((f, n), e)}, %b2: {T((n,), e)}) -> {y} {{
  %gu = graph.matmul %x, %w13, %b13 : ({x}, {T((k, 2 * f), e)}, {T((2 * f,), e)}) -> {gu}
  %parts:2 = graph.split %gu {{axis = -1, sizes = [{f}, {f}]}} : {gu} -> ({half}, {half})
  %a = graph.gelu %parts#0 {{approximate = "none"}} : {half}
  %p = graph.mul %a, %parts#1 : {half}
  %d = graph.matmul %p, %w2 : ({half}, {T((f, n), e)}) -> {y}
  %y = graph.add %d, %b2 : ({y}, {T((n,), e)}) -> {y}
  func.return %y : {y}
}}"""


def geglu_tanh(e: str, m: int = 40, k: int = 24, f: int = 72, n: int = 36) -> str:
    """T5 v1.1's and Gemma's MLP: a tanh GELU on the gate, times the up projection."""
    x, mid, y = T((m, k), e), T((m, f), e), T((m, n), e)
    return f"""
func.func @main(%x: {x}, %wg: {T((k, f), e)}, %wu: {T((k, f), e)}, %wd: {T((f, n), e)}) -> {y} {{
  %g = graph.matmul %x, %wg : ({x}, {T((k, f), e)}) -> {mid}
  %a = graph.gelu %g {{approximate = "tanh"}} : {mid}
  %u = graph.matmul %x, %wu : ({x}, {T((k, f), e)}) -> {mid}
  %p = graph.mul %u, %a : {mid}
  %y = graph.matmul %p, %wd : ({mid}, {T((f, n), e)}) -> {y}
  func.return %y : {y}
}}"""


def plain(e: str, act: str, m: int = 45, k: int = 32, f: int = 80, n: int = 48) -> str:
    """BERT's MLP: act(x @ W1 + b1) @ W2 + b2, the bias adds separate (graph-fusion
    folds them); `m` < 0 makes the rows dynamic."""
    x, mid, y = T((m, k), e), T((m, f), e), T((m, n), e)
    act_op = {
        "gelu_tanh": f'graph.gelu %hb {{approximate = "tanh"}} : {mid}',
        "relu": f"graph.relu %hb : {mid}",
    }[act]
    return f"""
func.func @main(%x: {x}, %w1: {T((k, f), e)}, %b1: {T((f,), e)}, %w2: {T((f, n), e)}, %b2: {T((n,), e)}) -> {y} {{
  %h = graph.matmul %x, %w1 : ({x}, {T((k, f), e)}) -> {mid}
  %hb = graph.add %h, %b1 : ({mid}, {T((f,), e)}) -> {mid}
  %a = {act_op}
  %d = graph.matmul %a, %w2 : ({mid}, {T((f, n), e)}) -> {y}
  %y = graph.add %d, %b2 : ({y}, {T((n,), e)}) -> {y}
  func.return %y : {y}
}}"""


CASES = {
    "swiglu_residual": swiglu_residual,
    "geglu_merged": geglu_merged,
    "geglu_tanh": geglu_tanh,
    "gelu_tanh": lambda e: plain(e, "gelu_tanh"),
    "relu_dynamic_rows": lambda e: plain(e, "relu", m=-1),
}


def feeds(module: ModuleOp, seed: int, rows: int = 45) -> dict[str, np.ndarray]:
    """Random inputs (dynamic dims get `rows`); weights scaled to keep sums near 1."""
    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(seed)
    out = {}
    for i, t in enumerate(f.function_type.inputs.data):
        shape = tuple(rows if d < 0 else d for d in t.get_shape())
        scale = 1 / np.sqrt(shape[0]) if len(shape) == 2 and i > 0 else 1.0
        out[f"arg{i}"] = dtypes.to_storage(rng.standard_normal(shape) * scale, t.element_type)
    return out


def fused_and_lowered(text: str, chip: str = SPLIT) -> tuple[ModuleOp, ModuleOp]:
    """(graph-fusion output with one graph.ffn, the same lowered to buffer IR)."""
    ctx = default_context()
    fused = apply_pipeline(
        parse_module(ctx, text, "ffn.mlir"), f"set-target{{chip={chip}}},graph-fusion"
    )
    assert module_to_text(ctx, fused).count("graph.ffn") == 1
    lowered = apply_pipeline(fused.clone(), "ub-fusion,lower-to-buffer")
    return fused, lowered


def the_kernel(module: ModuleOp) -> buffer.KernelOp:
    (kernel,) = (op for op in module.ops if isinstance(op, buffer.KernelOp))
    return kernel


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_ffn_kernel_gives_the_ffn_formula(case: str, elt: str, small_tiles: None) -> None:
    fused, lowered = fused_and_lowered(CASES[case](elt))
    kernel = the_kernel(lowered)
    assert kernel.template.data == "ffn"
    inputs = feeds(fused, seed=len(case))
    assert_close(run_function(lowered, inputs), run_function(fused, inputs), *TOLERANCE[elt])


def test_ffn_kernel_structure(small_tiles: None) -> None:
    """Two all-core syncs around the main loop, the L0C -> GM atomic add of every band,
    the cross-core handshake in both directions; 28 work items dealt over the 24 blocks
    the chip's cube cores allow (SyncAll needs every block resident)."""
    fused, lowered = fused_and_lowered(swiglu_residual("f16"))
    ops = list(the_kernel(lowered).walk())
    assert sum(isinstance(op, buffer.SyncAllOp) for op in ops) == 2
    atomics = [op for op in ops if isinstance(op, buffer.CopyOp) and op.atomic is not None]
    assert atomics and all(
        (buffer.space_of(a.source.type), buffer.space_of(a.dest.type)) == ("l0c", "gm")
        for a in atomics
    )
    assert {op.core.data for op in ops if isinstance(op, buffer.CrossCoreSetOp)} == {"aic", "aiv"}
    chip = get_chip(SPLIT)
    grouped = apply_pipeline(fused.clone(), "ub-fusion")
    group = next(op for op in grouped.walk() if isinstance(op, graph.FusionGroupOp))
    plan = plan_ffn(group_parts(group), chip)
    assert isinstance(plan, FfnPlan)
    tiling = ffn_tiling(IntOps(), plan.sizes(None), plan, chip)
    assert (tiling.values["mt"], tiling.values["ft"], tiling.values["nt"]) == (4, 7, 2)
    assert tiling.values["items"] == 28 and tiling.blocks == chip.cube_cores == 24


def test_ffn_on_a_coupled_chip_is_not_formed_and_stays_a_library_op_when_given() -> None:
    """graph-fusion told the chip keeps the matmuls on coupled chips; a graph.ffn that
    reaches ub-fusion there stays a library op, with the reason."""
    ctx = default_context()
    text = swiglu_residual("f16")
    kept = apply_pipeline(
        parse_module(ctx, text, "a.mlir"), "set-target{chip=Ascend910},graph-fusion"
    )
    assert "graph.ffn" not in module_to_text(ctx, kept)
    fused = apply_pipeline(parse_module(ctx, text, "b.mlir"), "graph-fusion")
    set_target(fused, "Ascend910")
    result = UbFusionPass().run(fused)
    reasons = [reason for op, reason in result.library_ops if op.name == "graph.ffn"]
    assert len(reasons) == 1 and "split chip" in reasons[0], result.library_ops


def test_ffn_traffic_reads_weights_once_from_hbm() -> None:
    """At Qwen2.5-7B's MLP shape the kernel's HBM traffic is x, the weights, the
    residual and y once (the accumulator and workspaces stay in L2), while its logical
    GM traffic counts every band's re-read of x and accumulator read-modify-write."""
    from autofusion.report import build_report

    m, k, f, n = 2048, 3584, 18944, 3584
    text = swiglu_residual("f16", b=1, s=m, k=k, f=f, n=n)
    ctx = default_context()
    module = apply_pipeline(
        parse_module(ctx, text, "q.mlir"), f"set-target{{chip={SPLIT}}},graph-fusion,ub-fusion"
    )
    report = build_report(module, get_chip(SPLIT), dynamic_size=1)
    (kernel,) = report.kernels
    once = (m * k + 2 * k * f + f * n + 2 * m * n) * 2
    totals = report.totals()
    assert totals["gm_bytes_lower_bound"] == once
    assert totals["hbm_bytes_after"] == once  # LRU
    assert totals["hbm_bytes_after_optimistic"] == once
    assert kernel.gm_read_bytes + kernel.gm_write_bytes > 10 * once


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize(
    ("case", "elt"),
    [
        ("swiglu_residual", "f16"),
        ("geglu_merged", "f32"),
        ("geglu_tanh", "f16"),
        ("gelu_tanh", "bf16"),
    ],
)
def test_emulated_ffn_kernel_gives_the_ffn_formula(case: str, elt: str, small_tiles: None) -> None:
    from autofusion.codegen.emulate import run_function_emulated

    fused, lowered = fused_and_lowered(CASES[case](elt))
    inputs = feeds(fused, seed=len(case) + 1)
    assert_close(
        run_function_emulated(lowered, inputs), run_function(fused, inputs), *TOLERANCE[elt]
    )


def test_ffn_ascend_c_is_byte_identical_and_syncs_and_adds(small_tiles: None) -> None:
    """Two lowerings of the same model print the same files; the kernel meets every core
    at SyncAll<false> twice and wraps each band's Fixpipe in SetAtomicAdd/SetAtomicNone."""
    from autofusion.codegen.ascendc_target import emit_ascendc

    runs = [emit_ascendc(fused_and_lowered(swiglu_residual("f16"))[1], debug=True) for _ in "ab"]
    assert runs[0] == runs[1]
    (code,) = (
        text
        for path, text in runs[0].items()
        if path.startswith("op_kernel/") and path.endswith("_kernel0.cpp")
    )
    assert code.count("SyncAll<false>();") == 2
    adds = code.count("SetAtomicAdd<float>();")
    assert adds >= 1 and adds == code.count("SetAtomicNone();")
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);" in code
