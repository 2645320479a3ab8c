"""Edge views (fusion/edge_views.py): a view left between kernels joins the kernel at one
end of it and comes back out at lower-to-buffer. The numbers do not change (graph,
fused graph and buffer level against the interpreter), the kernels lowered are the ones
lowered without the views joining, and the report plans the groups alike."""

from __future__ import annotations

import numpy as np
import pytest

from autofusion.dialects import buffer, graph
from autofusion.fusion import partition
from autofusion.hardware import get_chip
from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.lowering.template import group_parts
from autofusion.lowering.template_registry import carry_out
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline

CHIP = "Ascend910B1"

# views at each kind of edge: a function argument's (head of the exp kernel), between a
# vector and a cube kernel (tail of the exp kernel), between two cube kernels whose
# source is also returned (head of the second), and a free one the function returns
TEXT = """
func.func @main(%x: tensor<4x64xf16>, %w: tensor<64x32xf16>, %w2: tensor<32x16xf16>) -> (tensor<2x2x16xf16>, tensor<128xf16>) {
  %r = graph.reshape %x {shape = [16, 16]} : tensor<4x64xf16> -> tensor<16x16xf16>
  %e = graph.exp %r : tensor<16x16xf16>
  %e2 = graph.reshape %e {shape = [4, 64]} : tensor<16x16xf16> -> tensor<4x64xf16>
  %a = graph.matmul %e2, %w : (tensor<4x64xf16>, tensor<64x32xf16>) -> tensor<4x32xf16>
  %b = graph.reshape %a {shape = [2, 2, 32]} : tensor<4x32xf16> -> tensor<2x2x32xf16>
  %m = graph.matmul %b, %w2 : (tensor<2x2x32xf16>, tensor<32x16xf16>) -> tensor<2x2x16xf16>
  %f = graph.reshape %a {shape = [128]} : tensor<4x32xf16> -> tensor<128xf16>
  func.return %m, %f : tensor<2x2x16xf16>, tensor<128xf16>
}
"""


def parse():
    return parse_module(default_context(), TEXT, "edge.mlir")


def kernels_text(module) -> list[str]:
    ctx = default_context()
    return [module_to_text(ctx, op) for op in module.walk() if isinstance(op, buffer.KernelOp)]


def test_views_join_their_kernels() -> None:
    fused = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion")
    edges = [op for op in fused.walk() if "afc.edge_view" in op.attributes]
    assert sorted(op.results[0].name_hint or "" for op in edges) == ["b", "e2", "r"]
    free = [op for op in fused.walk() if isinstance(op, graph.ReshapeOp) and op not in edges]
    assert [op.results[0].name_hint for op in free] == ["f"]  # the function reads it too


def test_numbers_at_every_level() -> None:
    feeds = random_inputs(find_function(parse()), seed=3)
    want = run_function(parse(), feeds)
    fused = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion")
    lowered = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion,lower-to-buffer")
    for got in (run_function(fused, feeds), run_function(lowered, feeds)):
        for key, w in want.items():
            np.testing.assert_allclose(
                got[key].astype(np.float64), w.astype(np.float64), rtol=2e-3, atol=2e-3
            )


def test_kernels_are_the_ones_planned_without_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither side's plan changes: the buffer kernels equal those lowered when no view
    joins a kernel, and the report's plans of the fused groups name the same templates."""
    lowered = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion,lower-to-buffer")
    fused = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion")
    chip = get_chip(CHIP)
    with_views = [carry_out(g, chip) for g in fused.walk() if isinstance(g, graph.FusionGroupOp)]
    monkeypatch.setattr(partition, "absorb_edge_views", lambda part: None)
    plain = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion,lower-to-buffer")
    assert kernels_text(lowered) == kernels_text(plain)
    plain_fused = apply_pipeline(parse(), f"set-target{{chip={CHIP}}},ub-fusion")
    groups = [g for g in plain_fused.walk() if isinstance(g, graph.FusionGroupOp)]
    without = [carry_out(g, chip) for g in groups]
    assert all(isinstance(c, tuple) for c in [*with_views, *without])
    assert [c[0].name for c in with_views] == [c[0].name for c in without]  # type: ignore[index]
    # group_parts hides the edge views: the kernel's inputs are the views' results
    views_group = next(
        g
        for g in fused.walk()
        if isinstance(g, graph.FusionGroupOp)
        and any("afc.edge_view" in op.attributes for op in g.block.ops)
    )
    parts = group_parts(views_group)
    assert not any("afc.edge_view" in op.attributes for op in parts.ops)
