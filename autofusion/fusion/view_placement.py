"""View placement: after the greedy merges, a chain of view ops (slices, splits,
reshapes: each reads its input in place) at the head of a kernel, reading another
kernel's output, moves into that producer when the two kernels' estimated time drops.

The greedy grouping places a view with whichever merge comes first. The v slice of a
merged QKV projection joins the attention, which reads it in place, before the
projection has taken the q and k ropes as its epilogue; once it has, the projection's
whole product is written only for that slice. Moved into the projection, the slice is
one of its outputs (its columns of the product: rope_epilogue.py) and the product is
not written at all. A move that does not pay (the producer's output still read
elsewhere, say) is not made: both kernels are planned and costed again as any merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from xdsl.ir import Operation

from autofusion.dialects.op_facts import reads_through

if TYPE_CHECKING:
    from autofusion.fusion.cost import Refusal
    from autofusion.lowering.template import KernelTemplate, Plan


class Group(Protocol):
    """What view placement uses of partition.py's Group (protocols: partition.py calls
    place_views, so this module does not import it)."""

    ops: list[Operation]
    plan: Plan | None
    template: KernelTemplate | None
    time_us: float
    version: int
    alive: bool
    benefit_us: float


G = TypeVar("G", bound=Group)


class Partitioner(Protocol[G]):
    """What view placement uses of partition.py's Partitioner, whose groups are `G`
    (generic, so a group view placement hands back is the partitioner's own type)."""

    @property
    def group_of(self) -> dict[Operation, G]: ...
    @property
    def index(self) -> Mapping[Operation, int]: ...
    def kernels(self) -> list[G]: ...
    def plan(self, ops: list[Operation]) -> tuple[KernelTemplate, Plan] | Refusal: ...
    def time(self, template: KernelTemplate, plan: Plan) -> float: ...


def _head_chains(part: Partitioner[G], c: G) -> list[tuple[G, list[Operation]]]:
    """(producer, views) for each chain of view ops of `c` that starts at another
    kernel's output, each view the only reader of the one before it."""
    inside = set(c.ops)
    found: list[tuple[G, list[Operation]]] = []
    for op in c.ops:
        owner = op.operands[0].owner if op.operands else None
        p = part.group_of.get(owner) if isinstance(owner, Operation) else None
        if not reads_through(op) or p is None or p is c or not p.alive:
            continue
        chain = [op]
        while len(chain[-1].results) == 1 and chain[-1].results[0].has_one_use():
            user = next(iter(chain[-1].results[0].uses)).operation
            if user not in inside or not reads_through(user):
                break
            chain.append(user)
        found.append((p, chain))
    return found


def _try_move(part: Partitioner[G], p: G, c: G, chain: list[Operation]) -> bool:
    """Move `chain` from `c` into `p` if both still plan and their time drops."""
    rest = [op for op in c.ops if op not in chain]
    if not rest:
        return False
    grown = sorted({*p.ops, *chain}, key=part.index.__getitem__)
    new_p, new_c = part.plan(grown), part.plan(rest)
    if isinstance(new_p, tuple) and isinstance(new_c, tuple):
        t_p, t_c = part.time(*new_p), part.time(*new_c)
        saved = p.time_us + c.time_us - (t_p + t_c)
        if saved > 0:
            for g, ops, (template, plan), t in ((p, grown, new_p, t_p), (c, rest, new_c, t_c)):
                g.ops, g.template, g.plan, g.time_us = ops, template, plan, t
                g.version += 1
            p.benefit_us += saved
            for op in chain:
                part.group_of[op] = p
            return True
    return False


def place_views(part: Partitioner[G]) -> list[G]:
    """Move every head chain of views whose move pays, kernel by kernel in seed order;
    the kernels that changed, each once."""
    moved: dict[int, G] = {}
    for c in part.kernels():
        for p, chain in _head_chains(part, c):
            if _try_move(part, p, c, chain):
                moved |= {id(p): p, id(c): c}
    return list(moved.values())
