"""`afc import`: a model file (picked by extension) to graph-dialect MLIR text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autofusion.diagnostics import UserError
from autofusion.tools.atomic_output import atomic_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="model file: .onnx, .afc (text language) or .mlir")
    p.add_argument("-o", "--output", help="MLIR file to write (default: stdout)")
    p.add_argument(
        "--chip", help="target SoC, written as the module's afc.target (as set-target{chip=...})"
    )
    add_input_shape_argument(p)


def add_input_shape_argument(p: argparse.ArgumentParser) -> None:
    """--input-shape NAME=D1,D2,... (repeatable), for every command that imports ONNX."""
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D1,D2,...",
        help="static shape of an ONNX input, replacing symbolic dims (repeatable)",
    )


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """`NAME=D1,D2,...` options to {NAME: (D1, D2, ...)}; a scalar is `NAME=`."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        if not sep or not name:
            raise UserError(f"--input-shape '{spec}' is not NAME=D1,D2,...")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            raise UserError(f"--input-shape '{spec}': dims must be integers") from None
        if any(d < 0 for d in shape):
            raise UserError(f"--input-shape '{spec}': dims must be >= 0")
        if name in shapes:
            raise UserError(f"--input-shape gives '{name}' twice")
        shapes[name] = shape
    return shapes


def main(args: argparse.Namespace) -> int:
    from autofusion.dialects.target import set_target
    from autofusion.mlir_io import default_context, module_to_text
    from autofusion.tools.model_input import load_model

    ctx = default_context()
    shapes = parse_input_shapes(args.input_shape)
    if shapes:
        if Path(args.model).suffix != ".onnx":
            raise UserError("--input-shape applies to .onnx models only", args.model)
        from frontends.onnx import import_onnx_file

        module = import_onnx_file(ctx, args.model, shapes, chip=args.chip)
    else:
        module = load_model(ctx, args.model)
        if args.chip is not None:
            set_target(module, args.chip)
    text = module_to_text(ctx, module)
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
        return 0
    with atomic_file(args.output) as tmp:
        tmp.write_text(text)
    return 0
