"""`afc compile MODEL --chip CHIP -o DIR`: the whole pipeline (autofusion/driver)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from autofusion.diagnostics import UserError
from autofusion.hardware import DEFAULT_CHIP

if TYPE_CHECKING:
    from autofusion.driver.compile import CompileOptions


def add_pipeline_arguments(p: argparse.ArgumentParser) -> None:
    """The options `afc compile` and `afc explain` share: they decide what gets fused."""
    from autofusion.driver.compile import DEFAULT_OPT_LEVEL, OPT_LEVELS
    from autofusion.tools.import_model import add_input_shape_argument

    p.add_argument("model", help="model file: .onnx, .afc (text language), .pt2 or .mlir")
    p.add_argument(
        "--chip",
        help=f"target SoC, written as the module's afc.target (default: the .mlir input's "
        f"afc.target, else {DEFAULT_CHIP})",
    )
    levels = "; ".join(f"{k}: {v.summary}" for k, v in OPT_LEVELS.items())
    p.add_argument(
        "-O",
        "--opt-level",
        type=int,
        default=DEFAULT_OPT_LEVEL,
        metavar="N",
        help=f"{levels} (default {DEFAULT_OPT_LEVEL})",
    )
    p.add_argument(
        "--fusion-switch", metavar="FILE", help="CANN fusion_switch.cfg (JSON or Name:off lines)"
    )
    add_input_shape_argument(p)
    p.add_argument(
        "--super-kernel",
        action="store_true",
        help="emit each run of kernels between library ops as ONE launch with SyncAll "
        "between stages (CANN's SuperKernel; Atlas A2/A3; on by default at -O3)",
    )
    p.add_argument(
        "--dynamic-size",
        type=int,
        default=128,
        metavar="N",
        help="the size the cost model and the reports assume for every dynamic dimension "
        "that is left (default 128; e.g. 1 for a dynamic batch of one)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_pipeline_arguments(p)
    p.add_argument("-o", "--output", metavar="DIR", help="output directory (default build/NAME)")
    p.add_argument(
        "--debug", action="store_true", help="comment generated code with graph ops and sources"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="run the original and fused model on random inputs and report the largest errors",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --check's random inputs")
    p.add_argument(
        "--input-range",
        action="append",
        default=[],
        metavar="NAME=LO,HI",
        help="--check's integers in [LO, HI) for the input NAME (repeatable; default: "
        "[0, d) for an input that indexes an extent d, else [0, 8))",
    )
    p.add_argument(
        "--backend",
        choices=("ascendc", "hfusion"),
        default="ascendc",
        help="hfusion: also write hfusion.mlir, the fusion groups as device functions for "
        "bishengir-compile (docs/hfusion.md)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def options_from(
    args: argparse.Namespace, debug: bool = False, check: bool = False, seed: int = 0
) -> CompileOptions:
    from autofusion.driver.compile import CompileOptions
    from autofusion.tools.import_model import parse_input_shapes

    return CompileOptions(
        chip=args.chip,
        opt_level=args.opt_level,
        fusion_switch=args.fusion_switch,
        input_shapes=parse_input_shapes(args.input_shape),
        dynamic_size=args.dynamic_size,
        super_kernel=args.super_kernel,
        debug=debug,
        check=check,
        seed=seed,
    )


def main(args: argparse.Namespace) -> int:
    from autofusion.driver.compile import compile_model, print_summary, write_outputs
    from autofusion.driver.input_ranges import parse_input_ranges

    options = options_from(args, debug=args.debug, check=args.check, seed=args.seed)
    options = replace(options, backend=args.backend)
    if args.input_range:
        if not args.check:
            raise UserError("--input-range sets --check's inputs: give --check too")
        options = replace(options, input_ranges=parse_input_ranges(args.input_range))
    out_dir = args.output or str(Path("build") / Path(args.model).stem)
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise UserError("the output exists and is not a directory", out_dir)
    compilation = compile_model(args.model, options, None if args.quiet else sys.stderr)
    write_outputs(compilation, out_dir)
    print_summary(compilation, out_dir)
    if compilation.check is not None and not compilation.check["ok"]:
        raise UserError(
            f"--check failed: {compilation.check['verdict']} (see {out_dir}/check.json)"
        )
    return 0
