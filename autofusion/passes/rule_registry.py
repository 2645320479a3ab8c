"""Which fusion rules exist, and which of them a pass run uses (switch file and `only=`)."""

from __future__ import annotations

from collections.abc import Sequence

from autofusion.diagnostics import UserError
from autofusion.hardware import ChipSpec
from autofusion.passes.fusion_rule import FusionRule
from autofusion.passes.fusion_switch import (
    GRAPH_FUSION,
    UB_FUSION,
    FusionSwitch,
    load_fusion_switch,
)


def graph_fusion_rules() -> list[type[FusionRule]]:
    """The rules of `graph-fusion`, in the order the applier tries them on an op."""
    from autofusion.passes.rules import GRAPH_FUSION_RULES

    return list(GRAPH_FUSION_RULES)


def split_fusion_rules() -> list[type[FusionRule]]:
    """The rules of `split-fusion`."""
    from autofusion.passes.rules import SPLIT_FUSION_RULES

    return list(SPLIT_FUSION_RULES)


def ub_fusion_rule_names() -> list[str]:
    """The UBFusion rule names ub-fusion's switch section may name."""
    from autofusion.fusion.legality import UB_FUSION_RULE_NAMES

    return list(UB_FUSION_RULE_NAMES)


def known_rule_names() -> dict[str, list[str]]:
    return {
        GRAPH_FUSION: [r.rule_name for r in (*graph_fusion_rules(), *split_fusion_rules())],
        UB_FUSION: ub_fusion_rule_names(),
    }


def read_switch(switch_file: str | None) -> FusionSwitch:
    """The switch file's settings (validated against every known rule), or all on."""
    if switch_file is None:
        return FusionSwitch()
    return load_fusion_switch(switch_file, known_rule_names())


def select_rules(
    candidates: Sequence[type[FusionRule]],
    switch_file: str | None,
    only: Sequence[str],
    chip: ChipSpec | None = None,
) -> list[type[FusionRule]]:
    """The candidates the switch file leaves on, narrowed to `only` when it is given,
    without the rules whose op `chip` (when given) does not run."""
    mode = chip.mode if chip is not None else None
    names = {r.rule_name for r in candidates}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise UserError(
            f"unknown rule '{unknown[0]}' in only= (rules of this pass: {', '.join(sorted(names))})"
        )
    switch = read_switch(switch_file)
    return [
        r
        for r in candidates
        if switch.is_on(r.kind, r.rule_name)
        and (not only or r.rule_name in only)
        and (mode is None or r.chip_modes is None or mode in r.chip_modes)
    ]
