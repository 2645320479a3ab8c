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
matmul.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def cut_points(steps: Sequence[Step]) -> list[int]:
    """Indices to cut before so that every part holds at most one matmul and nothing is
    computed before it in its part (MIX_CV and MIX_C2 become SHALLOW_CV parts, a matmul and
    its epilogue, and vector parts), and every opaque step is a part of its own."""
    cuts: list[int] = []
    start = 0
    for i, s in enumerate(steps):
        opaque = s.kind in OPAQUE_STEPS
        cube = pattern(s) == "matmul" or opaque
        if cube and any(is_compute(p) for p in steps[start:i]):
            cuts.append(i)
            start = i
        if opaque and i + 1 < len(steps):
            cuts.append(i + 1)
            start = i + 1
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
