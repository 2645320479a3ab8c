"""split-fusion: its options, statistics and cost gate, and what it gains end to end.

Every rewrite's FileCheck case (tests/filecheck/passes/split-fusion) is also run
differentially by test_graph_fusion.py.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_graph_fusion import run_with_statistics
from xdsl.dialects.builtin import ModuleOp

from autofusion.dialects import graph
from autofusion.driver.pipeline import (
    OPT_LEVELS,
    CompileOptions,
    policy_options,
    split_fusion_stage,
    ub_fusion_stage,
)
from autofusion.fusion.partition import Partitioner, estimate
from autofusion.hardware import get_chip
from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes import get_all_passes
from autofusion.passes.fusion_switch import GRAPH_FUSION
from autofusion.passes.rules.split_cost import (
    CostSettings,
    ExternalPathOp,
    Neighbourhood,
    copy_neighbourhood,
    neighbourhood,
)
from autofusion.passes.split_fusion import SplitFusionPass
from autofusion.passes.ub_fusion import UbFusionPass
from autofusion.report import build_report

from differential import apply_pipeline

RULES = (
    "LayerNormSplitFusionPass",
    "RmsNormSplitFusionPass",
    "SplitConvConcatFusionPass",
    "SplitMatMulConcatFusionPass",
    "SplitSliceFusionPass",
    "ProducerDuplicateFusionPass",
)

T = "tensor<512x1024xf32>"
H = "tensor<256x32x128xf32>"

# A small model with one candidate of each kind that pays on Ascend910B1:
# * a residual x (also returned) normalized and read by two gated matmuls' epilogues
#   (y * (c_i @ v_i): the apply runs in each epilogue, the kernel writing y goes);
# * an f16 -> f32 cast read by reductions over two different row blocks;
# * a row concat feeding a matmul whose outputs are 32x smaller than its inputs.
C = "tensor<512x256xf32>"
V = "tensor<256x1024xf32>"
MODEL = f"""
func.func @main(%a: {T}, %b: {T}, %g: tensor<1024xf32>, %be: tensor<1024xf32>,
                %c0: {C}, %v0: {V}, %c1: {C}, %v1: {V}, %h: tensor<256x32x128xf16>,
                %p: tensor<2048x512xf32>, %q: tensor<2048x512xf32>, %wm: tensor<512x16xf32>)
    -> ({T}, {T}, {T}, tensor<256x32x1xf32>, tensor<256x1x1xf32>, tensor<4096x16xf32>) {{
  %x = graph.add %a, %b : {T}
  %y = graph.layer_norm %x, %g, %be {{axis = -1, epsilon = 1.0e-05}} : ({T}, tensor<1024xf32>, tensor<1024xf32>) -> {T}
  %m0 = graph.matmul %c0, %v0 : ({C}, {V}) -> {T}
  %z0 = graph.mul %y, %m0 : {T}
  %m1 = graph.matmul %c1, %v1 : ({C}, {V}) -> {T}
  %z1 = graph.mul %y, %m1 : {T}
  %c = graph.cast %h : tensor<256x32x128xf16> -> {H}
  %s = graph.reduce_sum %c {{axes = [2], keepdims = true}} : {H} -> tensor<256x32x1xf32>
  %m = graph.reduce_max %c {{axes = [1, 2], keepdims = true}} : {H} -> tensor<256x1x1xf32>
  %cat = graph.concat %p, %q {{axis = 0}} : (tensor<2048x512xf32>, tensor<2048x512xf32>) -> tensor<4096x512xf32>
  %o = graph.matmul %cat, %wm : (tensor<4096x512xf32>, tensor<512x16xf32>) -> tensor<4096x16xf32>
  func.return %z0, %z1, %x, %s, %m, %o : {T}, {T}, {T}, tensor<256x32x1xf32>, tensor<256x1x1xf32>, tensor<4096x16xf32>
}}
"""

# one rewrite that pays (the cast) and one that a precondition refuses (an f16 concat
# over the contracted axis: its partial products would be rounded before the sum)
MIXED = """
func.func @main(%h: tensor<256x32x128xf16>, %p: tensor<64x32xf16>, %q: tensor<64x32xf16>, %w: tensor<64x16xf16>) -> (tensor<256x32x1xf32>, tensor<256x1x1xf32>, tensor<64x16xf16>) {
  %c = graph.cast %h : tensor<256x32x128xf16> -> tensor<256x32x128xf32>
  %s = graph.reduce_sum %c {axes = [2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x32x1xf32>
  %m = graph.reduce_max %c {axes = [1, 2], keepdims = true} : tensor<256x32x128xf32> -> tensor<256x1x1xf32>
  %cat = graph.concat %p, %q {axis = 1} : (tensor<64x32xf16>, tensor<64x32xf16>) -> tensor<64x64xf16>
  %n = graph.matmul %cat, %w : (tensor<64x64xf16>, tensor<64x16xf16>) -> tensor<64x16xf16>
  func.return %s, %m, %n : tensor<256x32x1xf32>, tensor<256x1x1xf32>, tensor<64x16xf16>
}
"""


def parse(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "model.mlir")


def count(text: str, op: str) -> int:
    return text.count(f"= {op} ")


def test_registered_under_its_name() -> None:
    assert get_all_passes()["split-fusion"]() is SplitFusionPass
    assert SplitFusionPass.name == "split-fusion"
    from autofusion.passes.rule_registry import split_fusion_rules

    assert tuple(r.rule_name for r in split_fusion_rules()) == RULES
    assert all(r.kind == GRAPH_FUSION for r in split_fusion_rules())


def test_every_rule_applies_to_the_model() -> None:
    module = parse(MODEL)
    stats = SplitFusionPass().run(module)
    text = str(module)
    assert count(text, "graph.layer_norm_stats") == 1 and "graph.layer_norm %" not in text
    assert count(text, "graph.cast") == 2
    # the two gated matmuls, and the concat's matmul split in two
    assert count(text, "graph.matmul") == 4 and "graph.concat %p, %q" not in text
    effected = {n: s.effect_times for n, s in stats.rules[GRAPH_FUSION].items()}
    assert effected == {
        "LayerNormSplitFusionPass": 1,
        "RmsNormSplitFusionPass": 0,
        "SplitConvConcatFusionPass": 0,
        "SplitMatMulConcatFusionPass": 1,
        "SplitSliceFusionPass": 0,
        "ProducerDuplicateFusionPass": 1,
    }


def test_only_runs_the_named_rules() -> None:
    module = parse(MODEL)
    stats = SplitFusionPass(only=("ProducerDuplicateFusionPass",)).run(module)
    text = str(module)
    assert count(text, "graph.cast") == 2
    assert "graph.layer_norm %" in text and "graph.concat %p, %q" in text
    assert list(stats.rules[GRAPH_FUSION]) == ["ProducerDuplicateFusionPass"]


@pytest.mark.parametrize(
    "content",
    [
        '{"Switch": {"GraphFusion": {"LayerNormSplitFusionPass": "off"}}}',
        "# the older line format\nLayerNormSplitFusionPass:off\n",
        '{"Switch": {"GraphFusion": {"ALL": "off", "ProducerDuplicateFusionPass": "on",'
        ' "SplitMatMulConcatFusionPass": "on"}}}',
    ],
)
def test_switch_file_turns_a_rule_off(tmp_path: Path, content: str) -> None:
    switch = tmp_path / "fusion_switch.cfg"
    switch.write_text(content)
    module = parse(MODEL)
    stats = SplitFusionPass(switch_file=str(switch)).run(module)
    text = str(module)
    assert "graph.layer_norm %" in text and "layer_norm_stats" not in text
    assert count(text, "graph.cast") == 2 and "graph.concat %p, %q" not in text
    assert "LayerNormSplitFusionPass" not in stats.rules[GRAPH_FUSION]


def test_the_estimate_follows_the_ub_fusion_switches(tmp_path: Path) -> None:
    """With UB fusion off nothing fuses, so no split can let its parts fuse elsewhere."""
    switch = tmp_path / "fusion_switch.cfg"
    switch.write_text('{"Switch": {"UBFusion": {"ALL": "off"}}}')
    module = parse(MODEL)
    stats = SplitFusionPass(switch_file=str(switch)).run(module)
    text = str(module)
    assert "graph.layer_norm %" in text and count(text, "graph.cast") == 1
    norm = stats.rules[GRAPH_FUSION]["LayerNormSplitFusionPass"]
    assert norm.effect_times == 0
    assert norm.refusals[0][1].startswith("no estimated gain")
    # the row concat still pays without UB fusion: it only moves the concat to the outputs
    assert stats.rules[GRAPH_FUSION]["SplitMatMulConcatFusionPass"].effect_times == 1


def test_stats_file_and_log_lines(tmp_path: Path) -> None:
    section, lines = run_with_statistics(tmp_path, MIXED, "split-fusion")
    assert sorted(section) == sorted(RULES)
    assert section["ProducerDuplicateFusionPass"] == {"match_times": "1", "effect_times": "1"}
    assert section["SplitConvConcatFusionPass"] == {"match_times": "0", "effect_times": "0"}
    assert section["SplitMatMulConcatFusionPass"] == {
        "match_times": "1",
        "effect_times": "0",
        "refusals": [
            {
                "op": "graph.concat %cat",
                "reason": "the partial products of a f16 graph.matmul would be rounded to "
                "f16 before they are summed",
            }
        ],
    }
    assert (
        "GraphFusionPass[ProducerDuplicateFusionPass]: pattern=Elemwise|Broadcast|Reshape->"
        "(users in several kernels), matched_times=1, effected_times=1." in lines
    )
    assert (
        "GraphFusionPass[SplitMatMulConcatFusionPass]: not applied to graph.concat %cat: "
        "the partial products of a f16 graph.matmul would be rounded to f16 before they "
        "are summed" in lines
    )


def test_cost_refusals_give_both_estimates() -> None:
    text = """
func.func @main(%a: tensor<256x1024xf32>, %b: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %p = graph.add %a, %b : tensor<256x1024xf32>
  %e = graph.exp %p : tensor<256x1024xf32>
  %r = graph.relu %p : tensor<256x1024xf32>
  %y = graph.mul %e, %r : tensor<256x1024xf32>
  func.return %y : tensor<256x1024xf32>
}
"""
    stats = SplitFusionPass(only=("ProducerDuplicateFusionPass",)).run(parse(text))
    (refusal,) = stats.rules[GRAPH_FUSION]["ProducerDuplicateFusionPass"].refusals
    assert refusal[0] == "graph.add %p"
    assert refusal[1].startswith("no estimated gain: the 4 ops around it take ")
    assert " us in 1 kernels, " in refusal[1]
    assert refusal[1].endswith(" us in 1 kernels when copied into each of its 2 users")


def test_output_is_deterministic() -> None:
    texts = []
    for _ in range(2):
        module = parse(MODEL)
        SplitFusionPass().run(module)
        texts.append(module_to_text(default_context(), module))
    assert texts[0] == texts[1]


def test_a_path_leaving_the_neighbourhood_is_kept_in_the_estimate() -> None:
    """x feeds u directly and through a chain longer than the radius; the estimate must
    not fuse x's kernel with u's across that chain (it would be a cycle)."""
    text = """
func.func @main(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %x = graph.exp %a : tensor<64x64xf32>
  %e1 = graph.transpose %x {perm = [1, 0]} : tensor<64x64xf32>
  %e2 = graph.transpose %e1 {perm = [1, 0]} : tensor<64x64xf32>
  %e3 = graph.transpose %e2 {perm = [1, 0]} : tensor<64x64xf32>
  %e4 = graph.transpose %e3 {perm = [1, 0]} : tensor<64x64xf32>
  %e5 = graph.transpose %e4 {perm = [1, 0]} : tensor<64x64xf32>
  %e6 = graph.transpose %e5 {perm = [1, 0]} : tensor<64x64xf32>
  %u = graph.add %x, %e6 : tensor<64x64xf32>
  func.return %u : tensor<64x64xf32>
}
"""
    module = parse(text)
    ops = list(find_function(module).body.block.ops)
    x, u = ops[0], ops[7]
    region = neighbourhood([x, u])
    assert isinstance(region, Neighbourhood)
    # two edges from x (e1, e2) and from u (e6, e5); e3 and e4 are outside
    assert region.ops == [ops[0], ops[1], ops[2], ops[5], ops[6], ops[7]]
    scratch = copy_neighbourhood(region)
    paths = [op for op in scratch.block.ops if isinstance(op, ExternalPathOp)]
    assert len(paths) == 1
    # e5 reads e4, which depends on e2 (through e3)
    assert [v.owner for v in paths[0].operands] == [scratch.copies[ops[2]]]
    assert scratch.copies[ops[5]].operands[0] is paths[0].results[0]
    settings = CostSettings()
    t = estimate(scratch.block, settings.chip, settings.policy)
    assert t.time_us > 0 and t.kernels >= 3


def _report(module_text: str, pipeline: str) -> dict[str, float]:
    module = apply_pipeline(parse(module_text), pipeline)
    return build_report(module, get_chip("Ascend910B1")).totals()


def test_end_to_end_fewer_gm_bytes_and_the_same_numbers() -> None:
    without = _report(MODEL, "graph-fusion,ub-fusion")
    with_split = _report(MODEL, "graph-fusion,split-fusion,ub-fusion")
    assert with_split["gm_bytes_after"] < without["gm_bytes_after"]
    assert with_split["time_us_after"] < without["time_us_after"]

    reference = parse(MODEL)
    feeds = random_inputs(find_function(reference), seed=0)
    want = run_function(reference, feeds)
    for pipeline in (
        "graph-fusion,split-fusion,ub-fusion",
        "graph-fusion,split-fusion,ub-fusion,lower-to-buffer",
    ):
        got = run_function(apply_pipeline(parse(MODEL), pipeline), feeds)
        assert list(got) == list(want)
        for name in want:
            np.testing.assert_allclose(
                np.asarray(got[name], np.float64),
                np.asarray(want[name], np.float64),
                # the split norm's apply rounds differently from the whole norm (f32
                # ulps), which the gating products (values ~10) scale up
                rtol=1e-4,
                atol=1e-4,
                err_msg=f"{pipeline}: output {name}",
            )


def test_split_ops_are_what_ub_fusion_fuses() -> None:
    """After the split, the statistics share the residual add's kernel."""
    module = apply_pipeline(parse(MODEL), "split-fusion,ub-fusion")
    groups = [
        op for op in find_function(module).body.block.ops if isinstance(op, graph.FusionGroupOp)
    ]
    with_stats = [
        g for g in groups if any(isinstance(o, graph.LayerNormStatsOp) for o in g.block.ops)
    ]
    assert len(with_stats) == 1
    assert any(isinstance(o, graph.AddOp) for o in with_stats[0].block.ops)


POLICY_CASE = Path(__file__).parent / "filecheck/passes/split-fusion/policy.mlir"


@pytest.mark.parametrize("level", [2, 3])
def test_the_gate_partitions_with_ub_fusion_policy(
    level: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At each -O level the cost gate's Partitioner runs under the policy ub-fusion runs
    under (-O3: 256 ops and 32 inputs), not caps of its own."""
    seen: dict[str, set[tuple[int, int]]] = {"split": set(), "ub": set()}
    stage = ["split"]
    original = Partitioner.__init__

    def recording(self: Partitioner, *args: Any) -> None:
        original(self, *args)
        seen[stage[0]].add((self.policy.max_ops, self.policy.max_inputs))

    monkeypatch.setattr(Partitioner, "__init__", recording)
    options = CompileOptions(opt_level=level)
    module = parse(POLICY_CASE.read_text())
    split_fusion_stage(module, options)
    stage[0] = "ub"
    ub_fusion_stage(module, options)
    caps = (OPT_LEVELS[level].max_ops, OPT_LEVELS[level].max_inputs)
    assert seen == {"split": {caps}, "ub": {caps}}
    assert SplitFusionPass(**asdict(policy_options(options))).fusion_policy() == (
        UbFusionPass(**asdict(policy_options(options))).fusion_policy()
    )
