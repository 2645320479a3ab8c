"""Session hooks: the outcome counts of ONNX's backend node suite (test_onnx_backend_nodes)
and of its export back to ONNX (test_onnx_export_backend).

Each case records its outcome as a user property; the reports reach this controller-side
hook also under pytest-xdist.
"""

from __future__ import annotations

from collections import Counter

import pytest

# user property -> (summary title, its outcomes in print order)
SUITES = {
    "onnx_backend_outcome": ("ONNX backend node suite", ("pass", "refused", "wrong", "crash")),
    "onnx_export_outcome": (
        "ONNX backend node suite exported",
        ("ort", "ort-original", "reference", "checker", "refused"),
    ),
}

_counts: dict[str, Counter[str]] = {key: Counter() for key in SUITES}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key in _counts:
            _counts[key][str(value)] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for key, (title, outcomes) in SUITES.items():
        counts = _counts[key]
        if not counts:
            continue
        total = sum(counts.values())
        line = ", ".join(f"{counts[o]} {o}" for o in outcomes)
        terminalreporter.write_sep("-", title)
        terminalreporter.write_line(f"{line} (of {total} cases run)")
