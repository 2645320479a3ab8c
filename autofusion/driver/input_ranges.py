"""The ranges of `afc compile --check`'s random integer inputs, from how each is used.

An integer input that indexes a value (the indices of graph.gather: an embedding's token,
token-type or position ids; of gather_elements, scatter_elements and scatter_nd; one_hot's
indices) gets values in [0, d), d the extent it indexes (the smallest over its uses). One
that is only read as a truth value (cast to i1: an attention mask) gets [0, 2), both of
its states equally often. The input is followed through the ops that copy its values
(reshape, transpose, slice, expand, split, concat, integer casts). `--input-range
NAME=LO,HI` gives a range by hand and wins. Any other integer input keeps random_inputs'
[0, 8): small enough to index any extent of 8 or more, and the range the checks have
always used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.graph_indexing import (
    GatherElementsOp,
    OneHotOp,
    ScatterElementsOp,
    ScatterNDOp,
)
from autofusion.interpreter import DEFAULT_INTEGER_RANGE, argument_names

Range = tuple[int, int]  # [low, high)

# ops whose results hold values of their operands (every operand of a concat)
VALUE_COPIES = (
    graph.ReshapeOp,
    graph.TransposeOp,
    graph.SliceOp,
    graph.ExpandOp,
    graph.SplitOp,
    graph.ConcatOp,
    graph.CastOp,
)


def _element(v: SSAValue) -> Attribute:
    assert isinstance(v.type, TensorType)
    return v.type.element_type


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return tuple(v.type.get_shape())


def _axis_extent(data: SSAValue, axis: int) -> int:
    shape = _shape(data)
    return shape[si.normalize_axis(axis, len(shape))]


def _gather_like(op: Operation) -> int:
    return _axis_extent(op.operands[0], graph.Props(op.properties, op.name).integer("axis"))


def _scatter_nd(op: Operation) -> int:
    k = _shape(op.operands[1])[-1]
    extents = _shape(op.operands[0])[:k]
    return si.DYN if si.DYN in extents or not extents else min(extents)


def _one_hot(op: Operation) -> int:
    return graph.Props(op.properties, op.name).integer("depth")


# op -> (the position of its indices operand, the extent those indices address)
INDEX_USES: dict[type[Operation], tuple[int, Callable[[Operation], int]]] = {
    graph.GatherOp: (1, _gather_like),
    GatherElementsOp: (1, _gather_like),
    ScatterElementsOp: (1, _gather_like),
    ScatterNDOp: (1, _scatter_nd),
    OneHotOp: (0, _one_hot),
}


def _is_integer(t: object) -> bool:
    if not isinstance(t, TensorType):
        return False
    name = dtypes.type_name(t.element_type)
    return not dtypes.is_float(t.element_type) and name != "i1"


# the range of an input only read as a truth value: zero and non-zero
TRUTH_RANGE = (0, 2)


def _is_truth_cast(op: Operation) -> bool:
    return isinstance(op, graph.CastOp) and dtypes.type_name(_element(op.results[0])) == "i1"


def _used_range(value: SSAValue) -> Range | None:
    """[0, the smallest static extent `value`'s values index), through value copies; else
    TRUTH_RANGE when every use reads it as a truth value; else None."""
    extents: list[int] = []
    truth, other = False, False
    seen: set[SSAValue] = set()
    work = [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            op = use.operation
            index_use = INDEX_USES.get(type(op))
            if index_use is not None and use.index == index_use[0]:
                extent = index_use[1](op)
                if extent != si.DYN and extent > 0:
                    extents.append(extent)
            elif _is_truth_cast(op):
                truth = True
            elif isinstance(op, VALUE_COPIES) and all(_is_integer(r.type) for r in op.results):
                work += list(op.results)
            else:
                other = True
    if extents:
        return 0, min(extents)
    return TRUTH_RANGE if truth and not other else None


def integer_input_ranges(f: func.FuncOp, given: Mapping[str, Range]) -> dict[str, Range]:
    """The range of every integer input of `f`: `given` (checked against the inputs),
    else the range its uses allow, else DEFAULT_INTEGER_RANGE."""
    names = argument_names(f)
    types = dict(zip(names, f.function_type.inputs.data))
    for name in given:
        if name not in types:
            raise UserError(f"--input-range names no input '{name}' (inputs: {', '.join(names)})")
        if not _is_integer(types[name]):
            raise UserError(
                f"--input-range {name}: the input is {types[name]}; ranges apply to integer inputs"
            )
    ranges: dict[str, Range] = {}
    for name, arg in zip(names, f.args):
        if not _is_integer(arg.type):
            continue
        ranges[name] = given.get(name) or _used_range(arg) or DEFAULT_INTEGER_RANGE
    return ranges


def parse_input_ranges(specs: list[str]) -> dict[str, Range]:
    """`NAME=LO,HI` options to {NAME: (LO, HI)}: integers in [LO, HI)."""
    ranges: dict[str, Range] = {}
    for spec in specs:
        name, sep, bounds = spec.rpartition("=")
        parts = bounds.split(",")
        if not sep or not name or len(parts) != 2:
            raise UserError(f"--input-range '{spec}' is not NAME=LO,HI")
        try:
            low, high = int(parts[0]), int(parts[1])
        except ValueError:
            raise UserError(f"--input-range '{spec}': LO and HI must be integers") from None
        if low >= high:
            raise UserError(f"--input-range '{spec}': the range [LO, HI) is empty")
        if name in ranges:
            raise UserError(f"--input-range gives '{name}' twice")
        ranges[name] = (low, high)
    return ranges
