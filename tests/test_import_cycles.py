"""No import cycles between the modules of autofusion/ and frontends/.

The graph is built from the source with `ast`: every import statement counts, at module
level, inside a function or under `if TYPE_CHECKING:` alike, so a cycle cannot be hidden
by moving an import into a function. A cycle is broken by moving the shared piece to the
module that owns it.

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

REMAINING: list[frozenset[str]] = [
    # the buffer dialect's ops and its whole-kernel verifier (with the Mmad and Ascend C rules)
    frozenset(
        {
            "autofusion.dialects.ascendc_rules",
            "autofusion.dialects.buffer",
            "autofusion.dialects.buffer_verifier",
            "autofusion.dialects.mmad_rules",
        }
    ),
    # the buffer interpreter and its compiled kernel programs (they call its op impls)
    frozenset(
        {
            "autofusion.interpreter.buffer",
            "autofusion.interpreter.kernel_program",
            "autofusion.interpreter.vector_loops",
        }
    ),
    # the template registry and the kernel templates; the cost model and the rows template
    frozenset(
        {
            "autofusion.cost_model",
            "autofusion.lowering.attention_cost",
            "autofusion.lowering.attention_emit",
            "autofusion.lowering.attention_host",
            "autofusion.lowering.attention_kernel",
            "autofusion.lowering.attention_plan",
            "autofusion.lowering.attention_tiling",
            "autofusion.lowering.conv_cost",
            "autofusion.lowering.conv_emit",
            "autofusion.lowering.conv_host",
            "autofusion.lowering.conv_kernel",
            "autofusion.lowering.conv_plan",
            "autofusion.lowering.conv_tiling",
            "autofusion.lowering.cube_common",
            "autofusion.lowering.cube_epilogue",
            "autofusion.lowering.ffn_cost",
            "autofusion.lowering.ffn_emit",
            "autofusion.lowering.ffn_host",
            "autofusion.lowering.ffn_kernel",
            "autofusion.lowering.ffn_plan",
            "autofusion.lowering.ffn_tiles",
            "autofusion.lowering.l2_hint",
            "autofusion.lowering.matmul_cost",
            "autofusion.lowering.matmul_emit",
            "autofusion.lowering.matmul_host",
            "autofusion.lowering.matmul_kernel",
            "autofusion.lowering.matmul_plan",
            "autofusion.lowering.matmul_tiling",
            "autofusion.lowering.row_kernel",
            "autofusion.lowering.row_ops",
            "autofusion.lowering.row_plan",
            "autofusion.lowering.row_vector_math",
            "autofusion.lowering.rows_template",
            "autofusion.lowering.template",
        }
    ),
    # ub-fusion -> rule registry -> split rules -> their cost gate -> ub-fusion's Partitioner
    frozenset(
        {
            "autofusion.passes.graph_fusion",
            "autofusion.passes.rule_registry",
            "autofusion.passes.rules",
            "autofusion.passes.rules.concat_split",
            "autofusion.passes.rules.norm_split",
            "autofusion.passes.rules.producer_duplicate",
            "autofusion.passes.rules.split_cost",
            "autofusion.passes.rules.split_slices",
            "autofusion.passes.ub_fusion",
        }
    ),
]


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


def imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project modules `module` imports (a name imported from a package is the
    submodule when one has that name, else the package)."""

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {m: set(imported(m, p, known)) for m, p in known.items()}


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
    # lower_group's template registry is imported inside templates()
    assert "autofusion.lowering.rows_template" in graph["autofusion.lowering.template"]
    assert "autofusion.dialects.target" in graph["autofusion.passes.ub_fusion"]


def test_no_new_import_cycles() -> None:
    found = cycles(import_graph())
    new = [sorted(c) for c in found if not any(c <= known for known in REMAINING)]
    assert not new, f"import cycles: {new}"
    gone = [sorted(k) for k in REMAINING if not any(c <= k for c in found)]
    assert not gone, f"these cycles are broken: remove them from REMAINING: {gone}"
