"""Kernels compiled to Python steps (interpreter/kernel_program.py) against xDSL's own
interpreter: the same numbers, bit for bit, and the same index arithmetic."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_buffer_interpreter import (
    COPY_THROUGH,
    KERNEL,
    SPLIT_K,
    atomic_sum_text,
    rotate_input,
    rotate_text,
    split_k_inputs,
)
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp
from xdsl.dialects.test import TestOp as ValueOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute, Operation

from autofusion.dialects import buffer
from autofusion.interpreter import buffer as buffer_interpreter
from autofusion.interpreter import make_interpreter, run_function
from autofusion.interpreter.kernel_program import KernelProgram
from autofusion.mlir_io import default_context, parse_module

ROOT = Path(__file__).resolve().parent.parent


def _without_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(buffer_interpreter.KernelProgram, "compile", lambda *a: None)


def _both_ways(
    monkeypatch: pytest.MonkeyPatch, module: ModuleOp, feeds: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The outputs with kernel programs, then with xDSL's interpreter running kernels."""
    compiled: list[KernelProgram | None] = []
    real = KernelProgram.compile

    def counting(*args: Any) -> KernelProgram | None:
        compiled.append(real(*args))
        return compiled[-1]

    with monkeypatch.context() as m:
        m.setattr(buffer_interpreter.KernelProgram, "compile", counting)
        fast = run_function(module, feeds)
    assert compiled and all(p is not None for p in compiled), "a kernel fell back"
    with monkeypatch.context() as m:
        _without_programs(m)
        slow = run_function(module, feeds)
    return fast, slow


def _assert_identical(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k, x in a.items():
        assert x.dtype == b[k].dtype and x.shape == b[k].shape
        assert x.tobytes() == b[k].tobytes(), f"output {k} differs"


def _parse(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "kernel.mlir")


@pytest.mark.parametrize(
    ("text", "feeds"),
    [
        # sync_all: every block's cores side by side, turns handed over at each sync
        (rotate_text(3), {"arg0": rotate_input(4)}),
        # atomic adds after a sync_all, in f16 (the order of the adds shows in the sum)
        (
            atomic_sum_text("f16"),
            {"arg0": np.random.default_rng(0).standard_normal((5, 16)).astype(np.float16)},
        ),
        # cube and vector cores handing tiles over with cross-core flags
        (SPLIT_K, split_k_inputs(4)),
    ],
    ids=["sync-all", "atomic-f16", "split-k"],
)
def test_mix_kernels_match_xdsl_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, text: str, feeds: dict[str, np.ndarray]
) -> None:
    _assert_identical(*_both_ways(monkeypatch, _parse(text), feeds))


def _compiled(example: str) -> ModuleOp:
    from autofusion.driver.pipeline import CompileOptions, fuse_and_lower
    from autofusion.tools.model_input import load_model

    ctx = default_context()
    module = load_model(ctx, str(ROOT / "examples" / example))
    return fuse_and_lower(ctx, module, CompileOptions(chip="Ascend910B1"))


@pytest.mark.parametrize("example", ["mlp.afc", "llama_layer.afc"])
def test_examples_match_xdsl_bit_for_bit(monkeypatch: pytest.MonkeyPatch, example: str) -> None:
    from autofusion.interpreter import find_function, random_inputs

    module = _compiled(example)
    feeds = random_inputs(find_function(module), seed=3)
    _assert_identical(*_both_ways(monkeypatch, module, feeds))


def test_a_deadlock_is_reported_as_with_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait nobody satisfies: the same error from the generator run as from threads."""
    text = rotate_text(1).replace("    buffer.sync_all\n", "", 1)
    text = text.replace("buffer.return", 'buffer.cross_core_wait 3 on "aiv"\n  buffer.return', 1)
    errors = []
    for disable in (False, True):
        with monkeypatch.context() as m:
            if disable:
                _without_programs(m)
            with pytest.raises(Exception) as e:
                run_function(_parse(text), {"arg0": rotate_input(2)})
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    assert "buffer.cross_core_wait 3 on block 0 aiv0 without a matching" in errors[0]


def test_ir_the_program_does_not_run_falls_back() -> None:
    """A kernel holding an op with a region of its own (scf.while) runs in xDSL's
    interpreter, with the same result."""
    loop = """
  %zero = arith.constant 0 : index
  %r = scf.while (%i = %zero) : (index) -> index {
    %more = arith.cmpi slt, %i, %c1 : index
    scf.condition(%more) %i : index
  } do {
  ^bb0(%j: index):
    %next = arith.addi %j, %c1 : index
    scf.yield %next : index
  }
"""
    body = loop + COPY_THROUGH.replace("blocks %c1 x %n", "blocks %r x %n", 1)
    module = _parse(KERNEL.format(body=body, n=8, chip="Ascend910B1"))
    kernel = next(op for op in module.walk() if isinstance(op, buffer.KernelOp))
    interp = make_interpreter(module)
    functions = buffer_interpreter.BufferFunctions()
    assert KernelProgram.compile(interp, functions, kernel) is None
    y = run_function(module, {"arg0": np.arange(8, dtype=np.float32)})["out0"]
    np.testing.assert_array_equal(y, np.arange(8))


# ---- index arithmetic: the closures against xDSL's ArithFunctions -----------------------

BIG = (1 << 63) - 1
VALUES = (0, 1, -1, 7, -7, 3, -3, BIG, -BIG - 1, 1 << 40, -(1 << 40) + 5)
SMALL = (0, 1, -1, 7, -7, 3, (1 << 31) - 1, -(1 << 31), 1 << 33)


def _operands(*types: Attribute) -> list[Any]:
    return [ValueOp(result_types=[t]).results[0] for t in types]


BINARY: list[type[Operation]] = [
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.DivSIOp,
    arith.RemSIOp,
    arith.MinSIOp,
    arith.MaxSIOp,
    arith.CeilDivSIOp,
]


def _steps_of(op: Operation, interp: Interpreter) -> tuple[Callable[..., None], Any]:
    """The plain and the waiting step a KernelProgram of `interp` compiles `op` to."""
    program = object.__new__(KernelProgram)  # a program without a kernel: only _step
    program.interp, program.functions = interp, buffer_interpreter.BufferFunctions()
    program.impls = interp._impls._impl_dict  # pyright: ignore[reportPrivateUsage]
    return program._step(op)  # pyright: ignore[reportPrivateUsage]


def _check_step(op: Operation, inputs: list[tuple[Any, ...]]) -> None:
    """The op's program step gives what xDSL's implementation gives, on every input."""
    interp = make_interpreter(ModuleOp([]))
    step, waiting = _steps_of(op, interp)
    assert waiting is None
    for args in inputs:
        try:
            want: Any = interp.run_op(op, args)[0]
        except Exception as e:
            want = type(e)
        env = dict(zip(op.operands, args))
        try:
            step(env)
            got: Any = env[op.results[0]]
        except Exception as e:
            got = type(e)
        assert got == want and type(got) is type(want), (op.name, args, got, want)


@pytest.mark.parametrize("op_type", BINARY, ids=lambda t: t.name)
@pytest.mark.parametrize("width", [None, 32])
def test_index_ops_match_xdsl(op_type: type[Operation], width: int | None) -> None:
    t: Attribute = IndexType() if width is None else IntegerType(width)
    a, b = _operands(t, t)
    values = VALUES if width is None else SMALL
    pairs = list(itertools.product(values, values))
    if op_type in (arith.DivSIOp, arith.RemSIOp, arith.CeilDivSIOp):
        pairs = [(x, y) for x, y in pairs if y != 0]
    _check_step(op_type(a, b), pairs)  # type: ignore[call-arg]


@pytest.mark.parametrize("predicate", range(10))
def test_compares_match_xdsl(predicate: int) -> None:
    a, b = _operands(IndexType(), IndexType())
    op = arith.CmpiOp(a, b, predicate)
    _check_step(op, list(itertools.product(VALUES, VALUES)))


@pytest.mark.parametrize(
    ("into", "out"), [(IndexType(), IntegerType(32)), (IntegerType(32), IndexType())]
)
def test_index_casts_match_xdsl(into: Attribute, out: Attribute) -> None:
    (a,) = _operands(into)
    values = VALUES if isinstance(into, IndexType) else SMALL[:-1]
    _check_step(arith.IndexCastOp(a, out), [(v,) for v in values])


def test_select_matches_xdsl() -> None:
    c, a, b = _operands(IntegerType(1), IndexType(), IndexType())
    _check_step(arith.SelectOp(c, a, b), [(True, 3, 4), (False, 3, 4), (1, -1, 2)])


def test_an_overridden_op_keeps_its_implementation() -> None:
    """An arith op registered to other functions than the stock ones is called through
    them, not replaced by a closure."""
    from xdsl.interpreter import InterpreterFunctions, impl, register_impls

    @register_impls
    class Doubling(InterpreterFunctions):
        @impl(arith.AddiOp)
        def run_addi(self, interp: Any, op: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
            return (2 * (args[0] + args[1]),)

    a, b = _operands(IndexType(), IndexType())
    op = arith.AddiOp(a, b)
    interp = make_interpreter(ModuleOp([]))
    interp.register_implementations(Doubling(), override=True)
    step = _steps_of(op, interp)[0]
    env = {a: 2, b: 3}
    step(env)
    assert env[op.result] == 10
