"""The fusion plan on graph.fusion_group: lower-to-buffer carries out the recorded tiling
(ub-fusion's or a hand edit) with the graph's numbers, and the report reads the plan."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import DictionaryAttr

from autofusion.dialects import buffer, graph
from autofusion.dialects.group_plan import PLAN_ATTR, tiling_values
from autofusion.hardware import get_chip
from autofusion.lowering.template import group_parts
from autofusion.lowering.template_registry import carry_out, plan_group
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.fusion_rule import Refusal
from autofusion.report import build_report, group_entry

from differential import apply_pipeline, check_pass

TARGET = '#afc.target<"Ascend910B1">'

# a matmul with a bias + ReLU epilogue, at small hand-edited tiles: 3 M tiles (one a
# tail), 3 N tiles, 6 K stages of two 16-deep steps; the epilogue's tile 512 elements
MATMUL = f"""
builtin.module attributes {{afc.target = {TARGET}}} {{
  func.func @main(%x: tensor<40x96xf32>, %w: tensor<96x80xf32>, %b: tensor<80xf32>) -> tensor<40x80xf32> {{
    %r = graph.fusion_group (%x_ = %x : tensor<40x96xf32>, %w_ = %w : tensor<96x80xf32>, %b_ = %b : tensor<80xf32>) -> tensor<40x80xf32> plan {{template = "matmul", tiling = {{c_depth = 1 : i64, epilogue_tile_elems = 512 : i64, step_k = 2 : i64, tk = 16 : i64, tm = 16 : i64, tn = 32 : i64}}}} {{
      %m = graph.matmul %x_, %w_ : (tensor<40x96xf32>, tensor<96x80xf32>) -> tensor<40x80xf32>
      %a = graph.add %m, %b_ : (tensor<40x80xf32>, tensor<80xf32>) -> tensor<40x80xf32>
      %y = graph.relu %a : tensor<40x80xf32>
      graph.yield %y : tensor<40x80xf32>
    }}
    func.return %r : tensor<40x80xf32>
  }}
}}
"""

# a softmax over rows of 100, at a tile of 128 elements: one padded row per tile
SOFTMAX = f"""
builtin.module attributes {{afc.target = {TARGET}}} {{
  func.func @main(%x: tensor<9x100xf32>) -> tensor<9x100xf32> {{
    %r = graph.fusion_group (%x_ = %x : tensor<9x100xf32>) -> tensor<9x100xf32> plan {{template = "rows", tiling = {{split = 1 : i64, tile_elems = 128 : i64}}}} {{
      %s = graph.softmax %x_ {{axis = -1}} : tensor<9x100xf32>
      graph.yield %s : tensor<9x100xf32>
    }}
    func.return %r : tensor<9x100xf32>
  }}
}}
"""


def _launch_plan(text: str) -> dict[str, object]:
    (launch,) = [
        op
        for op in parse_module(default_context(), text, "out.mlir").walk()
        if isinstance(op, buffer.LaunchOp)
    ]
    plan = launch.attributes[PLAN_ATTR]
    assert isinstance(plan, DictionaryAttr)
    return dict(plan.data)


@pytest.mark.parametrize(
    ("text", "tiling"),
    [
        (
            MATMUL,
            {"c_depth": 1, "epilogue_tile_elems": 512, "step_k": 2, "tk": 16, "tm": 16, "tn": 32},
        ),
        (SOFTMAX, {"split": 1, "tile_elems": 128}),
    ],
)
def test_hand_edited_tiling_keeps_the_graphs_numbers(text: str, tiling: dict[str, int]) -> None:
    after = check_pass(text, "lower-to-buffer")
    plan = _launch_plan(after)
    tiling_attr = plan["tiling"]
    assert isinstance(tiling_attr, DictionaryAttr)
    assert tiling_values(tiling_attr) == tiling
    assert {"target", "template", "tiling", "footprint", "cost_us", "reason"} <= set(plan)


def _groups(text: str, pipeline: str) -> list[graph.FusionGroupOp]:
    module = apply_pipeline(parse_module(default_context(), text, "m.mlir"), pipeline)
    return [op for op in module.walk() if isinstance(op, graph.FusionGroupOp)]


CHAIN = """
func.func @main(%x: tensor<64x256xf16>, %w: tensor<256x512xf16>, %b: tensor<512xf16>) -> tensor<64x512xf16> {
  %m = graph.matmul %x, %w : (tensor<64x256xf16>, tensor<256x512xf16>) -> tensor<64x512xf16>
  %a = graph.add %m, %b : (tensor<64x512xf16>, tensor<512xf16>) -> tensor<64x512xf16>
  %g = graph.gelu %a {approximate = "tanh"} : tensor<64x512xf16>
  %s = graph.softmax %g {axis = -1} : tensor<64x512xf16>
  func.return %s : tensor<64x512xf16>
}
"""


@pytest.mark.parametrize("chip", ["Ascend910B1", "Ascend310P3"])
def test_carry_out_takes_the_recorded_tiling_without_a_search(chip: str) -> None:
    """The plan lower-to-buffer carries out is ub-fusion's: the same tiling, footprint and
    cost, and building the kernel changes none of it (ub-fusion settled it)."""
    spec = get_chip(chip)
    groups = _groups(CHAIN, f"set-target{{chip={chip}}},ub-fusion")
    assert groups
    for g in groups:
        chosen = carry_out(g, spec)
        assert not isinstance(chosen, Refusal), chosen
        template, plan = chosen
        assert g.tiling is not None and g.template is not None and g.footprint is not None
        assert template.name == g.template.data
        assert template.tiling(plan) == tiling_values(g.tiling)
        assert template.footprint(plan, spec) == tiling_values(g.footprint)
        template.lower(plan, "k", spec)
        assert template.tiling(plan) == tiling_values(g.tiling)


def test_report_reads_the_plan() -> None:
    """The report's time of a group is its plan's cost_us, at graph and buffer level."""
    spec = get_chip("Ascend910B1")
    groups = _groups(CHAIN, "set-target{chip=Ascend910B1},ub-fusion")
    for k, g in enumerate(groups):
        entry = group_entry(g, f"kernel{k}", spec, 128)
        assert g.cost_us is not None and entry.time_us == g.cost_us.value.data
        assert g.template is not None and entry.template == g.template.data
    text = "set-target{chip=Ascend910B1},ub-fusion"
    graph_level = build_report(
        apply_pipeline(parse_module(default_context(), CHAIN, "m.mlir"), text), spec
    ).to_json()
    buffer_level = build_report(
        apply_pipeline(parse_module(default_context(), CHAIN, "m.mlir"), text + ",lower-to-buffer"),
        spec,
    ).to_json()
    assert buffer_level["totals"] == graph_level["totals"]
    strip = [{k: v for k, v in e.items() if k != "name"} for e in graph_level["kernels"]]
    assert [{k: v for k, v in e.items() if k != "name"} for e in buffer_level["kernels"]] == strip


def test_a_group_without_a_plan_is_planned_once() -> None:
    """Hand-written IR: lower-to-buffer plans the group (the search ub-fusion runs) and
    keeps the completed plan on the launch."""
    text = SOFTMAX.replace(
        ' plan {template = "rows", tiling = {split = 1 : i64, tile_elems = 128 : i64}}', ""
    )
    (g,) = [
        o
        for o in parse_module(default_context(), text, "m.mlir").walk()
        if isinstance(o, graph.FusionGroupOp)
    ]
    chosen = carry_out(g, get_chip("Ascend910B1"))
    planned = plan_group(group_parts(g), get_chip("Ascend910B1"))
    assert not isinstance(chosen, Refusal) and not isinstance(planned, Refusal)
    assert chosen[0].tiling(chosen[1]) == planned[0].tiling(planned[1])
    plan = _launch_plan(check_pass(text, "lower-to-buffer"))
    reason = plan["reason"]
    assert "planned by lower-to-buffer" in str(reason)
