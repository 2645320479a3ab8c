"""`-t hfusion`: afc's fusion groups as linalg-on-tensors device functions for bishengir.

Differential: the exported program (device functions, host steps, library calls) run by
autofusion/codegen/hfusion_ir.py gives the fused graph's outputs. Structure: named ops
only, static shapes, one DEVICE function per schedulable part, the cut and host-call
remarks, and a refusal (naming the op) that writes no file. The real compiler is
tests/test_hfusion_bishengir.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Set as AbstractSet
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen import hfusion_kinds as kinds
from autofusion.codegen.hfusion_export import (
    Export,
    Refusal,
    export_module,
    hfusion_text,
    run_export,
)
from autofusion.codegen.hfusion_ir import STEP_KINDS, Step, Value
from autofusion.driver.compile import CompileOptions, compile_model
from autofusion.driver.input_ranges import integer_input_ranges
from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.mlir_io import default_context, parse_module

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("mlp", "llama_layer", "resnet_block")
SMALL = 8  # the dynamic size of the differential runs (the numbers, not the plan, depend on it)


@cache
def fused(example: str) -> ModuleOp:
    """The example after afc's fusion stages (fusion groups planned for Ascend910B1)."""
    c = compile_model(
        str(ROOT / "examples" / f"{example}.afc"),
        CompileOptions(chip="Ascend910B1"),
        None,
        "ub-fusion",
    )
    assert c.fused is not None
    return c.fused


def shape_only_fill(op: object) -> np.ndarray:
    from typing import Any, cast

    from xdsl.dialects.builtin import TensorType

    from autofusion import dtypes

    t = cast(TensorType, cast(Any, op).result.type)
    rng = np.random.default_rng(len(t.get_shape()))
    return dtypes.to_storage(rng.standard_normal(t.get_shape()) * 0.1, t.element_type)


@pytest.mark.parametrize("example", EXAMPLES)
def test_export_runs_to_the_graph_outputs(example: str) -> None:
    module = fused(example)
    export = export_module(module, SMALL)
    assert_views_of_parameters_on_the_host(export)
    inputs = random_inputs(find_function(module), 0, SMALL)
    want = run_function(module, inputs, shape_only_fill=shape_only_fill)
    got = run_export(export, module, inputs, shape_only_fill)
    assert set(got) == set(want)
    for name, w in want.items():
        g = got[name]
        assert g.shape == w.shape and g.dtype == w.dtype
        # f16 groups keep their intermediates in f32 inside one kernel (no rounding between
        # fused ops), so they differ from the op-by-op rounding by a few f16 ulps
        tol = 2e-2 if w.dtype == np.float16 else 1e-4
        scale = max(1.0, float(np.max(np.abs(w.astype(np.float64)))))
        assert np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))) <= tol * scale, name


@pytest.mark.parametrize("model", ["bert", "gpt2", "llama", "vit"])
def test_corpus_export_runs_to_the_graph_outputs(model: str) -> None:
    """Real exports: masks (i1 host parts), gathers and attention as library calls, splits."""
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    sys.path.insert(0, str(ROOT / "tests"))
    import model_corpus

    path = model_corpus.model_path(model, "dynamo")
    c = compile_model(str(path), CompileOptions(chip="Ascend910B1"), None, "ub-fusion")
    assert c.fused is not None
    export = export_module(c.fused, SMALL)
    assert_views_of_parameters_on_the_host(export)
    f = find_function(c.fused)
    ranges = integer_input_ranges(f, {})  # token ids within their tables
    inputs = random_inputs(f, 0, SMALL, ranges)
    want = run_function(c.fused, inputs)
    got = run_export(export, c.fused, inputs)
    for name, w in want.items():
        scale = max(1.0, float(np.max(np.abs(w.astype(np.float64)))))
        assert np.max(np.abs(got[name].astype(np.float64) - w)) <= 1e-4 * scale, name


def test_export_catches_a_wrong_step() -> None:
    """The differential above can fail: a softmax that divides by max instead of the sum."""
    module = fused("mlp")
    export = export_module(module, SMALL)
    softmax = export.program.devices[-1]
    i, div = next((i, s) for i, s in enumerate(softmax.steps) if s.attr_or("fun") == "div")
    softmax.steps[i] = Step(div.kind, div.operands, div.result, (("fun", "mul"),))
    inputs = random_inputs(find_function(module), 0, SMALL)
    want = run_function(module, inputs)["probs"]
    got = run_export(export, module, inputs)["probs"]
    assert np.max(np.abs(got - want)) > 1e-2


def test_mlp_text_is_named_ops_on_static_tensors() -> None:
    text = hfusion_text(fused("mlp"), 128)
    assert "linalg.generic" not in text and "?" not in re.sub(r"//.*", "", text)
    heads = re.findall(r"func\.func @(\w+)\(.*attributes \{(.*)\} \{", text)
    assert [h[0] for h in heads] == ["afc_g1_0", "afc_g1_1", "afc_g2", "main"]
    assert all("hacc.function_kind = #hacc.function_kind<DEVICE>" in a for _, a in heads[:3])
    assert "#hacc.function_kind<HOST>" in heads[3][1]
    # the ffn (matmul, gelu, matmul) is MIX_C2: cut before the second matmul
    assert "// remark: afc_g1: MIX_C2 is not scheduled by HFusion 1.2.0; cut into 2" in text
    assert re.search(r"func\.call @afc_g1_1\(%fc2_w, %fc2_b, %v\d+\)", text)
    ops = set(re.findall(r"= ((?:linalg|hfusion|tensor|arith)\.\w+)", text))
    assert ops <= {*STEP_KINDS, "tensor.empty"}, ops


BATCHED = """
func.func @main(%x: tensor<4x16x64xf32>, %w: tensor<4x64x32xf32>) -> tensor<4x16x32xf32> {
  %r = graph.fusion_group (%a = %x : tensor<4x16x64xf32>, %b = %w : tensor<4x64x32xf32>) -> tensor<4x16x32xf32> {
    %e = graph.exp %a : tensor<4x16x64xf32>
    %m = graph.matmul %e, %b : (tensor<4x16x64xf32>, tensor<4x64x32xf32>) -> tensor<4x16x32xf32>
    %y = graph.relu %m : tensor<4x16x32xf32>
    graph.yield %y : tensor<4x16x32xf32>
  }
  func.return %r : tensor<4x16x32xf32>
}
"""


def test_batch_matmul_is_a_host_call_between_device_functions() -> None:
    """bishengir 1.2.0 cannot compile a linalg.batch_matmul in a device function: it stays a
    host call (a CANN operator); the exp before it and the relu after it are kernels."""
    module = parse_module(default_context(), BATCHED, "batched.mlir")
    export = export_module(module)
    assert [(d.name, d.fusion_kind) for d in export.program.devices] == [
        ("afc_g1_0", "PURE_ELEMWISE"),
        ("afc_g1_2", "PURE_ELEMWISE"),
    ]
    assert not any(s.kind == "linalg.batch_matmul" for d in export.program.devices for s in d.steps)
    text = hfusion_text(module)
    assert "cut into 3 parts before each matmul that reads vector results, around each " in text
    assert re.search(r"remark: afc_g1_1: kept as a host call \(.*no op pattern for linalg", text)
    assert "func.func private @afc_g1_1(tensor<4x64x32xf32>, tensor<4x16x64xf32>)" in text
    inputs = random_inputs(find_function(module), 0, SMALL)
    want = run_function(module, inputs)
    got = run_export(export, module, inputs)
    (name,) = want
    np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_library_ops_stay_host_calls() -> None:
    text = hfusion_text(fused("resnet_block"), 4)
    assert text.count("= func.call @afc_g") == 4  # three convolutions and the add+relu
    assert (
        "remark: afc_g1: graph.conv2d kept as a host call (convolution is not an HFusion op)"
        in text
    )
    assert re.search(r"func\.func private @afc_g1_conv2d\(tensor<4x64x56x56xf32>", text)


def test_bool_tensors_do_not_cross_a_kernel_boundary(tmp_path: Path) -> None:
    # the llama layer with a mask that is not causal by position (the query ids shifted
    # by one), so it stays an i1 tensor that a library op hands to the attention
    source = (ROOT / "examples" / "llama_layer.afc").read_text()
    causal = "reshape(positions, shape=[-1, 1]))"
    assert source.count(causal) == 1
    (tmp_path / "llama_layer.npz").write_bytes((ROOT / "examples" / "llama_layer.npz").read_bytes())
    model = tmp_path / "shifted_mask.afc"
    model.write_text(source.replace(causal, "reshape(positions, shape=[-1, 1]) + 1)"))
    c = compile_model(str(model), CompileOptions(chip="Ascend910B1"), None, "ub-fusion")
    assert c.fused is not None
    text = hfusion_text(c.fused, 16)
    assert "a bool (i1) tensor crosses the kernel boundary" in text
    device = re.findall(
        r"func\.func @(\w+)\((.*)\) -> (.*) attributes \{hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>",
        text,
    )
    assert device and not any("xi1>" in args or "xi1>" in res for _, args, res in device)


# ---- fusion kinds: afc's table on step lists -----------------------------------------------


def _steps(text: str) -> list[Step]:
    """A tiny step list from `kind operand... -> result` lines (2-D f32 tensors)."""
    values: dict[str, Value] = {}
    steps = []
    for line in text.strip().splitlines():
        kind, rest = line.split(" ", 1)
        args, out = rest.split("->")
        shape = (4,) if out.strip().endswith("1d") else (4, 4)
        operands = tuple(values.setdefault(a, Value(a, "f32", (4, 4))) for a in args.split())
        result = Value(out.strip(), "f32", shape)
        values[result.name] = result
        attrs = (("dims", [1]),) if kind == "linalg.reduce" else ()
        steps.append(Step(kind, operands, result, attrs))
    return steps


# bishengir 1.2.0's inference (hfusion_kinds.py; tests/test_hfusion_bishengir.py checks the
# same on the real compiler)
KIND_CASES = {
    "linalg.elemwise_binary a b -> c": "PURE_ELEMWISE",
    "linalg.broadcast a -> c\nlinalg.elemwise_binary c b -> d": "ANY_PB",
    "linalg.reduce a i -> r1d": "LAST_AXIS_PBR",
    # no important op, or one: that op's own kind
    "tensor.collapse_shape a -> c1d": "ANY_PB",
    "tensor.extract_slice a -> c": "ANY_PB",
    "linalg.matmul a b z -> c": "SINGLE_CUBE",
    "linalg.fill k -> z\nlinalg.matmul a b z -> c": "SHALLOW_CV",
    "linalg.fill k -> z\nlinalg.batch_matmul a b z -> c": "PURE_ELEMWISE",
    "linalg.batch_matmul a b z -> c\nlinalg.elemwise_unary c -> d": "PURE_ELEMWISE",
    "linalg.fill k -> z\nlinalg.batch_matmul a b z -> c\nlinalg.elemwise_unary c -> d": "UNKNOWN",
    "linalg.matmul a b z -> c\nlinalg.elemwise_unary c -> d": "SHALLOW_CV",
    "linalg.elemwise_unary a -> c\nlinalg.matmul c b z -> d": "MIX_CV",
    "linalg.matmul a b z -> c\nlinalg.elemwise_unary c -> d\nlinalg.matmul d b z -> e": "MIX_C2",
}


@pytest.mark.parametrize("case", KIND_CASES)
def test_fusion_kind_table(case: str) -> None:
    assert kinds.fusion_kind(_steps(case)) == KIND_CASES[case]


def test_cuts_make_every_part_schedulable() -> None:
    steps = _steps(
        "linalg.matmul a b z -> c\nlinalg.elemwise_unary c -> d\nlinalg.matmul d b z -> e"
    )
    cuts = kinds.cut_points(steps)
    assert cuts == [2]
    parts = [steps[:2], steps[2:]]
    # the second matmul accumulates into a parameter here: SINGLE_CUBE (the export's fill
    # would make it SHALLOW_CV)
    assert [kinds.fusion_kind(p) for p in parts] == ["SHALLOW_CV", "SINGLE_CUBE"]
    assert all(kinds.schedulable(kinds.fusion_kind(p)) for p in parts)
    assert kinds.cut_points(_steps("linalg.elemwise_unary a -> c\nlinalg.matmul c b z -> d")) == [1]
    assert kinds.cut_points(_steps("linalg.matmul a b z -> c\nlinalg.elemwise_unary c -> d")) == []
    # a batch_matmul is a part of its own, the vector work on either side device functions
    bmm = _steps(
        "linalg.elemwise_unary a -> c\nlinalg.batch_matmul c b z -> d\nlinalg.elemwise_unary d -> e"
    )
    assert kinds.cut_points(bmm) == [1, 2]
    assert kinds.step_limit(bmm[1:2]) and not kinds.step_limit(bmm[2:])


CUTS = ROOT / "tests" / "filecheck" / "codegen" / "hfusion" / "cuts.mlir"
# chunk of cuts.mlir -> (its device functions' fusion kinds, the rule that cut it)
CUT_CASES = {
    "matmul-rope": (0, ["SHALLOW_CV", "PURE_ELEMWISE"], "before each slice of a matmul part's"),
    "ropes-of-two-shapes": (1, ["PURE_ELEMWISE", "PURE_ELEMWISE"], "between independent"),
    "ropes-of-one-shape": (2, ["PURE_ELEMWISE"], None),
    "matmul-epilogue": (3, ["SHALLOW_CV"], None),
}


def cut_case(name: str) -> ModuleOp:
    return parse_module(default_context(), _chunks(CUTS)[CUT_CASES[name][0]], "cuts.mlir")


def assert_views_of_parameters_on_the_host(export: Export) -> None:
    """No device function returns a parameter or a view of one: a view of a parameter is
    made on the host (hfusion_export.VIEW_STEPS), so every result is computed in the body."""
    for fn in export.program.devices:
        by_name = {s.result.name: s for s in fn.steps}
        for r in fn.results:
            step = by_name.get(r.name)
            while step is not None and not kinds.is_compute(step):
                step = by_name.get(step.operands[0].name) if step.operands else None
            assert step is not None, f"{fn.name} returns {r.name}, a view of a parameter"


@pytest.mark.parametrize("name", CUT_CASES)
def test_cut_rules_split_a_group_into_parts(name: str) -> None:
    """kinds.PART_RULES: a rope on a matmul's result is a part of its own, so are ropes of
    different shapes; ropes of one shape and a matmul's elementwise epilogue are not cut.
    Each export runs to the graph's outputs."""
    _, want_kinds, rule = CUT_CASES[name]
    module = cut_case(name)
    export = export_module(module, SMALL)
    assert [d.fusion_kind for d in export.program.devices] == want_kinds
    cut_remarks = [r for r in export.program.remarks if "cut into" in r]
    if rule is None:
        assert cut_remarks == []
    else:
        assert cut_remarks == [f"afc_g1: cut into 2 parts {_rule(rule).where}"]
    assert_views_of_parameters_on_the_host(export)
    inputs = random_inputs(find_function(module), 0, SMALL)
    want = run_function(module, inputs)
    got = run_export(export, module, inputs)
    for key, w in want.items():
        np.testing.assert_allclose(got[key], w, rtol=1e-5, atol=1e-5)


def _rule(where: str) -> kinds.PartRule:
    return next(r for r in kinds.PART_RULES if r.where.startswith(where))


def test_each_cut_names_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The step-level cuts: before the rope's first slice of the matmul result, and before
    the second rope's computation (the exp of the 32-column input), each by its rule."""
    seen: list[tuple[list[Step], list[kinds.Cut]]] = []
    real = kinds.cuts

    def recording(steps: list[Step], live: AbstractSet[str] = frozenset()) -> list[kinds.Cut]:
        seen.append((steps, real(steps, live)))
        return seen[-1][1]

    monkeypatch.setattr(kinds, "cuts", recording)
    export_module(cut_case("matmul-rope"), SMALL)
    export_module(cut_case("ropes-of-two-shapes"), SMALL)
    (rope_steps, (rope_cut,)), (two_steps, (two_cut,)) = seen
    assert rope_cut.rule is _rule("before each slice")
    matmul = next(s for s in rope_steps if s.kind == "linalg.matmul")
    sliced = rope_steps[rope_cut.at]
    assert sliced.kind == "tensor.extract_slice" and sliced.operands == (matmul.result,)
    assert two_cut.rule is _rule("between independent")
    exp = two_steps[two_cut.at]
    assert exp.attr_or("fun") == "exp" and exp.operands[0].name == "k"


def test_llama_parts_are_cut_by_rule_not_by_op() -> None:
    """The llama example's QKV group: the norm, the matmul with its epilogue, then the q and
    k ropes (4 and 2 heads) as two parts; the views of the matmul result are on the host."""
    export = export_module(fused("llama_layer"), 128)
    parts = [(d.name, d.fusion_kind) for d in export.program.devices if d.name[:6] == "afc_g2"]
    assert parts == [
        ("afc_g2_0", "LAST_AXIS_PBR"),
        ("afc_g2_1", "SHALLOW_CV"),
        ("afc_g2_2", "ANY_PB"),
        ("afc_g2_3", "ANY_PB"),
    ]
    remark = next(r for r in export.program.remarks if r.startswith("afc_g2:"))
    for where in ("before each matmul", "before each slice", "between independent"):
        assert _rule(where).where in remark
    assert_views_of_parameters_on_the_host(export)


# ---- bad input ------------------------------------------------------------------------------

UNSUPPORTED = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.fusion_group (%a = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %e = graph.exp %a : tensor<4x8xf32>
    %s = graph.sign %e : tensor<4x8xf32>
    graph.yield %s : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}
"""


def test_an_op_without_hfusion_form_refuses_the_export() -> None:
    module = parse_module(default_context(), UNSUPPORTED, "bad.mlir")
    with pytest.raises(Refusal, match=r"graph\.sign has no HFusion lowering"):
        export_module(module)


def test_refusal_writes_no_file(tmp_path: Path) -> None:
    source = tmp_path / "bad.mlir"
    source.write_text(UNSUPPORTED)
    out = tmp_path / "out.mlir"
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "afc-opt"),
            str(source),
            "-t",
            "hfusion",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "graph.sign has no HFusion lowering" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not out.exists()


def test_compile_backend_hfusion_writes_the_module(tmp_path: Path) -> None:
    afc = str(Path(sys.executable).parent / "afc")
    out = tmp_path / "mlp"
    example = str(ROOT / "examples" / "mlp.afc")
    cmd = [afc, "compile", example, "--chip", "Ascend910B1", "--backend", "hfusion", "-q"]
    proc = subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (out / "hfusion.mlir").read_text() == hfusion_text(fused("mlp"), 128)
    assert (out / "kernels").is_dir()  # afc's own Ascend C is written as before


LIT_INPUTS = (
    "passes/graph-fusion/conv-batchnorm.mlir",  # batch_norm left unfolded
    "passes/graph-fusion/rope.mlir",  # slices
    "passes/graph-fusion/ffn.mlir",  # swiglu
    "passes/split-fusion/split-slices.mlir",
    "passes/ub-fusion/grouping.mlir",
)


def _chunks(path: Path) -> list[str]:
    return path.read_text().split("// -----")


@pytest.mark.parametrize("name", LIT_INPUTS)
def test_lit_inputs_run_to_the_graph_outputs(name: str) -> None:
    """Every exportable chunk of these lit inputs, planned by ub-fusion, runs to the same
    outputs as the graph (the chunks with an op afc cannot export are refused, not run)."""
    from autofusion.passes.ub_fusion import UbFusionPass

    ran = 0
    for text in _chunks(ROOT / "tests" / "filecheck" / name):
        module = parse_module(default_context(), text, name)
        UbFusionPass().apply(default_context(), module)
        try:
            export = export_module(module, SMALL)
        except Refusal:
            continue
        f = find_function(module)
        inputs = random_inputs(f, 1, SMALL)
        want = run_function(module, inputs, shape_only_fill=shape_only_fill)
        got = run_export(export, module, inputs, shape_only_fill)
        for key, w in want.items():
            w64 = w.astype(np.float64)
            tol = 2e-2 if w.dtype == np.float16 else 1e-4
            # a negative shape-only variance makes NaNs on both sides, at the same places
            assert np.allclose(got[key].astype(np.float64), w64, tol, tol, equal_nan=True), key
        ran += 1
    assert ran
