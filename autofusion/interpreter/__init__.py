"""Running graph-level and buffer-level IR with xDSL's interpreter on numpy.

Inputs and outputs are named: a function argument or result is named by its
`graph.name` attribute (the model's input/output names), else `arg<i>` / `out<i>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.dialects import shape_inference as si

NAME_ATTR = "graph.name"
# the arg attribute naming an input's symbolic dims (the frontends' `B`, `S`, ONNX's
# dim_params; "" for a static or unnamed dim): a name is one size wherever it appears
DIMS_ATTR = "graph.dims"
# random_inputs' integers: [low, high)
DEFAULT_INTEGER_RANGE = (0, 8)


def find_function(module: ModuleOp, entry: str | None = None) -> func.FuncOp:
    """The function to run: `entry`, else `main`, else the only public function with a body
    (private functions are helpers, such as the host tiling functions of kernels)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if entry is None:
        funcs = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data != "private"]
    if entry is not None:
        for f in funcs:
            if f.sym_name.data == entry:
                return f
        raise UserError(f"no function @{entry} in the module")
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    if not funcs:
        raise UserError("the module has no function to run")
    names = ", ".join("@" + f.sym_name.data for f in funcs)
    raise UserError(f"the module has several functions ({names}); choose one with --entry")


def _names(attrs: Attribute | None, count: int, prefix: str) -> list[str]:
    names = [f"{prefix}{i}" for i in range(count)]
    if attrs is not None:
        for i, d in enumerate(getattr(attrs, "data", ())):
            name = d.data.get(NAME_ATTR)
            if isinstance(name, StringAttr):
                names[i] = name.data
    return names


def argument_names(f: func.FuncOp) -> list[str]:
    return _names(f.arg_attrs, len(f.function_type.inputs), "arg")


def name_attr(name: str, dims: Sequence[str] = ()) -> DictionaryAttr:
    """An argument's or result's attributes: its name and, when it has named symbolic
    dims, their names (DIMS_ATTR)."""
    entries: dict[str, Attribute] = {NAME_ATTR: StringAttr(name)}
    if any(dims):
        entries[DIMS_ATTR] = ArrayAttr([StringAttr(d) for d in dims])
    return DictionaryAttr(entries)


def argument_dims(f: func.FuncOp) -> list[tuple[str, ...]]:
    """Each argument's dim names (DIMS_ATTR; "" for a dim without one)."""
    ranks = [len(cast(TensorType, t).get_shape()) for t in f.function_type.inputs.data]
    out = [("",) * r for r in ranks]
    for i, d in enumerate(getattr(f.arg_attrs, "data", ())):
        dims = d.data.get(DIMS_ATTR)
        # a malformed one (hand-written IR) names nothing: every dim takes the default
        if (
            isinstance(dims, ArrayAttr)
            and len(dims.data) == ranks[i]
            and all(isinstance(n, StringAttr) for n in dims.data)
        ):
            out[i] = tuple(cast(StringAttr, n).data for n in dims.data)
    return out


def symbol_sizes(f: func.FuncOp, first: int) -> dict[str, int]:
    """A distinct size for each named symbolic dim of `f`'s arguments, in order of first
    appearance from `first` up: a kernel that swaps two dynamic dims (batch for
    sequence) then computes other numbers than the graph."""
    names = dict.fromkeys(n for dims in argument_dims(f) for n in dims if n)
    return {n: first + i for i, n in enumerate(names)}


def result_names(f: func.FuncOp) -> list[str]:
    return _names(f.res_attrs, len(f.function_type.outputs), "out")


def coerce_input(name: str, value: np.ndarray, expected: Attribute) -> np.ndarray:
    """Check an input against its declared tensor type and convert it to storage form."""
    t = cast(TensorType, expected)
    arr = np.asarray(value)
    want = t.get_shape()
    if not si.shapes_compatible(arr.shape, want):
        raise UserError(f"input '{name}' has shape {si.fmt(arr.shape)}, expected {si.fmt(want)}")
    elt = t.element_type
    kind = arr.dtype.kind
    if dtypes.is_float(elt) or dtypes.is_narrow_float(elt):
        ok = kind in "fiu"
    elif dtypes.type_name(elt) == "i1":
        ok = kind == "b"
    else:
        ok = kind in "iub"
    if not ok:
        raise UserError(f"input '{name}' has dtype {arr.dtype}, but the function expects {elt}")
    return dtypes.to_storage(arr, elt)


def make_interpreter(
    module: ModuleOp, shape_only_fill: Callable[..., np.ndarray] | None = None
) -> Interpreter:
    from xdsl.interpreters.arith import ArithFunctions
    from xdsl.interpreters.scf import ScfFunctions

    from autofusion.interpreter.buffer import BufferFunctions
    from autofusion.interpreter.folding import op_family_functions
    from autofusion.interpreter.graph import GraphFunctions
    from autofusion.interpreter.index_arith import IndexArithFunctions

    interp = Interpreter(module)
    interp.register_implementations(FuncFunctions())
    interp.register_implementations(ArithFunctions())
    interp.register_implementations(IndexArithFunctions())
    interp.register_implementations(ScfFunctions())
    interp.register_implementations(BufferFunctions())
    graph_functions = GraphFunctions()
    graph_functions.shape_only_fill = shape_only_fill
    interp.register_implementations(graph_functions)
    for functions in op_family_functions():
        interp.register_implementations(functions)
    return interp


def bind_arguments(f: func.FuncOp, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """`f`'s arguments from named inputs, each checked against its type; a missing or
    unknown name is an error naming them."""
    names = argument_names(f)
    missing = [n for n in names if n not in inputs]
    if missing:
        raise UserError("missing input(s): " + ", ".join(missing))
    extra = sorted(set(inputs) - set(names))
    if extra:
        raise UserError(
            "unknown input(s): " + ", ".join(extra) + "; the function takes " + ", ".join(names)
        )
    return tuple(coerce_input(n, inputs[n], t) for n, t in zip(names, f.function_type.inputs.data))


def run_function(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    entry: str | None = None,
    shape_only_fill: Callable[..., np.ndarray] | None = None,
    overrides: Sequence[InterpreterFunctions] = (),
) -> dict[str, np.ndarray]:
    """Interpret a function on named inputs; return its named outputs. `overrides`
    replace the implementations of the ops they cover (the emulator's buffer.launch)."""
    f = find_function(module, entry)
    args = bind_arguments(f, inputs)
    interp = make_interpreter(module, shape_only_fill)
    for functions in overrides:
        interp.register_implementations(functions, override=True)
    results = interp.call_op(f, args)
    return dict(zip(result_names(f), (np.asarray(r) for r in results)))


def random_inputs(
    f: func.FuncOp,
    seed: int,
    dynamic_size: int = 4,
    integer_ranges: Mapping[str, tuple[int, int]] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Random inputs for `f` (a dynamic dim gets its symbol's size in `sizes`, else
    `dynamic_size`), deterministic per seed.

    Floats are standard normal; an integer input is in its [low, high) of
    `integer_ranges`, else in DEFAULT_INTEGER_RANGE so they are valid small indices.
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, t, dims in zip(argument_names(f), f.function_type.inputs.data, argument_dims(f)):
        tt = cast(TensorType, t)
        shape = tuple(
            (sizes or {}).get(n, dynamic_size) if d == si.DYN else d
            for d, n in zip(tt.get_shape(), dims)
        )
        elt = tt.element_type
        value: np.ndarray
        if dtypes.is_float(elt):
            value = rng.standard_normal(shape).astype(np.float32)
        elif dtypes.type_name(elt) == "i1":
            value = rng.random(shape) < 0.5
        else:
            low, high = (integer_ranges or {}).get(name, DEFAULT_INTEGER_RANGE)
            value = rng.integers(low, high, shape)
        out[name] = dtypes.to_storage(value, elt)
    return out
