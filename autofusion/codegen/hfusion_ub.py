"""The UB capacity rule bishengir 1.2.0's plan-memory enforces on a vector device function,
as data, and the row blocking that keeps afc's export within it.

HFusion picks its own tiles, but for a PURE_ELEMWISE function that reads or writes f16 and
computes a reciprocal in f32 (a sigmoid) it does not tile below the whole function:
plan-memory then needs 64 bits of UB per element and fails with "ub overflow, requires N bits
while 1572864 bits available" (Ascend910B1's 192 KiB UB) above 24576 elements. The other
shapes measured tile themselves (UB_LIMITS). Such a function is emitted once for a block of
rows and the host function calls it per block; one whose rows cannot be blocked is cut at step
boundaries into parts that fit (ub_cuts), and the exporter keeps a part that still does not on
the host (docs/hfusion.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from autofusion.codegen import hfusion_kinds as kinds
from autofusion.codegen.hfusion_ir import NEEDS_INIT, RowBlocking, Step, Value


@dataclass(frozen=True)
class UBLimit:
    """The most elements a device function's largest tensor may hold, and where measured."""

    pattern: str
    max_elements: int | None  # None: no limit found in the sizes `measured`
    measured: str


# (fusion kind, narrow element type at the boundary or '', element type computed in, the
# elementwise fun that must be present or '', the fun of a tensor-tensor step that must read
# that fun's result or '', the fewest tensor parameters) -> limit; the first matching entry
# applies. Measured with bishengir-compile 1.2.0 --target=Ascend910B1 on R x C f16 graphs
# exported by afc, whole (docs/hfusion.md, "UB"): every failing size below the cap asked for a
# fixed number of UB bits per element (64 with one f16 input, 96 with two), so each limit is
# 1572864 bits over that.
UB_LIMITS: dict[tuple[str, str, str, str, str, int], UBLimit] = {
    ("PURE_ELEMWISE", "f16", "f32", "rec", "", 2): UBLimit(
        "reads two f16 tensors, computes a reciprocal in f32",
        16384,
        "sigmoid+g, sigmoid*g and sigmoid(x*g) 128x128 and sigmoid+g 4x4096 compile; sigmoid+g "
        "136x128 'requires 1671168 bits while 1572864 bits available', 144x128, 160x128, "
        "192x128, 272x64, 5x4096, sigmoid(x*g) 136x128 fail; conservative for swiglu "
        "x*sigmoid(x)*g (1024x4096 compiles whole)",
    ),
    ("PURE_ELEMWISE", "f16", "f32", "rec", "mul", 1): UBLimit(
        "reads one f16 tensor, multiplies the f32 reciprocal by a tensor (silu)",
        None,
        "silu x*sigmoid(x) 1024x4096, 16384x4096, 65536x4096, 2x32768 and 1x1048576 compile, "
        "sigmoid*sigmoid 1024x4096 compiles",
    ),
    ("PURE_ELEMWISE", "f16", "f32", "rec", "", 0): UBLimit(
        "reads/writes f16, computes a reciprocal in f32",
        24576,
        "sigmoid 192x128, 384x64, 6x4096, reciprocal 192x128 and sigmoid(x*x) 192x128 compile; "
        "sigmoid 200x128 'requires 1638400 bits while 1572864 bits available', 256x128, 512x64, "
        "8x4096, reciprocal 200x128, exp+reciprocal 256x128, sigmoid(x*x) 200x128 fail",
    ),
    ("PURE_ELEMWISE", "f16", "f32", "", "", 0): UBLimit(
        "reads/writes f16, computes in f32",
        None,
        "exp, tanh 256x128 and 1024x128 compile",
    ),
    ("PURE_ELEMWISE", "", "f32", "", "", 0): UBLimit(
        "f32 throughout", None, "sigmoid 256..16384 x128, reciprocal 4096x128 compile"
    ),
    ("ANY_PB", "f16", "f32", "", "", 0): UBLimit(
        "reads/writes f16, computes in f32", None, "bias add + sigmoid 1024x4096 compiles"
    ),
    ("LAST_AXIS_PBR", "f16", "f32", "", "", 0): UBLimit(
        "reads/writes f16, computes in f32", None, "softmax, rms_norm 1024x4096 compile"
    ),
    ("ANY_PBR", "f16", "f32", "", "", 0): UBLimit(
        "reads/writes f16, computes in f32", None, "exp + sum over rows 256x256 compiles"
    ),
}

# steps a row block leaves as they are: elementwise work, casts, fills and scalar constants
# (the init-taking kinds but the two that move axes)
ROWWISE_STEPS = (NEEDS_INIT - {"linalg.broadcast", "linalg.transpose"}) | {"arith.constant"}


def ub_limit(kind: str, params: Sequence[Value], steps: Sequence[Step]) -> UBLimit | None:
    """The UB_LIMITS entry of a device function of fusion kind `kind` (None: not measured)."""
    boundary = {v.dtype for v in params if not v.is_scalar}
    boundary |= {s.result.dtype for s in steps if s.kind == "hfusion.cast"}
    narrow = "f16" if "f16" in boundary else ""
    computed = "f32" if any(s.result.dtype == "f32" for s in steps) else ""
    funs = {""} | {s.attr_or("fun", "") for s in steps}
    fun_of = {s.result.name: s.attr_or("fun", "") for s in steps}
    follows = {("", "")} | {
        (fun_of.get(v.name, ""), s.attr_or("fun", ""))
        for s in steps
        if sum(1 for v in s.operands if not v.is_scalar) > 1
        for v in s.operands
    }
    inputs = sum(1 for v in params if not v.is_scalar)
    return next(
        (
            limit
            for (k, n, c, fun, after, least), limit in UB_LIMITS.items()
            if (k, n, c) == (kind, narrow, computed)
            and fun in funs
            and (fun if after else "", after) in follows
            and inputs >= least
        ),
        None,
    )


def _elements(v: Value) -> int:
    n = 1
    for d in v.shape or ():
        n *= d
    return n


def _axes(params: Sequence[Value], steps: Sequence[Step], axis: int, rows: int) -> dict[str, int]:
    """Per tensor value, the axis that holds the rows, following them through the steps;
    raises ValueError naming a step that mixes rows (a reduction or transpose over them)."""
    axes: dict[str, int] = {}
    for p in params:
        if not p.is_scalar and len(p.shape or ()) > axis and (p.shape or ())[axis] == rows:
            axes[p.name] = axis
    for s in steps:
        r = s.result
        if r.is_scalar:
            continue
        ins = [axes.get(v.name) for v in s.operands if not v.is_scalar]
        if s.kind == "linalg.reduce":
            k = ins[0]
            if k is None or k in s.attr("dims"):
                raise ValueError(f"{s.kind} over the rows")
            axes[r.name] = k - sum(1 for d in s.attr("dims") if d < k)
        elif s.kind == "linalg.broadcast":
            added = list(s.attr("dims"))
            kept = [d for d in range(len(r.shape or ())) if d not in added]
            if ins[0] is not None:
                axes[r.name] = kept[ins[0]]
            elif axis in added and (r.shape or ())[axis] == rows:
                axes[r.name] = axis
            else:
                raise ValueError(f"{s.kind} of a value without the rows")
        elif s.kind in ("tensor.extract_slice", "tensor.concat"):
            # a slice or concat across the columns keeps each row's block whole
            k = ins[0]
            across = s.attr("dim") if s.kind == "tensor.concat" else None
            if (
                k is None
                or len(set(ins)) > 1
                or (r.shape or ())[k] != rows
                or across == k
                or (across is None and s.attr("offsets")[k] != 0)
            ):
                raise ValueError(f"{s.kind} across the rows")
            axes[r.name] = k
        elif s.kind in ("tensor.collapse_shape", "tensor.expand_shape"):
            axes[r.name] = _reshaped_axis(s, ins[0], rows)
        elif s.kind in ROWWISE_STEPS:
            known = {k for k in ins if k is not None}
            if len(known) > 1 or (known and None in ins):
                raise ValueError(f"{s.kind} mixing row-blocked and whole operands")
            if known:
                axes[r.name] = known.pop()
            elif len(r.shape or ()) > axis and (r.shape or ())[axis] == rows:
                axes[r.name] = axis  # a fill of a row tensor (a reduction's init)
        else:
            raise ValueError(f"{s.kind} has no row-blocked form")
    return axes


def _reshaped_axis(s: Step, k: int | None, rows: int) -> int:
    """The rows' axis after a reshape: their dimension may only gain or lose unit dims."""
    groups = [list(g) for g in s.attr("groups")]
    if k is not None and s.kind == "tensor.collapse_shape":
        g = next(i for i, grp in enumerate(groups) if k in grp)
        if all((s.operands[0].shape or ())[d] == 1 for d in groups[g] if d != k):
            return g
    elif k is not None:
        dims = [d for d in groups[k] if (s.result.shape or ())[d] != 1]
        if len(dims) == 1 and (s.result.shape or ())[dims[0]] == rows:
            return dims[0]
    raise ValueError(f"{s.kind} across the rows")


def _with_rows(v: Value, axes: dict[str, int], block: int) -> Value:
    k = axes.get(v.name)
    if k is None:
        return v
    shape = list(v.shape or ())
    shape[k] = block
    return replace(v, shape=tuple(shape))


@dataclass(frozen=True)
class Blocked:
    """A device function's params, steps and results for one row block, and the blocking."""

    params: list[Value]
    steps: list[Step]
    results: list[Value]
    blocking: RowBlocking
    remark: str


def row_blocks(
    kind: str, params: list[Value], steps: list[Step], results: list[Value]
) -> Blocked | str:
    """The function (of fusion kind `kind`) rewritten for a block of rows that fits
    UB_LIMITS, or why it stays whole ('' when it fits as it is)."""
    limit = ub_limit(kind, params, steps)
    values = [*params, *(s.result for s in steps)]
    largest = max((_elements(v) for v in values if not v.is_scalar), default=0)
    if limit is None or limit.max_elements is None or largest <= limit.max_elements:
        return ""
    shape = results[0].shape or ()
    axis = next((i for i, d in enumerate(shape) if d > 1), 0)
    rows = shape[axis] if shape else 1
    why = (
        f"{largest} elements exceed bishengir's UB limit of {limit.max_elements} ({limit.pattern})"
    )
    try:
        axes = _axes(params, steps, axis, rows)
    except ValueError as e:
        return f"{why}; not row-blocked: {e}"
    if any(r.name not in axes for r in results):
        return f"{why}; not row-blocked: a result without the rows"
    per_row = largest // rows
    block = max(
        (b for b in range(1, rows + 1) if rows % b == 0 and b * per_row <= limit.max_elements),
        default=0,
    )
    if block == 0:
        return f"{why}; not row-blocked: one row of {per_row} elements is already too large"
    new_steps = [
        replace(
            s,
            operands=tuple(_with_rows(v, axes, block) for v in s.operands),
            result=_with_rows(s.result, axes, block),
        )
        for s in steps
    ]
    blocking = RowBlocking(
        rows,
        block,
        tuple(axes.get(p.name, -1) for p in params),
        tuple(axes[r.name] for r in results),
    )
    remark = (
        f"{why}: called on {rows // block} blocks of {block} rows "
        f"({block * per_row} elements; measured: {limit.measured})"
    )
    return Blocked(
        [_with_rows(p, axes, block) for p in params],
        new_steps,
        [_with_rows(r, axes, block) for r in results],
        blocking,
        remark,
    )


def over_limit(kind: str, params: list[Value], steps: list[Step], results: list[Value]) -> str:
    """Why a device function cannot be exported within UB_LIMITS, even row-blocked ('' when
    it fits whole or per row block)."""
    verdict = row_blocks(kind, params, steps, results)
    return verdict if isinstance(verdict, str) else ""


def _candidate(
    steps: Sequence[Step], start: int, end: int, used_after: set[str]
) -> tuple[list[Value], list[Step], list[Value]]:
    """The params, body and results a part `steps[start:end]` would have: the setup (constants,
    fills, views) it reads from before `start` re-created in it, as the exporter does."""
    earlier = {s.result.name: s for s in steps[:start]}
    body = list(steps[start:end])
    own = {s.result.name for s in body}
    pending = [v for s in body for v in s.operands]
    while pending:
        v = pending.pop()
        origin = earlier.get(v.name)
        if origin is not None and v.name not in own and not kinds.is_compute(origin):
            own.add(v.name)
            body.append(origin)
            pending.extend(origin.operands)
    position = {s.result.name: i for i, s in enumerate(steps)}
    body.sort(key=lambda s: position[s.result.name])
    params: list[Value] = []
    for s in body:
        params += [v for v in s.operands if v.name not in own and v not in params]
    later = used_after | {v.name for s in steps[end:] for v in s.operands}
    results = [s.result for s in steps[start:end] if s.result.name in later]
    return params, body, results or [steps[end - 1].result]


def ub_cuts(steps: Sequence[Step], bounds: Sequence[int], live: set[str]) -> dict[int, str]:
    """Cut points (index into `steps` -> why) that split each part `steps[a:b]` between
    consecutive `bounds` over UB_LIMITS, which row blocks cannot bring under it, into parts
    that fit: each part grows step by step while it fits whole or row-blocked, and is cut
    before the compute step that would break that. A single step that cannot fit stays a
    part of its own (the exporter keeps it on the host)."""
    cuts: dict[int, str] = {}
    for a, b in itertools.pairwise(bounds):
        if not _part_over_limit(steps, (a, b), live):
            continue
        start = a
        for i in range(a, b):
            if not kinds.is_compute(steps[i]):
                continue
            computed = [j for j in range(start, i) if kinds.is_compute(steps[j])]
            reason = _part_over_limit(steps, (start, i + 1), live)
            if reason and computed:
                start = computed[-1] + 1  # the setup between belongs to step i
                cuts[start] = reason
    return cuts


def _part_over_limit(steps: Sequence[Step], span: tuple[int, int], live: set[str]) -> str:
    params, body, results = _candidate(steps, span[0], span[1], live)
    return over_limit(kinds.fusion_kind(body), params, body, results)
