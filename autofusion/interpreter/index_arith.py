"""Arith ops that tiling functions and kernels use but xDSL 0.74's arith interpreter does
not implement (it has addi, subi, muli, divsi, remsi, cmpi, select, addf, subf, mulf)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@register_impls
class IndexArithFunctions(InterpreterFunctions):
    @impl(arith.MinSIOp)
    def run_minsi(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (min(args[0], args[1]),)

    @impl(arith.MaxSIOp)
    def run_maxsi(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (max(args[0], args[1]),)

    @impl(arith.MinUIOp)
    def run_minui(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (min(args[0], args[1]),)

    @impl(arith.MaxUIOp)
    def run_maxui(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (max(args[0], args[1]),)

    @impl(arith.CeilDivSIOp)
    def run_ceildivsi(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (_ceil_div(args[0], args[1]),)

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (_ceil_div(args[0], args[1]),)

    @impl(arith.DivUIOp)
    def run_divui(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (args[0] // args[1],)

    @impl(arith.RemUIOp)
    def run_remui(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (args[0] % args[1],)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (float(np.float32(args[0])),)

    @impl(arith.DivfOp)
    def run_divf(self, i: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (float(np.float32(args[0]) / np.float32(args[1])),)
