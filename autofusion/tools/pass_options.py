"""Pass and target options as the user writes them, read from the dataclasses themselves.

A `ModulePass` or `Target` declares its options as dataclass fields, each with a docstring
under it (or a `doc` entry in the field's metadata). This module turns them into
`afc-opt --list-passes` entries and resolves a spec such as `ub-fusion{remarks max-ops=8}`
into an instance, with the MLIR conventions xDSL 0.74 lacks: a bare boolean option means
true, and an error names the option as written (`max-ops`), with its type, on one line.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import NoneType
from typing import Any, TypeVar, get_args, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible, ParameterListType, parse_pipeline
from xdsl.utils.hints import isa, type_repr

from autofusion.diagnostics import UserError
from autofusion.dialects.target import ReadsTarget

ConvertibleT = TypeVar("ConvertibleT", bound=ArgSpecConvertible)


def spelled(field_name: str) -> str:
    """A field name as written in a pipeline: `max_ops` -> `max-ops`."""
    return field_name.replace("_", "-")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest of `choices`, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


@dataclass(frozen=True)
class OptionInfo:
    """One option of a pass or target, for listing."""

    name: str
    """As written in a pipeline (`max-ops`)."""
    type: str
    """The field's type, e.g. `int` or `str|None`."""
    default: str | None
    """The default as it would be written, or None when the option is required."""
    doc: str
    """What the option means (the field's docstring)."""


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each annotated field of `cls` and its bases (PEP 257 style)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue  # a builtin or a class without source: nothing documented
        node = tree.body[0] if tree.body else None
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt, after in zip(node.body, node.body[1:]):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(after.value.value.split())
    return docs


def _option_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.name != "name" and f.init]


def _written(value: object) -> str:
    """A value as it would be written in a pipeline."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(_written(v) for v in value) if value else "(empty)"
    if value is None:
        return "unset"
    return str(value)


def option_infos(cls: type[ArgSpecConvertible]) -> list[OptionInfo]:
    """The options of a pass or target class, in declaration order."""
    hints = get_type_hints(cls)
    docs = field_docs(cls)
    infos: list[OptionInfo] = []
    for f in _option_fields(cls):
        if f.default is not dataclasses.MISSING:
            default: str | None = _written(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = _written(f.default_factory())
        else:
            default = None
        doc = str(f.metadata.get("doc", docs.get(f.name, "")))
        infos.append(OptionInfo(spelled(f.name), type_repr(hints[f.name]), default, doc))
    return infos


def summary(cls: type) -> str:
    """The first paragraph of a class docstring, on one line."""
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


# --------------------------------------------------------------------------------------
# Resolving specs
# --------------------------------------------------------------------------------------


def _accepts(value: ParameterListType, hint: Any) -> bool:
    """Whether xDSL's conversion takes `value` for a field typed `hint`."""
    if not value:
        return NoneType in get_args(hint)
    return (len(value) == 1 and isa(value[0], hint)) or isa(value, hint)


def _is_boolean(hint: Any) -> bool:
    return hint is bool or bool in get_args(hint)


def resolve(spec: ArgSpec, cls: type[ConvertibleT], kind: str) -> ConvertibleT:
    """Instantiate `cls` from `spec`; a bare boolean option means true.

    `kind` ("pass" or "target") names what `spec` is in errors, which are one line and
    name the option as written, with its type.
    """
    if issubclass(cls, ReadsTarget):
        cls.reject_chip_option(spec)
    hints = get_type_hints(cls)
    fields = {f.name: f for f in _option_fields(cls)}
    params: dict[str, ParameterListType] = {}
    for key, given in spec.parameters.items():
        attr = key.replace("-", "_")
        if attr not in fields:
            known = [spelled(n) for n in fields]
            raise UserError(
                f"{kind} '{spec.name}' has no option '{key}'{did_you_mean(key, known)}"
                + (f" (its options: {', '.join(known)})" if known else " (it takes none)")
            )
        value = (True,) if not given and _is_boolean(hints[attr]) else given
        if not _accepts(value, hints[attr]):
            shown = f"'{_written(value)}'" if value else "no value"
            raise UserError(
                f"option '{spelled(attr)}' of {kind} '{spec.name}' expects "
                f"{type_repr(hints[attr])}, got {shown}"
            )
        params[attr] = value
    missing = [n for n in sorted(cls.required_fields()) if n in fields and n not in params]
    if missing:
        name = missing[0]
        raise UserError(
            f"{kind} '{spec.name}' requires option '{spelled(name)}' ({type_repr(hints[name])})"
        )
    try:
        return cls.from_spec(ArgSpec(spec.name, params))
    except ValueError as e:  # a check of the class's own (__post_init__)
        raise UserError(f"{kind} '{spec.name}': {e}") from e


def resolve_pipeline(
    available: Mapping[str, Callable[[], type[ModulePass]]], text: str
) -> tuple[ModulePass, ...]:
    """The passes of an xDSL-syntax pipeline, each checked as `resolve` does."""
    passes: list[ModulePass] = []
    for spec in parse_pipeline(text):
        if spec.name not in available:
            raise UserError(
                f"unknown pass '{spec.name}'{did_you_mean(spec.name, available)} "
                "(afc-opt --list-passes lists afc's passes, --help all of them)"
            )
        passes.append(resolve(spec, available[spec.name](), "pass"))
    return tuple(passes)


def _value_text(value: str | int | bool | float) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    text = repr(value)
    # xDSL's lexer reads an exponent only after a decimal point
    return text.replace("e", ".0e") if "e" in text and "." not in text else text


def spec_text(spec: ArgSpec) -> str:
    """`spec` written so that xDSL's pipeline parser reads it back unchanged."""
    if not spec.parameters:
        return spec.name
    entries = [
        f"{spelled(k)}={','.join(_value_text(x) for x in v)}" if v else spelled(k)
        for k, v in spec.parameters.items()
    ]
    return f"{spec.name}{{{' '.join(entries)}}}"


# --------------------------------------------------------------------------------------
# Listing
# --------------------------------------------------------------------------------------


def _entry(name: str, cls: type[ArgSpecConvertible]) -> list[str]:
    lines = [f"  {name}"]
    lines += textwrap.wrap(summary(cls), 96, initial_indent=" " * 6, subsequent_indent=" " * 6)
    for o in option_infos(cls):
        default = "required" if o.default is None else f"default {o.default}"
        lines.append(f"    {o.name}: {o.type} ({default})")
        if o.doc:
            lines += textwrap.wrap(o.doc, 96, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return lines


def catalog(
    passes: Mapping[str, Callable[[], type[ModulePass]]],
    targets: Mapping[str, Callable[[], type[ArgSpecConvertible]]],
) -> str:
    """The `--list-passes` text: each pass and target, its summary and its options."""
    lines = ["Passes (-p 'NAME{OPTION=VALUE ...},...'; a bare boolean option means true):"]
    for name, pass_factory in passes.items():
        lines += _entry(name, pass_factory())
    lines += ["", "Targets (-t 'NAME{OPTION=VALUE ...}'):"]
    for name, target_factory in targets.items():
        lines += _entry(name, target_factory())
    return "\n".join(lines) + "\n"
