"""The `afc` dialect: the compilation target, one verified attribute on the module.

    builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} { ... }

Every pass, the report and the Ascend C printer read the chip from here; no pass has a
chip of its own. `set-target{chip=...}`, `afc compile --chip` and the frontends' `chip`
option set it. A module without one gets DEFAULT_CHIP at the first pass that needs a chip,
which says so on stderr and writes the attribute, so later stages see the same chip.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import ClassVar, Self

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible
from xdsl.utils.exceptions import VerifyException

from autofusion.diagnostics import UserError
from autofusion.hardware import DEFAULT_CHIP, ChipSpec, get_chip, known_chips

# the module attribute that holds the target
TARGET_KEY = "afc.target"


def _canonical(chip: str) -> str:
    """CANN's spelling of a chip name given in any case (unknown names unchanged)."""
    return next((c for c in known_chips() if c.lower() == chip.lower()), chip)


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """The SoC a module is compiled for: `#afc.target<"Ascend310P3">`. The chip is one of
    autofusion/hardware/chips.toml, written in any case and printed as CANN spells it."""

    name = "afc.target"
    chip: StringAttr

    def __init__(self, chip: str) -> None:
        super().__init__(StringAttr(_canonical(chip)))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            chip = parser.parse_str_literal("a chip name")
            if _canonical(chip) not in known_chips():
                parser.raise_error(_unknown(chip), pos, parser.pos)
        return (StringAttr(_canonical(chip)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f'<"{self.chip.data}">')

    def verify(self) -> None:
        if self.chip.data not in known_chips():
            raise VerifyException(_unknown(self.chip.data))

    @property
    def spec(self) -> ChipSpec:
        return get_chip(self.chip.data)


def _unknown(chip: str) -> str:
    return f"unknown chip '{chip}'; known chips: {', '.join(known_chips())}"


def module_target(module: ModuleOp) -> ChipSpec | None:
    """The chip of the module's afc.target, or None when it has none."""
    attr = module.attributes.get(TARGET_KEY)
    if attr is None:
        return None
    if not isinstance(attr, TargetAttr):
        raise UserError(f'{TARGET_KEY} must be #afc.target<"CHIP">, not {attr}')
    return attr.spec


def set_target(module: ModuleOp, chip: str) -> None:
    """Give `module` the target `chip` (any case); an existing other target is an error
    (the module's groups or kernels were planned for that chip)."""
    spec = get_chip(chip)
    current = module_target(module)
    if current is not None and current.name != spec.name:
        raise UserError(
            f'chip {chip} contradicts the module\'s {TARGET_KEY} = #afc.target<"{current.name}">'
        )
    module.attributes[TARGET_KEY] = TargetAttr(spec.name)


def resolve_target(module: ModuleOp, user: str) -> ChipSpec:
    """The module's target for `user` (a pass or printer). Without one: the chip the
    module's buffer.kernels were lowered for, else DEFAULT_CHIP with a remark on stderr;
    either way the attribute is written, so every later stage sees the same chip."""
    found = module_target(module)
    if found is not None:
        return found
    kernel_chips = sorted(
        {
            named.data
            for op in module.walk()
            if op.name == "buffer.kernel"
            and isinstance(named := op.properties.get("chip"), StringAttr)
        }
    )
    if len(kernel_chips) > 1:
        raise UserError(
            f"the module's buffer.kernels are for different chips ({', '.join(kernel_chips)}); "
            "a module has one target"
        )
    if kernel_chips:
        chip = get_chip(kernel_chips[0])
    else:
        chip = get_chip(DEFAULT_CHIP)
        print(
            f"remark: {user}: the module has no {TARGET_KEY}; using the default {chip.name} "
            "(set one with set-target{chip=...})",
            file=sys.stderr,
        )
    module.attributes[TARGET_KEY] = TargetAttr(chip.name)
    return chip


class ReadsTarget(ArgSpecConvertible):
    """A pass or printer that reads the module's target. Its old `chip=` option is an
    error naming the new way (before the target was an attribute, each had its own)."""

    name: ClassVar[str]

    @classmethod
    def reject_chip_option(cls, spec: ArgSpec) -> None:
        """The one-line error for the retired `chip=` option."""
        if "chip" in spec.normalize_parameter_names().parameters:
            raise UserError(
                f"{cls.name}{{chip=...}} is gone: the chip is the module's {TARGET_KEY}; "
                f"run set-target{{chip=...}} before {cls.name}"
            )

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        cls.reject_chip_option(spec)
        return super().from_spec(spec)


Afc = Dialect("afc", [], [TargetAttr])
