"""`afc-opt --verify-diagnostics`: MLIR's `expected-error` annotations, checked.

xDSL 0.74's flag only prints a verifier error and exits 0, so a test passes whether or not
the error comes. Here, as in mlir-opt, each chunk's errors (parse, verifier, pass and
target errors alike) must match its annotations, and every annotation must be matched:

    // expected-error @+1 {{shapes 4x8, 3 do not broadcast}}
    %c = graph.add %a, %b : ...
    %d = graph.relu %c : ...  // expected-error {{result #0 has type}}
    // expected-error @unknown {{max-ops and max-inputs must be at least 1}}

`@+N`/`@-N` name the line N below/above the annotation, no `@` its own line, `@unknown` an
error without a location. The message is a substring of the error's. A chunk stops at its
first error, so it can expect at most one.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from dataclasses import dataclass
from io import BytesIO
from typing import IO

from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from autofusion.diagnostics import LineIndex, SourceLocation, locate

_ANNOTATION = re.compile(r"expected-error\s*(?:@([+-]\d+|unknown))?\s*\{\{(.*?)\}\}")
_LOCATED = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)$")


@dataclass(frozen=True)
class Expectation:
    """An `expected-error` annotation: the line the error must be on (None: no location),
    the text it must contain, and where the annotation itself is."""

    line: int | None
    message: str
    annotation: SourceLocation


def expectations(text: str, name: str, line_offset: int = 0) -> list[Expectation]:
    """The `expected-error` annotations of one chunk, with file-relative lines."""
    index = LineIndex(text, name, line_offset)
    found: list[Expectation] = []
    for m in _ANNOTATION.finditer(text):
        where = index.location(m.start())
        anchor = m.group(1)
        line = None if anchor == "unknown" else where.line + int(anchor or 0)
        found.append(Expectation(line, m.group(2).strip(), where))
    return found


def error_line(error: Exception) -> int | None:
    """The line an error is located at, if it names one."""
    loc, _ = locate(error)
    if loc is None:
        return None
    m = _LOCATED.match(loc)
    return int(m.group("line")) if m else None


def mismatches(expected: list[Expectation], error: Exception | None) -> list[str]:
    """One line per unmet expectation and per unexpected error."""
    problems: list[str] = []
    unmatched = list(expected)
    if error is not None:
        loc, message = locate(error)
        line = error_line(error)
        hit = next((e for e in unmatched if e.line == line and e.message in message), None)
        if hit is None:
            problems.append(f"{loc or '<unknown>'}: error: unexpected error: {message}")
        else:
            unmatched.remove(hit)
    for e in unmatched:
        where = "with no location" if e.line is None else f"at line {e.line}"
        problems.append(
            f'{e.annotation}: error: expected error {where} "{e.message}" was not produced'
        )
    return problems


def _run_chunk(
    main: xDSLOptMain, data: bytes, file_extension: str, offset: int
) -> tuple[str | None, Exception | None]:
    """Parse, transform and print one chunk: (its output, None) or (None, its diagnostic)."""
    try:
        module = main.parse_chunk(BytesIO(data), file_extension, offset)
        if module is None:
            return "", None
        main.apply_passes(module)
        return main.output_resulting_program(module), None
    except ParseError as e:
        e.span = dataclasses.replace(e.span, line_offset=offset)
        return None, e
    except DiagnosticException as e:
        return None, e


def check_expected_errors(main: xDSLOptMain) -> None:
    """Run every chunk of the input; print the output of those that succeed, and fail with
    one line per mismatch when the errors differ from the annotations."""
    chunks, file_extension = main.prepare_input()
    name = main.get_input_name()
    problems: list[str] = []
    outputs: list[str] = []
    for chunk, offset in chunks:
        with chunk:
            data = chunk.read()
        expected = expectations(data.decode("utf-8", errors="replace"), name, offset)
        output, error = _run_chunk(main, data, file_extension, offset)
        problems += mismatches(expected, error)
        if output is not None:
            outputs.append(output)
    stream: IO[str] = main.prepare_output()
    try:
        stream.write("// -----\n".join(outputs))
    finally:
        if stream is not sys.stdout:
            stream.close()
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        raise SystemExit(1)
