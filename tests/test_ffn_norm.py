"""The post-attention RMS norm joining graph.ffn (RmsNormFfnFusionPass, graph.ffn's
norm_epsilon) and computed by the ffn kernel's first pass (lowering/ffn_plan.py,
lowering/norm_prologue.py).

Graph level: the rewrite keeps the function's numbers (interpreter before vs after).
Buffer level: the one ffn kernel with its statistics pass gives the fused graph's
numbers (small tiles: several M tiles, bands and cores). Emulated: the generated
Ascend C, compiled with g++ against the emulation header, gives them too.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_ffn_kernel import (
    SPLIT,
    TOLERANCE,
    T,
    small_tiles,  # noqa: F401 (a fixture)
    the_kernel,
)
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering.ffn_cost import ffn_cost
from autofusion.lowering.ffn_plan import FfnPlan, plan_ffn
from autofusion.lowering.template import GroupParts, group_parts
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes.fusion_rule import Refusal

from differential import apply_pipeline, assert_close


def _dense(values: np.ndarray) -> str:
    return np.array2string(
        np.asarray(values, np.float64), separator=", ", threshold=1 << 30, precision=6
    ).replace("\n", "")


def layer(e: str, m: int = 45, k: int = 40, f: int = 80, n: int = 40) -> str:
    """Qwen's post-attention half: h + mlp(rms_norm(h, g)), a SwiGLU MLP with constant
    weights (K1 = N2: the residual is the norm's input)."""
    assert k == n
    rng = np.random.default_rng(5)
    g = rng.uniform(0.5, 1.5, k)
    wg, wu = (rng.standard_normal((k, f)) / np.sqrt(k) for _ in range(2))
    wd = rng.standard_normal((f, n)) / np.sqrt(f)
    h, mid = T((m, k), e), T((m, f), e)
    return f"""
func.func @main(%h: {h}) -> {h} {{
  %g = graph.constant dense<{_dense(g)}> : {T((k,), e)}
  %wg = graph.constant dense<{_dense(wg)}> : {T((k, f), e)}
  %wu = graph.constant dense<{_dense(wu)}> : {T((k, f), e)}
  %wd = graph.constant dense<{_dense(wd)}> : {T((f, n), e)}
  %x = graph.rms_norm %h, %g {{axis = -1, epsilon = 1.0e-06}} : ({h}, {T((k,), e)}) -> {h}
  %a = graph.matmul %x, %wg : ({h}, {T((k, f), e)}) -> {mid}
  %sg = graph.sigmoid %a : {mid}
  %s = graph.mul %a, %sg : {mid}
  %u = graph.matmul %x, %wu : ({h}, {T((k, f), e)}) -> {mid}
  %p = graph.mul %s, %u : {mid}
  %d = graph.matmul %p, %wd : ({mid}, {T((f, n), e)}) -> {h}
  %y = graph.add %h, %d : {h}
  func.return %y : {h}
}}"""


def parse(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "ffn_norm.mlir")


def feeds(m: int, k: int, elt: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    h = rng.standard_normal((m, k)) * rng.uniform(0.2, 4.0, (m, 1))  # rows of unlike RMS
    return {"arg0": dtypes.to_storage(h, dtypes.ELEMENT_TYPES[elt])}


def fused(text: str) -> ModuleOp:
    return apply_pipeline(parse(text), f"set-target{{chip={SPLIT}}},graph-fusion")


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
def test_graph_rewrite_keeps_the_numbers(elt: str) -> None:
    text = layer(elt)
    module = fused(text)
    ir = module_to_text(default_context(), module)
    assert "norm_epsilon = 1.000000e-06" in ir
    assert "graph.rms_norm" not in ir and ir.count("graph.ffn") == 1
    inputs = feeds(45, 40, elt)
    assert_close(run_function(module, inputs), run_function(parse(text), inputs), *TOLERANCE[elt])


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.usefixtures("small_tiles")
def test_one_kernel_gives_the_fused_graphs_numbers(elt: str) -> None:
    """45 rows over 32-row M tiles, bands of 32 over F = 80: the statistics, both
    projections, the activation, the down projection and the residual in one kernel."""
    module = fused(layer(elt))
    lowered = apply_pipeline(module.clone(), "ub-fusion,lower-to-buffer")
    kernel = the_kernel(lowered)
    ir = module_to_text(default_context(), lowered)
    assert kernel.template.data == "ffn" and "ws_rstd" in ir
    assert ir.count("buffer.sync_all") == 2  # the statistics share the first SyncAll
    inputs = feeds(45, 40, elt)
    assert_close(run_function(lowered, inputs), run_function(module, inputs), *TOLERANCE[elt])


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.usefixtures("small_tiles")
def test_emulated_kernel_gives_the_fused_graphs_numbers() -> None:
    from autofusion.codegen.emulate import run_function_emulated

    module = fused(layer("f16"))
    lowered = apply_pipeline(module.clone(), "ub-fusion,lower-to-buffer")
    inputs = feeds(45, 40, "f16")
    assert_close(
        run_function_emulated(lowered, inputs), run_function(module, inputs), *TOLERANCE["f16"]
    )


def _plan(module: ModuleOp) -> FfnPlan | Refusal:
    grouped = apply_pipeline(module.clone(), "ub-fusion")
    fg = next(op for op in grouped.walk() if isinstance(op, graph.FusionGroupOp))
    plan = plan_ffn(group_parts(fg), get_chip(SPLIT))
    assert isinstance(plan, FfnPlan | Refusal)
    return plan


def test_cost_charges_the_statistics_pass() -> None:
    m, k = 256, 512
    plan = _plan(fused(layer("f16", m, k, 1024, k)))
    assert isinstance(plan, FfnPlan) and plan.prologue is not None
    chip = get_chip(SPLIT)
    with_stats = ffn_cost(plan, chip)
    plan.prologue = None
    without = ffn_cost(plan, chip)
    # x (f16) read once more and rstd (f32) written once; 3 vector ops per x element
    assert with_stats.gm_write_bytes - without.gm_write_bytes == m * 4
    assert with_stats.gm_read_bytes - without.gm_read_bytes >= m * k * 2 + m * 4
    assert with_stats.vector_work - without.vector_work == 3 * m * k
    # HBM: the residual is x itself, read once; the statistics re-read it from L2
    assert with_stats.hbm_read_bytes == without.hbm_read_bytes == (m * k + 3 * k * 1024) * 2


def biased(e: str, m: int = 6, k: int = 8, f: int = 16, n: int = 8) -> str:
    """A graph.ffn with norm_epsilon and b1, its operands arguments."""
    x, y = T((m, k), e), T((m, n), e)
    w, b, d = T((k, f), e), T((f,), e), T((f, n), e)
    return f"""
func.func @main(%x: {x}, %wg: {w}, %wu: {w}, %wd: {d}, %bg: {b}, %bu: {b}) -> {y} {{
  %y = graph.ffn %x, %wg, %wu, %wd, %bg, %bu {{activation = "swiglu", norm_epsilon = 1.0e-02 : f64, operandSegmentSizes = array<i32: 1, 2, 1, 2, 0, 0>}} : ({x}, {w}, {w}, {d}, {b}, {b}) -> {y}
  func.return %y : {y}
}}"""


def test_interpreter_scales_the_rounded_projections_before_b1() -> None:
    """graph.ffn's formula with norm_epsilon: round(x @ W1) * rstd + b1, then SwiGLU."""
    module = parse(biased("f16"))
    rng = np.random.default_rng(1)
    shapes = [(6, 8), (8, 16), (8, 16), (16, 8), (16,), (16,)]
    args = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    got = run_function(module, {f"arg{i}": a for i, a in enumerate(args)})
    x, wg, wu, wd, bg, bu = (a.astype(np.float32) for a in args)
    rstd = 1 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + np.float32(0.01))

    def r(v: np.ndarray) -> np.ndarray:
        return v.astype(np.float16).astype(np.float32)

    gate, up = r(r(x @ wg) * rstd + bg), r(r(x @ wu) * rstd + bu)
    g = r(gate / (1 + np.exp(-gate)) * up)
    assert_close({"y": next(iter(got.values()))}, {"y": r(g @ wd)}, *TOLERANCE["f16"])


def test_kernel_refuses_a_norm_before_bias1() -> None:
    """The statistics scale the products before b1, which the kernel's activation adds
    first: the template refuses with its reason."""
    module = parse(biased("f16"))
    ffn = next(op for op in module.walk() if isinstance(op, graph.FfnOp))
    plan = plan_ffn(GroupParts([ffn], list(ffn.operands), [ffn.output]), get_chip(SPLIT))
    assert isinstance(plan, Refusal) and "without bias1" in plan.reason
