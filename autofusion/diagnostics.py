"""User-facing errors: one line, with file:line:col where known, never a traceback.

Also guards xDSL 0.74's lexer against an exponential regex backtrack on unterminated
string literals (see shared/reference/xdsl-0.74.md, section 6.1, item 11).
"""

from __future__ import annotations

import bisect
import os
import re
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    InterpretationError,
    ParseError,
    VerifyException,
)

if TYPE_CHECKING:
    from xdsl.ir import Operation


@dataclass
class SourceLocation:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class UserError(DiagnosticException):
    """An error in what the user gave us (input file, option, config, IR), with a location.

    `location` may be the op the error is about: it is then located where that op (or the
    nearest op enclosing it) was parsed. Being a DiagnosticException, it is what
    `--verify-diagnostics` checks, in afc-opt and in the stock xdsl-opt.
    """

    def __init__(
        self, message: str, location: SourceLocation | str | Operation | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.location = (
            location
            if location is None or isinstance(location, SourceLocation | str)
            else op_location(location)
        )

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class LocatedVerifyError(VerifyException):
    """A verifier failure located at the op that failed (for --verify-diagnostics too)."""

    def __init__(self, message: str, location: SourceLocation | None) -> None:
        super().__init__(f"{location}: {message}" if location is not None else message)
        self.message = message
        self.location = location


class LineIndex:
    """Offset -> (line, col) in O(log n), for located diagnostics on large inputs."""

    def __init__(self, text: str, name: str, line_offset: int = 0) -> None:
        self.name = name
        self.line_offset = line_offset
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def location(self, offset: int) -> SourceLocation:
        line = bisect.bisect_right(self._starts, offset) - 1
        return SourceLocation(
            self.name, line + 1 + self.line_offset, offset - self._starts[line] + 1
        )


# Where each parsed op starts, kept beside the IR (xDSL 0.74 ops only carry the locations the
# text spells out with `loc(...)`, and afc's reports print those): (index, offset) pairs,
# resolved to line and column only when an error asks.
_parsed_at: weakref.WeakKeyDictionary[Operation, tuple[LineIndex, int]] = (
    weakref.WeakKeyDictionary()
)


def record_positions(offsets: dict[Operation, int], index: LineIndex) -> None:
    """Remember where the parser found each op, for errors raised about it later."""
    for op, offset in offsets.items():
        _parsed_at[op] = (index, offset)


def op_location(op: Operation) -> SourceLocation | None:
    """Where `op` is: its `loc("file":line:col)`, else where it was parsed; else where the
    nearest enclosing op is (ops a pass created sit inside ops the user wrote); else None."""
    from xdsl.dialects.builtin import FileLineColLoc

    current: Operation | None = op
    while current is not None:
        if isinstance(loc := current.location, FileLineColLoc):  # an explicit `loc(...)`
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        if (found := _parsed_at.get(current)) is not None:
            return found[0].location(found[1])
        current = current.parent_op()
    return None


# --------------------------------------------------------------------------------------
# The lexer guard
# --------------------------------------------------------------------------------------

# Possessive quantifiers (Python >= 3.11) make the match linear: the original nests `+`
# inside `*`, which backtracks exponentially when the closing quote is missing.
_GUARDED_STRING_REGEX = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


def install_lexer_guard() -> None:
    """Replace the string-literal regex of xDSL's MLIR lexer by a linear-time one."""
    from xdsl.utils.mlir_lexer import MLIRLexer

    MLIRLexer._unescaped_characters_regex = _GUARDED_STRING_REGEX


# --------------------------------------------------------------------------------------
# Formatting any exception as one line
# --------------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return text.strip()


def locate(exc: BaseException) -> tuple[str | None, str]:
    """Split an exception into (location or None, one-line message)."""
    if isinstance(exc, UserError | LocatedVerifyError):
        return (str(exc.location) if exc.location is not None else None), exc.message
    if isinstance(exc, ParseError):
        loc = exc.span.get_location()
        return f"{loc.file}:{loc.line}:{loc.col}", _first_line(exc.msg)
    return None, one_line(exc)


def one_line(exc: BaseException) -> str:
    """Render an exception as a single diagnostic line."""
    if isinstance(exc, UserError | ParseError):
        loc, msg = locate(exc)
        return f"{loc}: {msg}" if loc else msg
    if isinstance(exc, ArgSpecParseError):
        text = str(exc)
        # "Error parsing pass pipeline specification:\n<context>\n<caret> msg"
        lines = [ln for ln in text.splitlines() if ln.strip()]
        msg = lines[-1].strip().lstrip("^").strip() if lines else text
        return f"invalid pass pipeline: {msg}"
    if isinstance(exc, RecursionError):
        return "input nests too deeply to process"
    if isinstance(exc, DiagnosticException | InterpretationError):
        return _first_line(str(exc))
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename}"
    if isinstance(exc, IsADirectoryError):
        return f"is a directory, not a file: {exc.filename}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
    return _first_line(str(exc)) or type(exc).__name__


def _raised_by_afc(tb: TracebackType | None) -> bool:
    """Whether the innermost frame of a traceback is afc's code (a verifier of its ops)."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename.startswith(package)


def report_uncaught_user_errors() -> None:
    """Print an uncaught afc error as one `file:line:col: error: message` line.

    For drivers afc does not own, such as the stock `xdsl-opt` loading afc through the
    `xdsl.universe` entry point: they let exceptions escape, and Python would print a
    traceback. This chains onto sys.excepthook, Python's hook for exactly that. It takes
    UserErrors and the diagnostics afc's code raises (its ops' verifiers); any other
    exception goes to the previous hook. AFC_TRACEBACK=1 keeps the traceback.
    """
    previous = sys.excepthook
    if getattr(previous, "afc_user_errors", False):
        return

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        ours = isinstance(exc, UserError) or (
            isinstance(exc, DiagnosticException) and _raised_by_afc(tb)
        )
        if ours and not os.environ.get("AFC_TRACEBACK"):
            tool = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "afc"
            loc, message = locate(exc)
            message = message.removeprefix("Operation does not verify: ")
            print(f"{loc or tool}: error: {message}", file=sys.stderr)
        else:
            previous(kind, exc, tb)

    hook.afc_user_errors = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def run_tool(tool: str, body: Callable[[], int | None]) -> int:
    """Run a CLI body; turn any exception into one line on stderr and a non-zero exit.

    Set AFC_TRACEBACK=1 to see the Python traceback of an internal error.
    """
    install_lexer_guard()
    try:
        return body() or 0
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except SystemExit as e:  # argparse and xDSL exit this way
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        if os.environ.get("AFC_TRACEBACK"):
            raise
        expected = isinstance(
            e,
            UserError
            | ParseError
            | ArgSpecParseError
            | DiagnosticException
            | OSError
            | RecursionError
            | ValueError,
        )
        loc, msg = locate(e)
        kind = "error" if expected else f"internal error ({type(e).__name__})"
        print(f"{loc or tool}: {kind}: {msg}", file=sys.stderr)
        return 1 if expected else 2
