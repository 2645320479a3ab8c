"""afc-opt: xdsl-opt with afc's dialects, passes, targets and frontends registered.

afc-opt model.mlir --pass-pipeline='builtin.module(graph-fusion,ub-fusion)' -t ascendc
afc-opt model.mlir -p 'graph-fusion,ub-fusion{chip=Ascend910B1}'
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

import autofusion
from autofusion.diagnostics import UserError, run_tool
from autofusion.tools.atomic_output import atomic_file, split_output_flag
from autofusion.tools.pipeline_spec import mlir_pipeline_to_xdsl, quote_bare_values
from frontends import Frontend


def _pass_pipeline(spec: str) -> str:
    try:
        return mlir_pipeline_to_xdsl(spec)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


class AfcOptMain(xDSLOptMain):
    """The afc-opt driver; it only registers afc's constructs on top of xDSL's."""

    version_format = f"afc-opt {autofusion.__version__} (xdsl {{xdsl_version}})"

    def register_all_dialects(self) -> None:
        from autofusion.dialects import get_all_dialects

        super().register_all_dialects()
        known = set(self.ctx.registered_dialect_names)
        for name, factory in get_all_dialects().items():
            if name not in known:  # already there when installed as an xdsl.universe plugin
                self.ctx.register_dialect(name, factory)
        # the printer writes resource blobs through the builtin dialect's interface; load it
        # now, or a pass that creates the module's first dense_resource fails to print
        self.ctx.get_dialect("builtin")

    def register_all_passes(self) -> None:
        from autofusion.passes import get_all_passes

        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        from autofusion.codegen import get_all_targets

        super().register_all_targets()
        self.available_targets.update(get_all_targets())

    def register_all_frontends(self) -> None:
        from autofusion.mlir_io import parse_module
        from frontends import get_all_frontends

        super().register_all_frontends()

        def bind(frontend: Frontend) -> Callable[[IO[bytes]], ModuleOp]:
            return lambda stream: frontend(self.ctx, stream.read(), self.get_input_name())

        for ext, frontend in get_all_frontends().items():
            self.available_frontends[ext] = bind(frontend)
        # MLIR input is parsed with located verification; the chunk's first line is
        # known only in parse_chunk, which records it
        self.available_frontends["mlir"] = lambda stream: parse_module(
            self.ctx, stream.read(), self.get_input_name(), self._chunk_line_offset
        )

    _chunk_line_offset = 0

    def run(self) -> None:
        if self.args.verify_diagnostics:
            from autofusion.tools.expected_diagnostics import check_expected_errors

            check_expected_errors(self)
        else:
            super().run()

    def apply_passes(self, prog: ModuleOp) -> None:
        from xdsl.utils.exceptions import VerifyException

        from autofusion.diagnostics import LocatedVerifyError
        from autofusion.mlir_io import verify_located

        try:
            super().apply_passes(prog)
        except VerifyException as e:
            if isinstance(e, LocatedVerifyError):
                raise
            verify_located(prog)  # a pass left invalid IR: name the op and where it was
            raise

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self._chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pass-pipeline",
            dest="passes",
            type=_pass_pipeline,
            help="MLIR-style pipeline, e.g. 'builtin.module(graph-fusion,ub-fusion)'",
        )
        arg_parser._option_string_actions["--verify-diagnostics"].help = (
            "check the errors against the input's `expected-error {{...}}` annotations "
            "(see autofusion/tools/expected_diagnostics.py); exit 1 on any mismatch"
        )
        # errors are one line: drop the usage banner argparse prints before them
        arg_parser.print_usage = lambda file=None: None  # type: ignore[method-assign]


_SPEC_FLAGS = ("-p", "--passes", "-t", "--target")


def _quote_specs(args: list[str]) -> list[str]:
    """Let `-p`/`-t` option values be bare paths, as in MLIR (`file=out.onnx`)."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg in _SPEC_FLAGS and i + 1 < len(out):
            out[i + 1] = quote_bare_values(out[i + 1])
        for flag in _SPEC_FLAGS:
            if arg.startswith(flag + "=") and flag.startswith("--"):
                out[i] = flag + "=" + quote_bare_values(arg[len(flag) + 1 :])
    return out


def run_opt(driver: type[AfcOptMain], tool: str, argv: Sequence[str] | None = None) -> int:
    """Run `driver` (AfcOptMain or a subclass) as the command `tool`: one-line errors, exit
    codes and an output file written whole or not at all, as afc-opt does."""
    args = _quote_specs(list(sys.argv[1:] if argv is None else argv))

    def body() -> None:
        rest, output = split_output_flag(args)
        if output is None or output == "-":
            driver(args=rest).run()
            return
        with atomic_file(output) as tmp:
            driver(args=[*rest, "-o", str(tmp)]).run()

    return run_tool(tool, body)


def main(argv: Sequence[str] | None = None) -> int:
    return run_opt(AfcOptMain, "afc-opt", argv)
