"""The compile pipeline's options, its stages and what a compile produced.

`afc compile` (compile.py) runs these stages in order and writes their files; `--check`
(numerics_check.py) runs them again on a copy with materialized weights, and the
reports (report_markdown.py) read the Compilation. Keeping them here lets those modules
depend on the pipeline without depending on each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from autofusion.fusion.partition import FusionResult
from autofusion.hardware import ChipSpec
from autofusion.passes.fusion_policy_options import FusionPolicyOptions
from autofusion.passes.fusion_statistics import FusionStatistics
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
    3: OptLevel(
        "as 2, with larger kernels (up to 256 ops and 32 inputs) and super kernels on "
        "Atlas A2/A3 (--super-kernel)",
        True,
        True,
        256,
        32,
    ),
}
DEFAULT_OPT_LEVEL = 2


@dataclass(frozen=True)
class CompileOptions:
    chip: str | None = None  # None: the input's afc.target, else DEFAULT_CHIP
    opt_level: int = DEFAULT_OPT_LEVEL
    fusion_switch: str | None = None
    debug: bool = False
    check: bool = False
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dynamic_size: int = 128  # what the cost model assumes for a dynamic dimension
    seed: int = 0  # random inputs of --check
    input_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # --check's, by hand
    super_kernel: bool = False  # --super-kernel (also on at -O3 where the chip allows)
    backend: str = "ascendc"  # "hfusion" also writes hfusion.mlir for bishengir (docs/hfusion.md)


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


def graph_fusion_stage(module: ModuleOp, options: CompileOptions) -> FusionStatistics:
    """graph-fusion as the opt level and switch file say (nothing at -O0)."""
    from autofusion.passes.graph_fusion import GraphFusionPass

    if not OPT_LEVELS[options.opt_level].graph_fusion:
        return FusionStatistics()
    stats = GraphFusionPass(switch_file=options.fusion_switch).run(module)
    module.verify()
    return stats


def policy_options(options: CompileOptions) -> FusionPolicyOptions:
    """The fusion policy of this compile (its -O level's caps): split-fusion's cost gate
    and ub-fusion get the same, so the gate models the grouping that runs."""
    level = OPT_LEVELS[options.opt_level]
    return FusionPolicyOptions(
        max_ops=level.max_ops,
        max_inputs=level.max_inputs,
        dynamic_size=options.dynamic_size,
        switch_file=options.fusion_switch,
    )


def split_fusion_stage(module: ModuleOp, options: CompileOptions) -> FusionStatistics:
    from autofusion.passes.split_fusion import SplitFusionPass

    if not OPT_LEVELS[options.opt_level].split_fusion:
        return FusionStatistics()
    stats = SplitFusionPass(**asdict(policy_options(options))).run(module)
    module.verify()
    return stats


def ub_fusion_stage(module: ModuleOp, options: CompileOptions) -> FusionResult:
    from autofusion.passes.ub_fusion import UbFusionPass

    result = UbFusionPass(**asdict(policy_options(options))).run(module)
    module.verify()
    return result


def one_kernel_per_op(module: ModuleOp, options: CompileOptions) -> ModuleOp:
    """A copy of `module` with every op its own kernel, planned by the same templates as
    the fused kernels (the same tile re-reads counted): the before-fusion baseline."""
    from autofusion.passes.ub_fusion import UbFusionPass

    copy = module.clone()
    UbFusionPass(max_ops=1, dynamic_size=options.dynamic_size).run(copy)
    return copy


def lower_stage(ctx: Context, module: ModuleOp, options: CompileOptions) -> None:
    from autofusion.passes.lower_to_buffer import LowerToBufferPass

    LowerToBufferPass(dynamic_size=options.dynamic_size).apply(ctx, module)
    if wants_super_kernels(module, options):
        from autofusion.passes.super_kernel import SuperKernelPass

        SuperKernelPass().apply(ctx, module)
    module.verify()


def wants_super_kernels(module: ModuleOp, options: CompileOptions) -> bool:
    """Whether the compile emits super kernels: with --super-kernel (the pass refuses a
    chip without the hard SyncAll), or at -O3 on a chip that has it."""
    from autofusion.codegen.super_kernel import syncs_all_chip
    from autofusion.dialects.target import resolve_target

    if options.super_kernel:
        return True
    return options.opt_level >= 3 and syncs_all_chip(resolve_target(module, "afc compile"))


def fuse_and_lower(ctx: Context, module: ModuleOp, options: CompileOptions) -> ModuleOp:
    """Run every fusion stage on `module` in place; return a lowered copy (for --check)."""
    graph_fusion_stage(module, options)
    split_fusion_stage(module, options)
    ub_fusion_stage(module, options)
    lowered = module.clone()
    lower_stage(ctx, lowered, options)
    return lowered
