"""An RMS norm folded into the matmul it feeds (RmsNormMatMulFusionPass) and computed by
the matmul kernel's vector side (lowering/norm_prologue.py).

Graph level: the rewrite keeps the function's numbers (interpreter before vs after).
Buffer level: the one-kernel group {rms_norm_stats, matmul, rms_norm_apply, add} gives
the graph's numbers, with M/N/K tails, several AIV chunks and cores. Emulated: the
generated Ascend C, compiled with g++ against the emulation header, gives them too.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_codegen_cube import small_tiles
from test_cube_kernels import COUPLED, SPLIT, T, check, feeds_for
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import buffer, graph
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.matmul_cost import matmul_cost
from autofusion.lowering.matmul_host import plan_tiling
from autofusion.lowering.matmul_kernel import MatmulTemplate
from autofusion.lowering.matmul_plan import MatmulPlan
from autofusion.lowering.matmul_tiling import GemmSizes
from autofusion.lowering.template import GroupParts, NotApplicable, group_parts
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes.fusion_rule import Refusal

from differential import apply_pipeline, group

TOLERANCE = {"f32": (1e-5, 1e-5), "f16": (4e-3, 4e-3), "bf16": (3e-2, 3e-2)}


def _dense(values: np.ndarray) -> str:
    return np.array2string(
        np.asarray(values, np.float64), separator=", ", threshold=1 << 30, precision=6
    ).replace("\n", "")


def layer(m: int, k: int, n: int, elt: str, bias: bool = True) -> str:
    """h -> rms_norm(h, g) -> matmul(W) [+ b], g, W and b constants."""
    rng = np.random.default_rng(7)
    g = rng.uniform(0.5, 1.5, k)
    w = rng.standard_normal((k, n)) / np.sqrt(k)
    b = rng.standard_normal(n) * 0.1
    x, o = T((m, k), elt), T((m, n), elt)
    add = (
        f"  %c = graph.constant dense<{_dense(b)}> : {T((n,), elt)}\n"
        f"  %y = graph.add %mm, %c : ({o}, {T((n,), elt)}) -> {o}\n"
        if bias
        else f"  %y = graph.relu %mm : {o}\n"
    )
    return f"""
func.func @main(%h: {x}) -> {o} {{
  %g = graph.constant dense<{_dense(g)}> : {T((k,), elt)}
  %w = graph.constant dense<{_dense(w)}> : {T((k, n), elt)}
  %xn = graph.rms_norm %h, %g {{axis = -1, epsilon = 1.0e-06}} : ({x}, {T((k,), elt)}) -> {x}
  %mm = graph.matmul %xn, %w : ({x}, {T((k, n), elt)}) -> {o}
{add}  func.return %y : {o}
}}"""


def parse(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "norm.mlir")


def compare(want: dict[str, np.ndarray], got: dict[str, np.ndarray], elt: str) -> None:
    rtol, atol = TOLERANCE[elt]
    for key, w in want.items():
        g = got[key].astype(np.float64)
        assert not np.isnan(g).any(), key
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w.astype(np.float64), rtol=rtol, atol=atol * scale)


def feeds(m: int, k: int, elt: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((m, k)) * rng.uniform(0.2, 4.0, (m, 1))  # rows of unlike RMS
    return {"arg0": dtypes.to_storage(x, dtypes.ELEMENT_TYPES[elt])}


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
def test_graph_rewrite_keeps_the_numbers(elt: str) -> None:
    text = layer(9, 24, 20, elt)
    fused = apply_pipeline(parse(text), "graph-fusion")
    ir = module_to_text(default_context(), fused)
    assert "graph.rms_norm_stats" in ir and "graph.rms_norm %" not in ir
    inputs = feeds(9, 24, elt)
    compare(run_function(parse(text), inputs), run_function(fused, inputs), elt)


def pipeline(chip: str) -> str:
    return f"set-target{{chip={chip}}},graph-fusion,ub-fusion,lower-to-buffer"


def kernels(module: ModuleOp) -> list[buffer.KernelOp]:
    return [op for op in module.walk() if isinstance(op, buffer.KernelOp)]


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_one_kernel_gives_the_graphs_numbers(elt: str) -> None:
    """37 rows over 32-row M tiles, K = 70 (one statistics row per tile), N = 50 over
    two N tiles: the norm, the matmul and the bias are one mix kernel."""
    m, k, n = 37, 70, 50
    text = layer(m, k, n, elt)
    with small_tiles():
        lowered = apply_pipeline(parse(text), pipeline(SPLIT))
    (kernel,) = kernels(lowered)
    ir = module_to_text(default_context(), lowered)
    assert kernel.template.data == "matmul" and "ws_rstd" in ir and "buffer.mmad" in ir
    inputs = feeds(m, k, elt)
    compare(run_function(parse(text), inputs), run_function(lowered, inputs), elt)


def test_buffer_level_group_with_a_relu_after_the_bias() -> None:
    """The group as ub-fusion hands it over, with more epilogue after the row scale."""
    m, k, n = 37, 40, 48
    mn, col = T((m, n), "f16"), T((m, 1), "f32")
    body = (
        f"    %r = graph.rms_norm_stats %a_ {{axis = -1, epsilon = 1.0e-05}} : "
        f"{T((m, k), 'f16')} -> {col}\n"
        f"    %mm = graph.matmul %a_, %b_ : ({T((m, k), 'f16')}, {T((k, n), 'f16')}) -> {mn}\n"
        f"    %y = graph.rms_norm_apply %mm, %r, %g_ {{axis = -1}} : "
        f"({mn}, {col}, {T((n,), 'f16')}) -> {mn}\n"
        f"    %z = graph.relu %y : {mn}"
    )
    args = [("a", (m, k), "f16"), ("b", (k, n), "f16"), ("g", (n,), "f16")]
    text = group(body, [(x, T(s, e)) for x, s, e in args], [("z", mn)])
    with small_tiles():
        check(text, SPLIT, feeds_for(args, 3), "f16", "matmul")


def _plan(text: str, chip: str) -> MatmulPlan | Refusal:
    """The matmul template's plan, on `chip`, of the function after graph fusion (for a
    split chip) as one group."""
    module = apply_pipeline(parse(text), "graph-fusion")
    ops = [op for op in module.walk() if isinstance(op, graph.GraphOp)]
    compute = [op for op in ops if not isinstance(op, graph.ConstantOp)]
    made = {r for op in compute for r in op.results}
    inputs = [v for op in compute for v in op.operands if v not in made]
    ret = next(op for op in module.walk() if isinstance(op, func.ReturnOp))
    plan = MatmulTemplate().plan(
        GroupParts(compute, list(dict.fromkeys(inputs)), list(ret.operands)), get_chip(chip)
    )
    assert isinstance(plan, MatmulPlan | Refusal)
    return plan


def test_coupled_chips_keep_the_norm_whole() -> None:
    """Ascend910 (no AIVs of its own, no DataCopyPad for per-row values): the template
    refuses the prologue with its reason, and with the module's target the rule does not
    fire, so the norm stays one rows kernel before the matmul kernel."""
    text = layer(40, 32, 48, "f16")
    plan = _plan(text, COUPLED)
    assert isinstance(plan, Refusal) and "split chip" in plan.reason
    lowered = apply_pipeline(parse(text), pipeline(COUPLED))
    ir = module_to_text(default_context(), lowered)
    assert "rms_norm_stats" not in ir
    assert sorted(k.template.data for k in kernels(lowered)) == ["matmul", "rows"]
    inputs = feeds(40, 32, "f16")
    compare(run_function(parse(text), inputs), run_function(lowered, inputs), "f16")


def test_prologue_cost_charges_the_aivs_reads_of_a() -> None:
    m, k, n = 256, 512, 1024
    text = layer(m, k, n, "f16")
    plan = _plan(text, SPLIT)
    assert isinstance(plan, MatmulPlan) and plan.prologue is not None
    chip = get_chip(SPLIT)
    with_prologue = matmul_cost(plan, chip)
    assert plan_tiling(IntOps(), plan, chip, GemmSizes(m, n, k, 1)).values["nt"] > 1
    plan.prologue = None
    without = matmul_cost(plan, chip)
    extra = with_prologue.gm_read_bytes - without.gm_read_bytes
    # A (f16) read once more by the AIVs; rstd (f32) written once to the workspace (the
    # epilogue reads it per N tile either way: from the graph or from the workspace)
    assert extra == m * k * 2
    assert with_prologue.gm_write_bytes - without.gm_write_bytes == m * 4
    assert with_prologue.vector_work - without.vector_work == 3 * m * k
    # HBM: the AIVs' read of A hits L2 (the AIC reads A too); rstd never leaves the chip
    assert with_prologue.hbm_read_bytes == without.hbm_read_bytes - m * 4


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize("elt", ["f16", "f32"])
def test_emulated_kernel_gives_the_graphs_numbers(elt: str) -> None:
    """The generated Ascend C (mix kernel: AIC matmul, AIV statistics, row scale, bias)
    compiled with g++ against the emulation header."""
    m, k, n = 37, 70, 50
    text = layer(m, k, n, elt)
    with small_tiles():
        lowered = apply_pipeline(parse(text), pipeline(SPLIT))
    inputs = feeds(m, k, elt)
    compare(run_function(parse(text), inputs), run_function_emulated(lowered, inputs), elt)


def test_a_vector_group_with_statistics_is_not_the_matmul_templates_business() -> None:
    """Without a cube op the matmul template's answer is a falsy NotApplicable, so the
    rows template's refusal (or plan) is the one ub-fusion reports."""
    x, col = T((4, 16), "f16"), T((4, 1), "f32")
    text = group(
        f"    %r = graph.rms_norm_stats %x_ {{axis = -1, epsilon = 1.0e-05}} : {x} -> {col}",
        [("x", x)],
        [("r", col)],
    )
    module = parse(text)
    fg = next(op for op in module.walk() if isinstance(op, graph.FusionGroupOp))
    plan = MatmulTemplate().plan(group_parts(fg), get_chip(SPLIT))
    assert isinstance(plan, NotApplicable) and not plan
