"""Parse + verify + print throughput of graph modules vs. plain xdsl-opt on arith modules.

Both modules are chains of N ops in custom syntax; the graph chain cycles through
elementwise, broadcast, reduce-free ops on a 2-D tensor, the arith chain is `arith.addf`/
`arith.mulf` on f32 scalars. Each is measured in-process per stage (a fresh context each
time) and end to end through its command-line tool, in the same run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRAPH_CYCLE = (
    "%v{i} = graph.add %v{p}, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>",
    "%v{i} = graph.relu %v{p} : tensor<16x64xf32>",
    "%v{i} = graph.mul %v{p}, %v{p} : tensor<16x64xf32>",
    '%v{i} = graph.gelu %v{p} {{approximate = "tanh"}} : tensor<16x64xf32>',
)
ARITH_CYCLE = (
    "%v{i} = arith.addf %v{p}, %b : f32",
    "%v{i} = arith.mulf %v{p}, %v{p} : f32",
)


def graph_module(n: int) -> str:
    lines = ["func.func @main(%v0: tensor<16x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {"]
    lines += [
        "  " + GRAPH_CYCLE[i % len(GRAPH_CYCLE)].format(i=i, p=i - 1) for i in range(1, n + 1)
    ]
    lines += [f"  func.return %v{n} : tensor<16x64xf32>", "}"]
    return "\n".join(lines) + "\n"


def arith_module(n: int) -> str:
    lines = ["func.func @main(%v0: f32, %b: f32) -> f32 {"]
    lines += [
        "  " + ARITH_CYCLE[i % len(ARITH_CYCLE)].format(i=i, p=i - 1) for i in range(1, n + 1)
    ]
    lines += [f"  func.return %v{n} : f32", "}"]
    return "\n".join(lines) + "\n"


def stages(text: str, kind: str) -> dict[str, float]:
    """Seconds for parse, verify and print of `text` in-process."""
    from io import StringIO

    from xdsl.context import Context
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    if kind == "graph":
        from autofusion.mlir_io import default_context

        ctx = default_context()
    else:
        from xdsl.dialects.arith import Arith
        from xdsl.dialects.builtin import Builtin
        from xdsl.dialects.func import Func

        ctx = Context()
        for d in (Builtin, Func, Arith):
            ctx.load_dialect(d)
    t0 = time.perf_counter()
    module = Parser(ctx, text, "bench").parse_module()
    t1 = time.perf_counter()
    module.verify()
    t2 = time.perf_counter()
    out = StringIO()
    Printer(stream=out).print_op(module)
    t3 = time.perf_counter()
    return {"parse": t1 - t0, "verify": t2 - t1, "print": t3 - t2}


def tool_seconds(tool: str, text: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        exe = str(Path(sys.executable).parent / tool)
        t0 = time.perf_counter()
        subprocess.run([exe, path, "-o", os.devnull], check=True)
        return time.perf_counter() - t0
    finally:
        os.unlink(path)


def main(sizes: tuple[int, ...] = (10_000, 100_000)) -> None:
    print("== parse + verify + print: graph dialect vs. arith (ops per second) ==")
    columns = ("parse", "verify", "print", "total")
    print(f"{'module':<14}{'ops':>8}" + "".join(f"{c:>10}" for c in columns) + f"  {'CLI':>22}")
    for n in sizes:
        for kind, make, tool in (
            ("graph/afc-opt", graph_module, "afc-opt"),
            ("arith/xdsl-opt", arith_module, "xdsl-opt"),
        ):
            text = make(n)
            s = stages(text, "graph" if kind.startswith("graph") else "arith")
            total = sum(s.values())
            cli = tool_seconds(tool, text)
            print(
                f"{kind:<14}{n:>8}"
                + "".join(f"{n / s[k]:>10.0f}" for k in ("parse", "verify", "print"))
                + f"{n / total:>10.0f}  {tool} {cli:6.2f} s ({n / cli:6.0f}/s)"
            )


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (10_000, 100_000))
