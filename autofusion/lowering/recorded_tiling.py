"""Taking a recorded tiling back: the checks every template's `at_tiling` makes on a
group's `tiling` property (ub-fusion's choice or a hand edit) before it builds the plan,
so a tiling that cannot be carried out is a one-line refusal, not a broken kernel.

Imported by the rows template, which cube_common.py imports: no cube_common at load time.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from autofusion.dialects import shape_inference as si
from autofusion.dialects.group_plan import TilingValue
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import FRACTAL
from autofusion.lowering.row_plan import RowPlan
from autofusion.passes.fusion_rule import Refusal

T = TypeVar("T")

# the tiling key of a cube kernel's epilogue row tile (elements), next to its tiles' fields
EPILOGUE_TILE = "epilogue_tile_elems"


def take_tiles(
    cls: type[T], tiling: Mapping[str, TilingValue], template: str, extra: Collection[str] = ()
) -> T | Refusal:
    """The tiles of dataclass `cls` (integer and flag fields) that `tiling` gives; the
    tiling must have exactly those fields and the `extra` keys, integers positive."""
    names = {f.name: f.type for f in fields(cls)}  # type: ignore[arg-type]
    expected = set(names) | set(extra)
    if set(tiling) != expected:
        missing = ", ".join(sorted(expected - set(tiling))) or "nothing"
        unknown = ", ".join(sorted(set(tiling) - expected)) or "nothing"
        return Refusal(
            f"a {template} tiling has {', '.join(sorted(expected))} (missing {missing}, "
            f"unknown {unknown})"
        )
    values: dict[str, Any] = {}
    for name, kind in names.items():
        v = tiling[name]
        flag = kind in ("bool", bool)
        if isinstance(v, bool) != flag or (not flag and v < 1):
            return Refusal(
                f"the {template} tiling's {name} must be a {'flag' if flag else 'positive integer'}"
            )
        values[name] = v
    return cls(**values)


def fractal_refusal(template: str, **dims: int) -> Refusal | None:
    """Cube tiles are whole 16x16 fractals."""
    odd = [k for k, v in dims.items() if v % FRACTAL]
    if odd:
        return Refusal(f"{template} tiles {', '.join(dims)} must be multiples of {FRACTAL}")
    return None


def overflow(need: Mapping[str, int], chip: ChipSpec) -> Refusal | None:
    """Why buffers of `need` bytes per on-chip space do not fit the chip, if they do not."""
    for space, used in need.items():
        capacity = chip.capacity(space)
        if capacity is not None and used > capacity:
            return Refusal(
                f"the tiling needs {used} bytes of {space.upper()}, {chip.name} has {capacity}"
            )
    return None


def take_row_tile(rows: RowPlan, tiling: Mapping[str, TilingValue], key: str) -> Refusal | None:
    """Give the row plan (its analysis sized the largest tile whose buffers fit its UB
    budget) the tiling's tile of `tiling[key]` elements: a multiple of the row padding, no
    larger than that budget, and holding a whole reduced row."""
    elems = tiling[key]
    if isinstance(elems, bool) or elems < rows.align_elems or elems % rows.align_elems:
        return Refusal(f"the tiling's {key} must be a positive multiple of {rows.align_elems}")
    if elems > rows.max_tile_elems:
        return Refusal(
            f"the tiling's {key} = {elems} exceeds the {rows.max_tile_elems} elements whose "
            "buffers fit UB"
        )
    cols = si.num_elements(rows.inner)
    if rows.whole_rows and cols is not None:
        row = -(-cols // rows.align_elems) * rows.align_elems
        if row > elems:
            return Refusal(f"the tiling's {key} = {elems} cannot hold a reduced row of {row}")
    rows.max_tile_elems = elems
    return None
