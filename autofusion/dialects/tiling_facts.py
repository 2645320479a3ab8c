"""What every index value of a buffer kernel is known to be a multiple of (or exactly),
from the kernel's body and the host code that computes its tiling scalars.

A whole-module analysis: a kernel's tiling arguments get the join of what the host
passes at each of its launches. The verifier (fractal_rules.py) decides with it whether
a fractal read or a DataCopy row has an Ascend C form; the printer decides with the same
facts between DataCopy (32-byte multiples, ascend.md 2.7) and DataCopyPad, and folds
static sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from autofusion.dialects.buffer_ops import KernelOpBase, LaunchOp


@dataclass(frozen=True)
class Fact:
    """An index value is exactly `exact`, else a multiple of `multiple` (1: unknown)."""

    multiple: int = 1
    exact: int | None = None

    def divides_by(self, m: int) -> bool:
        if self.exact is not None:
            return self.exact % m == 0
        return self.multiple % m == 0

    @property
    def gcd_part(self) -> int:
        """The largest known divisor (0 for an exact zero)."""
        return abs(self.exact) if self.exact is not None else self.multiple


UNKNOWN = Fact()


def _join(a: Fact, b: Fact) -> Fact:
    """What holds for a value that is either a or b."""
    if a.exact is not None and a.exact == b.exact:
        return a
    return Fact(math.gcd(a.gcd_part, b.gcd_part) or 1)


def _exact(v: int) -> Fact:
    return Fact(abs(v) or 1, v)


class Divisibility:
    """Divisibility facts for the index values of every kernel in a module.

    A kernel's tiling arguments get the join of what the host passes at each launch
    (through the tiling function's arithmetic); a kernel without a launch knows nothing
    about them. The facts hold for any runtime shape because the host code that
    computes the tiling is the same code the facts are derived from.
    """

    def __init__(self, module: ModuleOp, only: KernelOpBase | None = None) -> None:
        """The facts of every kernel of `module`, or of the kernel `only` (the verifier
        checks one kernel at a time: the launches of the others need no walk)."""
        self.module = module
        self._memo: dict[SSAValue, Fact] = {}
        self._funcs = {
            op.sym_name.data: op
            for op in module.ops
            if isinstance(op, func.FuncOp) and op.body.blocks
        }
        self._only = only
        self._args: dict[SSAValue, Fact] | None = None
        # facts of the module's top-level host values, shared by every launch
        self._top_memo: dict[SSAValue | Operation, Any] = {}

    @property
    def _kernel_args(self) -> dict[SSAValue, Fact]:
        """The facts of the kernels' tiling arguments, from their launches (derived on
        the first query: a kernel whose rules ask nothing costs no walk)."""
        if self._args is None:
            self._args = {}
            kernels = {
                op.sym_name.data: op
                for op in self.module.ops
                if isinstance(op, KernelOpBase) and self._only in (None, op)
            }
            # launches are host ops: the kernels' bodies (most of a module's ops) hold none,
            # and the verifier asks once per kernel, so walking them made it quadratic
            host = (op for op in self.module.ops if not isinstance(op, KernelOpBase))
            for launch in (o for top in host for o in top.walk()):
                if not isinstance(launch, LaunchOp):
                    continue
                kernel = kernels.get(launch.kernel.root_reference.data)
                if kernel is None:
                    continue
                for arg, value in zip(kernel.tiling_args, launch.tiling):
                    fact = self._host(value, {})
                    self._args[arg] = _join(self._args[arg], fact) if arg in self._args else fact
        return self._args

    @classmethod
    def of_kernel(cls, kernel: KernelOpBase) -> Divisibility:
        """The facts of `kernel`'s values, from the module it sits in (none of its tiling
        arguments is known outside a module)."""
        module = kernel.parent_op()
        if isinstance(module, ModuleOp):
            return cls(module, kernel)
        return cls(ModuleOp([]), kernel)

    # ---- queries ----------------------------------------------------------------------

    def of(self, value: SSAValue) -> Fact:
        if value not in self._memo:
            self._memo[value] = UNKNOWN  # cycles (loop-carried values) stay unknown
            self._memo[value] = self._derive(value, self._kernel_args, self.of)
        return self._memo[value]

    def exact(self, value: SSAValue) -> int | None:
        return self.of(value).exact

    def multiple_of(self, value: SSAValue, m: int) -> bool:
        return m <= 1 or self.of(value).divides_by(m)

    # ---- derivation -------------------------------------------------------------------

    def _host(
        self,
        value: SSAValue,
        env: dict[SSAValue, Fact],
        memo: dict[SSAValue | Operation, Any] | None = None,
    ) -> Fact:
        """A host value's fact; `env` binds the block arguments of a called function.

        `memo` caches the facts of one evaluation scope (and the scopes of the calls made
        from it): tiling functions share subexpressions, so without it the walk is
        exponential in their depth. The walk is iterative: a model's host code chains
        one launch's sizes into the next, deeper than Python's recursion limit.
        """
        memo = self._top_memo if memo is None else memo
        stack = [value]
        while stack:
            v = stack[-1]
            if v in env or v in memo:
                stack.pop()
                continue
            missing = [d for d in self._host_deps(v) if d not in env and d not in memo]
            if missing:
                stack.extend(missing)
                continue
            memo[v] = self._host_fact(v, env, memo)
            stack.pop()
        return env[value] if value in env else cast(Fact, memo[value])

    @staticmethod
    def _host_deps(value: SSAValue) -> list[SSAValue]:
        """The values of the same scope whose facts `value`'s fact is computed from."""
        owner = value.owner
        if isinstance(owner, func.CallOp):
            return list(owner.arguments)
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, scf.ForOp) and value is owner.args[0]:
                return [parent.lb, parent.step]
            return []
        return list(owner.operands)

    def _host_fact(
        self, value: SSAValue, env: dict[SSAValue, Fact], memo: dict[SSAValue | Operation, Any]
    ) -> Fact:
        """`value`'s fact once the facts of its `_host_deps` are known."""

        def known(v: SSAValue) -> Fact:
            return env[v] if v in env else cast(Fact, memo[v])

        owner = value.owner
        if not isinstance(owner, func.CallOp):
            return self._derive(value, env, known)
        callee = self._funcs.get(owner.callee.root_reference.data)
        ret = callee.body.block.last_op if callee is not None else None
        if callee is None or not isinstance(ret, func.ReturnOp):
            return UNKNOWN
        if owner not in memo:
            inner_env = {a: known(v) for a, v in zip(callee.body.block.args, owner.arguments)}
            memo[owner] = (inner_env, {})
        inner_env, inner_memo = memo[owner]
        index = cast(Operation, owner).results.index(value)
        return self._host(ret.arguments[index], inner_env, inner_memo)

    @staticmethod
    def _derive(
        value: SSAValue, env: dict[SSAValue, Fact], get: Callable[[SSAValue], Fact]
    ) -> Fact:
        if value in env:
            return env[value]
        owner = value.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, scf.ForOp) and value is owner.args[0]:
                return _join(get(parent.lb), get(parent.step))
            return UNKNOWN
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return _exact(owner.value.value.data)
        return _arith_fact(owner, [get(o) for o in owner.operands])


def _arith_fact(op: Operation, args: list[Fact]) -> Fact:
    if len(args) == 2 and all(a.exact is not None for a in args):
        a, b = (cast(int, x.exact) for x in args)
        folded = _fold(op, a, b)
        if folded is not None:
            return _exact(folded)
    if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MinSIOp | arith.MaxSIOp):
        return Fact(math.gcd(args[0].gcd_part, args[1].gcd_part) or 1)
    if isinstance(op, arith.MuliOp):
        return Fact(args[0].gcd_part * args[1].gcd_part or 1)
    if isinstance(op, arith.RemSIOp):
        return Fact(math.gcd(args[0].gcd_part, args[1].gcd_part) or 1)
    if isinstance(op, arith.IndexCastOp):
        return args[0]
    return UNKNOWN


def _fold(op: Operation, a: int, b: int) -> int | None:
    if isinstance(op, arith.AddiOp):
        return a + b
    if isinstance(op, arith.SubiOp):
        return a - b
    if isinstance(op, arith.MuliOp):
        return a * b
    if isinstance(op, arith.MinSIOp):
        return min(a, b)
    if isinstance(op, arith.MaxSIOp):
        return max(a, b)
    if b == 0:
        return None
    if isinstance(op, arith.DivSIOp):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    if isinstance(op, arith.CeilDivSIOp):
        return -(-a // b)
    if isinstance(op, arith.FloorDivSIOp):
        return a // b
    if isinstance(op, arith.RemSIOp):
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return None
