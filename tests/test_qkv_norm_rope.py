"""The whole first group of a decoder layer in one matmul kernel: the input RMSNorm as
the QKV matmul's prologue (lowering/norm_prologue.py), the bias, the q and k ropes as
its epilogue and v's columns as a third output (rope_epilogue_emit.py), with heads of
128 columns as Qwen2.5 and Llama have.

With the prologue's third of UB taken, 16-row chunks of such an epilogue hold no N tile
of one whole head; read back from the GM workspace (910B), its chunks take 8 rows
(RowPlan.chunk_rows). Checked: the grouping, the runtime tiling's chunk rows, and the
numbers at the buffer level and as emulated Ascend C against the interpreter.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from test_norm_prologue import _dense, compare
from test_rope_epilogue_qkv import rope_tail

from autofusion import dtypes
from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import buffer, graph
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.matmul_host import plan_tiling
from autofusion.lowering.matmul_kernel import MatmulTemplate
from autofusion.lowering.matmul_plan import MatmulPlan
from autofusion.lowering.matmul_tiling import GemmSizes
from autofusion.lowering.template import group_parts
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline

CHIP = "Ascend910B1"


def T(shape: tuple[int, ...], elt: str = "f16") -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}x{elt}>"


def norm_qkv_rope(s: int, k: int, heads: tuple[int, int], d: int) -> str:
    """h[1, s, k] -> rms_norm(h, g) @ W + b, cut into q, k and v heads; q and k roped
    with [s, d] tables (g, W and b constants, as a model's weights are)."""
    hq, hkv = heads
    qn, kn = hq * d, hkv * d
    n = qn + 2 * kn
    rng = np.random.default_rng(5)
    g = rng.uniform(0.5, 1.5, k)
    w = rng.standard_normal((k, n)) / np.sqrt(k)
    b = rng.standard_normal(n) * 0.1
    x, y, tab = T((1, s, k)), T((1, s, n)), T((s, d))
    q4, k4 = T((1, s, hq, d)), T((1, s, hkv, d))

    def cut(name: str, start: int, stop: int) -> str:
        t = T((1, s, stop - start))
        heads4 = T((1, s, (stop - start) // d, d))
        return (
            f"  %{name} = graph.slice %y {{starts = [{start}], ends = [{stop}], axes = [-1], "
            f"steps = [1]}} : {y} -> {t}\n"
            f"  %{name}4 = graph.reshape %{name} {{shape = [0, 0, {(stop - start) // d}, {d}]}}"
            f" : {t} -> {heads4}\n"
        )

    return f"""
func.func @main(%h: {x}, %cos: {tab}, %sin: {tab}) -> ({q4}, {k4}, {k4}) {{
  %g = graph.constant dense<{_dense(g)}> : {T((k,))}
  %w = graph.constant dense<{_dense(w)}> : {T((k, n))}
  %b = graph.constant dense<{_dense(b)}> : {T((n,))}
  %xn = graph.rms_norm %h, %g {{axis = -1, epsilon = 1.0e-06}} : ({x}, {T((k,))}) -> {x}
  %p = graph.matmul %xn, %w : ({x}, {T((k, n))}) -> {y}
  %y = graph.add %p, %b : ({y}, {T((n,))}) -> {y}
{cut("q", 0, qn)}{cut("k", qn, qn + kn)}{cut("v", qn + kn, n)}\
{rope_tail(s, d, q4, k4, "f16")}"""


def feeds(s: int, k: int, d: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    h = rng.standard_normal((1, s, k)) * rng.uniform(0.2, 4.0, (1, s, 1))  # unlike RMS
    angle = np.arange(s)[:, None] * rng.uniform(0.01, 1.0, d // 2)[None, :]
    angle = np.concatenate([angle, angle], axis=1)
    f16 = dtypes.ELEMENT_TYPES["f16"]
    return {
        "arg0": dtypes.to_storage(h, f16),
        "arg1": dtypes.to_storage(np.cos(angle), f16),
        "arg2": dtypes.to_storage(np.sin(angle), f16),
    }


def parse(text: str):
    return parse_module(default_context(), text, "qkv.mlir")


TEXT = norm_qkv_rope(40, 64, (2, 1), 128)
SHAPE = (40, 64, 128)  # rows, K, head dim


def test_statistics_join_the_projection_with_its_ropes() -> None:
    """One matmul kernel holds the statistics, the product, the row scale, the bias,
    both ropes and v: the layer's first group, with no kernel of its own for the norm."""
    fused = apply_pipeline(parse(TEXT), f"set-target{{chip={CHIP}}},graph-fusion,ub-fusion")
    groups = [op for op in fused.walk() if isinstance(op, graph.FusionGroupOp)]
    assert len(groups) == 1, [[o.name for o in g.body.walk()] for g in groups]
    names = {op.name for op in groups[0].body.walk()}
    assert {"graph.rms_norm_stats", "graph.matmul", "graph.rms_norm_apply"} <= names
    assert "graph.rope" in names and len(groups[0].results) == 3


def test_chunks_of_eight_rows_from_the_workspace() -> None:
    """Heads of 128 columns beside the prologue: the runtime tiling's epilogue chunks
    take 8 rows, an N tile whole heads."""
    fused = apply_pipeline(parse(TEXT), f"set-target{{chip={CHIP}}},graph-fusion,ub-fusion")
    group = next(op for op in fused.walk() if isinstance(op, graph.FusionGroupOp))
    p = MatmulTemplate().plan(group_parts(group), get_chip(CHIP))
    assert isinstance(p, MatmulPlan) and p.prologue is not None and p.rope is not None
    assert p.rows is not None and p.rows.chunk_rows == 8
    rows, k, d = SHAPE
    t = plan_tiling(IntOps(), p, get_chip(CHIP), GemmSizes(rows, 4 * d, k, 1)).values
    assert t["er"] == 8 and t["tn"] % d == 0


def test_buffer_level_gives_the_graphs_numbers() -> None:
    lowered = apply_pipeline(
        parse(TEXT), f"set-target{{chip={CHIP}}},graph-fusion,ub-fusion,lower-to-buffer"
    )
    ir = module_to_text(default_context(), lowered)
    assert ir.count("buffer.launch") == 1 and "ws_rstd" in ir
    assert re.search(r"buffer.launch @\w+ .*template = \"matmul\"", ir)
    assert sum(isinstance(op, buffer.KernelOp) for op in lowered.walk()) == 1
    rows, k, d = SHAPE
    inputs = feeds(rows, k, d)
    compare(run_function(parse(TEXT), inputs), run_function(lowered, inputs), "f16")


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
def test_emulated_kernel_gives_the_graphs_numbers() -> None:
    """The mix kernel's Ascend C (AIV statistics, SyncAll, AIC matmul, AIV epilogue in
    8-row chunks with the ropes) compiled with g++ against the emulation header."""
    lowered = apply_pipeline(
        parse(TEXT), f"set-target{{chip={CHIP}}},graph-fusion,ub-fusion,lower-to-buffer"
    )
    rows, k, d = SHAPE
    inputs = feeds(rows, k, d)
    compare(run_function(parse(TEXT), inputs), run_function_emulated(lowered, inputs), "f16")
