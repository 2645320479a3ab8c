"""The tiling at which a group's kernel fits UB once built, remembered per group shape.

A template sizes its vector buffers from a per-value budget, so planning builds the
kernel to learn what it really needs and shrinks the tile until it fits (the rows
template while it plans a group of whole rows, `settle` for every chosen kernel). That
build is most of ub-fusion's and split-fusion's time, and a model repeats the same
groups: one per layer, and split-fusion's cost gate plans each neighbourhood again.
Within `fits_remembered()` (one pass run), a group of the same shape (ops, types,
wiring, what its inputs are views and splats of), template, chip and tiling as one
built before takes the tiling that build fitted, without a build: the build is a
function of exactly these, so the answer is the one a build gives.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.ir import Operation, OpResult, SSAValue

from autofusion.dialects import graph
from autofusion.dialects.group_plan import TilingValue
from autofusion.dialects.op_facts import reads_through
from autofusion.hardware import ChipSpec
from autofusion.lowering.template import GroupParts
from autofusion.passes.matching import splat_value

Tiling = Mapping[str, TilingValue]

_FITS: ContextVar[dict[Hashable, Tiling] | None] = ContextVar("fits", default=None)


@contextmanager
def fits_remembered() -> Iterator[None]:
    """Remember fitted tilings until the block ends (nested blocks share the outer one's):
    a pass run, so nothing outlives the module it planned."""
    if _FITS.get() is not None:
        yield
        return
    token = _FITS.set({})
    try:
        yield
    finally:
        _FITS.reset(token)


def fitted_tiling(
    template: str,
    parts: GroupParts,
    chip: ChipSpec,
    tiling: Tiling,
    fit: Callable[[], Tiling | None],
) -> Tiling | None:
    """The tiling at which the kernel of `template` for `parts` planned at `tiling` fits
    UB: `fit()` builds it and says (None: no tile fits), unless a group of the same shape
    was built at this tiling, or fitted at it, within `fits_remembered()`. A kernel that
    fits no tile is not remembered: its plan keeps what the failed build left."""
    fits = _FITS.get()
    shape = group_shape(parts) if fits is not None else None
    if fits is None or shape is None:
        return fit()
    key = (template, chip, shape, _tiling_key(tiling))
    if key in fits:
        return fits[key]
    fitted = fit()
    if fitted is not None:
        fits[key] = fitted
        # built at the fitted tiling, the kernel fits as is: the same answer
        fits[(template, chip, shape, _tiling_key(fitted))] = fitted
    return fitted


def _tiling_key(tiling: Tiling) -> tuple[tuple[str, str, TilingValue], ...]:
    # the type too: a flag True and a count 1 are equal in Python
    return tuple(sorted((k, type(v).__name__, v) for k, v in tiling.items()))


def group_shape(parts: GroupParts) -> Hashable | None:
    """The group up to renaming: its ops (names, properties, result types), how they are
    wired to each other, to the inputs and to the outputs, and what each input is: its
    type, a splat constant's value, the views it reads through and the value they start
    from (two inputs that are views of one tensor say so). What no template reads is
    left out, so that a model's repeated groups are one shape: discardable attributes
    (provenance: onnx.origin), the op that made an input in GM, who reads an output. None
    when a part has no hashable form (then nothing is remembered)."""
    shape = _Shape()
    for j, op in enumerate(parts.ops):  # first: a view outside may read one of them
        for r, result in enumerate(op.results):
            shape.numbers[result] = len(shape.numbers)
            shape.items.append(("result", j, r, result.type))
    for v in parts.inputs:
        shape.number(v)
    for op in parts.ops:
        if op.regions:
            return None
        shape.items.append(
            (
                op.name,
                tuple(sorted(op.properties.items())),
                tuple(shape.number(v) for v in op.operands),
            )
        )
    for v in parts.outputs:  # read outside: how often, or by what, no template asks
        shape.items.append(("output", shape.number(v)))
    key = tuple(shape.items)
    try:
        hash(key)
    except TypeError:
        return None
    return key


class _Shape:
    """Values numbered in the order first seen, each described once."""

    def __init__(self) -> None:
        self.numbers: dict[SSAValue, int] = {}
        self.items: list[Hashable] = []

    def number(self, v: SSAValue) -> int:
        n = self.numbers.get(v)
        if n is None:
            n = self.numbers[v] = len(self.numbers)
            self.items.append(("value", n, v.type, self._origin(v)))
        return n

    def _origin(self, v: SSAValue) -> Hashable:
        """What a value from outside the group is to its kernel: a splat constant (a
        scalar in its code), a view or subview (read through: where its rows are, from
        the value it views, described in turn), or else a tensor in GM, whatever made
        it (an argument, another kernel's result)."""
        owner = v.owner
        if isinstance(owner, graph.ConstantOp):
            return ("constant", splat_value(v))
        if isinstance(owner, Operation) and reads_through(owner):
            assert isinstance(v, OpResult)
            operands = tuple(self.number(o) for o in owner.operands)
            props = tuple(sorted(owner.properties.items()))
            return ("view", owner.name, props, operands, v.index)
        return ("tensor",)
