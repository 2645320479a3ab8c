"""afc's fusion plan as an AscendNPU IR module for bishengir (`afc-opt -t hfusion`,
`afc compile --backend hfusion`): each fusion group one `hacc.entry` DEVICE function of
named linalg/hfusion ops, a HOST function calling them in order.

A group bishengir 1.2.0 cannot compile whole (MIX_CV, MIX_C2 and the other
hfusion_kinds.PART_RULES) is cut into parts that it can, and a library op (convolution,
pooling, gather, attention) or a step HFusion cannot compile (a batch_matmul) stays a call
of a CANN operator from the host function;
a function over bishengir's UB is row-blocked or cut until it fits (hfusion_ub.py);
each such decision is a remark in the module's header. An op with no HFusion form refuses
the whole export (no partial module).
Dynamic dimensions are pinned to `dynamic_size`, so the module has static shapes only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.target import Target

from autofusion.codegen import hfusion_kinds as kinds
from autofusion.codegen.hfusion_ir import (
    DeviceFunction,
    HostCall,
    Program,
    Step,
    Value,
    print_module,
    run_program,
)
from autofusion.codegen.hfusion_lowering import (
    LIBRARY_OPS,
    FunctionBuilder,
    Refusal,
    lower_op,
    splat_constant,
    static_type,
)
from autofusion.codegen.hfusion_ub import row_blocks, ub_cuts
from autofusion.dialects import graph
from autofusion.interpreter import argument_names, find_function, result_names


@dataclass
class Export:
    """A Program with what its host parameters stand for in the graph."""

    program: Program
    inputs: dict[str, str]  # graph input name -> host parameter
    constants: dict[str, graph.ConstantOp]  # host parameter -> the weight
    outputs: list[str]  # graph output names, in host result order


def _identifier(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", text) or "t"
    if base[0].isdigit() or re.fullmatch(r"v\d+", base):  # v<N> are the steps' names
        base = "t" + base
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


class Exporter:
    """Walks the host function of a fused module, building the Program."""

    def __init__(self, dynamic_size: int) -> None:
        self.dynamic_size = dynamic_size
        self.builder = FunctionBuilder("v")
        self.env: dict[SSAValue, Value] = {}
        self.taken: set[str] = set()
        self.program = Program([], [], [])
        self.constants: dict[str, graph.ConstantOp] = {}
        self.group_count = 0
        self.operand_order: dict[str, int] = {}
        self.host_defined: set[str] = set()

    def param(self, value: SSAValue, name: str) -> Value:
        t = static_type(cast(TensorType, value.type), self.dynamic_size)
        v = Value(_identifier(name, self.taken), t.dtype, t.shape)
        self.env[value] = v
        self.program.host_params.append(v)
        return v

    def run(self, f: func.FuncOp) -> Export:
        inputs = {}
        for arg, name in zip(f.body.block.args, argument_names(f)):
            # an input without graph.name is `arg<i>` to the interpreter; print its SSA name
            inputs[name] = self.param(arg, arg.name_hint or name).name
        for op in f.body.block.ops:
            self.host_op(op)
        return Export(self.program, inputs, self.constants, result_names(f))

    def constant(self, op: graph.ConstantOp) -> None:
        """A weight: a parameter of the host function, bound to its values when run."""
        name = op.properties.get("name")
        hint = name.data if isinstance(name, StringAttr) else op.results[0].name_hint
        self.constants[self.param(op.results[0], hint or "w").name] = op

    def host_op(self, op: Operation) -> None:
        if isinstance(op, graph.ConstantOp):
            self.constant(op)
        elif isinstance(op, func.ReturnOp):
            self.program.host_results = [self.env[v] for v in op.operands]
        elif isinstance(op, graph.FusionGroupOp):
            self.group(op, list(op.body.block.ops)[:-1], op.body.block.args, op.outputs)
        elif isinstance(op, graph.ReshapeOp):  # a view: no kernel, a host-level reshape
            self.env[op.results[0]] = self.lower(op, self.program.host_body)
        else:
            self.group(op, [op], op.operands, op.results)

    def lower(self, op: Operation, into: list[Step | HostCall]) -> Value:
        """A view op lowered straight into the host body."""
        start = len(self.builder.steps)
        (result,) = lower_op(self.builder, op, [self.env[v] for v in op.operands])
        into.extend(self.builder.steps[start:])
        return result

    def group(
        self,
        anchor: Operation,
        ops: Sequence[Operation],
        args: Sequence[SSAValue],
        results: Sequence[SSAValue],
    ) -> None:
        """A fusion group (or one ungrouped op): runs of ops between library ops become
        device functions, cut further where HFusion could not schedule them."""
        self.group_count += 1
        label = f"afc_g{self.group_count}"
        outer = list(anchor.operands) if isinstance(anchor, graph.FusionGroupOp) else list(args)
        for inner, value in zip(args, outer):
            self.env[inner] = self.env[value]
        self.operand_order = {self.env[v].name: i for i, v in reversed(list(enumerate(outer)))}
        yielded = (
            list(anchor.body.block.last_op.operands)  # type: ignore[union-attr]
            if isinstance(anchor, graph.FusionGroupOp)
            else list(results)
        )
        runs: list[list[Operation]] = [[]]
        for op in ops:
            if op.name in LIBRARY_OPS:
                runs.append([op])
                runs.append([])
            else:
                runs[-1].append(op)
        computed = [r for r in runs if r and r[0].name not in LIBRARY_OPS]
        for run in (r for r in runs if r):
            if run[0].name in LIBRARY_OPS:
                self.library(run[0], label)
                continue
            start = len(self.builder.steps)
            self.builder.narrowed.clear()  # float32 intermediates stay inside one run
            for op in run:
                if isinstance(op, graph.ConstantOp):  # a splat is a fill, others weights
                    fill = (
                        None
                        if _feeds_cube(op)
                        else splat_constant(self.builder, op, self.dynamic_size)
                    )
                    if fill is None:
                        self.constant(op)
                    else:
                        self.env[op.results[0]] = fill
                    continue
                outs = lower_op(self.builder, op, [self.env[v] for v in op.operands])
                for r, v in zip(op.results, outs):
                    self.env[r] = v
            steps = self.builder.steps[start:]
            live = {self.env[v].name for v in yielded if v in self.env}
            others = [v for op in ops if op not in run for v in op.operands]
            live |= {self.env[v].name for v in others if v in self.env}
            names = ", ".join(sorted({op.name for op in run}))
            # one device-function name per run of the group
            name = label if len(computed) == 1 else f"{label}r{computed.index(run)}"
            self.parts(name, steps, live, names)
        for inner, outer_result in zip(yielded, results):
            self.env[outer_result] = self.env[inner]

    def library(self, op: Operation, label: str) -> None:
        args = [self.env[v] for v in op.operands]
        outs = []
        for r in op.results:
            t = static_type(cast(TensorType, r.type), self.dynamic_size)
            outs.append(Value(self.builder.fresh(), t.dtype, t.shape))
        for r, v in zip(op.results, outs):
            self.env[r] = v
        reason = LIBRARY_OPS[op.name]
        callee = f"{label}_{op.name.split('.')[-1]}"
        self.program.host_body.append(HostCall(callee, args, outs, op, reason))
        self.program.remarks.append(f"{label}: {op.name} kept as a host call ({reason})")

    def parts(self, label: str, steps: list[Step], live: set[str], source: str) -> None:
        """Cut `steps` where HFusion needs it; each part with compute is a device function,
        one without (reshapes only) stays in the host body."""
        found = kinds.cuts(steps, live)
        cuts = [c.at for c in found]
        if found:
            kind = kinds.fusion_kind(steps)
            why = "" if kinds.schedulable(kind) else f"{kind} is not scheduled by HFusion 1.2.0; "
            rules = [r for r in kinds.PART_RULES if any(c.rule is r for c in found)]
            where = ", ".join(r.where for r in rules)
            self.program.remarks.append(f"{label}: {why}cut into {len(cuts) + 1} parts {where}")
        ub = ub_cuts(steps, [0, *cuts, len(steps)], live)
        if ub:
            n = len(ub)
            self.program.remarks.append(
                f"{label}: cut at {n} more step boundar{'y' if n == 1 else 'ies'} so each part "
                f"fits bishengir's UB (the part up to the first cut: {ub[min(ub)]})"
            )
        bounds = [0, *sorted({*cuts, *ub}), len(steps)]
        pieces = [steps[a:b] for a, b in itertools.pairwise(bounds) if b > a]
        by_name = {s.result.name: s for s in steps}

        def roots(name: str) -> set[str]:
            """The computed values (or parameters) a value is re-created from."""
            step = by_name.get(name)
            if step is None or kinds.is_compute(step):
                return {name}
            return set().union(*(roots(v.name) for v in step.operands))

        later_uses: set[str] = set().union(*(roots(n) for n in live)) if live else set()
        uses_after: list[set[str]] = []
        for piece in reversed(pieces):
            uses_after.append(set(later_uses | live))
            later_uses |= set().union(*(roots(v.name) for s in piece for v in s.operands))
        uses_after.reverse()
        defined: dict[str, Step] = {}
        for i, piece in enumerate(pieces):
            name = f"{label}_{i}" if len(pieces) > 1 else label
            self.part(name, piece, uses_after[i], defined, source)
            defined.update({s.result.name: s for s in piece})

    def part(
        self,
        name: str,
        piece: list[Step],
        used_later: set[str],
        earlier: dict[str, Step],
        source: str,
    ) -> None:
        body: list[Step] = []
        own = {s.result.name for s in piece}
        for s in piece:
            for v in s.operands:
                origin = earlier.get(v.name)
                if origin is not None and not kinds.is_compute(origin) and v.name not in own:
                    body.extend(_rematerialize(origin, earlier, own))
            body.append(s)
        results = [s.result for s in piece if s.result.name in used_later]
        if not any(kinds.is_compute(s) for s in piece):
            self.host_steps(_without_dead_setup(body, {r.name for r in results}))
            return
        before, body = _leading_views(body)
        # a result that is a view of a parameter is made on the host, not returned
        hoisted = {s.result.name for s in before}
        results = [r for r in results if r.name not in hoisted]
        body, results, after = _trailing_views(body, results)
        body = _without_dead_setup(body, {r.name for r in results})
        own = {s.result.name for s in body}
        params: list[Value] = []
        for s in body:
            for v in s.operands:
                if v.name not in own and v not in params:
                    params.append(v)
        # the group's operands first, in their order; values of earlier parts after them
        params.sort(key=lambda v: self.operand_order.get(v.name, len(self.operand_order)))
        self.host_steps(before)
        self.call(name, params, body, results, source)
        self.host_steps(after)

    def host_steps(self, steps: Sequence[Step]) -> None:
        """Views in the host function, each defined once (parts may share one)."""
        for s in steps:
            if s.result.name not in self.host_defined:
                self.host_defined.add(s.result.name)
                self.program.host_body.append(s)

    def call(
        self, name: str, params: list[Value], body: list[Step], results: list[Value], source: str
    ) -> None:
        """A device function and its call (per row block where UB needs it); a host call
        where a boundary rule forbids it or the part is over bishengir's UB even row-blocked
        (a single step ub_cuts could not split further): never a device function over it."""
        kind = kinds.fusion_kind(body)
        blocked = row_blocks(kind, params, body, results)
        limit = kinds.step_limit(body) or kinds.boundary_limit([*params, *results])
        if limit or (isinstance(blocked, str) and blocked):
            reason = f"{kind} part of {source}: {limit or blocked}"
            self.program.host_body.append(
                HostCall(name, params, results, reason=reason, steps=body)
            )
            self.program.remarks.append(f"{name}: kept as a host call ({reason})")
            return
        if isinstance(blocked, str):
            fn = DeviceFunction(name, params, body, results, kind, source)
            self.program.devices.append(fn)
            self.program.host_body.append(HostCall(name, params, results))
            return
        self.program.remarks.append(f"{name}: {blocked.remark}")
        fn = DeviceFunction(name, blocked.params, blocked.steps, blocked.results, kind, source)
        self.program.devices.append(fn)
        self.program.host_body.append(HostCall(name, params, results, blocking=blocked.blocking))


# reshapes and slices: free on the host (a new view of a GM tensor). At a device
# function's boundary bishengir 1.2.0 fails on them (measured: an extract_slice of a weight
# parameter gives "'memref.cast' op ... cast incompatible", an expand_shape of a matmul
# result returned as is gives "type of return operand 0 ... doesn't match"), so they move
# to the host function.
VIEW_STEPS = frozenset({"tensor.collapse_shape", "tensor.expand_shape", "tensor.extract_slice"})


def _leading_views(body: list[Step]) -> tuple[list[Step], list[Step]]:
    """(the views of parameters, the rest of `body`)."""
    defined = {s.result.name for s in body}
    moved: list[Step] = []
    names: set[str] = set()
    for s in body:
        if s.kind in VIEW_STEPS and all(
            v.name not in defined or v.name in names for v in s.operands
        ):
            moved.append(s)
            names.add(s.result.name)
    return moved, [s for s in body if s.result.name not in names]


def _trailing_views(
    body: list[Step], results: list[Value]
) -> tuple[list[Step], list[Value], list[Step]]:
    """Results that are views of computed values: return the values, view them on the host."""
    by_name = {s.result.name: s for s in body}
    roots: list[Value] = []
    after: list[Step] = []
    for result in results:
        chain: list[Step] = []
        root = result
        step = by_name.get(root.name)
        while step is not None and step.kind in VIEW_STEPS and step.operands[0].name in by_name:
            chain.append(step)
            root = step.operands[0]
            step = by_name.get(root.name)
        if root not in roots:
            roots.append(root)
        after.extend(reversed(chain))
    return body, roots, after


def _without_dead_setup(body: list[Step], results: set[str]) -> list[Step]:
    """`body` less the constants, fills and reshapes nothing uses (a cut can leave the
    next part's setup behind); compute steps always stay."""
    used = set(results)
    kept: list[Step] = []
    for s in reversed(body):
        if kinds.is_compute(s) or s.result.name in used:
            kept.append(s)
            used |= {v.name for v in s.operands}
    return kept[::-1]


def _rematerialize(step: Step, earlier: dict[str, Step], own: set[str]) -> list[Step]:
    """`step` (a constant, fill, reshape or slice) and the non-compute steps it reads, for
    a part that uses it: a part takes computed tensors only as parameters."""
    out: list[Step] = []
    for v in step.operands:
        if v.name not in own and v.name in earlier and not kinds.is_compute(earlier[v.name]):
            out.extend(_rematerialize(earlier[v.name], earlier, own))
    if step.result.name not in own:
        own.add(step.result.name)
        out.append(step)
    return out


# a cube reads its operands from GM: a weight filled inside the kernel fails HIVM in
# bishengir 1.2.0 ("'memref.cast' op ... cast incompatible", measured), so a splat weight of
# a cube op is a parameter like any other weight
CUBE_OPS = frozenset({"graph.matmul", "graph.gemm", "graph.ffn"})


def _feeds_cube(op: Operation) -> bool:
    return any(use.operation.name in CUBE_OPS for r in op.results for use in r.uses)


def export_module(module: ModuleOp, dynamic_size: int = 128) -> Export:
    """The fused `module` as a bishengir Program; Refusal names an op it cannot express."""
    f = find_function(module)
    return Exporter(dynamic_size).run(f)


def run_export(
    export: Export,
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    shape_only_fill: Callable[[graph.ConstantOp], np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Interpret the exported program on the graph's named inputs: weights and library ops
    (convolution, attention, ...) come from afc's graph interpreter on `module`, every device
    function and host step from the exported steps. Returns the graph's named outputs;
    `shape_only_fill` gives values to weights that have none, as for run_function."""
    from autofusion.interpreter import make_interpreter

    interp = make_interpreter(module, shape_only_fill)
    values = {export.inputs[name]: value for name, value in inputs.items()}
    for param, const in export.constants.items():
        (values[param],) = interp.run_op(const, ())

    def library(call: HostCall, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(r) for r in interp.run_op(call.library_op, tuple(args))]

    outs = run_program(export.program, values, library)
    return dict(zip(export.outputs, outs.values()))


@dataclass(frozen=True)
class HFusionTarget(Target):
    """`afc-opt -t hfusion`: the fusion groups as linalg-on-tensors device functions for
    bishengir-compile (AscendNPU IR), with a host function calling them (docs/hfusion.md)."""

    name = "hfusion"

    dynamic_size: int = 128
    """The static size every dynamic dimension is exported with."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(hfusion_text(module, self.dynamic_size))


def hfusion_text(module: ModuleOp, dynamic_size: int = 128) -> str:
    """The module text; a Refusal (one line, the op and why) leaves nothing written."""
    export = export_module(module, dynamic_size)
    export.program.header = [
        "AscendNPU IR for bishengir-compile (afc -t hfusion): one hacc.entry DEVICE function per",
        f"fusion group, dynamic dimensions pinned to {dynamic_size}.",
    ]
    return print_module(export.program)


__all__ = ["Export", "HFusionTarget", "Refusal", "export_module", "hfusion_text", "run_export"]
