"""The kernel templates stay split by concern (issue 13, item 7).

Read from the source with `ast`: no module of autofusion/lowering grows past MAX_LINES
(a template is a façade `<family>_kernel.py` over `<family>_plan`, `_tiling`, `_cost`,
`_emit` and `_host` modules), and no function there takes more than MAX_PARAMS
parameters (self and cls excluded): related values travel as a dataclass that names
them (a tile's coordinates, an epilogue's operands, a tiling's bounds).
"""

from __future__ import annotations

import ast
from pathlib import Path

LOWERING = Path(__file__).resolve().parent.parent / "autofusion" / "lowering"
MAX_LINES = 600
MAX_PARAMS = 6


def parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller passes: positional, keyword-only and the * and ** catch-alls,
    without a method's self or cls."""
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def too_many(source: str, where: str) -> list[str]:
    """`where:line name (count)` of every function in `source` over MAX_PARAMS."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = parameter_count(node)
            if n > MAX_PARAMS:
                found.append(f"{where}:{node.lineno} {node.name} ({n})")
    return found


def test_the_parameter_count_sees_every_kind_of_parameter() -> None:
    source = (
        "def f(a, b, /, c, d=1, *e, g, **h): pass\n"
        "class K:\n"
        "    def m(self, a, b, c, d, e, f): pass\n"
        "    def n(self, a, b, c, d, e, f, g): pass\n"
    )
    assert too_many(source, "x.py") == ["x.py:1 f (7)", "x.py:4 n (7)"]


def test_no_lowering_function_takes_more_than_six_parameters() -> None:
    found = [
        hit
        for path in sorted(LOWERING.glob("*.py"))
        for hit in too_many(path.read_text(), path.name)
    ]
    assert not found, f"functions over {MAX_PARAMS} parameters: {found}"


def test_no_lowering_module_is_over_600_lines() -> None:
    long = {
        path.name: n
        for path in sorted(LOWERING.glob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"
