"""Ascend chip specifications, loaded from chips.toml (data, each value with its source)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import tomllib

from autofusion.diagnostics import UserError

DEFAULT_CHIP = "Ascend910B1"

# memory spaces of the buffer dialect, in the order reports list them
SPACES = ("gm", "ub", "l1", "l0a", "l0b", "l0c")


@dataclass(frozen=True)
class ChipSpec:
    """What afc needs to know about one SoC."""

    name: str
    arch: int
    mode: str  # "coupled" (cube and vector share a core) or "split" (AIC + AIV)
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    cube_cores: int
    vector_cores: int
    clock_mhz: float
    gm_bandwidth_gbs: float
    l2_bytes: int  # the chip's L2 (all GM traffic passes through it, ascend.md 1.6)
    l2_bandwidth_gbs: float
    data_copy_pad: bool
    l0c_to_ub: bool
    bf16: bool
    ub_align: int
    l1_align: int
    l0a_align: int
    l0b_align: int
    l0c_align: int
    vector_f32_per_cycle: int
    cube_flops_per_cycle: int
    max_queue_buffers: int
    launch_overhead_us: float
    datacopy_half_efficiency_bytes: int
    # GlobalTensor::SetL2CacheHint exists (Atlas A2/A3): reads can bypass the L2
    l2_cache_hint: bool = False
    estimated: tuple[str, ...] = field(default=())

    def capacity(self, space: str) -> int | None:
        """Usable bytes of an on-chip space (None for GM: unbounded here)."""
        return {
            "ub": self.ub_bytes,
            "l1": self.l1_bytes,
            "l0a": self.l0a_bytes,
            "l0b": self.l0b_bytes,
            "l0c": self.l0c_bytes,
        }.get(space)

    def alignment(self, space: str) -> int:
        return {
            "ub": self.ub_align,
            "l1": self.l1_align,
            "l0a": self.l0a_align,
            "l0b": self.l0b_align,
            "l0c": self.l0c_align,
        }.get(space, 1)


@cache
def _table() -> dict[str, ChipSpec]:
    data = tomllib.loads((Path(__file__).parent / "chips.toml").read_text(encoding="utf-8"))
    defaults = data["defaults"]
    chips = {}
    for name, values in data["chips"].items():
        merged = {**defaults, **values}
        merged["estimated"] = tuple(merged.get("estimated", ()))
        chips[name] = ChipSpec(name=name, **merged)
    return chips


def known_chips() -> list[str]:
    return sorted(_table())


def get_chip(name: str) -> ChipSpec:
    """The spec of a chip by CANN SoC name, matched case-insensitively."""
    for known, spec in _table().items():
        if known.lower() == name.lower():
            return spec
    raise UserError(f"unknown chip '{name}'; known chips: {', '.join(known_chips())}")
