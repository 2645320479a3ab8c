"""`afc explain MODEL --op NAME`: why an op was or was not fused (autofusion/driver)."""

from __future__ import annotations

import argparse

from autofusion.tools.compile_cmd import add_pipeline_arguments, options_from


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_pipeline_arguments(p)
    p.add_argument(
        "--op",
        required=True,
        metavar="NAME",
        help="the op's source name: ONNX node name, text-language value or .mlir SSA name",
    )


def main(args: argparse.Namespace) -> int:
    from autofusion.driver.compile import compile_model
    from autofusion.driver.explain import explain

    compilation = compile_model(args.model, options_from(args), stop_after="ub-fusion")
    for line in explain(compilation, args.op):
        print(line)
    return 0
