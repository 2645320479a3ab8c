"""`afc-opt -t report`: the fusion report (autofusion/report.py) as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from autofusion.hardware import DEFAULT_CHIP, get_chip


@dataclass(frozen=True)
class ReportTarget(Target):
    """Kernels with their ops, GM bytes, UB footprint and estimated time; totals before
    and after fusion and the GM-traffic lower bound."""

    name = "report"

    chip: str = DEFAULT_CHIP
    """The SoC the estimates are for (CANN name, e.g. Ascend910B1)."""
    dynamic_size: int = 128
    """The size the estimates assume for dynamic dimensions."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from autofusion.report import build_report

        report = build_report(module, get_chip(self.chip), self.dynamic_size)
        json.dump(report.to_json(), output, indent=2)
        output.write("\n")
