"""Session hooks: the outcome counts of ONNX's backend node suite (test_onnx_backend_nodes).

Each case records its outcome (pass, refused, wrong, crash) as a user property; the
reports reach this controller-side hook also under pytest-xdist.
"""

from __future__ import annotations

from collections import Counter

import pytest

OUTCOME = "onnx_backend_outcome"
OUTCOMES = ("pass", "refused", "wrong", "crash")

_counts: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == OUTCOME:
            _counts[str(value)] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _counts:
        return
    total = sum(_counts.values())
    counts = ", ".join(f"{_counts[o]} {o}" for o in OUTCOMES)
    terminalreporter.write_sep("-", "ONNX backend node suite")
    terminalreporter.write_line(f"{counts} (of {total} cases run)")
