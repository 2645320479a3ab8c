"""The linalg-on-tensors program afc hands to bishengir (AscendNPU IR): values, steps,
device functions and the host function, with their MLIR text and their numpy semantics.

One `Step` is one named op HFusion accepts (linalg.matmul/batch_matmul/fill/broadcast/
reduce/transpose/elemwise_unary/elemwise_binary, hfusion.cast/compare/select/
elemwise_unary, tensor reshapes/slices/concat, arith.constant). xDSL 0.74 has no
elemwise_unary/elemwise_binary/batch_matmul and no hacc/hfusion dialects, and its
linalg interpreter loops in Python, so the program is plain data here: `print_module`
writes the text bishengir parses, and `run_program` gives the numbers the differential
tests compare with afc's graph interpreter. Both read the same `STEP_KINDS` table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# element type name -> numpy storage (bf16 is not exported: hfusion-legalize-bf16 widens it)
NUMPY_TYPES: dict[str, Any] = {
    "f32": np.float32,
    "f16": np.float16,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}


@dataclass(frozen=True)
class Value:
    """An SSA value: a ranked static tensor, or a scalar when `shape` is None."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None = ()

    @property
    def is_scalar(self) -> bool:
        return self.shape is None

    @property
    def type_text(self) -> str:
        if self.shape is None:
            return self.dtype
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"


@dataclass(frozen=True)
class Step:
    """One op: `kind` names its entry in STEP_KINDS; `attrs` are its static parameters."""

    kind: str
    operands: tuple[Value, ...]
    result: Value
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, name: str) -> Any:
        return dict(self.attrs)[name]

    def attr_or(self, name: str, default: Any = None) -> Any:
        return dict(self.attrs).get(name, default)


@dataclass
class DeviceFunction:
    """One fusion group (or a part of one) as a `hacc.entry` DEVICE function."""

    name: str
    params: list[Value]
    steps: list[Step]
    results: list[Value]
    fusion_kind: str
    source: str  # the afc group it comes from, for the comment above it


@dataclass(frozen=True)
class RowBlocking:
    """A device function defined for `block` of `rows` rows, called per block: each
    argument and result holds the rows on its axis (-1: an argument passed whole)."""

    rows: int
    block: int
    arg_axes: tuple[int, ...]
    result_axes: tuple[int, ...]

    def window(self, axis: int, start: int, rank: int) -> tuple[slice, ...]:
        return tuple(
            slice(start, start + self.block) if d == axis else slice(None) for d in range(rank)
        )


@dataclass
class HostCall:
    """A call in the host function: a device function or a library op (a CANN operator)."""

    callee: str
    args: list[Value]
    results: list[Value]
    library_op: Any = None  # the graph op a library call runs
    reason: str = ""
    steps: list[Step] = field(default_factory=list)  # a host-side part: what it computes
    blocking: RowBlocking | None = None  # called once per row block (hfusion_ub.py)


@dataclass
class Program:
    """The exported module: device functions, the host function and the library calls."""

    host_params: list[Value]
    host_body: list[Step | HostCall]
    host_results: list[Value]
    devices: list[DeviceFunction] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)

    def device(self, name: str) -> DeviceFunction:
        return next(d for d in self.devices if d.name == name)


# ---- numpy semantics -------------------------------------------------------------------


def _f32(x: Any) -> Any:
    a = np.asarray(x)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)), dtype=np.float64)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
    "negf": np.negative,
    "ceil": np.ceil,
    "floor": np.floor,
    "relu": lambda x: np.maximum(x, 0),
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "rec": lambda x: 1 / x,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "erf": _erf,
    "vnot": np.logical_not,
}
BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max_signed": np.maximum,
    "min_signed": np.minimum,
    "vand": np.logical_and,
    "vor": np.logical_or,
    "powf": np.power,
}
COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "veq": np.equal,
    "vne": np.not_equal,
    "vlt": np.less,
    "vgt": np.greater,
    "vle": np.less_equal,
    "vge": np.greater_equal,
}
COMBINERS: dict[str, Callable[..., np.ndarray]] = {
    "arith.addf": np.sum,
    "arith.maximumf": np.max,
    "arith.minimumf": np.min,
}


def _reduce(s: Step, x: np.ndarray, init: np.ndarray) -> np.ndarray:
    combine = COMBINERS[s.attr("combiner")]
    folded = combine(_f32(x), axis=tuple(s.attr("dims")))
    start = _f32(init)
    return folded + start if s.attr("combiner") == "arith.addf" else combine([folded, start], 0)


def _slice(s: Step, x: np.ndarray) -> np.ndarray:
    index = tuple(slice(o, o + n) for o, n in zip(s.attr("offsets"), s.result.shape or ()))
    return x[index]


@dataclass(frozen=True)
class StepKind:
    """How a step kind prints (`text`) and runs (`run`); `compute` marks the ops that
    HFusion schedules (a tensor.empty/fill/reshape is not work of its own)."""

    text: Callable[[Step, Callable[[Value], str]], str]
    run: Callable[..., Any]
    compute: bool = True


def _ins(s: Step, n: Callable[[Value], str], count: int | None = None) -> str:
    ops = s.operands if count is None else s.operands[:count]
    return f"ins({', '.join(n(v) for v in ops)} : {', '.join(v.type_text for v in ops)})"


def _outs(s: Step, n: Callable[[Value], str], init: Value | None = None) -> str:
    return f"outs({n(init) if init is not None else '%' + s.result.name + '_init'} : {s.result.type_text})"


def _ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _reassociation(groups: Sequence[Sequence[int]]) -> str:
    return "[" + ", ".join(_ints(g) for g in groups) + "]"


def _float_text(value: float, dtype: str) -> str:
    if dtype.startswith("f"):
        if math.isinf(value):
            return (
                {"f32": "0xFF800000", "f16": "0xFC00"}[dtype]
                if value < 0
                else {
                    "f32": "0x7F800000",
                    "f16": "0x7C00",
                }[dtype]
            )
        return f"{float(value):.9e}"
    return str(int(value))  # i1 too: `arith.constant 0 : i1`


STEP_KINDS: dict[str, StepKind] = {
    "arith.constant": StepKind(
        lambda s, n: (
            f"arith.constant {_float_text(s.attr('value'), s.result.dtype)} : {s.result.dtype}"
        ),
        lambda s: np.asarray(s.attr("value"), NUMPY_TYPES[s.result.dtype]),
        compute=False,
    ),
    "linalg.fill": StepKind(
        lambda s, n: f"linalg.fill {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}",
        lambda s, c: np.full(s.result.shape, c, NUMPY_TYPES[s.result.dtype]),
        compute=False,
    ),
    "linalg.matmul": StepKind(
        lambda s, n: (
            f"linalg.matmul {_ins(s, n, 2)} {_outs(s, n, s.operands[2])} -> {s.result.type_text}"
        ),
        lambda s, a, b, acc: np.matmul(_f32(a), _f32(b)) + _f32(acc),
    ),
    "linalg.batch_matmul": StepKind(
        lambda s, n: (
            f"linalg.batch_matmul {_ins(s, n, 2)} {_outs(s, n, s.operands[2])} -> {s.result.type_text}"
        ),
        lambda s, a, b, acc: np.matmul(_f32(a), _f32(b)) + _f32(acc),
    ),
    "linalg.broadcast": StepKind(
        lambda s, n: (
            f"linalg.broadcast {_ins(s, n)} {_outs(s, n)} dimensions = {_ints(s.attr('dims'))}"
        ),
        lambda s, x: np.broadcast_to(
            np.expand_dims(x, tuple(s.attr("dims"))), s.result.shape or ()
        ).copy(),
    ),
    "linalg.reduce": StepKind(
        lambda s, n: (
            f"linalg.reduce {{{s.attr('combiner')}}} {_ins(s, n, 1)} {_outs(s, n, s.operands[1])} dimensions = {_ints(s.attr('dims'))}"
        ),
        _reduce,
    ),
    "linalg.transpose": StepKind(
        lambda s, n: (
            f"linalg.transpose {_ins(s, n)} {_outs(s, n)} permutation = {_ints(s.attr('perm'))}"
        ),
        lambda s, x: np.transpose(x, s.attr("perm")).copy(),
    ),
    "linalg.elemwise_unary": StepKind(
        lambda s, n: (
            f"linalg.elemwise_unary {{fun = #linalg.unary_fn<{s.attr('fun')}>}} {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}"
        ),
        lambda s, x: UNARY[s.attr("fun")](_f32(x)),
    ),
    "hfusion.elemwise_unary": StepKind(
        lambda s, n: (
            f"hfusion.elemwise_unary {{fun = #hfusion.unary_fn<{s.attr('fun')}>}} {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}"
        ),
        lambda s, x: UNARY[s.attr("fun")](_f32(x)),
    ),
    "linalg.elemwise_binary": StepKind(
        lambda s, n: (
            f"linalg.elemwise_binary {{fun = #linalg.binary_fn<{s.attr('fun')}>}} {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}"
        ),
        lambda s, a, b: BINARY[s.attr("fun")](_f32(a), _f32(b)),
    ),
    "hfusion.elemwise_binary": StepKind(
        lambda s, n: (
            f"hfusion.elemwise_binary {{fun = #hfusion.binary_fn<{s.attr('fun')}>}} {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}"
        ),
        lambda s, a, b: BINARY[s.attr("fun")](_f32(a), _f32(b)),
    ),
    "hfusion.compare": StepKind(
        lambda s, n: (
            f"hfusion.compare {{compare_fn = #hfusion.compare_fn<{s.attr('fun')}>}} {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}"
        ),
        lambda s, a, b: COMPARE[s.attr("fun")](_f32(a), _f32(b)),
    ),
    "hfusion.select": StepKind(
        lambda s, n: f"hfusion.select {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}",
        lambda s, c, a, b: np.where(c, a, b),
    ),
    "hfusion.cast": StepKind(
        lambda s, n: (
            f"hfusion.cast {{round_mode = #hfusion.round_mode<rint>}} {_ins(s, n)} {_outs(s, n)} -> {s.result.type_text}"
        ),
        lambda s, x: np.rint(x) if not s.result.dtype.startswith("f") else x,
    ),
    "tensor.collapse_shape": StepKind(
        lambda s, n: (
            f"tensor.collapse_shape {n(s.operands[0])} {_reassociation(s.attr('groups'))} : {s.operands[0].type_text} into {s.result.type_text}"
        ),
        lambda s, x: x.reshape(s.result.shape),
        compute=False,
    ),
    "tensor.expand_shape": StepKind(
        lambda s, n: (
            f"tensor.expand_shape {n(s.operands[0])} {_reassociation(s.attr('groups'))} output_shape {_ints(s.result.shape or ())} : {s.operands[0].type_text} into {s.result.type_text}"
        ),
        lambda s, x: x.reshape(s.result.shape),
        compute=False,
    ),
    "tensor.extract_slice": StepKind(
        lambda s, n: (
            f"tensor.extract_slice {n(s.operands[0])}{_ints(s.attr('offsets'))} {_ints(s.result.shape or ())} {_ints([1] * len(s.result.shape or ()))} : {s.operands[0].type_text} to {s.result.type_text}"
        ),
        _slice,
        compute=False,
    ),
    "tensor.concat": StepKind(
        lambda s, n: (
            f"tensor.concat dim({s.attr('dim')}) {', '.join(n(v) for v in s.operands)} : ({', '.join(v.type_text for v in s.operands)}) -> {s.result.type_text}"
        ),
        lambda s, *xs: np.concatenate(xs, axis=s.attr("dim")),
    ),
}
# the kinds whose printed form takes a fresh `tensor.empty` as its init operand
NEEDS_INIT = {
    "linalg.fill",
    "linalg.broadcast",
    "linalg.transpose",
    "linalg.elemwise_unary",
    "hfusion.elemwise_unary",
    "linalg.elemwise_binary",
    "hfusion.elemwise_binary",
    "hfusion.compare",
    "hfusion.select",
    "hfusion.cast",
}


def run_step(step: Step, args: Sequence[Any]) -> np.ndarray:
    """`step` on numpy operands, rounded to its result's element type."""
    with np.errstate(all="ignore"):
        value = STEP_KINDS[step.kind].run(step, *args)
    return np.asarray(value).astype(NUMPY_TYPES[step.result.dtype])


def run_steps(steps: Sequence[Step], env: dict[str, Any]) -> None:
    for step in steps:
        env[step.result.name] = run_step(step, [env[v.name] for v in step.operands])


def run_program(
    program: Program, inputs: Mapping[str, np.ndarray], library: Callable[..., list[Any]]
) -> dict[str, np.ndarray]:
    """Run the host function on named inputs; `library(call, args)` runs a library op."""
    env: dict[str, Any] = {}
    for p in program.host_params:
        env[p.name] = np.asarray(inputs[p.name]).astype(NUMPY_TYPES[p.dtype])
    for item in program.host_body:
        args = [env[v.name] for v in (item.operands if isinstance(item, Step) else item.args)]
        if isinstance(item, Step):
            env[item.result.name] = run_step(item, args)
            continue
        if item.library_op is not None:
            outs = library(item, args)
        elif item.steps:
            outs = run_device(
                DeviceFunction(item.callee, item.args, item.steps, item.results, "", ""), args
            )
        elif item.blocking is not None:
            outs = _run_blocks(program.device(item.callee), item, args)
        else:
            outs = run_device(program.device(item.callee), args)
        for r, v in zip(item.results, outs):
            env[r.name] = np.asarray(v).astype(NUMPY_TYPES[r.dtype])
    return {r.name: env[r.name] for r in program.host_results}


def _run_blocks(fn: DeviceFunction, call: HostCall, args: Sequence[Any]) -> list[np.ndarray]:
    """The host loop: `fn` on each row block of `args`, inserted into whole results."""
    b = call.blocking
    assert b is not None
    outs = [np.empty(r.shape or (), NUMPY_TYPES[r.dtype]) for r in call.results]
    for start in range(0, b.rows, b.block):
        ins = [
            a if k < 0 else np.asarray(a)[b.window(k, start, np.ndim(a))]
            for a, k in zip(args, b.arg_axes)
        ]
        for out, k, v in zip(outs, b.result_axes, run_device(fn, ins)):
            out[b.window(k, start, out.ndim)] = v
    return outs


def run_device(fn: DeviceFunction, args: Sequence[Any]) -> list[np.ndarray]:
    env: dict[str, Any] = {p.name: a for p, a in zip(fn.params, args)}
    run_steps(fn.steps, env)
    return [env[r.name] for r in fn.results]


# ---- MLIR text ---------------------------------------------------------------------------


def _step_lines(step: Step, name: Callable[[Value], str], indent: str) -> list[str]:
    lines = []
    if step.kind in NEEDS_INIT:
        lines.append(f"{indent}%{step.result.name}_init = tensor.empty() : {step.result.type_text}")
    text = STEP_KINDS[step.kind].text(step, name)
    lines.append(f"{indent}%{step.result.name} = {text}")
    return lines


def _name(v: Value) -> str:
    return "%" + v.name


def _types(values: Sequence[Value]) -> str:
    text = ", ".join(v.type_text for v in values)
    return text if len(values) == 1 else f"({text})"


def _signature(params: Sequence[Value], results: Sequence[Value]) -> str:
    args = ", ".join(f"%{p.name}: {p.type_text}" for p in params)
    return f"({args}) -> {_types(results)}"


DEVICE_ATTRS = "hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>"
HOST_ATTRS = "hacc.entry, hacc.function_kind = #hacc.function_kind<HOST>"


def device_text(fn: DeviceFunction, indent: str = "  ") -> list[str]:
    """One device function as MLIR lines."""
    lines = [
        f"{indent}// {fn.source}: fusion kind {fn.fusion_kind}",
        f"{indent}func.func @{fn.name}{_signature(fn.params, fn.results)} attributes {{{DEVICE_ATTRS}}} {{",
    ]
    for step in fn.steps:
        lines += _step_lines(step, _name, indent * 2)
    results = ", ".join(_name(r) for r in fn.results)
    lines.append(f"{indent * 2}return {results} : {', '.join(r.type_text for r in fn.results)}")
    lines.append(f"{indent}}}")
    return lines


def device_module_text(fn: DeviceFunction) -> str:
    """One device function alone in a module: bishengir's single-kernel mode."""
    return "\n".join(["module {", *device_text(fn), "}", ""])


def _window_text(v: Value, block: Value, axis: int, index: str) -> str:
    """`[offsets] [sizes] [strides]` of `block`'s window at row `index` of `v`."""
    rank = len(v.shape or ())
    offsets = ", ".join(index if d == axis else "0" for d in range(rank))
    return f"[{offsets}] {_ints(block.shape or ())} {_ints([1] * rank)}"


def _blocked_call_lines(call: HostCall, fn: DeviceFunction, indent: str) -> list[str]:
    """The host loop of a row-blocked call: scf.for over the blocks, each argument's block
    an extract_slice, each result's block an insert_slice into the loop-carried tensor."""
    b = call.blocking
    assert b is not None
    p, inner = f"%{call.callee}_", indent + "  "
    lines = [
        f"{indent}{p}lo = arith.constant 0 : index",
        f"{indent}{p}hi = arith.constant {b.rows} : index",
        f"{indent}{p}step = arith.constant {b.block} : index",
    ]
    lines += [
        f"{indent}{p}init{i} = tensor.empty() : {r.type_text}" for i, r in enumerate(call.results)
    ]
    carried = ", ".join(f"{p}acc{i} = {p}init{i}" for i in range(len(call.results)))
    outs = ", ".join(_name(r) for r in call.results)
    lines.append(
        f"{indent}{outs} = scf.for {p}i = {p}lo to {p}hi step {p}step iter_args({carried}) -> "
        f"({', '.join(r.type_text for r in call.results)}) {{"
    )
    args = []
    for i, (a, blk, k) in enumerate(zip(call.args, fn.params, b.arg_axes)):
        if k < 0:
            args.append(_name(a))
            continue
        lines.append(
            f"{inner}{p}a{i} = tensor.extract_slice {_name(a)}{_window_text(a, blk, k, p + 'i')}"
            f" : {a.type_text} to {blk.type_text}"
        )
        args.append(f"{p}a{i}")
    ys = ", ".join(f"{p}y{i}" for i in range(len(fn.results)))
    lines.append(
        f"{inner}{ys} = func.call @{fn.name}({', '.join(args)}) : "
        f"({', '.join(v.type_text for v in fn.params)}) -> {_types(fn.results)}"
    )
    for i, (r, blk, k) in enumerate(zip(call.results, fn.results, b.result_axes)):
        lines.append(
            f"{inner}{p}n{i} = tensor.insert_slice {p}y{i} into "
            f"{p}acc{i}{_window_text(r, blk, k, p + 'i')} : {blk.type_text} into {r.type_text}"
        )
    news = ", ".join(f"{p}n{i}" for i in range(len(call.results)))
    lines.append(f"{inner}scf.yield {news} : {', '.join(r.type_text for r in call.results)}")
    lines.append(f"{indent}}}")
    return lines


def print_module(program: Program) -> str:
    """The whole module: device functions, library declarations, the host function."""
    lines = [f"// {h}" for h in program.header]
    lines += [f"// remark: {r}" for r in program.remarks]
    lines.append("module {")
    for fn in program.devices:
        lines += device_text(fn)
    declared: set[str] = set()
    for item in program.host_body:
        if isinstance(item, HostCall) and item.reason:
            if item.callee in declared:
                continue
            declared.add(item.callee)
            arg_types = ", ".join(a.type_text for a in item.args)
            lines.append(f"  // a host call: {item.reason}")
            lines.append(
                f"  func.func private @{item.callee}({arg_types}) -> {_types(item.results)}"
            )
    lines.append(
        f"  func.func @main{_signature(program.host_params, program.host_results)} attributes {{{HOST_ATTRS}}} {{"
    )
    for item in program.host_body:
        if isinstance(item, Step):
            lines += _step_lines(item, _name, "    ")
            continue
        if item.blocking is not None:
            lines += _blocked_call_lines(item, program.device(item.callee), "    ")
            continue
        outs = ", ".join(_name(r) for r in item.results)
        args = ", ".join(_name(a) for a in item.args)
        arg_types = ", ".join(a.type_text for a in item.args)
        lines.append(
            f"    {outs} = func.call @{item.callee}({args}) : ({arg_types}) -> {_types(item.results)}"
        )
    results = ", ".join(_name(r) for r in program.host_results)
    types = ", ".join(r.type_text for r in program.host_results)
    lines.append(f"    func.return {results} : {types}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
