"""`afc compile MODEL --chip CHIP -o DIR`: the whole pipeline with sensible defaults.

Stages: import the model (.onnx, .afc, .pt2 or .mlir), graph fusion, split fusion, UB
fusion (kernel grouping), ONNX export of the fused graph, lowering to the buffer
dialect, Ascend C generation, then the reports. Everything is computed in memory and
DIR is written in one atomic step, so a failed compile leaves no partial files. The
files are a pure function of the inputs (byte-identical across runs); timings are only
printed.

DIR holds fused.onnx, fused.mlir, buffer.mlir, kernels/, fusion_result.json,
report.json, report.md, graph.dot (graph.svg when graphviz's `dot` is on PATH) and,
with --check, check.json.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, NameLoc, StringAttr, UnknownLoc

from autofusion.diagnostics import UserError
from autofusion.hardware import DEFAULT_CHIP, ChipSpec, get_chip
from autofusion.passes.fusion_statistics import FusionStatistics
from autofusion.passes.ub_fusion import FusionResult
from autofusion.report import FusionReport


@dataclass(frozen=True)
class OptLevel:
    """What one --opt-level runs."""

    summary: str
    graph_fusion: bool
    split_fusion: bool
    max_ops: int  # ub-fusion's cap; 1 means every op is its own kernel
    max_inputs: int


OPT_LEVELS: dict[int, OptLevel] = {
    0: OptLevel("no fusion: every op is its own kernel", False, False, 1, 16),
    1: OptLevel(
        "graph fusion only (math-preserving rewrites); one kernel per op", True, False, 1, 16
    ),
    2: OptLevel("graph fusion, split fusion and UB fusion", True, True, 64, 16),
    3: OptLevel("as 2, with larger kernels (up to 256 ops and 32 inputs)", True, True, 256, 32),
}
DEFAULT_OPT_LEVEL = 2


@dataclass(frozen=True)
class CompileOptions:
    chip: str = DEFAULT_CHIP
    opt_level: int = DEFAULT_OPT_LEVEL
    fusion_switch: str | None = None
    debug: bool = False
    check: bool = False
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dynamic_size: int = 128  # what the cost model assumes for a dynamic dimension
    seed: int = 0  # random inputs of --check


@dataclass
class StageTime:
    name: str
    seconds: float
    detail: str


@dataclass
class Compilation:
    """Everything one compile produced, for the CLI, the benchmarks and `afc explain`."""

    model: str
    options: CompileOptions
    chip: ChipSpec
    ctx: Context
    original: ModuleOp
    fused: ModuleOp | None = None  # graph level, after UB fusion
    buffer: ModuleOp | None = None
    statistics: FusionStatistics = field(default_factory=FusionStatistics)
    ub_result: FusionResult | None = None
    before: FusionReport | None = None
    after: FusionReport | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    stages: list[StageTime] = field(default_factory=list)
    check: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


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


def graph_fusion_stage(module: ModuleOp, options: CompileOptions) -> FusionStatistics:
    """graph-fusion as the opt level and switch file say (nothing at -O0)."""
    from autofusion.passes.graph_fusion import GraphFusionPass

    if not OPT_LEVELS[options.opt_level].graph_fusion:
        return FusionStatistics()
    stats = GraphFusionPass(switch_file=options.fusion_switch, chip=options.chip).run(module)
    module.verify()
    return stats


def split_fusion_stage(module: ModuleOp, options: CompileOptions) -> FusionStatistics:
    from autofusion.passes.split_fusion import SplitFusionPass

    if not OPT_LEVELS[options.opt_level].split_fusion:
        return FusionStatistics()
    stats = SplitFusionPass(
        switch_file=options.fusion_switch, chip=options.chip, dynamic_size=options.dynamic_size
    ).run(module)
    module.verify()
    return stats


def ub_fusion_stage(module: ModuleOp, options: CompileOptions) -> FusionResult:
    from autofusion.passes.ub_fusion import UbFusionPass

    level = OPT_LEVELS[options.opt_level]
    result = UbFusionPass(
        chip=options.chip,
        max_ops=level.max_ops,
        max_inputs=level.max_inputs,
        dynamic_size=options.dynamic_size,
        switch_file=options.fusion_switch,
    ).run(module)
    module.verify()
    return result


def one_kernel_per_op(module: ModuleOp, options: CompileOptions) -> ModuleOp:
    """A copy of `module` with every op its own kernel, planned by the same templates as
    the fused kernels (the same tile re-reads counted): the before-fusion baseline."""
    from autofusion.passes.ub_fusion import UbFusionPass

    copy = module.clone()
    UbFusionPass(chip=options.chip, max_ops=1, dynamic_size=options.dynamic_size).run(copy)
    return copy


def lower_stage(ctx: Context, module: ModuleOp, options: CompileOptions) -> None:
    from autofusion.passes.lower_to_buffer import LowerToBufferPass

    LowerToBufferPass(chip=options.chip, dynamic_size=options.dynamic_size).apply(ctx, module)
    module.verify()


def fuse_and_lower(ctx: Context, module: ModuleOp, options: CompileOptions) -> ModuleOp:
    """Run every fusion stage on `module` in place; return a lowered copy (for --check)."""
    graph_fusion_stage(module, options)
    split_fusion_stage(module, options)
    ub_fusion_stage(module, options)
    lowered = module.clone()
    lower_stage(ctx, lowered, options)
    return lowered


def _kernel_files(buffer_module: ModuleOp, debug: bool) -> dict[str, str]:
    """The Ascend C sources of every kernel, by path under kernels/ (none without kernels)."""
    from autofusion.codegen.ascendc import emit_ascendc, kernels_of

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
        chip = get_chip(options.chip)
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
        from autofusion.driver.report_markdown import compile_report_json, render_markdown
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
        from autofusion.driver.numerics_check import check_numerics

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
    from autofusion.driver.report_markdown import summary_lines

    for line in summary_lines(c, out_dir):
        print(line, file=stream)
