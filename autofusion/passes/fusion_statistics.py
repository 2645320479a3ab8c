"""Fusion statistics in CANN's shapes: fusion_result.json and the fusion log lines.

fusion_result.json (GE compiler/engines/nn_engine/fusion/common/fusion_statistic/
fusion_statistic_writer.cc):
    {"session_and_graph_id_0_0": {"graph_fusion": {"<Pass>": {"match_times": "N",
        "effect_times": "M"}}, "ub_fusion": {"<Pass>": {"match_times": "N",
        "repository_hit_times": "0", "effect_times": "M"}}}}
afc adds, per pass, "refusals": the candidates that matched but were not applied, with
the reason. Log lines follow pattern_fusion_base_pass.cc:
    GraphFusionPass[<Pass>]: pattern=<pattern>, matched_times=N, effected_times=M.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from xdsl.dialects.builtin import ArrayAttr, FileLineColLoc, FusedLoc, NameLoc
from xdsl.ir import Attribute, Operation

from autofusion.passes.fusion_switch import GRAPH_FUSION, UB_FUSION

_JSON_KIND = {GRAPH_FUSION: "graph_fusion", UB_FUSION: "ub_fusion"}
_LOG_PREFIX = {GRAPH_FUSION: "GraphFusionPass", UB_FUSION: "BufferFusionPass"}
GRAPH_KEY = "session_and_graph_id_0_0"


def describe_location(loc: Attribute) -> str | None:
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    if isinstance(loc, FusedLoc):
        parts = [describe_location(x) for x in cast(ArrayAttr[Attribute], loc.locations).data]
        # several ops of one source statement share its name: list it once
        return "+".join(dict.fromkeys(p for p in parts if p))
    return None


def describe_op(op: Operation) -> str:
    """A short, stable label for an op in reports: its source location, else name and result."""
    where = describe_location(op.location)
    if where:
        return f"{op.name} @ {where}"
    hint = op.results[0].name_hint if op.results else None
    return f"{op.name} %{hint}" if hint else op.name


@dataclass
class RuleStatistics:
    """Counts of one rule: candidates matched, rewrites applied, and why the rest were not."""

    pattern: str
    match_times: int = 0
    effect_times: int = 0
    refusals: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Application:
    """One applied rewrite: the rule, the source names of the ops it consumed (their
    location names, e.g. ONNX node names) and the ops it created."""

    rule: str
    sources: tuple[str, ...]
    created: tuple[str, ...]


def location_names(loc: Attribute) -> list[str]:
    """The source names (NameLoc descriptions) inside a location, fused or not."""
    if isinstance(loc, NameLoc):
        return [loc.desc.data]
    if isinstance(loc, FusedLoc):
        return [
            n for x in cast(ArrayAttr[Attribute], loc.locations).data for n in location_names(x)
        ]
    return []


@dataclass
class FusionStatistics:
    """Statistics of the fusion rules of one or more passes, by kind and rule name."""

    rules: dict[str, dict[str, RuleStatistics]] = field(
        default_factory=lambda: {GRAPH_FUSION: {}, UB_FUSION: {}}
    )
    applications: list[Application] = field(default_factory=list)

    def applied(self, rule: str, replaced: list[Operation], created: list[Operation]) -> None:
        # rules give new ops the fused location of what they matched, which also names
        # matched ops left dead for the walker to erase
        sources: list[str] = []
        for op in [*replaced, *created]:
            for name in location_names(op.location):
                if name not in sources:
                    sources.append(name)
        self.applications.append(
            Application(rule, tuple(sources), tuple(describe_op(op) for op in created))
        )

    def rule(self, kind: str, name: str, pattern: str) -> RuleStatistics:
        return self.rules[kind].setdefault(name, RuleStatistics(pattern))

    def matched(self, kind: str, name: str, pattern: str) -> None:
        self.rule(kind, name, pattern).match_times += 1

    def effected(self, kind: str, name: str, pattern: str) -> None:
        self.rule(kind, name, pattern).effect_times += 1

    def refused(self, kind: str, name: str, pattern: str, where: str, reason: str) -> None:
        stats = self.rule(kind, name, pattern)
        stats.match_times += 1
        stats.refusals.append((where, reason))

    def merge(self, other: FusionStatistics) -> None:
        for kind, rules in other.rules.items():
            for name, s in rules.items():
                mine = self.rule(kind, name, s.pattern)
                mine.match_times += s.match_times
                mine.effect_times += s.effect_times
                mine.refusals.extend(s.refusals)
        self.applications.extend(other.applications)

    def to_json(self) -> dict[str, object]:
        """The fusion_result.json document (counts as strings, as CANN writes them)."""
        sections: dict[str, object] = {}
        for kind, rules in self.rules.items():
            if not rules:
                continue
            section: dict[str, object] = {}
            for name in sorted(rules):
                s = rules[name]
                entry: dict[str, object] = {"match_times": str(s.match_times)}
                if kind == UB_FUSION:
                    entry["repository_hit_times"] = "0"
                entry["effect_times"] = str(s.effect_times)
                if s.refusals:
                    entry["refusals"] = [{"op": w, "reason": r} for w, r in s.refusals]
                section[name] = entry
            sections[_JSON_KIND[kind]] = section
        return {GRAPH_KEY: sections}

    def write_json(self, path: str | Path) -> None:
        from autofusion.tools.atomic_output import atomic_file

        with atomic_file(path) as tmp:
            tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def log_lines(self) -> list[str]:
        """CANN-format log lines: one summary per rule, then one line per refusal."""
        lines = []
        for kind, rules in self.rules.items():
            prefix = _LOG_PREFIX[kind]
            for name in sorted(rules):
                s = rules[name]
                lines.append(
                    f"{prefix}[{name}]: pattern={s.pattern}, matched_times={s.match_times}, "
                    f"effected_times={s.effect_times}."
                )
                lines.extend(f"{prefix}[{name}]: not applied to {w}: {r}" for w, r in s.refusals)
        return lines
