"""Strided input views of a vector kernel: a slice or reshape of a contiguous input as
offsets and strides, and how the kernel streams its rows straight from the input's GM
buffer (row_plan.py docstring, "Input views").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN


def leading_dynamic(shape: Sequence[int]) -> int:
    """How many dims of `shape` are dynamic before its first static one."""
    n = 0
    while n < len(shape) and shape[n] == DYN:
        n += 1
    return n


@dataclass(frozen=True)
class Strided:
    """A strided view of a contiguous tensor: element (i_0, ..., i_n-1) is at
    offset + sum(i_d * strides[d]). Only leading dims may be dynamic (DYN), e.g. the
    batch and sequence dims of [B, S, C]: they keep the source's layout, one contiguous
    block, so each but the last has stride DYN (its runtime stride is the next dim's
    size times that dim's stride) and the last a static one (C for [B, S, C])."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @staticmethod
    def contiguous(shape: Sequence[int]) -> Strided | None:
        lead = leading_dynamic(shape)
        if DYN in shape[lead:]:
            return None
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = DYN if d < lead - 1 else strides[d + 1] * shape[d + 1]
        return Strided(tuple(shape), tuple(strides))

    def sliced(self, op: graph.SliceOp) -> Strided | None:
        """The view of a unit-step slice (on static axes), or None."""
        p = graph.Props(op.properties, op.name)
        shape, offset = list(self.shape), self.offset
        rank = len(shape)
        for start, end, axis, step in zip(
            p.integers("starts"), p.integers("ends"), p.integers("axes"), p.integers("steps")
        ):
            ax = si.normalize_axis(axis, rank)
            if step != 1 or shape[ax] == DYN:
                return None
            lo, hi, _ = slice(start, end).indices(shape[ax])
            offset += lo * self.strides[ax]
            shape[ax] = max(0, hi - lo)
        return Strided(tuple(shape), self.strides, offset)

    def reshaped(self, new: Sequence[int]) -> Strided | None:
        """The same elements as shape `new` without moving them (numpy's no-copy rule:
        merged dims must be contiguous among themselves), or None. The leading dynamic
        dims stay as they are: as many before as after, and the static dims hold as many
        elements, so each is its source's (a reshape copies a dim with 0 or infers one
        with -1, at most once), and a kernel reads their runtime sizes from the source."""
        old, strides = list(self.shape), list(self.strides)
        new = list(new)
        lead = leading_dynamic(old)
        if leading_dynamic(new) != lead or DYN in old[lead:] or DYN in new[lead:]:
            return None
        ob = [(d, st) for d, st in zip(old[lead:], strides[lead:]) if d != 1]
        nb = [d for d in new[lead:] if d != 1]
        if si.num_elements([d for d, _ in ob]) != si.num_elements(nb):
            return None
        out: list[int] = []
        oi = ni = 0
        while oi < len(ob) and ni < len(nb):
            np_, op_ = nb[ni], ob[oi][0]
            nj, oj = ni + 1, oi + 1
            while np_ != op_:
                if np_ < op_:
                    np_ *= nb[nj]
                    nj += 1
                else:
                    op_ *= ob[oj][0]
                    oj += 1
            for k in range(oi, oj - 1):
                if ob[k][1] != ob[k + 1][0] * ob[k + 1][1]:
                    return None  # merging dims that are not contiguous
            group = [ob[oj - 1][1]]
            for k in range(nj - 1, ni, -1):
                group.insert(0, group[0] * nb[k])
            out += group
            oi, ni = oj, nj
        it = iter(out)
        rest = [1 if d == 1 else next(it) for d in new[lead:]]
        return Strided(tuple(new), tuple(strides[:lead] + rest), self.offset)


@dataclass(frozen=True)
class InputView:
    """How a kernel streams a view value from the GM tensor `source`: row r of the
    view's rows x columns layout starts at element
    offset + (r // run) * run_stride + (r % run) * row_stride (run = 0: every row
    row_stride apart); its columns are contiguous."""

    source: SSAValue
    offset: int
    run: int
    row_stride: int
    run_stride: int


def input_view(
    source: SSAValue, view: Strided, anchor: Sequence[int], split: int
) -> InputView | None:
    """The rows x columns access of `view` in the view (anchor, split), or None when
    its inner block is not contiguous or its rows need more than two strides."""
    if tuple(view.shape) != tuple(anchor):
        return None
    expect = 1
    for d in range(len(anchor) - 1, split - 1, -1):
        if anchor[d] == DYN:
            return None
        if anchor[d] != 1 and view.strides[d] != expect:
            return None
        expect *= anchor[d]
    groups: list[list[int]] = []  # [size, stride] of merged outer dims
    for d in range(split):
        size, stride = anchor[d], view.strides[d]
        if size == 1:
            continue
        if groups and groups[-1][1] == DYN:
            groups[-1] = [DYN, stride]  # a dynamic dim contiguous over this one
            continue
        if groups and groups[-1][0] != DYN and size != DYN and groups[-1][1] == stride * size:
            groups[-1] = [groups[-1][0] * size, stride]
            continue
        groups.append([size, stride])
    if not groups:
        return InputView(source, view.offset, 0, expect, 0)
    if len(groups) == 1:
        return InputView(source, view.offset, 0, groups[0][1], 0)
    if len(groups) > 2 or groups[1][0] == DYN:
        return None
    return InputView(source, view.offset, groups[1][0], groups[1][1], groups[0][1])
