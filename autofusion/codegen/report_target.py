"""`afc-opt -t report`: the fusion report (autofusion/report.py) as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from autofusion.dialects.target import ReadsTarget, resolve_target


@dataclass(frozen=True)
class ReportTarget(ReadsTarget, Target):
    """Kernels with their ops, GM bytes, UB footprint and estimated time; totals before
    and after fusion and the GM-traffic lower bound, for the module's target chip."""

    name = "report"

    dynamic_size: int = 128
    """The size the estimates assume for dynamic dimensions."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from autofusion.report import build_report

        report = build_report(module, resolve_target(module, self.name), self.dynamic_size)
        json.dump(report.to_json(), output, indent=2)
        output.write("\n")
