"""The test suite's own set-up: lit features for the optional extras, and what `make test`
shows of pytest."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TORCH_TESTS = ROOT / "tests" / "filecheck" / "frontends" / "torch"


def _lit(*args: str, block_torch: bool) -> subprocess.CompletedProcess[str]:
    """Run lit in a fresh interpreter; with `block_torch`, `import torch` fails there."""
    block = "sys.modules['torch'] = None; " if block_torch else ""
    code = f"import sys; {block}from lit.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_torch_lit_tests_are_unsupported_without_torch() -> None:
    tests = sorted(TORCH_TESTS.glob("*.py"))
    assert tests, "no torch lit tests found"
    done = _lit(str(TORCH_TESTS), block_torch=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Unsupported: {len(tests)}" in done.stdout, done.stdout
    assert "Passed" not in done.stdout and "Failed" not in done.stdout


def test_torch_lit_tests_run_with_torch() -> None:
    pytest.importorskip("torch")
    done = _lit(str(TORCH_TESTS / "linear.py"), block_torch=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed: 1" in done.stdout, done.stdout


def _make_pytest_flags() -> list[str]:
    """The flags `make pytest` passes, without `-n N` (xdist's workers add nothing here)."""
    recipe = re.search(
        r"^pytest:.*\n\t\$\(BIN\)/pytest(.*)$", (ROOT / "Makefile").read_text(), re.M
    )
    assert recipe is not None, "the Makefile has no pytest recipe"
    flags = recipe.group(1).split()
    if "-n" in flags:
        i = flags.index("-n")
        del flags[i : i + 2]
    return flags


def test_make_pytest_prints_the_summary_line(tmp_path: Path) -> None:
    """pyproject's addopts and the Makefile's flags together keep pytest's last line."""
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    pytest.skip('why')\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            *_make_pytest_flags(),
            str(tmp_path / "test_one.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^1 passed, 1 skipped in ", done.stdout, re.M), done.stdout
