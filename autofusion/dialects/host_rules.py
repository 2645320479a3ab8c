"""The rules of a kernel's host code, checked by the verifier so that plain `afc-opt`
rejects what `-t ascendc` would: the op_host files compute a kernel's tiling, block
count and output shapes in C++ (TilingFunc, InferShape) from the input shapes alone,
so the host code before its launch must be index arithmetic on tensor dimensions, with
no control flow and no calls but the kernel's tiling rule; the tiling rule is one block
of integer arithmetic (a plain C++ function of integers).

Each failure is one line located at the op, in the words the printer used to say it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue

from autofusion.codegen.cpp_scalar import ScalarPrinter
from autofusion.dialects.ascendc_rules import fail
from autofusion.dialects.buffer_ops import DimOp, KernelOpBase, LaunchOp


def find_launch(module: ModuleOp, kernel: KernelOpBase) -> LaunchOp | None:
    """The first launch of `kernel` in the module (its host code defines TilingFunc)."""
    name = kernel.sym_name.data
    for op in module.walk():
        if isinstance(op, LaunchOp) and op.kernel.root_reference.data == name:
            return op
    return None


def find_tiling_func(
    module: ModuleOp, kernel: KernelOpBase, launch: LaunchOp | None
) -> func.FuncOp | None:
    """The tiling rule: the function whose call computes the launch's block count, else
    `@<kernel>_tiling`."""
    funcs = {
        op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks
    }
    if launch is not None and isinstance(launch.blocks.owner, func.CallOp):
        callee = funcs.get(launch.blocks.owner.callee.root_reference.data)
        if callee is not None:
            return callee
    return funcs.get(f"{kernel.sym_name.data}_tiling")


def host_slice(
    launch: LaunchOp,
    roots: list[SSAValue],
    what: str,
    through: Callable[[DimOp], SSAValue | None] | None = None,
) -> list[Operation]:
    """The host ops before `launch` that compute `roots` from tensor dims, in order.

    `what` names the result in errors (e.g. "the tiling of @k"). `through` gives the
    host value a dim stands for when the tensor's shape is not read from the context
    (a super kernel's intermediate: the dim its launch gave it)."""
    needed: set[Operation] = set()
    work = list(roots)
    while work:
        v = work.pop()
        owner = v.owner
        if not isinstance(owner, Operation):
            fail(
                launch,
                f"{what} depends on an argument of its host function that is not a tensor "
                "dimension",
            )
        if owner not in needed:
            needed.add(owner)
            if not isinstance(owner, DimOp):  # a dim reads the context's shape
                work.extend(owner.operands)
            elif through is not None and (value := through(owner)) is not None:
                work.append(value)
    ordered = [op for op in cast(Operation, launch.parent_op()).walk() if op in needed]
    for op in ordered:
        if op.regions:
            fail(op, f"{op.name}: {what} depends on control flow")
    return ordered


def _check_rule(rule: func.FuncOp) -> None:
    """The tiling rule is printed as a C++ function of integers, one block, no calls."""
    name = rule.sym_name.data
    for t in (*rule.function_type.inputs.data, *rule.function_type.outputs.data):
        if not isinstance(t, IndexType | IntegerType):
            fail(rule, f"tiling function @{name} takes or returns {t}; tiling scalars are integers")
    if len(rule.body.blocks) != 1:
        fail(rule, f"tiling function @{name} must be one block")
    for op in rule.walk():
        if isinstance(op, func.CallOp):
            fail(
                op, f"{op.name} @{op.callee.root_reference.data}: a tiling rule calls no functions"
            )


def _check_host_op(op: Operation, launch: LaunchOp, rule: func.FuncOp | None) -> None:
    """One op of the host code before a launch, as TilingFunc and InferShape print it."""
    kernel = launch.kernel.root_reference.data
    if isinstance(op, func.CallOp):
        callee = op.callee.root_reference.data
        if rule is None or callee != rule.sym_name.data:
            fail(
                op,
                f"{op.name} @{callee}: the host code before a launch may call only the "
                "kernel's tiling rule",
            )
    elif isinstance(op, DimOp):
        if op.source not in launch.inputs:
            fail(
                op,
                f"{op.name}: the tiling of @{kernel} reads the shape of a tensor the kernel "
                "does not take",
            )
    elif not (
        (isinstance(op, ScalarPrinter.INLINE_OPS) and len(op.results) == 1)
        or isinstance(op, arith.ConstantOp)
    ):
        fail(
            op,
            f"{op.name}: the tiling of @{kernel} depends on it, but a host tiling function "
            "computes only with shapes and integers",
        )


def verify_host_code(kernel: KernelOpBase) -> None:
    """The tiling rule of `kernel` and the host code before its (first) launch, the code
    the op_host files print, in the module `kernel` sits in."""
    module = kernel.parent_op()
    if not isinstance(module, ModuleOp):
        return
    launch = find_launch(module, kernel)
    rule = find_tiling_func(module, kernel, launch)
    if rule is not None:
        _check_rule(rule)
    if launch is None:
        return
    name = kernel.sym_name.data
    for roots, what in (
        ([launch.blocks, *launch.tiling], f"the tiling of @{name}"),
        (list(launch.dims), f"the output shape of @{name}"),
    ):
        for op in host_slice(launch, roots, what):
            _check_host_op(op, launch, rule)
