"""The Ascend C printer only prints: every rule about buffer IR is the verifier's
(autofusion/dialects/ascendc_rules.py, buffer_verifier.py, mmad_rules.py, the op
verifiers, and fractal_rules.py and host_rules.py, which read the whole module), so plain
`afc-opt` rejects what `-t ascendc` would. This test reads the
printer's source and fails on a `raise UserError` that is not a documented printing
limitation below."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRINTER_FILES = (
    "autofusion/codegen/ascendc.py",
    "autofusion/codegen/ascendc_cube.py",
    "autofusion/codegen/ascendc_target.py",
    "autofusion/codegen/ascendc_analysis.py",
    "autofusion/codegen/ascendc_host.py",
)

# (file, function) -> (how many UserErrors it raises, why the printer says so)
PRINTING_LIMITATIONS: dict[tuple[str, str], tuple[int, str]] = {
    ("ascendc_target.py", "emit_ascendc"): (1, "a module with no buffer.kernel: nothing to print"),
    ("ascendc_target.py", "AscendCTarget.emit"): (1, "an unknown -t ascendc{api=...} option"),
    ("ascendc.py", "KernelPrinter.statement"): (
        1,
        "an op of another dialect with no C++ form in ScalarPrinter",
    ),
    ("ascendc.py", "KernelPrinter.emit_im2col"): (
        1,
        "buffer.im2col is real IR (the interpreter runs it) with no LoadData3DV2 form",
    ),
    ("ascendc.py", "KernelPrinter._ctype"): (
        1,
        "the API table's C++ types; the dialect has more (i16 atomic adds on 310P)",
    ),
    ("ascendc_cube.py", "CubePath._visible"): (
        1,
        "a layout value must be visible in the C++ method (stage) that reads it",
    ),
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
