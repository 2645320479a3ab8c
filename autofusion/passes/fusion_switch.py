"""CANN's fusion switch file (`fusion_switch.cfg`), in its JSON and its older line format.

JSON (CANN 6+):
    {"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPass": "on"},
                "UBFusion": {"ALL": "on", "AutomaticUbFusion": "off"}}}
Lines (older): one `PassName:off` or `PassName:on` per line, applied to both kinds.

Resolution follows FE's FusionConfigParser::GetFusionSwitchByName (GE
compiler/engines/nn_engine/fusion/fusion_config_manager/fusion_config_parser.cc): an
explicit entry for the pass wins, else the kind's "ALL" entry, else the default: on.
A top-level "Priority" object (pass ordering in CANN) is checked but has no effect here:
afc's rules run to a fixpoint, so their order does not change the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autofusion.diagnostics import SourceLocation, UserError

GRAPH_FUSION = "GraphFusion"
UB_FUSION = "UBFusion"
KINDS = (GRAPH_FUSION, UB_FUSION)
_VALUES = {"on": True, "off": False}


@dataclass
class FusionSwitch:
    """Which fusion rules are on, per kind (GraphFusion / UBFusion)."""

    explicit: dict[str, dict[str, bool]] = field(default_factory=lambda: {k: {} for k in KINDS})
    all: dict[str, bool | None] = field(default_factory=lambda: dict.fromkeys(KINDS))

    def is_on(self, kind: str, name: str) -> bool:
        if name in self.explicit[kind]:
            return self.explicit[kind][name]
        default = self.all[kind]
        return True if default is None else default


def _line_of(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return i
    return None


def _located(path: str, text: str, needle: str) -> SourceLocation | str:
    line = _line_of(text, needle)
    return SourceLocation(path, line, 1) if line is not None else path


def load_fusion_switch(
    path: str | Path, known: Mapping[str, Iterable[str]] | None = None
) -> FusionSwitch:
    """Read a switch file; `known` maps each kind to its valid rule names (validated)."""
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UserError("fusion switch file is not UTF-8 text", path) from e
    is_json = text.lstrip().startswith("{")
    switch = _parse_json(path, text) if is_json else _parse_lines(path, text)
    if known is not None:
        _validate(path, text, switch, {k: set(v) for k, v in known.items()})
    return switch


def _parse_json(path: str, text: str) -> FusionSwitch:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"malformed JSON: {e.msg}", SourceLocation(path, e.lineno, e.colno)) from e
    if not isinstance(data, dict) or "Switch" not in data:
        raise UserError('expected a JSON object with a "Switch" key', path)
    extra = sorted(set(data) - {"Switch", "Priority"})
    if extra:
        raise UserError(
            f'unknown top-level key "{extra[0]}"', _located(path, text, f'"{extra[0]}"')
        )
    switch_section = data["Switch"]
    if not isinstance(switch_section, dict):
        raise UserError('"Switch" must be an object', _located(path, text, '"Switch"'))
    switch = FusionSwitch()
    for kind, entries in switch_section.items():
        if kind not in KINDS:
            raise UserError(
                f'unknown fusion kind "{kind}" (expected GraphFusion or UBFusion)',
                _located(path, text, f'"{kind}"'),
            )
        if not isinstance(entries, dict):
            raise UserError(f'"{kind}" must be an object', _located(path, text, f'"{kind}"'))
        for name, value in entries.items():
            where = _located(path, text, f'"{name}"')
            if value not in _VALUES:
                raise UserError(
                    f'"{kind}.{name}" must be "on" or "off", got {json.dumps(value)}', where
                )
            if name == "ALL":
                switch.all[kind] = _VALUES[value]
            else:
                switch.explicit[kind][name] = _VALUES[value]
    _check_priority(path, text, data.get("Priority"))
    return switch


def _check_priority(path: str, text: str, priority: object) -> None:
    if priority is None:
        return
    if not isinstance(priority, dict):
        raise UserError('"Priority" must be an object', _located(path, text, '"Priority"'))
    for kind, stages in priority.items():
        if kind not in KINDS or not isinstance(stages, dict):
            raise UserError(f'invalid "Priority.{kind}"', _located(path, text, f'"{kind}"'))
        for stage, passes in stages.items():
            if stage not in ("Top", "Main", "Down") or not isinstance(passes, dict):
                raise UserError(
                    f'invalid "Priority.{kind}.{stage}" (stages are Top, Main, Down)',
                    _located(path, text, f'"{stage}"'),
                )


_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(\S+)\s*$")


def _parse_lines(path: str, text: str) -> FusionSwitch:
    switch = FusionSwitch()
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0]
        if not content.strip():
            continue
        m = _LINE.match(content)
        if m is None:
            raise UserError(
                f"expected 'PassName:on' or 'PassName:off', got {line.strip()!r}",
                SourceLocation(path, number, 1),
            )
        name, value = m.groups()
        if value not in _VALUES:
            raise UserError(
                f"{name} must be 'on' or 'off', got {value!r}",
                SourceLocation(path, number, m.start(2) + 1),
            )
        # the older format has no kinds: an entry switches both (FE's parser does the same)
        for kind in KINDS:
            if name == "ALL":
                switch.all[kind] = _VALUES[value]
            else:
                switch.explicit[kind][name] = _VALUES[value]
    return switch


def _validate(path: str, text: str, switch: FusionSwitch, known: dict[str, set[str]]) -> None:
    everything = set().union(*known.values()) if known else set()
    for kind in KINDS:
        for name in switch.explicit[kind]:
            # line-format entries land in both kinds: valid if either knows the name
            valid = known.get(kind, set()) if text.lstrip().startswith("{") else everything
            if name not in valid:
                names = ", ".join(sorted(known.get(kind, everything)))
                raise UserError(
                    f"unknown {kind} pass '{name}' (known: {names})",
                    _located(path, text, name),
                )
