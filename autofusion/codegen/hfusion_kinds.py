"""HFusion fusion kinds of exported step lists, and the cuts that make every part one
bishengir 1.2.0 can auto-schedule.

`hfusion-infer-func-fusion-kind` (InferFuncFusionKind.cpp in Ascend/AscendNPU-IR) counts
the function's "important" ops, by the pattern FusibleHelper::getOpPattern gives each op:
with none the kind is ANY_PB, with one it is that op's own kind (a lone matmul SINGLE_CUBE,
a lone reduction LAST_AXIS_PBR or ANY_PBR, ...), else the first kind in enum order that
covers the whole function. `STEP_PATTERNS`, `SINGLE_OP_KINDS` and `KIND_RULES` are those
rules as data; tests/test_hfusion_bishengir.py asserts afc's kind is bishengir's for every
step kind alone and for every exported function. A linalg.fill is an important (elementwise)
op, so afc's matmuls, which accumulate into a zero fill, are SHALLOW_CV even alone; SINGLE_CUBE
is a matmul into a parameter or a tensor.empty, which afc does not export.
Measured with bishengir-compile 1.2.0: a matmul with a vector epilogue compiles (SHALLOW_CV);
vector work before a matmul (MIX_CV) and two chained matmuls (MIX_C2) are inferred
SHALLOW_CV too but fail: auto-schedule with "could not find next producer to fuse into
container" when the vector work feeds the matmul, HIVM with "'hivm.hir.store' op only
support store ub to gm" when it only joins the epilogue; 1.2.0 has no scheduler for
MIX_CV/MIX_C2 at all. So afc names those shapes MIX_CV/MIX_C2 and cuts them before the
matmul. That cut and the others bishengir 1.2.0 needs (an opaque step alone, a slice of a
matmul part's own result, independent computations of different sizes) are `PART_RULES`,
each with the error that proves it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from autofusion.codegen.hfusion_ir import STEP_KINDS, Step, Value

# bishengir's OpPattern of each step kind (FusibleHelper::getOpPattern); a reduction is
# "last_axis_reduce" or "other_reduce" by its dimensions (pattern())
STEP_PATTERNS: dict[str, str] = {
    "arith.constant": "auxiliary",
    "linalg.fill": "elementwise",
    "linalg.matmul": "matmul",
    "linalg.batch_matmul": "opaque",  # getOpPattern has no case for it
    "linalg.broadcast": "broadcast",
    "linalg.reduce": "reduce",
    "linalg.transpose": "transpose",
    "linalg.elemwise_unary": "elementwise",
    "hfusion.elemwise_unary": "elementwise",
    "linalg.elemwise_binary": "elementwise",
    "hfusion.elemwise_binary": "elementwise",
    "hfusion.compare": "elementwise",
    "hfusion.select": "elementwise",
    "hfusion.cast": "elementwise",
    "tensor.collapse_shape": "reshape",
    "tensor.expand_shape": "reshape",
    "tensor.extract_slice": "extract_slice",
    "tensor.concat": "concat",  # kMidFusionImportantAux
}
# the kind of a function whose only important op has this pattern
# (FusibleHelper::getSingleFusionKind); patterns not listed are not important
SINGLE_OP_KINDS: dict[str, str] = {
    "elementwise": "PURE_ELEMWISE",
    "transpose": "PURE_ELEMWISE",
    "concat": "PURE_ELEMWISE",
    "last_axis_reduce": "LAST_AXIS_PBR",
    "other_reduce": "ANY_PBR",
    "matmul": "SINGLE_CUBE",
    "extract_slice": "ANY_PB",
    "broadcast": "ANY_PB",
}
NO_IMPORTANT_OP_KIND = "ANY_PB"
# steps HFusion 1.2.0 cannot compile inside a device function, with why (measured): they
# become host calls, cut off from the vector work around them (cut_points)
OPAQUE_STEPS: dict[str, str] = {
    "linalg.batch_matmul": "HFusion 1.2.0 has no op pattern for linalg.batch_matmul (no cube "
    "kind is inferred: PURE_ELEMWISE with its fill, UNKNOWN with an epilogue) and "
    "hfusion-flatten-ops breaks it ('linalg.batch_matmul' op expected type of operand #2 "
    "... to match ... result)",
}
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
    opaque: bool


# (kind, admits) in hfusion::FusionKind enum order: the first kind admitting the traits wins
# (no kind admits an opaque op: FusibleHelper's is*Fusible rules list none)
KIND_RULES: tuple[tuple[str, Callable[[Traits], bool]], ...] = (
    ("UNKNOWN", lambda t: t.opaque),
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


def pattern(step: Step) -> str:
    """bishengir's OpPattern of `step`."""
    kind = STEP_PATTERNS[step.kind]
    if kind != "reduce":
        return kind
    last = list(step.attr("dims")) == [len(step.operands[0].shape or ()) - 1]
    return "last_axis_reduce" if last else "other_reduce"


def traits(steps: Sequence[Step]) -> Traits:
    cubes = [s for s in steps if pattern(s) == "matmul"]
    first_cube = steps.index(cubes[0]) if cubes else 0
    reduces = [pattern(s) for s in steps if pattern(s).endswith("_reduce")]
    return Traits(
        cubes=len(cubes),
        vector_before_cube=any(is_compute(s) for s in steps[:first_cube]),
        broadcasts=any(s.kind == "linalg.broadcast" for s in steps),
        reduces=bool(reduces),
        last_axis_reduces_only=all(r == "last_axis_reduce" for r in reduces),
        opaque=any(pattern(s) == "opaque" for s in steps),
    )


def fusion_kind(steps: Sequence[Step]) -> str:
    important = [p for p in map(pattern, steps) if p in SINGLE_OP_KINDS]
    if not important:
        return NO_IMPORTANT_OP_KIND
    if len(important) == 1:
        return SINGLE_OP_KINDS[important[0]]
    t = traits(steps)
    return next(kind for kind, admits in KIND_RULES if admits(t))


def schedulable(kind: str) -> bool:
    return kind in SCHEDULED_KINDS


def step_limit(steps: Sequence[Step]) -> str:
    """Why a part with these steps cannot be a device function ('' if it can)."""
    return next((OPAQUE_STEPS[s.kind] for s in steps if s.kind in OPAQUE_STEPS), "")


def _is_cube(step: Step) -> bool:
    return pattern(step) == "matmul" or step.kind in OPAQUE_STEPS


def _vector_before_cube(part: Sequence[Step], used: AbstractSet[str]) -> int | None:
    """The first matmul (or opaque step) with computed work before it in the part."""
    return next(
        (i for i, s in enumerate(part) if _is_cube(s) and any(map(is_compute, part[:i]))), None
    )


def _after_opaque(part: Sequence[Step], used: AbstractSet[str]) -> int | None:
    """The step after the first opaque step that has steps after it."""
    return next((i + 1 for i, s in enumerate(part[:-1]) if s.kind in OPAQUE_STEPS), None)


def _computed_roots(part: Sequence[Step]) -> dict[str, str]:
    """Each value the part defines -> the computed value it is (through views and setup
    steps: a value with no computed root maps to nothing)."""
    roots: dict[str, str] = {}
    for s in part:
        if is_compute(s):
            roots[s.result.name] = s.result.name
        elif s.operands and s.operands[0].name in roots:
            roots[s.result.name] = roots[s.operands[0].name]
    return roots


def _slice_after_cube(part: Sequence[Step], used: AbstractSet[str]) -> int | None:
    """The first step with a pattern in AFTER_CUBE_LIMITS that reads a value the part
    computes after a matmul, for computed work of the part (a step only returned is a
    view on the host: hfusion_export._trailing_views)."""
    roots = _computed_roots(part)
    cube = next((i for i, s in enumerate(part) if pattern(s) == "matmul"), None)
    if cube is None:
        return None
    for i, s in enumerate(part[cube + 1 :], cube + 1):
        if pattern(s) not in AFTER_CUBE_LIMITS or s.operands[0].name not in roots:
            continue
        view = {s.result.name}
        for t in part[i + 1 :]:
            if any(v.name in view for v in t.operands):
                if is_compute(t):
                    return i
                view.add(t.result.name)
    return None


def _other_shape(part: Sequence[Step], used: AbstractSet[str]) -> int | None:
    """Where the part passes to a computation independent of the one it starts with (no
    computed value in common; shared parameters do not count) and of another extent: after
    the last computed step before it. A step whose result nothing uses is no computation
    (bishengir drops it)."""
    roots = _computed_roots(part)
    component: dict[str, str] = {}  # computed value -> a value of its computation

    def find(name: str) -> str:
        while component[name] != name:
            name = component[name]
        return name

    compute = [(i, s) for i, s in enumerate(part) if is_compute(s) and s.result.name in used]
    for _, s in compute:
        component[s.result.name] = s.result.name
        for v in s.operands:
            if v.name in roots:
                component[find(roots[v.name])] = s.result.name
    extents: dict[str, int] = {}
    for _, s in compute:
        key = find(s.result.name)
        extents[key] = max(extents.get(key, 1), math.prod(s.result.shape or ()))
    previous = 0
    for i, s in compute:
        if extents[find(s.result.name)] != extents[find(compute[0][1].result.name)]:
            return previous
        previous = i + 1
    return None


@dataclass(frozen=True)
class PartRule:
    """A part bishengir-compile 1.2.0 fails on: `find` gives the index (in the part) to
    cut before, or None; `where` says where for the module's remark, `error` is the error
    that proves it."""

    find: Callable[[Sequence[Step], AbstractSet[str]], int | None]
    where: str
    error: str


# step patterns that may not read a value their part computes after a matmul, with the
# bishengir-compile 1.2.0 errors that show it. Conservative: a rope straight on an f32 matmul
# result (both halves sliced) compiles, but whether a slice fails depends on which columns
# are read and what else the part returns, so every such slice starts a part of its own,
# where it is a view of a parameter made on the host
AFTER_CUBE_LIMITS: dict[str, str] = {
    "extract_slice": "a slice of a value computed after a matmul in its device function: "
    "the llama example's q and k heads sliced from the QKV matmul's normed output for their "
    "ropes fail auto-schedule with 'operations cannot be fused'; a matmul whose result's "
    "first half alone is read fails HIVM with \"'memref.cast' op ... cast incompatible\"",
}

# the cuts, in order; each applies to the parts the ones before it left
PART_RULES: tuple[PartRule, ...] = (
    PartRule(
        _vector_before_cube,
        "before each matmul that reads vector results",
        "vector work before a matmul (MIX_CV) fails auto-schedule with 'could not find next "
        "producer to fuse into container' when it feeds the matmul, HIVM with "
        "\"'hivm.hir.store' op only support store ub to gm\" when it joins the epilogue; "
        "1.2.0 has no MIX_CV/MIX_C2 scheduler",
    ),
    PartRule(_after_opaque, "around each linalg.batch_matmul", OPAQUE_STEPS["linalg.batch_matmul"]),
    PartRule(
        _slice_after_cube,
        "before each slice of a matmul part's own result",
        AFTER_CUBE_LIMITS["extract_slice"],
    ),
    PartRule(
        _other_shape,
        "between independent computations of different shapes",
        "computations that share no computed value and differ in element count fail "
        "auto-schedule: exp of 16x64 and exp of 16x32 with 'could not find next producer to "
        "fuse into container', ropes of 16x64 and 16x32 with 'operations cannot be fused', the "
        "llama example's q and k ropes (4 and 2 heads) with 'target and source are not in the "
        "same block'; of one count they compile",
    ),
)


@dataclass(frozen=True)
class Cut:
    """Cut the step list before step `at`, by `rule`."""

    at: int
    rule: PartRule


def cuts(steps: Sequence[Step], live: AbstractSet[str] = frozenset()) -> list[Cut]:
    """Where to cut `steps` so that every part compiles: each PART_RULES rule applied to
    every part the ones before it made (MIX_CV and MIX_C2 become SHALLOW_CV parts, a matmul
    and its epilogue, and vector parts; every opaque step a part of its own; ...)."""
    used = set(live) | {v.name for s in steps for v in s.operands}
    found: list[Cut] = []
    for rule in PART_RULES:
        bounds = [0, *sorted(c.at for c in found), len(steps)]
        for first, end in itertools.pairwise(bounds):
            start = first
            while (at := rule.find(steps[start:end], used)) is not None:
                start += at
                found.append(Cut(start, rule))
    return sorted(found, key=lambda c: c.at)


def cut_points(steps: Sequence[Step], live: AbstractSet[str] = frozenset()) -> list[int]:
    """The indices `cuts` cuts before."""
    return [c.at for c in cuts(steps, live)]


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
