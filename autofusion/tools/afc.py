"""afc: the model engineer's command line.

afc compile model.onnx --chip Ascend910B1 -o out/
afc explain model.onnx --op NAME
afc import model.onnx -o model.mlir
afc run model.mlir --inputs in.npz -o out.npz
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autofusion.diagnostics import run_tool

# subcommand -> (module with add_arguments/main, help)
COMMANDS = {
    "import": ("autofusion.tools.import_model", "convert a model file to graph-dialect MLIR"),
    "run": ("autofusion.tools.run", "interpret a model on inputs from an .npz file"),
    "compile": (
        "autofusion.tools.compile_cmd",
        "fuse a model and generate Ascend C kernels, reports and pictures",
    ),
    "explain": ("autofusion.tools.explain_cmd", "say why an op was or was not fused"),
}


def _parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="afc", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
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
