"""`afc compile MODEL --chip CHIP -o DIR`: the whole pipeline with sensible defaults.

Stages: import the model (.onnx, .afc, .pt2 or .mlir), graph fusion, split fusion, UB
fusion (kernel grouping), ONNX export of the fused graph, lowering to the buffer
dialect, Ascend C generation, then the reports. Everything is computed in memory and
DIR is written in one atomic step, so a failed compile leaves no partial files. The
files are a pure function of the inputs (byte-identical across runs); timings are only
printed.

DIR holds fused.onnx, fused.mlir, buffer.mlir, kernels/, fusion_result.json,
report.json, report.md, graph.dot (graph.svg when graphviz's `dot` is on PATH),
with --check, check.json and, with --backend hfusion, hfusion.mlir (docs/hfusion.md).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, NameLoc, StringAttr, UnknownLoc

from autofusion.diagnostics import UserError
from autofusion.dialects.target import resolve_target, set_target
from autofusion.driver.numerics_check import check_numerics
from autofusion.driver.pipeline import (
    DEFAULT_OPT_LEVEL,
    OPT_LEVELS,
    Compilation,
    CompileOptions,
    OptLevel,
    StageTime,
    fuse_and_lower,
    graph_fusion_stage,
    lower_stage,
    one_kernel_per_op,
    split_fusion_stage,
    ub_fusion_stage,
)
from autofusion.driver.report_markdown import compile_report_json, render_markdown, summary_lines
from autofusion.hardware import DEFAULT_CHIP, get_chip
from autofusion.passes.fusion_statistics import FusionStatistics

__all__ = [
    "DEFAULT_OPT_LEVEL",
    "OPT_LEVELS",
    "Compilation",
    "CompileOptions",
    "Compiler",
    "OptLevel",
    "compile_model",
    "fuse_and_lower",
    "one_kernel_per_op",
    "print_summary",
    "write_outputs",
]


class Progress:
    """One stderr line per finished stage: `[k/n] stage: detail (seconds)`."""

    def __init__(self, total: int, stream: IO[str] | None) -> None:
        self.total = total
        self.count = 0
        self.stream = stream

    def done(self, stage: StageTime) -> None:
        self.count += 1
        if self.stream is not None:
            print(
                f"[{self.count}/{self.total}] {stage.name:<15} {stage.detail} "
                f"({stage.seconds:.2f} s)",
                file=self.stream,
                flush=True,
            )


def _graph_op_count(module: ModuleOp) -> int:
    from autofusion.dialects import graph

    return sum(
        1
        for op in module.walk()
        if op.dialect_name() == "graph"
        and not isinstance(op, graph.ConstantOp | graph.FusionGroupOp | graph.YieldOp)
    )


def name_unlocated_ops(module: ModuleOp) -> None:
    """Give ops without a source location one named after their result (`%h` -> "h"), so
    reports, `afc explain` and --debug comments can name every op of an .mlir input."""
    for op in module.walk():
        if isinstance(op.location, UnknownLoc) and op.results and op.dialect_name() == "graph":
            hint = op.results[0].name_hint
            if hint:
                op.location = NameLoc(StringAttr(hint), UnknownLoc())


def _load(ctx: Context, path: str, options: CompileOptions) -> ModuleOp:
    from autofusion.tools.model_input import load_model

    if options.input_shapes:
        if Path(path).suffix != ".onnx":
            raise UserError("--input-shape applies to .onnx models only", path)
        from frontends.onnx import import_onnx_file

        return import_onnx_file(ctx, path, options.input_shapes)
    return load_model(ctx, path)


def _kernel_files(buffer_module: ModuleOp, debug: bool) -> dict[str, str]:
    """The Ascend C sources of every kernel, by path under kernels/ (none without kernels)."""
    from autofusion.codegen.ascendc_target import emit_ascendc
    from autofusion.codegen.kernel_interface import kernels_of

    if not kernels_of(buffer_module):
        return {}
    return emit_ascendc(buffer_module, debug=debug)


class Compiler:
    """Runs the stages of one compile, timing each and reporting progress."""

    def __init__(self, model: str, options: CompileOptions, progress: IO[str] | None) -> None:
        if options.opt_level not in OPT_LEVELS:
            raise UserError(f"--opt-level must be one of {sorted(OPT_LEVELS)}")
        if options.dynamic_size < 1:
            raise UserError(f"--dynamic-size must be at least 1, got {options.dynamic_size}")
        self.model = model
        self.options = options
        self.level = OPT_LEVELS[options.opt_level]
        chip = get_chip(options.chip or DEFAULT_CHIP)  # an unknown --chip fails before any work
        if options.fusion_switch is not None:
            from autofusion.passes.rule_registry import read_switch

            read_switch(options.fusion_switch)  # a bad file fails before any work
        self.progress = Progress(0, progress)
        from autofusion.mlir_io import default_context

        ctx = default_context()
        self.result = Compilation(model, options, chip, ctx, ModuleOp([]))

    def stage(self, name: str, body: Callable[[], str]) -> None:
        start = time.perf_counter()
        detail = body()
        entry = StageTime(name, time.perf_counter() - start, detail)
        self.result.stages.append(entry)
        self.progress.done(entry)

    def run(self, stop_after: str | None = None) -> Compilation:
        """Run the stages in order, up to and including `stop_after` when it is given."""
        stages: list[tuple[str, Callable[[], str]]] = [
            ("import", self._import),
            ("graph-fusion", self._graph_fusion),
            ("split-fusion", self._split_fusion),
            ("ub-fusion", self._ub_fusion),
            ("export onnx", self._export_onnx),
            ("lower-to-buffer", self._lower),
            ("ascend c", self._codegen),
            ("reports", self._reports),
            ("graph.dot", self._dot),
        ]
        if self.options.backend == "hfusion":
            stages.insert(4, ("hfusion", self._hfusion))
        if self.options.check:
            stages.append(("check", self._check))
        if stop_after is not None:
            stages = stages[: [n for n, _ in stages].index(stop_after) + 1]
        self.progress.total = len(stages)
        for name, body in stages:
            self.stage(name, body)
        return self.result

    # ---- stages ------------------------------------------------------------------------

    def _import(self) -> str:
        r = self.result
        module = _load(r.ctx, self.model, self.options)
        if self.options.chip is not None:
            set_target(module, self.options.chip)
        r.chip = resolve_target(module, "afc compile")
        name_unlocated_ops(module)
        r.original = module
        r.fused = module.clone()
        return f"{_graph_op_count(module)} ops"

    def _graph_fusion(self) -> str:
        return self._rewrites(self.level.graph_fusion, graph_fusion_stage)

    def _split_fusion(self) -> str:
        return self._rewrites(self.level.split_fusion, split_fusion_stage)

    def _rewrites(
        self, on: bool, stage: Callable[[ModuleOp, CompileOptions], FusionStatistics]
    ) -> str:
        """A rewrite stage on the fused module, its statistics merged."""
        r = self.result
        assert r.fused is not None
        if not on:
            return f"off at -O{self.options.opt_level}"
        stats = stage(r.fused, self.options)
        r.statistics.merge(stats)
        return f"{len(stats.applications)} rewrites"

    def _ub_fusion(self) -> str:
        from autofusion.mlir_io import module_to_text

        r = self.result
        assert r.fused is not None
        r.ub_result = ub_fusion_stage(r.fused, self.options)
        r.statistics.merge(r.ub_result.statistics)
        r.files["fused.mlir"] = module_to_text(r.ctx, r.fused).encode()
        groups = r.ub_result.groups
        fused_ops = sum(len(g.ops) for g in groups if len(g.ops) > 1)
        return f"{len(groups)} kernels, {fused_ops} ops in multi-op kernels"

    def _export_onnx(self) -> str:
        r = self.result
        assert r.fused is not None
        try:
            from frontends.onnx.export import export_module, serialize
        except ImportError:
            r.notes.append("fused.onnx: not written (pip install onnx to get it)")
            return "skipped: onnx is not installed"
        model = export_module(r.fused)
        r.files["fused.onnx"] = serialize(model)
        return f"{len(model.graph.node)} nodes, {len(model.functions)} functions"

    def _hfusion(self) -> str:
        from autofusion.codegen.hfusion_export import hfusion_text

        r = self.result
        assert r.fused is not None
        text = hfusion_text(r.fused, self.options.dynamic_size)
        r.files["hfusion.mlir"] = text.encode()
        return f"{text.count('hacc.function_kind<DEVICE>')} device functions"

    def _lower(self) -> str:
        from autofusion.dialects import buffer
        from autofusion.mlir_io import module_to_text

        r = self.result
        assert r.fused is not None
        r.buffer = r.fused.clone()
        lower_stage(r.ctx, r.buffer, self.options)
        r.files["buffer.mlir"] = module_to_text(r.ctx, r.buffer).encode()
        kernels = sum(1 for op in r.buffer.ops if isinstance(op, buffer.KernelOp))
        return f"{kernels} buffer kernels"

    def _codegen(self) -> str:
        r = self.result
        assert r.buffer is not None
        files = _kernel_files(r.buffer, self.options.debug)
        for path, text in files.items():
            r.files[f"kernels/{path}"] = text.encode()
        return f"{len(files)} files"

    def _reports(self) -> str:
        from autofusion.report import build_report

        r = self.result
        assert r.fused is not None
        r.before = build_report(
            one_kernel_per_op(r.original, self.options), r.chip, self.options.dynamic_size
        )
        r.after = build_report(r.fused, r.chip, self.options.dynamic_size)
        doc = compile_report_json(r)
        r.files["report.json"] = (json.dumps(doc, indent=2) + "\n").encode()
        r.files["report.md"] = render_markdown(doc).encode()
        r.files["fusion_result.json"] = (
            json.dumps(r.statistics.to_json(), indent=2) + "\n"
        ).encode()
        t = doc["totals"]
        return f"GM {t['gm_bytes_before'] / 1e6:.2f} MB -> {t['gm_bytes_after'] / 1e6:.2f} MB"

    def _dot(self) -> str:
        from autofusion.driver.graph_dot import graph_dot, render_svg

        r = self.result
        assert r.fused is not None
        dot = graph_dot(r.original, r.fused)
        r.files["graph.dot"] = dot.encode()
        svg, why = render_svg(dot)
        if svg is None:
            r.notes.append(f"graph.svg: not written ({why})")
            return "graph.dot"
        r.files["graph.svg"] = svg
        return "graph.dot, graph.svg"

    def _check(self) -> str:
        r = self.result
        r.check = check_numerics(r)
        r.notes.extend(r.check["notes"])
        r.files["check.json"] = (json.dumps(r.check, indent=2) + "\n").encode()
        return str(r.check["verdict"])


def compile_model(
    model: str,
    options: CompileOptions,
    progress: IO[str] | None = None,
    stop_after: str | None = None,
) -> Compilation:
    """Run the pipeline on `model` in memory (nothing is written)."""
    if not Path(model).is_file():
        raise UserError("no such file", model)
    return Compiler(model, options, progress).run(stop_after)


def write_outputs(compilation: Compilation, out_dir: str) -> None:
    """Write every output file into `out_dir` at once (replacing what was there)."""
    from autofusion.tools.atomic_output import atomic_directory

    with atomic_directory(out_dir) as tmp:
        for rel, data in sorted(compilation.files.items()):
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if path.suffix == ".sh":  # kernels/build.sh
                path.chmod(path.stat().st_mode | 0o111)


def print_summary(c: Compilation, out_dir: str, stream: IO[str] = sys.stdout) -> None:
    """The one-screen summary printed at the end of `afc compile`."""
    for line in summary_lines(c, out_dir):
        print(line, file=stream)
