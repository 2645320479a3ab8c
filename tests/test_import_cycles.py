"""No import cycles between the modules of autofusion/ and frontends/.

The graph is built from the source with `ast`: every import statement counts, at module
level, inside a function or under `if TYPE_CHECKING:` alike, so a cycle cannot be hidden
by moving an import into a function. A cycle is broken by moving the shared piece to the
module that owns it.

Importing `a.b.c` first runs the `__init__` of packages `a` and `a.b`, so a module also
depends on what those package modules import when they load (their module-level
imports, `if TYPE_CHECKING:` ones included) unless it lives in that package itself (then
the package has loaded before it). A package whose `__init__` imports its own modules at
load time is in a cycle with every outside module that imports one of them. Type stubs
(`.pyi`, such as the root package's lazy API) never run and are not read.

REMAINING lists the cycles not broken yet (issue 13, item 6), each as its set of modules
(a strongly connected component). The test fails on any other cycle, on a listed one
that grew, and on a listed one that is gone (so the list only shrinks, down to empty).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autofusion", "frontends")

REMAINING: list[frozenset[str]] = []


def modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the packages."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported(
    module: str, path: Path, known: dict[str, Path], tree: ast.AST | None = None
) -> Iterator[str]:
    """The project modules `module` imports (a name imported from a package is the
    submodule when one has that name, else the package); `tree` is the part of the
    source to read (the whole file when None)."""

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if tree is None:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [owner(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[: len(package) - node.level + 1]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else owner(base)
                for a in node.names
            ]
        else:
            continue
        yield from (n for n in names if n is not None and n != module)


def load_time_imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `module` imports when it loads: its module-level import
    statements, also those under `if` (TYPE_CHECKING) and `try`, not those in functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    statements: list[ast.stmt] = []
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            statements.append(node)
        elif isinstance(node, ast.If | ast.Try):
            pending += [*node.body, *node.orelse]
            pending += [s for h in getattr(node, "handlers", []) for s in h.body]
            pending += getattr(node, "finalbody", [])
    top = ast.Module(body=statements, type_ignores=[])
    return set(imported(module, path, known, top))


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports, and what the packages of those load with them."""
    known = modules()
    packages = {m: p for m, p in known.items() if p.name == "__init__.py"}
    on_load = {m: load_time_imports(m, p, known) for m, p in packages.items()}
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        own = module if path.name == "__init__.py" else module.rpartition(".")[0]
        loaded = {own.rsplit(".", i)[0] for i in range(own.count(".") + 1)}
        edges = set(imported(module, path, known))
        for name in list(edges):
            parts = name.split(".")
            for package in (".".join(parts[:i]) for i in range(1, len(parts))):
                if package in on_load and package not in loaded:
                    edges |= on_load[package]
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    # the rows template imports the L2 hints inside read_once()
    assert "autofusion.lowering.l2_hint" in graph["autofusion.lowering.rows_template"]
    assert "autofusion.dialects.target" in graph["autofusion.passes.ub_fusion"]


def test_the_graph_sees_what_packages_load() -> None:
    graph = import_graph()
    # split-fusion imports rules.split_cost, which first runs rules/__init__.py: it loads
    # every rule module; a rule module (inside the package) does not run it again
    assert "autofusion.passes.rules.gelu" in graph["autofusion.passes.split_fusion"]
    assert "autofusion.passes.rules.gelu" not in graph["autofusion.passes.rules.norm_split"]
    # a function-level import in a package __init__ does not run when the package loads
    assert "autofusion.passes.ub_fusion" in graph["autofusion.passes"]
    assert "autofusion.passes.ub_fusion" not in graph["autofusion.passes.set_target"]


def test_no_new_import_cycles() -> None:
    found = cycles(import_graph())
    new = [sorted(c) for c in found if not any(c <= known for known in REMAINING)]
    assert not new, f"import cycles: {new}"
    gone = [sorted(k) for k in REMAINING if not any(c <= k for c in found)]
    assert not gone, f"these cycles are broken: remove them from REMAINING: {gone}"
