"""Parsing .afc text into a lark tree, with one-line syntax errors.

The grammar is `grammar.lark` (LALR(1), contextual lexer). A post-lexer drops newlines
inside brackets so that calls and lists may span lines. Every lark error becomes a
`UserError` located at the offending token, saying what was expected and quoting the
text around it: `model.afc:3:11: error: expected an expression or ')', found ',' near
'add(x,, w)'`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lark import PostLex

from autofusion.diagnostics import SourceLocation, UserError

_OPENING = {"LPAR": "(", "LSQB": "["}
_CLOSING = {"RPAR", "RSQB"}


class _BracketNewlines(PostLex):
    """Drops newlines inside (...) and [...]; remembers the brackets still open.

    The stack is per parse; `parse_text` holds a lock while a parse uses it.
    """

    always_accept = ("_NL",)  # the contextual lexer must lex "\n" even inside brackets

    def __init__(self) -> None:
        self.open: list[Token] = []

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        self.open = []
        for tok in stream:
            if tok.type in _OPENING:
                self.open.append(tok)
            elif tok.type in _CLOSING and self.open:
                self.open.pop()
            elif tok.type == "_NL" and self.open:
                continue
            yield tok


_postlex = _BracketNewlines()
_lock = threading.Lock()


@cache
def _parser() -> Lark:
    grammar = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        postlex=_postlex,
        propagate_positions=True,
        maybe_placeholders=False,
    )


def decode(data: bytes | str, name: str) -> str:
    """The source text; bad UTF-8 is an error located at the offending byte."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise UserError(
            f"the file is not UTF-8 text (byte 0x{data[e.start]:02x})",
            SourceLocation(name, line, col),
        ) from None


def parse_text(text: str, name: str) -> Tree:
    """Parse a whole .afc text into its lark tree; raise `UserError` on a syntax error."""
    parser = _parser()
    if not text.endswith("\n"):
        text += "\n"
    with _lock:
        try:
            return parser.parse(text)
        except UnexpectedInput as e:
            raise _syntax_error(e, text, name, parser, list(_postlex.open)) from None


# --------------------------------------------------------------------------------------
# Error messages
# --------------------------------------------------------------------------------------

_STATEMENT_START = {"INPUT", "WEIGHT", "CONST", "OUTPUT", "RETURN", "NAME"}
_EXPRESSION_START = {"NAME", "INT", "FLOAT", "INF", "NAN", "TRUE", "FALSE", "LPAR", "MINUS"}
_NUMBER_START = {"INT", "FLOAT", "INF", "NAN", "TRUE", "FALSE", "MINUS"}
_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH", "AT"}
_DESCRIPTIONS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": 'a "string"',
    "_NL": "end of line",
    "$END": "end of file",
    "_FROM": "'from'",
}
# the order items appear in "expected ..." (anything else comes after, by name)
_ORDER = [
    "a statement",
    "an expression",
    "a dimension (an integer or a name)",
    "a number",
    "a name",
    "an integer",
    'a "string"',
    "an operator",
]


def _describe_expected(expected: Iterable[str], parser: Lark) -> str:
    names = set(expected)
    if "_NL" in names:
        names.discard("$END")  # the end of the file also ends the line
    items: list[str] = []
    if names >= _STATEMENT_START:
        items.append("a statement")
        names -= _STATEMENT_START
    if {"NAME", "INT", "FLOAT", "LPAR"} <= names:
        items.append("an expression")
        names -= _EXPRESSION_START
    if {"INT", "NAME"} <= names and "FLOAT" not in names:
        items.append("a dimension (an integer or a name)")
        names -= {"INT", "NAME"}
    if {"INT", "FLOAT"} <= names:
        items.append("a number")
        names -= _NUMBER_START
    if {"PLUS", "STAR"} <= names:
        items.append("an operator")
        names -= _OPERATORS
    terminals = parser.get_terminal
    for n in sorted(names):
        if n in _DESCRIPTIONS:
            items.append(_DESCRIPTIONS[n])
            continue
        try:
            pattern = terminals(n).pattern
        except KeyError:
            items.append(n.lower())
            continue
        items.append(f"'{pattern.value}'" if pattern.type == "str" else n.lower())
    rank = {d: i for i, d in enumerate(_ORDER)}
    items.sort(key=lambda d: (rank.get(d, len(rank)), d.endswith("line"), d))
    if not items:
        return "something else"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "_NL":
        return "end of line"
    text = str(tok)
    return f"'{_printable(text if len(text) <= 40 else text[:37] + '...')}'"


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def near(text: str, offset: int, length: int = 1) -> str:
    """The text of the offending line around `offset`, trimmed at word boundaries."""
    offset = max(0, min(offset, len(text)))
    length = min(length, 40)  # a long token is quoted by its start
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    line = text[start : end if end >= 0 else len(text)].rstrip("\r")
    rel = offset - start
    if not line[: rel + length].strip():
        return ""
    lo, hi = max(0, rel - 12), min(len(line), rel + max(length, 1) + 12)
    if lo > 0:
        space = line.find(" ", lo, rel)
        lo = space + 1 if space >= 0 else lo
    if hi < len(line):
        space = line.rfind(" ", rel + length, hi)
        hi = space if space >= 0 else hi
    return _printable(line[lo:hi].strip())


def _location(name: str, line: int | None, col: int | None) -> SourceLocation:
    return SourceLocation(name, line or 1, col or 1)


def _syntax_error(
    e: UnexpectedInput, text: str, name: str, parser: Lark, open_brackets: list[Token]
) -> UserError:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = _describe_expected(e.accepts or e.expected, parser)
        message = f"expected {expected}, found {_describe_token(tok)}"
        if tok.type == "$END":
            # lark gives the end token the position of the last real token
            offset = len(text.rstrip())
            line = text.count("\n", 0, offset) + 1
            col = offset - (text.rfind("\n", 0, offset) + 1) + 1
            length = 0
        else:
            offset, line, col = tok.start_pos or 0, tok.line, tok.column
            length = len(str(tok)) if tok.type != "_NL" else 0
        if open_brackets and (tok.type == "$END" or open_brackets[-1].line != tok.line):
            b = open_brackets[-1]
            message += f" ('{b}' at {b.line}:{b.column} is not closed)"
        context = near(text, offset if length else max(offset - 1, 0), max(length, 1))
        if context:
            message += f" near '{context}'"
        return UserError(message, _location(name, line, col))
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream or 0
        char = text[pos] if pos < len(text) else ""
        if char == '"':
            message = "unterminated string (a string ends with '\"' on the same line)"
        else:
            message = f"unexpected character '{_printable(char)}'"
        context = near(text, pos)
        if context:
            message += f" near '{context}'"
        return UserError(message, _location(name, e.line, e.column))
    return UserError(f"syntax error: {e}", _location(name, e.line, e.column))
