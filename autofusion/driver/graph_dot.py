"""graph.dot: the model before and after fusion, each fusion group a coloured cluster.

Constants are left out (they would drown the picture); every other graph op is a box
named by its op and source name, function inputs and outputs are ellipses. An edge
into or out of a fusion group connects the ops inside it, so the two halves line up.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import graph
from autofusion.interpreter import argument_names, find_function, result_names
from autofusion.passes.fusion_statistics import location_names

# fill colours of fusion groups, cycled (ColorBrewer Set3, readable with black text)
PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)
LIBRARY_COLOUR = "#d9d9d9"
LABEL_CHARS = 32
SVG_TIMEOUT_S = 120


def _quote(text: str) -> str:
    """A dot string literal; a newline in `text` becomes dot's line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _label(op: Operation) -> str:
    names = list(dict.fromkeys(location_names(op.location)))
    where = "+".join(names) if names else (op.results[0].name_hint or "" if op.results else "")
    if len(where) > LABEL_CHARS:
        where = where[: LABEL_CHARS - 3] + "..."
    kind = op.name.removeprefix("graph.")
    return f"{kind}\n{where}" if where else kind


class _Half:
    """The nodes and edges of one function, with node ids prefixed by `prefix`."""

    def __init__(self, prefix: str, f: func.FuncOp, outside_colour: str | None) -> None:
        self.prefix = prefix
        self.outside_colour = outside_colour
        self.lines: list[str] = []
        self.edges: list[tuple[str, str]] = []
        self.node_of: dict[SSAValue, str] = {}
        self.count = 0
        for i, (arg, name) in enumerate(zip(f.body.block.args, argument_names(f))):
            node = f"{prefix}in{i}"
            self.node_of[arg] = node
            self.lines.append(f"    {node} [label={_quote(name)}, shape=ellipse];")
        self.groups = 0
        self._ops(f.body.block.ops, "    ")
        ret = f.body.block.last_op
        if isinstance(ret, func.ReturnOp):
            for i, (v, name) in enumerate(zip(ret.operands, result_names(f))):
                node = f"{prefix}out{i}"
                self.lines.append(f"    {node} [label={_quote(name)}, shape=ellipse];")
                self._edge(v, node)

    def _edge(self, value: SSAValue, target: str) -> None:
        source = self.node_of.get(value)
        if source is not None and (source, target) not in self.edges:
            self.edges.append((source, target))

    def _node(self, op: Operation, indent: str, colour: str | None) -> None:
        node = f"{self.prefix}n{self.count}"
        self.count += 1
        fill = f", fillcolor={_quote(colour)}" if colour else ""
        self.lines.append(f"{indent}{node} [label={_quote(_label(op))}{fill}];")
        for v in op.operands:
            self._edge(v, node)
        for r in op.results:
            self.node_of[r] = node

    def _ops(self, ops: Iterable[Operation], indent: str) -> None:
        for op in ops:
            if isinstance(op, graph.ConstantOp | func.ReturnOp | graph.YieldOp):
                continue
            if isinstance(op, graph.FusionGroupOp):
                self._group(op, indent)
            elif op.dialect_name() == "graph":
                self._node(op, indent, self.outside_colour)

    def _group(self, group: graph.FusionGroupOp, indent: str) -> None:
        colour = PALETTE[self.groups % len(PALETTE)]
        title = f"kernel {self.groups}"
        if group.template is not None:
            title += f" ({group.template.data})"
        self.lines.append(f"{indent}subgraph cluster_{self.prefix}k{self.groups} {{")
        self.lines.append(
            f"{indent}  label={_quote(title)}; style=filled; fillcolor={_quote(colour)};"
        )
        self.groups += 1
        # inside, a block argument stands for the group operand it receives
        for arg, outer in zip(group.block.args, group.operands):
            if outer in self.node_of:
                self.node_of[arg] = self.node_of[outer]
        for op in group.block.ops:
            if not isinstance(op, graph.ConstantOp | graph.YieldOp):
                self._node(op, indent + "  ", "white")
        self.lines.append(f"{indent}}}")
        yield_op = group.block.last_op
        assert isinstance(yield_op, graph.YieldOp)
        for inner, result in zip(yield_op.operands, group.outputs):
            if inner in self.node_of:
                self.node_of[result] = self.node_of[inner]


def graph_dot(before: ModuleOp, after: ModuleOp) -> str:
    """The dot text of both modules' entry functions side by side."""
    # after fusion, an op outside every group is a library op (grey)
    halves = [("b", "before fusion", before, None), ("a", "after fusion", after, LIBRARY_COLOUR)]
    out = [
        "digraph afc {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="white", fontname="Helvetica"];',
        '  edge [color="#555555"];',
    ]
    for prefix, title, module, outside in halves:
        half = _Half(prefix, find_function(module), outside)
        kernels = f", {half.groups} fusion groups" if half.groups else ""
        out.append(f"  subgraph cluster_{prefix} {{")
        out.append(f"    label={_quote(f'{title} ({half.count} ops{kernels})')};")
        out += half.lines
        out += [f"    {a} -> {b};" for a, b in half.edges]
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def render_svg(dot: str) -> tuple[bytes | None, str]:
    """graph.svg from graphviz's `dot`, or None and the reason there is none."""
    exe = shutil.which("dot")
    if exe is None:
        return None, "graphviz's `dot` is not on PATH"
    try:
        done = subprocess.run(
            [exe, "-Tsvg"],
            input=dot.encode(),
            capture_output=True,
            timeout=SVG_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"`dot` took more than {SVG_TIMEOUT_S} s"
    if done.returncode != 0:
        first = done.stderr.decode(errors="replace").strip().splitlines()[:1]
        return None, f"`dot` failed: {first[0] if first else done.returncode}"
    return done.stdout, "graph.svg"
