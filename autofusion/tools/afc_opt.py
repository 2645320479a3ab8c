"""afc-opt: xdsl-opt with afc's dialects, passes, targets and frontends registered.

afc-opt model.mlir --pass-pipeline='builtin.module(graph-fusion,ub-fusion)' -t ascendc
afc-opt model.mlir -p 'set-target{chip=Ascend910B1},graph-fusion,ub-fusion'
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.arg_spec import ArgSpec, parse_spec
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from autofusion.diagnostics import UserError, run_tool
from autofusion.tools import pass_options
from autofusion.tools.atomic_output import atomic_file, split_output_flag
from autofusion.tools.pipeline_spec import mlir_pipeline_to_xdsl, quote_bare_values
from autofusion.version import package_version
from frontends import Frontend

DESCRIPTION = "afc-opt: xdsl-opt with afc's dialects, passes, targets and frontends registered"
# targets whose output is a binary file: with `-o PATH` they write PATH through this option
BINARY_FILE_OPTION = {"onnx": "file"}


def _pass_pipeline(spec: str) -> str:
    try:
        return mlir_pipeline_to_xdsl(spec)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


class AfcOptMain(xDSLOptMain):
    """The afc-opt driver: afc's constructs registered on top of xDSL's, and mlir-opt's
    conventions (bare boolean options, `-` for stdin, did-you-mean, ...) added by overriding
    xDSLOptMain's hooks."""

    version_format = f"afc-opt {package_version()} (xdsl {{xdsl_version}})"

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
            self.ctx,
            stream.read(),
            self.get_input_name(),
            self._chunk_line_offset,
            not self.args.no_implicit_module,
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
            type=_pass_pipeline,
            help="MLIR-style pipeline, e.g. 'builtin.module(graph-fusion,ub-fusion)'",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=_ListPassesAction,
            text=lambda: pass_options.catalog(self._afc_passes(), self._afc_targets()),
            help="print afc's passes and targets with their options, and exit",
        )
        options = arg_parser._option_string_actions  # the actions xDSL added
        options["-p"].default = None  # so that giving both -p and --pass-pipeline is seen
        options["-p"].help = _names_help("passes", self.available_passes, self._afc_passes())
        options["-t"].help = _names_help("targets", self.available_targets, self._afc_targets())
        options["-t"].type = self._target_spec
        arg_parser._option_string_actions["--verify-diagnostics"].help = (
            "check the errors against the input's `expected-error {{...}}` annotations "
            "(see autofusion/tools/expected_diagnostics.py); exit 1 on any mismatch"
        )
        # errors are one line: drop the usage banner argparse prints before them
        arg_parser.print_usage = lambda file=None: None  # type: ignore[method-assign]

    def _afc_passes(self) -> dict[str, Callable[[], type[Any]]]:
        from autofusion.passes import get_all_passes

        return {n: self.available_passes[n] for n in get_all_passes()}

    def _afc_targets(self) -> dict[str, Callable[[], type[Any]]]:
        from autofusion.codegen import get_all_targets

        return dict(get_all_targets())

    def _target_spec(self, text: str) -> str:
        """`-t` checked now (name, options), written back with bare booleans made true."""
        try:
            spec = parse_spec(text)
            factory = self.available_targets.get(spec.name)
            if factory is None:
                hint = pass_options.did_you_mean(spec.name, self.available_targets)
                raise UserError(f"unknown target '{spec.name}'{hint}")
            if spec.name not in self._afc_targets():
                return text  # xDSL's own targets (mlir, ...) as xDSL reads them
            target_class = cast(Callable[[], type[Target]], factory)()
            target = pass_options.resolve(spec, target_class, "target")
        except UserError as e:
            raise argparse.ArgumentTypeError(str(e)) from e
        return pass_options.spec_text(target.spec())

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":  # the Unix convention for stdin
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self) -> str:
        return "stdin" if self.args.input_file == "-" else super().get_input_name()

    def setup_pipeline(self) -> None:
        """Resolve the pipeline with afc's conventions; xDSL's callback runs between passes."""
        if self.args.passes is not None and self.args.pass_pipeline is not None:
            raise UserError("give the pipeline with -p/--passes or with --pass-pipeline, not both")
        text = self.args.pass_pipeline if self.args.pass_pipeline is not None else self.args.passes
        passes = pass_options.resolve_pipeline(self.available_passes, text or "")
        self.args.passes = ""
        super().setup_pipeline()
        self.pipeline = PassPipeline(passes, self.pipeline.callback)
        self.args.passes = text or ""
        self._binary_output()

    def _binary_output(self) -> None:
        """`-t onnx -o m.onnx`: the target writes the binary model to the output path."""
        spec = parse_spec(self.args.target)
        option = BINARY_FILE_OPTION.get(spec.name)
        if option is None or self.args.output_file is None or option in spec.parameters:
            return
        if self.args.split_input_file:
            raise UserError(
                f"-t {spec.name} -o writes one binary model; with --split-input-file, "
                "leave out -o to print each chunk as text"
            )
        params = {**spec.parameters, option: (self.args.output_file,)}
        self.args.target = pass_options.spec_text(ArgSpec(spec.name, params))
        # the target's one-line summary of what it wrote is not part of the file
        self.args.output_file = os.devnull


class _ListPassesAction(argparse.Action):
    """`--list-passes`: print the catalog and exit, as `--version` does."""

    def __init__(self, option_strings: list[str], text: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(option_strings, nargs=0, **kwargs)
        self.text = text

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        sys.stdout.write(self.text())
        parser.exit()


def _names_help(what: str, available: dict[str, Any], afc: dict[str, Any]) -> str:
    others = [n for n in available if n not in afc]
    return (
        f"afc's {what}: {', '.join(afc)} (--list-passes shows their options); "
        f"xDSL's {what}: {', '.join(others)}"
    )


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
            driver(DESCRIPTION, rest).run()
            return
        with atomic_file(output) as tmp:
            driver(DESCRIPTION, [*rest, "-o", str(tmp)]).run()

    return run_tool(tool, body)


def main(argv: Sequence[str] | None = None) -> int:
    return run_opt(AfcOptMain, "afc-opt", argv)
