"""The rows template's planning of whole-row (reducing) groups: it builds the kernel to be
sure one row fits only when the per-value budget holds fewer than SURE_ROWS rows; above
that, settle's build shrinks the tile to the same tiling (rows_template.py)."""

from __future__ import annotations

import pytest

from autofusion.dialects import buffer, graph
from autofusion.hardware import get_chip
from autofusion.lowering import row_kernel, rows_template
from autofusion.lowering.row_plan import RowPlan, whole_row_elems
from autofusion.lowering.template import group_parts
from autofusion.lowering.template_registry import settle
from autofusion.mlir_io import default_context, parse_module

CHIP = get_chip("Ascend910B1")


def _softmax_group(rows: int, cols: int) -> graph.FusionGroupOp:
    t = f"tensor<{rows}x{cols}xf32>"
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %r = graph.fusion_group (%x_ = %x : {t}) -> {t} {{
    %s = graph.softmax %x_ {{axis = -1}} : {t}
    graph.yield %s : {t}
  }}
  func.return %r : {t}
}}
"""
    module = parse_module(default_context(), text, "m.mlir")
    (g,) = [o for o in module.walk() if isinstance(o, graph.FusionGroupOp)]
    return g


def _plan_counting_builds(
    g: graph.FusionGroupOp, monkeypatch: pytest.MonkeyPatch
) -> tuple[RowPlan, list[int]]:
    builds: list[int] = []
    build = row_kernel.RowKernel.build

    def counted(self: row_kernel.RowKernel) -> buffer.KernelOp:
        builds.append(self.plan.max_tile_elems)
        return build(self)

    monkeypatch.setattr(row_kernel.RowKernel, "build", counted)
    plan = rows_template.RowsTemplate().plan(group_parts(g), CHIP)
    assert isinstance(plan, RowPlan)
    return plan, builds


def test_a_budget_of_many_rows_plans_without_a_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """64 rows of 1024: the budget holds many whole rows; planning builds nothing, settle
    builds the kernel and records a tile of whole rows that fits."""
    plan, builds = _plan_counting_builds(_softmax_group(64, 1024), monkeypatch)
    row = whole_row_elems(plan)
    assert row == 1024 and plan.max_tile_elems >= rows_template.SURE_ROWS * row
    assert builds == []
    settled = settle(rows_template.RowsTemplate(), plan, CHIP)
    assert isinstance(settled, RowPlan) and builds
    assert settled.max_tile_elems % row == 0 and settled.max_tile_elems >= row


def test_a_budget_of_few_rows_is_built_while_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of 4096 f32: fewer than SURE_ROWS fit the budget, so planning builds the
    kernel (and shrinks the tile to what it needs) before it trusts the plan."""
    plan, builds = _plan_counting_builds(_softmax_group(4, 4096), monkeypatch)
    row = whole_row_elems(plan)
    assert row == 4096
    assert builds and builds[0] < rows_template.SURE_ROWS * row
    assert plan.max_tile_elems >= row
