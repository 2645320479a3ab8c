"""HFusion fusion kinds of exported step lists, and the cuts that make every part one
bishengir 1.2.0 can auto-schedule.

`hfusion-infer-func-fusion-kind` tries the kinds in enum order and takes the first that
covers the whole function (shared/reference/bishengir.md). `KIND_RULES` is that order as
data, each kind with the traits it admits. Measured here with bishengir-compile 1.2.0
(tests/test_hfusion_bishengir.py): a lone matmul and a matmul with a vector epilogue are
inferred SHALLOW_CV and compile; vector work before a matmul (MIX_CV) and two chained
matmuls (MIX_C2) are inferred SHALLOW_CV too but fail: auto-schedule with "could not find
next producer to fuse into container" when the vector work feeds the matmul, HIVM with
"'hivm.hir.store' op only support store ub to gm" when it only joins the epilogue; 1.2.0
has no scheduler for MIX_CV/MIX_C2 at all. So afc names those shapes MIX_CV/MIX_C2 and
cuts them before the matmul.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autofusion.codegen.hfusion_ir import STEP_KINDS, Step, Value

CUBE_STEPS = frozenset({"linalg.matmul", "linalg.batch_matmul"})
# the kinds bishengir 1.2.0's AutoScheduleBase::applySchedule has a scheduler for
SCHEDULED_KINDS = (
    "PURE_ELEMWISE",
    "ANY_PB",
    "LAST_AXIS_PBR",
    "ANY_PBR",
    "SINGLE_CUBE",
    "SHALLOW_CV",
)


@dataclass(frozen=True)
class Traits:
    """What a step list holds, as far as the fusion kind depends on it."""

    cubes: int
    vector_before_cube: bool
    broadcasts: bool
    reduces: bool
    last_axis_reduces_only: bool


# (kind, admits) in hfusion::FusionKind enum order: the first kind admitting the traits wins
KIND_RULES: tuple[tuple[str, Callable[[Traits], bool]], ...] = (
    ("PURE_ELEMWISE", lambda t: t.cubes == 0 and not t.broadcasts and not t.reduces),
    ("ANY_PB", lambda t: t.cubes == 0 and not t.reduces),
    ("LAST_AXIS_PBR", lambda t: t.cubes == 0 and t.last_axis_reduces_only),
    ("ANY_PBR", lambda t: t.cubes == 0),
    ("SHALLOW_CV", lambda t: t.cubes == 1 and not t.vector_before_cube),
    ("MIX_CV", lambda t: t.cubes == 1),
    ("MIX_C2", lambda t: t.cubes > 1),
)


def is_compute(step: Step) -> bool:
    return STEP_KINDS[step.kind].compute


def traits(steps: Sequence[Step]) -> Traits:
    cubes = [s for s in steps if s.kind in CUBE_STEPS]
    first_cube = steps.index(cubes[0]) if cubes else 0
    reduces = [s for s in steps if s.kind == "linalg.reduce"]
    return Traits(
        cubes=len(cubes),
        vector_before_cube=any(is_compute(s) for s in steps[:first_cube]),
        broadcasts=any(s.kind == "linalg.broadcast" for s in steps),
        reduces=bool(reduces),
        last_axis_reduces_only=all(
            list(s.attr("dims")) == [len(s.operands[0].shape or ()) - 1] for s in reduces
        ),
    )


def fusion_kind(steps: Sequence[Step]) -> str:
    t = traits(steps)
    return next(kind for kind, admits in KIND_RULES if admits(t))


def schedulable(kind: str) -> bool:
    return kind in SCHEDULED_KINDS


def cut_points(steps: Sequence[Step]) -> list[int]:
    """Indices to cut before so that every part holds at most one matmul and nothing is
    computed before it in its part: MIX_CV and MIX_C2 become SHALLOW_CV parts (a matmul
    and its epilogue) and vector parts."""
    cuts: list[int] = []
    start = 0
    for i, s in enumerate(steps):
        if s.kind in CUBE_STEPS and any(is_compute(p) for p in steps[start:i]):
            cuts.append(i)
            start = i
    return cuts


# element types that may not cross a device function's boundary in bishengir 1.2.0, with
# why (measured: an i1 compare result fails HIVM with "'hivm.hir.store' op only support
# store ub to gm currently!"; shared/reference/bishengir.md: hfusion-legalize-bool's i1/i8
# mismatches on bool masks crossing kernels)
BOUNDARY_LIMITS: dict[str, str] = {
    "i1": "a bool (i1) tensor crosses the kernel boundary, which HIVM 1.2.0 cannot store",
}


def boundary_limit(values: Sequence[Value]) -> str:
    """Why a part with these parameters and results cannot be a device function ('' if it can)."""
    return next((BOUNDARY_LIMITS[v.dtype] for v in values if v.dtype in BOUNDARY_LIMITS), "")
