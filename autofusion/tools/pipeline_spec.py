"""MLIR's `--pass-pipeline` syntax, translated to xDSL's `-p` syntax.

`builtin.module(a,func.func(b{x=1 y="s"}),c)` becomes `a,b{x=1 y="s"},c`. Option
blocks are copied verbatim: MLIR and xDSL both write `{key=value key2=value2}`. Passes
nested under `func.func(...)` are run on the whole module: every afc pass already works
function by function, so the result is the same.
"""

from __future__ import annotations

import re

from autofusion.diagnostics import UserError

# op anchors whose nested pipelines run on the module (see the module docstring)
FLATTENED_ANCHORS = ("builtin.module", "func.func", "any")


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, msg: str) -> UserError:
        return UserError(f"invalid --pass-pipeline at column {self.pos + 1}: {msg}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_space(self) -> None:
        while self.peek().isspace():
            self.pos += 1

    def name(self) -> str:
        start = self.pos
        while self.peek() and (self.peek().isalnum() or self.peek() in "-_."):
            self.pos += 1
        if start == self.pos:
            raise self.error(
                f"expected a pass name, found {self.peek()!r}"
                if self.peek()
                else "expected a pass name, found the end"
            )
        return self.text[start : self.pos]

    def options(self) -> str:
        """A balanced `{...}` block, respecting double-quoted strings."""
        start = self.pos
        depth = 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == '"':
                end = self.text.find('"', self.pos + 1)
                while end != -1 and self.text[end - 1] == "\\":
                    end = self.text.find('"', end + 1)
                if end == -1:
                    raise self.error("unterminated string in pass options")
                self.pos = end + 1
                continue
            self.pos += 1
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return self.text[start : self.pos]
        raise self.error("unterminated '{' in pass options")

    def pipeline(self, closing: str) -> list[str]:
        elements: list[str] = []
        self.skip_space()
        if self.peek() == closing:
            return elements
        while True:
            self.skip_space()
            name = self.name()
            self.skip_space()
            if self.peek() == "(":
                if name not in FLATTENED_ANCHORS:
                    raise self.error(
                        f"unsupported anchor '{name}'; use one of {', '.join(FLATTENED_ANCHORS)}"
                    )
                self.pos += 1
                elements.extend(self.pipeline(")"))
                if self.peek() != ")":
                    raise self.error("expected ')'")
                self.pos += 1
            elif self.peek() == "{":
                elements.append(name + self.options())
            else:
                elements.append(name)
            self.skip_space()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == closing:
                return elements
            raise self.error(
                f"expected ',' or {closing!r}, found {self.peek()!r}"
                if self.peek()
                else "unexpected end of pipeline"
            )


def mlir_pipeline_to_xdsl(spec: str) -> str:
    """Translate an MLIR pass pipeline (with or without `builtin.module(...)`) to xDSL's."""
    scanner = _Scanner(spec.strip())
    elements = scanner.pipeline("")
    if scanner.pos != len(scanner.text):
        raise scanner.error(f"unexpected {scanner.peek()!r}")
    return quote_bare_values(",".join(elements))


# what xDSL's pipeline lexer accepts unquoted as an option value (xdsl/utils/arg_spec.py)
_BARE_VALUE = re.compile(r"[-+]?[0-9]+(\.[0-9]*([eE][-+]?[0-9]+)?)?|[A-Za-z0-9_-]+")


def _quote_item(item: str) -> str:
    if not item or item.startswith('"') or _BARE_VALUE.fullmatch(item):
        return item
    return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _quote_options(block: str) -> str:
    """Quote the values in one `{k=v k2=v2}` block that xDSL would not lex bare."""
    entries: list[str] = []
    for entry in _split_outside_quotes(block[1:-1], " "):
        if "=" not in entry or entry.startswith('"'):
            entries.append(entry)
            continue
        key, value = entry.split("=", 1)
        items = _split_outside_quotes(value, ",")
        entries.append(key + "=" + ",".join(_quote_item(i) for i in items))
    return "{" + " ".join(e for e in entries if e) + "}"


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts, current, quoted = [], "", False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        if ch == sep and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def quote_bare_values(spec: str) -> str:
    """MLIR accepts `file=out.onnx`; xDSL needs `file="out.onnx"`. Add the quotes."""
    out, i = "", 0
    while i < len(spec):
        if spec[i] == "{":
            depth, j, quoted = 0, i, False
            while j < len(spec):
                if spec[j] == '"' and spec[j - 1] != "\\":
                    quoted = not quoted
                elif not quoted and spec[j] == "{":
                    depth += 1
                elif not quoted and spec[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(spec):
                return out + spec[i:]  # unbalanced: leave it for the parser to report
            out += _quote_options(spec[i : j + 1])
            i = j + 1
        else:
            out += spec[i]
            i += 1
    return out
