"""graph-fusion and split-fusion: every FileCheck case run differentially, switch file, stats."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autofusion.diagnostics import UserError
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.fusion_switch import GRAPH_FUSION, UB_FUSION, load_fusion_switch
from autofusion.passes.graph_fusion import GraphFusionPass
from autofusion.passes.rule_registry import known_rule_names

from differential import check_pass

FILECHECK = Path(__file__).parent / "filecheck" / "passes"
PASS_DIRS = ("graph-fusion", "split-fusion")


def lit_cases() -> list[tuple[str, str, str]]:
    """(id, pipeline, IR) for every `// -----` chunk of the rewrite tests."""
    cases = []
    for directory in PASS_DIRS:
        for path in sorted((FILECHECK / directory).glob("*.mlir")):
            text = path.read_text()
            run = re.search(r"RUN: afc-opt %s.*? -p '([^']*)'", text)
            assert run, f"{path} has no afc-opt -p RUN line"
            for i, chunk in enumerate(text.split("// -----")):
                if "func.func" in chunk:
                    cases.append((f"{directory}/{path.stem}#{i}", run.group(1), chunk))
    return cases


CASES = lit_cases()


@pytest.mark.parametrize(("pipeline", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rewrite_preserves_numbers(pipeline: str, text: str) -> None:
    """Interpret each FileCheck case before and after its pipeline; outputs must agree."""
    if "shape_only" in text:
        pytest.skip("shape-only weights have no values to interpret (checked by FileCheck only)")
    # f16/bf16 cases: a rewrite may round once where the decomposed form rounds several
    # times (a float32 softmax, a split norm), a few ulps of the storage type
    tolerance = 2e-3 if re.search(r"x(f16|bf16)>", text) else 2e-5
    check_pass(text, pipeline.replace(" log=true", ""), rtol=tolerance, atol=tolerance)


SWITCH_IR = """
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %b = graph.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %a = graph.add %c, %b : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.relu %a : tensor<1x2x4x4xf32>
  func.return %r : tensor<1x2x4x4xf32>
}
"""


def fuse(switch: str | None, tmp_path: Path, only: tuple[str, ...] = ()) -> str:
    module = parse_module(default_context(), SWITCH_IR, "switch.mlir")
    path = None
    if switch is not None:
        path = tmp_path / "fusion_switch.cfg"
        path.write_text(switch)
    GraphFusionPass(switch_file=str(path) if path else None, only=only).run(module)
    return str(module)


def test_switch_precedence_explicit_beats_all_beats_default(tmp_path: Path) -> None:
    everything = fuse(None, tmp_path)
    assert "graph.add" not in everything and "graph.relu" not in everything
    all_off = fuse('{"Switch": {"GraphFusion": {"ALL": "off"}}}', tmp_path)
    assert "graph.add" in all_off and "graph.relu" in all_off
    one_on = fuse(
        '{"Switch": {"GraphFusion": {"ALL": "off", "ConvActivationFusionPass": "on"}}}', tmp_path
    )
    assert "graph.add" in one_on and "graph.relu" in one_on  # relu follows the add, not the conv
    bias_on = fuse(
        '{"Switch":{"GraphFusion":{"ALL":"off","ConvBiasAddFusionPass":"on","ConvActivationFusionPass":"on"}}}',
        tmp_path,
    )
    assert "graph.add" not in bias_on and 'activation = "relu"' in bias_on
    lines = fuse("# old format\nConvActivationFusionPass:off\n", tmp_path)
    assert "graph.add" not in lines and "graph.relu" in lines
    only = fuse(None, tmp_path, only=("ConvBiasAddFusionPass",))
    assert "graph.add" not in only and "graph.relu" in only


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"Switch": {"GraphFusion": {"NoSuchPass": "off"}}}',
            r"switch.cfg:1:1: unknown GraphFusion pass 'NoSuchPass'",
        ),
        (
            '{"Switch": {"GraphFusion": {"ALL": "maybe"}}}',
            r'"GraphFusion.ALL" must be "on" or "off", got "maybe"',
        ),
        ('{"Switch": {"Fusion": {}}}', 'unknown fusion kind "Fusion"'),
        (
            '{"Switch": {"GraphFusion": {"ALL": "off",}}}',
            r"switch.cfg:1:42: malformed JSON: Expecting property name",
        ),
        ('{"Other": 1}', 'expected a JSON object with a "Switch" key'),
        (
            "ConvBatchnormFusionPass:off\nLayerNorm FusionPass:on\n",
            r"switch.cfg:2:1: expected 'PassName:on'",
        ),
        (
            "ConvBatchnormFusionPass:disabled\n",
            r"switch.cfg:1:25: ConvBatchnormFusionPass must be 'on' or 'off'",
        ),
        ("\n\nNoSuchPass:off\n", r"switch.cfg:3:1: unknown GraphFusion pass 'NoSuchPass'"),
        ('{"Switch": {"UBFusion": {"ConvBatchnormFusionPass": "off"}}}', "unknown UBFusion pass"),
    ],
)
def test_bad_switch_files_name_the_line_or_key(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "switch.cfg"
    path.write_text(content)
    with pytest.raises(UserError) as err:
        load_fusion_switch(path, known_rule_names())
    assert re.search(message, str(err.value)), str(err.value)


def test_switch_file_resolution_per_kind(tmp_path: Path) -> None:
    path = tmp_path / "s.cfg"
    path.write_text(
        '{"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPass": "on"},'
        ' "UBFusion": {"TbeEltwiseFusionPass": "off"}},'
        ' "Priority": {"GraphFusion": {"Main": {"ConvBatchnormFusionPass": "1000"}}}}'
    )
    switch = load_fusion_switch(path, known_rule_names())
    assert switch.is_on(GRAPH_FUSION, "ConvBatchnormFusionPass")
    assert not switch.is_on(GRAPH_FUSION, "MatMulBiasAddFusionPass")
    assert not switch.is_on(UB_FUSION, "TbeEltwiseFusionPass")
    assert switch.is_on(UB_FUSION, "TbeReduceElemwiseFusionPass")


def run_with_statistics(tmp_path: Path, text: str, pass_name: str) -> tuple[dict, list[str]]:
    """`afc-opt -p <pass_name>{stats-file=... log=true}` on `text`: the graph_fusion
    section of the statistics file and the log lines."""
    src = tmp_path / "m.mlir"
    src.write_text(text)
    stats = tmp_path / "fusion_result.json"
    afc_opt = Path(sys.executable).parent / "afc-opt"
    result = subprocess.run(
        [str(afc_opt), str(src), "-p", f'{pass_name}{{stats-file="{stats}" log=true}}'],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(stats.read_text())
    return data["session_and_graph_id_0_0"]["graph_fusion"], result.stderr.splitlines()


def test_statistics_json_and_log_lines_in_cann_format(tmp_path: Path) -> None:
    section, lines = run_with_statistics(tmp_path, SWITCH_IR, "graph-fusion")
    assert section["ConvBiasAddFusionPass"] == {"match_times": "1", "effect_times": "1"}
    assert section["ConvActivationFusionPass"] == {"match_times": "1", "effect_times": "1"}
    assert section["ConvBatchnormFusionPass"] == {"match_times": "0", "effect_times": "0"}
    assert (
        "GraphFusionPass[ConvBiasAddFusionPass]: pattern=Conv2D->Add(per-channel constant), "
        "matched_times=1, effected_times=1." in lines
    )


def test_refusal_reasons_are_recorded_once() -> None:
    text = SWITCH_IR.replace(
        "func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {",
        "func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>)"
        " -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {",
    ).replace(
        "func.return %r : tensor<1x2x4x4xf32>",
        "func.return %r, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>",
    )
    module = parse_module(default_context(), text, "r.mlir")
    stats = GraphFusionPass(only=("ConvBiasAddFusionPass",)).run(module)
    rule = stats.rules[GRAPH_FUSION]["ConvBiasAddFusionPass"]
    assert rule.match_times == 1 and rule.effect_times == 0
    assert rule.refusals == [
        ("graph.add %a", "the convolution's output has other users than the add")
    ]


def test_unknown_rule_in_only_is_an_error() -> None:
    module = parse_module(default_context(), SWITCH_IR, "m.mlir")
    with pytest.raises(UserError, match="unknown rule 'Nope' in only="):
        GraphFusionPass(only=("Nope",)).run(module)
