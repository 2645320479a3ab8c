"""The embedding API (docs/embedding.md): `import autofusion`, printing with weights,
afc in another xDSLOptMain, a pass of one's own, and located pass errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.xdsl_opt_main import xDSLOptMain

import autofusion
from autofusion.dialects import graph
from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.tools.expected_diagnostics import expectations, mismatches

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "embedding"))

from mycc.compile import compile_text  # noqa: E402
from mycc.fold_unary_pairs import FoldUnaryPairsPass  # noqa: E402

WEIGHTED = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %w = graph.constant dense_resource<w> : tensor<2xf32>
  %y = graph.add %x, %w : tensor<2xf32>
  func.return %y : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x100000000000803F000000C0"
    }
  }
#-}
"""


def test_the_type_stub_declares_each_public_name_from_its_module() -> None:
    """__init__.pyi (what type checkers read) and __init__.py's lazy table agree."""
    import ast

    stub = ast.parse((ROOT / "autofusion" / "__init__.pyi").read_text())
    declared = {
        alias.asname: node.module
        for node in stub.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert declared == autofusion._API
    annotated = [
        n.target.id
        for n in stub.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    assert annotated == ["__version__"]


def test_the_public_names_resolve_and_are_listed() -> None:
    assert set(autofusion.__all__) == {"__version__", *autofusion._API}
    for name in autofusion.__all__:
        assert getattr(autofusion, name) is not None, name
    assert autofusion.GraphFusionPass.name == "graph-fusion"
    assert set(autofusion.get_all_passes()) == {
        "set-target",
        "graph-fusion",
        "split-fusion",
        "ub-fusion",
        "lower-to-buffer",
        "super-kernel",
    }
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = autofusion.nope  # type: ignore[attr-defined]


def test_version_is_pyprojects() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    version = re.search(r'^version = "(.*)"$', pyproject, re.MULTILINE)
    assert version is not None
    assert autofusion.__version__ == version.group(1)
    afc_opt = Path(sys.executable).parent / "afc-opt"
    out = subprocess.run(
        [str(afc_opt), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith(f"afc-opt {version.group(1)} (xdsl "), out


def test_import_autofusion_loads_nothing_else() -> None:
    """`import autofusion` stays cheap: xDSL and afc's modules load on first use."""
    code = (
        "import sys, autofusion; "
        "print(sorted(m for m in sys.modules if m.startswith(('xdsl', 'autofusion.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_str_drops_the_weights_printer_metadata_and_module_to_text_keep_them() -> None:
    ctx = autofusion.default_context()
    module = autofusion.parse_module(ctx, WEIGHTED, "w.mlir")
    # xDSL 0.74: str() prints the handle, not the blob (docs/embedding.md says so)
    assert "dense_resource<w>" in str(module)
    assert "dialect_resources" not in str(module)
    out = StringIO()
    printer = Printer(stream=out)
    printer.print_op(module)
    printer.print_metadata(ctx.loaded_dialects)
    assert '"0x100000000000803F000000C0"' in out.getvalue()
    text = autofusion.module_to_text(ctx, module)
    again = autofusion.parse_module(autofusion.default_context(), text, "again.mlir")
    feeds = {"arg0": np.zeros(2, np.float32)}
    (result,) = run_function(again, feeds).values()
    np.testing.assert_array_equal(result, [1.0, -2.0])


def test_afc_registers_in_a_plain_xdsl_opt_main(capsys: pytest.CaptureFixture[str]) -> None:
    """The docs' recipe for a driver that builds its own registry."""

    class MyOptMain(xDSLOptMain):
        def register_all_dialects(self) -> None:
            super().register_all_dialects()
            for name, factory in autofusion.get_all_dialects().items():
                if name not in self.ctx.registered_dialect_names:
                    self.ctx.register_dialect(name, factory)

        def register_all_passes(self) -> None:
            super().register_all_passes()
            for name, factory in autofusion.get_all_passes().items():
                self.register_pass(name, factory)

        def register_all_targets(self) -> None:
            super().register_all_targets()
            self.available_targets.update(autofusion.get_all_targets())

    path = ROOT / "examples" / "mlp.mlir"
    MyOptMain(args=[str(path), "-p", "set-target{chip=Ascend910B1},graph-fusion,ub-fusion"]).run()
    out = capsys.readouterr().out
    assert out.count("graph.fusion_group") == 2
    assert "graph.ffn" in out  # graph-fusion's Linear-GELU-Linear


PAIRS = """func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %r1 = graph.relu %x : tensor<4x64xf32>
  %r2 = graph.relu %r1 : tensor<4x64xf32>
  %n1 = graph.neg %r2 : tensor<4x64xf32>
  %n2 = graph.neg %n1 : tensor<4x64xf32>
  %a1 = graph.abs %n2 : tensor<4x64xf32>
  %a2 = graph.abs %a1 : tensor<4x64xf32>
  %e = graph.exp %a2 : tensor<4x64xf32>
  func.return %e : tensor<4x64xf32>
}
"""


def test_a_pass_of_ones_own_between_afcs_keeps_the_numbers() -> None:
    """mycc's pass, differentially: interpret before and after the pipeline."""
    ctx = autofusion.default_context()
    before = autofusion.parse_module(ctx, PAIRS, "pairs.mlir")
    feeds = random_inputs(find_function(before), 0)
    want = run_function(before, feeds)
    after = autofusion.parse_module(ctx, PAIRS, "pairs.mlir")
    PassPipeline(
        (autofusion.GraphFusionPass(), FoldUnaryPairsPass(), autofusion.UbFusionPass())
    ).apply(ctx, after)
    after.verify()
    names = [op.name for op in after.walk()]
    assert names.count("graph.relu") == 1 and names.count("graph.abs") == 1
    assert "graph.neg" not in names
    got = run_function(after, feeds)
    assert got.keys() == want.keys()
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-6)
    assert "graph.fusion_group" in compile_text(PAIRS, "pairs.mlir")


def test_a_pass_error_about_an_op_is_located_at_it() -> None:
    ctx = autofusion.default_context()
    module = autofusion.parse_module(ctx, PAIRS, "pairs.mlir")
    with pytest.raises(autofusion.UserError) as info:
        FoldUnaryPairsPass(max_folds=1).apply(ctx, module)
    assert str(info.value) == "pairs.mlir:3:3: 3 unary pairs to fold, max-folds=1"
    # an op a pass creates is located at the op it sits in
    relu = next(op for op in module.walk() if isinstance(op, graph.ReluOp))
    new = graph.ReluOp.make([relu.results[0]], {}, result_types=None)
    f = find_function(module)
    f.body.block.insert_op_before(new, relu)
    assert str(autofusion.op_location(new)) == "pairs.mlir:1:1"
    assert autofusion.op_location(graph.ReluOp.make([relu.results[0]], {})) is None


SOFTMAX = """func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = graph.softmax %x {axis = -1} : tensor<4x8xf32>
  func.return %s : tensor<4x8xf32>
}
"""


@dataclass(frozen=True)
class BreakSoftmaxPass(ModulePass):
    """Moves the softmax axis out of range: IR the verifier rejects after the pass."""

    name = "break-softmax"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        softmax = next(o for o in op.walk() if isinstance(o, graph.SoftmaxOp))
        softmax.axis = IntegerAttr(5, i64)


def test_afc_opt_locates_the_op_a_pass_left_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class BreakingOptMain(autofusion.AfcOptMain):
        def register_all_passes(self) -> None:
            super().register_all_passes()
            self.register_pass("break-softmax", lambda: BreakSoftmaxPass)

    path = tmp_path / "softmax.mlir"
    path.write_text(SOFTMAX)
    argv = [str(path), "-p", "break-softmax"]
    code = autofusion.run_opt(BreakingOptMain, "breaking-opt", argv)
    err = capsys.readouterr().err
    assert code == 1
    assert err == f"{path}:2:3: error: 'graph.softmax': axis 5 is out of range for rank 2\n"


def test_expected_error_annotations() -> None:
    text = (
        "// expected-error @+1 {{below}}\n"
        "x // expected-error {{here}}\n"
        "y\n"
        "// expected-error @-1 {{above}}\n"
        "// expected-error@unknown {{nowhere}}\n"
    )
    found = expectations(text, "f.mlir", line_offset=10)
    assert [(e.line, e.message) for e in found] == [
        (12, "below"),
        (12, "here"),
        (13, "above"),
        (None, "nowhere"),
    ]
    assert str(found[0].annotation) == "f.mlir:11:4"
    error = autofusion.UserError("it is below the line", autofusion.SourceLocation("f", 12, 1))
    assert mismatches(found[:1], error) == []
    problems = mismatches(found[2:3], error)
    assert problems[0] == "f:12:1: error: unexpected error: it is below the line"
    assert 'expected error at line 13 "above" was not produced' in problems[1]
    assert mismatches(found[3:], autofusion.UserError("nowhere to be seen")) == []


class _LitConfig:
    """What configure() uses of lit's suite and global configs."""

    def __init__(self) -> None:
        self.name = ""
        self.environment: dict[str, str] = {}
        self.substitutions: list[tuple[str, str]] = []
        self.maxIndividualTestTime = 0
        self.fatals: list[str] = []

    def fatal(self, message: str) -> None:
        self.fatals.append(message)

    def warning(self, message: str) -> None:
        pass


def test_the_shipped_lit_config(tmp_path: Path) -> None:
    from autofusion.testing.lit import configure

    config = _LitConfig()
    cfg = tmp_path / "tests" / "lit.cfg"
    configure(config, config, str(cfg), python_path=[str(tmp_path)], timeout=30)
    subs = dict(config.substitutions)
    assert Path(subs["%afc-opt"]) == Path(sys.executable).parent / "afc-opt"
    assert subs["%python"] == sys.executable
    assert config.name == "tests" and config.test_source_root == str(cfg.parent)
    assert config.environment["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)
    assert config.environment["PYTHONHASHSEED"] == "0"
    assert config.maxIndividualTestTime == 30
    assert config.fatals == []
    configure(config, config, str(cfg), tools={"%mycc-opt": "no-such-mycc-opt"})
    assert config.fatals == [f"no-such-mycc-opt is not installed next to {sys.executable}"]
