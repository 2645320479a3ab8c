"""afc: the model engineer's command line.

afc run model.mlir --inputs in.npz -o out.npz
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autofusion.diagnostics import run_tool


def _parser() -> argparse.ArgumentParser:
    from autofusion.tools import run

    parser = argparse.ArgumentParser(prog="afc", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = {
        "run": (run, "interpret a model on inputs from an .npz file"),
    }
    for name, (module, help_text) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(handler=module.main)
        p.print_usage = lambda file=None: None  # type: ignore[method-assign]
    parser.print_usage = lambda file=None: None  # type: ignore[method-assign]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        return int(args.handler(args))

    return run_tool("afc", body)
