"""`afc import`: a model file (picked by extension) to graph-dialect MLIR text."""

from __future__ import annotations

import argparse
import sys

from autofusion.tools.atomic_output import atomic_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="model file: .onnx, .afc (text language) or .mlir")
    p.add_argument("-o", "--output", help="MLIR file to write (default: stdout)")


def main(args: argparse.Namespace) -> int:
    from autofusion.mlir_io import default_context, module_to_text
    from autofusion.tools.model_input import load_model

    ctx = default_context()
    module = load_model(ctx, args.model)
    text = module_to_text(ctx, module)
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
        return 0
    with atomic_file(args.output) as tmp:
        tmp.write_text(text)
    return 0
