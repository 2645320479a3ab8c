"""The Ascend C printer only prints: every rule about buffer IR is the verifier's
(autofusion/dialects/ascendc_rules.py, buffer_verifier.py, mmad_rules.py, the op
verifiers), so plain `afc-opt` rejects what `-t ascendc` would. This test reads the
printer's source and fails on a `raise UserError` that is not a documented printing
limitation below."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRINTER_FILES = (
    "autofusion/codegen/ascendc.py",
    "autofusion/codegen/ascendc_analysis.py",
    "autofusion/codegen/ascendc_host.py",
)

# the Divisibility analysis proves these from the host tiling function (a whole-module
# analysis of values): whether a fractal read or a DataCopy row has a form depends on it
_DIVISIBILITY = "needs the printer's Divisibility facts about tiling values"
# (file, function) -> (how many UserErrors it raises, why the printer says so)
PRINTING_LIMITATIONS: dict[tuple[str, str], tuple[int, str]] = {
    ("ascendc.py", "emit_ascendc"): (1, "a module with no buffer.kernel: nothing to print"),
    ("ascendc.py", "AscendCTarget.emit"): (1, "an unknown -t ascendc{api=...} option"),
    ("ascendc.py", "KernelPrinter.statement"): (
        1,
        "an op of another dialect with no C++ form in ScalarPrinter",
    ),
    ("ascendc.py", "KernelPrinter.emit_im2col"): (
        1,
        "buffer.im2col is real IR (the interpreter runs it) with no LoadData3DV2 form",
    ),
    ("ascendc.py", "KernelPrinter._classify"): (
        1,
        "what can run in Init is what ScalarPrinter prints as a pure expression",
    ),
    ("ascendc.py", "KernelPrinter._ctype"): (
        1,
        "the API table's C++ types; the dialect has more (i16 atomic adds on 310P)",
    ),
    ("ascendc.py", "KernelPrinter._visible"): (
        1,
        "a layout value must be visible in the C++ method (stage) that reads it",
    ),
    ("ascendc.py", "KernelPrinter._copy_ub_ub"): (1, _DIVISIBILITY),
    ("ascendc.py", "KernelPrinter._whole"): (1, _DIVISIBILITY),
    ("ascendc.py", "KernelPrinter._layout"): (
        1,
        "the fractal layout the printer tracks through copies and mmads, in order",
    ),
    ("ascendc.py", "KernelPrinter._copy_strips"): (1, _DIVISIBILITY),
    ("ascendc.py", "KernelPrinter._co1_to_co2"): (2, _DIVISIBILITY),
    ("ascendc.py", "KernelPrinter._nz_to_nd"): (3, _DIVISIBILITY),
    ("ascendc.py", "KernelPrinter._load_data"): (
        4,
        _DIVISIBILITY + "; and a transposed float A operand, which the matmul lowering"
        " still produces (test_cube_kernels trans1/trans3): a rule the verifier cannot own"
        " until the lowering stops producing it",
    ),
    ("ascendc.py", "KernelPrinter._fixpipe"): (1, _DIVISIBILITY),
    # the host printer reads func-dialect tiling code, which no afc verifier covers yet
    ("ascendc_host.py", "_int_result"): (1, "host tiling function signature"),
    ("ascendc_host.py", "_RulePrinter.statement"): (1, "host tiling rule: no calls"),
    ("ascendc_host.py", "host_slice"): (2, "host code before a launch: dims and no control flow"),
    ("ascendc_host.py", "_ContextPrinter.render_op"): (1, "host code reads launched shapes"),
    ("ascendc_host.py", "_ContextPrinter.statement"): (2, "host code: the tiling rule, integers"),
    ("ascendc_host.py", "HostPrinter._rule"): (1, "host tiling function: one block"),
}


def user_errors(path: Path) -> dict[tuple[str, str], int]:
    """(file name, qualified function) -> the `raise UserError(...)` statements in it."""
    found: dict[tuple[str, str], int] = {}

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, [*scope, child.name])
                continue
            exc = child.exc if isinstance(child, ast.Raise) else None
            if isinstance(exc, ast.Call) and ast.unparse(exc.func) == "UserError":
                key = (path.name, ".".join(scope))
                found[key] = found.get(key, 0) + 1
            visit(child, scope)

    visit(ast.parse(path.read_text()), [])
    return found


def printer_user_errors() -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for name in PRINTER_FILES:
        found.update(user_errors(ROOT / name))
    return found


def test_the_printer_raises_user_errors_only_for_printing_limitations() -> None:
    found = printer_user_errors()
    undocumented = {
        f"{file}:{function} raises {n}": PRINTING_LIMITATIONS.get((file, function), (0, ""))[0]
        for (file, function), n in found.items()
        if n != PRINTING_LIMITATIONS.get((file, function), (0, ""))[0]
    }
    assert not undocumented, (
        "a rule about buffer IR belongs in the verifier (autofusion/dialects/ascendc_rules.py);"
        f" an assert if the verifier guarantees it. Documented counts: {undocumented}"
    )
    stale = sorted(set(PRINTING_LIMITATIONS) - set(found))
    assert not stale, f"documented printing limitations that no longer raise: {stale}"


def test_the_walk_finds_a_user_error(tmp_path: Path) -> None:
    """The check can fail: a printer function raising UserError is found."""
    source = tmp_path / "printer.py"
    source.write_text(
        "class P:\n    def emit(self, op):\n        if op:\n"
        "            raise UserError(f'{op}: bad')\n"
    )
    assert user_errors(source) == {("printer.py", "P.emit"): 1}
