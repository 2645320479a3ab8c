"""Scalar loop nests run as numpy (interpreter/vector_loops.py): the numbers of the
sequential run, bit for bit, or the sequential run itself."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from test_kernel_program import _both_ways, _parse, _steps_of
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp
from xdsl.dialects.test import TestOp as ValueOp
from xdsl.ir import Attribute, Operation

from autofusion.interpreter import make_interpreter, run_function
from autofusion.interpreter import vector_loops as vl

# rows x cols int32 values computed by NEST, stored one by one, copied out
KERNEL = """
buffer.kernel @k(%x: memref<?xi32, #buffer.space<gm>>, %y: memref<?xi32, #buffer.space<gm>>, %rows: index, %cols: index) attributes {{chip = "Ascend910B1", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %cm5 = arith.constant -5 : index
  %n = arith.muli %rows, %cols : index
  %bytes = arith.muli %n, %c4 : index
  %t = buffer.alloc_buf "vecout" %bytes max_bytes 4096 -> memref<?xi32, #buffer.space<ub>>
  buffer.stage "compute" {{
    buffer.vdup %t, %zero, %n : memref<?xi32, #buffer.space<ub>>, i32
    scf.for %r = %c0 to %rows step %c1 {{
      %row = arith.muli %r, %cols : index
      scf.for %j = %c0 to %cols step %c1 {{
{nest}
      }}
    }}
  }}
  buffer.stage "copy_out" {{
    buffer.copy %t to %y blocks %c1 x %n strides %c0, %c0 : memref<?xi32, #buffer.space<ub>> to memref<?xi32, #buffer.space<gm>>
  }}
  buffer.return
}}
func.func @main(%x: tensor<{rows}x{cols}xi32>) -> tensor<{rows}x{cols}xi32> {{
  %rows = arith.constant {rows} : index
  %cols = arith.constant {cols} : index
  %b = arith.constant 1 : index
  %y = buffer.launch @k blocks(%b) (%x) tiling(%rows, %cols) dims() : (tensor<{rows}x{cols}xi32>) -> tensor<{rows}x{cols}xi32>
  func.return %y : tensor<{rows}x{cols}xi32>
}}
"""

# index arithmetic with negative operands (truncating and flooring divisions), compares,
# selects and a cast to i32, then i32 arithmetic, stored at row * cols + j
ARITH = """
        %a = arith.subi %j, %c3 : index
        %b = arith.muli %a, %r : index
        %q = arith.divsi %b, %c3 : index
        %m = arith.remsi %b, %c3 : index
        %cd = arith.ceildivsi %b, %c4 : index
        %neg = arith.cmpi slt, %a, %c0 : index
        %s = arith.select %neg, %q, %m : index
        %mx = arith.maxsi %s, %cd : index
        %sum = arith.addi %mx, %cm5 : index
        %v = arith.index_cast %sum : index to i32
        %w = arith.muli %v, %v : i32
        %at = arith.addi %row, %j : index
        buffer.set_value %t[%at], %w : memref<?xi32, #buffer.space<ub>>, i32"""


def kernel(nest: str, rows: int = 6, cols: int = 9) -> ModuleOp:
    text = KERNEL.format(nest=nest, rows=rows, cols=cols)
    text = text.replace("  %c0 = arith", "  %zero = arith.constant 0 : i32\n  %c0 = arith", 1)
    return _parse(text)


def _runs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each LoopNest.run ran vectorized, recorded while the test runs."""
    outcomes: list[bool] = []
    real = vl.LoopNest.run

    def recording(self: vl.LoopNest, env: Any) -> bool:
        outcomes.append(real(self, env))
        return outcomes[-1]

    monkeypatch.setattr(vl.LoopNest, "run", recording)
    return outcomes


def _feeds(rows: int = 6, cols: int = 9) -> dict[str, np.ndarray]:
    return {"arg0": np.zeros((rows, cols), np.int32)}


def test_a_nest_of_index_arith_runs_vectorized_with_the_sequential_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = _runs(monkeypatch)
    fast, slow = _both_ways(monkeypatch, kernel(ARITH), _feeds())
    assert runs and all(runs)  # every launch ran the nest vectorized
    np.testing.assert_array_equal(fast["out0"], slow["out0"])
    # spot-check against Python: row 1, j = 0 -> a = -3, b = -3, q = -1, s = -1, cd = 0
    assert fast["out0"][1, 0] == (0 - 5) ** 2


@pytest.mark.parametrize(
    ("case", "nest"),
    [
        # every j of a row stores at the same place: the last store wins
        (
            "same-place",
            ARITH.replace(
                "%at = arith.addi %row, %j : index", "%at = arith.addi %row, %c0 : index"
            ),
        ),
        # a value past 2**31: int64 numpy would not be Python's integers everywhere
        (
            "big-value",
            ARITH.replace(
                "%b = arith.muli %a, %r : index",
                "%big = arith.constant 4294967296 : index\n        %b0 = arith.muli %a, %r : index\n        %b = arith.addi %b0, %big : index",
            ),
        ),
        # a division by zero (at r = 0): the sequential run raises it
        (
            "zero-divisor",
            ARITH.replace("%q = arith.divsi %b, %c3 : index", "%q = arith.divsi %b, %r : index"),
        ),
        # a store past the buffer, at the last element
        (
            "overrun",
            ARITH.replace(
                "%at = arith.addi %row, %j : index",
                "%at0 = arith.addi %row, %j : index\n        %at = arith.addi %at0, %n : index",
            ),
        ),
    ],
)
def test_what_the_check_refuses_runs_sequentially(
    monkeypatch: pytest.MonkeyPatch, case: str, nest: str
) -> None:
    runs = _runs(monkeypatch)
    module = kernel(nest)
    errors = []
    for disable in (False, True):
        with monkeypatch.context() as m:
            if disable:
                m.setattr(vl.LoopNest, "of", lambda *a: None)
            try:
                errors.append(run_function(module, _feeds())["out0"].tobytes())
            except Exception as e:
                errors.append(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    assert runs and not any(runs)
    assert errors[0] == errors[1]
    if case in ("zero-divisor", "overrun"):
        assert isinstance(errors[0], str)


def test_a_float_store_is_not_vectorized() -> None:
    """Only integer stores are: a nest storing f32 stays sequential."""
    nest = ARITH.replace("%w = arith.muli %v, %v : i32", "%w = arith.constant 1.5 : f32")
    text = KERNEL.format(nest=nest, rows=2, cols=3).replace("i32", "f32")
    text = text.replace(
        "arith.index_cast %sum : index to f32", "arith.index_cast %sum : index to i32"
    )
    text = text.replace("  %c0 = arith", "  %zero = arith.constant 0.0 : f32\n  %c0 = arith", 1)
    module = _parse(text)
    y = run_function(module, {"arg0": np.zeros((2, 3), np.float32)})["out0"]
    np.testing.assert_array_equal(y, np.full((2, 3), 1.5, np.float32))


# ---- each op's vector twin against its closure -------------------------------------------

VALUES = (0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 1 << 20, -(1 << 20), (1 << 31) - 1)
OPS: list[type[Operation]] = [*vl._BINARY]  # pyright: ignore[reportPrivateUsage]


def _twin(op: Operation) -> Any:
    interp = make_interpreter(ModuleOp([]))

    def scalar(inner: Operation) -> Any:
        return _steps_of(inner, interp)[0]

    def width(t: Attribute) -> int | None:
        if isinstance(t, IntegerType):
            return t.width.data
        return interp.index_bitwidth if isinstance(t, IndexType) else None

    return vl._arith(op, scalar, width)  # pyright: ignore[reportPrivateUsage]


def _compare(op: Operation, inputs: list[tuple[Any, ...]]) -> None:
    """Element by element: the twin gives the closure's value, or refuses where the
    closure raises, a divisor is zero or a value may pass BOUND."""
    node = _twin(op)
    vectorized = 0
    arrays = [np.array(column, np.int64) for column in zip(*inputs)]
    for i, args in enumerate(inputs):
        env = dict(zip(op.operands, args))
        try:
            node.scalar(env)
            want: Any = env[op.results[0]]
        except Exception:
            want = None
        try:
            got = vl._ints(node.vector(*(a[i : i + 1] for a in arrays)))  # pyright: ignore[reportPrivateUsage]
        except vl._Sequential:  # pyright: ignore[reportPrivateUsage]
            # refused: a zero divisor, an error, or operands large enough for a value on
            # the way to pass BOUND
            large = max(abs(int(v)) for v in args) >= 1 << 15
            assert want is None or 0 in args or large or not -vl.BOUND < int(want) < vl.BOUND
            continue
        vectorized += 1
        assert want is not None and int(got[0]) == int(want), (op.name, args, got, want)
    assert vectorized > len(inputs) // 2


@pytest.mark.parametrize("op_type", OPS, ids=lambda t: t.name)
@pytest.mark.parametrize("width", [None, 32, 8])
def test_binary_twins(op_type: type[Operation], width: int | None) -> None:
    t: Attribute = IndexType() if width is None else IntegerType(width)
    a, b = (ValueOp(result_types=[t]).results[0] for _ in range(2))
    _compare(op_type(a, b), list(itertools.product(VALUES, VALUES)))  # type: ignore[call-arg]


@pytest.mark.parametrize("predicate", range(6))
def test_signed_compare_twins(predicate: int) -> None:
    a, b = (ValueOp(result_types=[IndexType()]).results[0] for _ in range(2))
    _compare(arith.CmpiOp(a, b, predicate), list(itertools.product(VALUES, VALUES)))


@pytest.mark.parametrize("predicate", range(6, 10))
def test_unsigned_compare_twins(predicate: int) -> None:
    a, b = (ValueOp(result_types=[IntegerType(8)]).results[0] for _ in range(2))
    small = [v for v in VALUES if v >= 0]
    _compare(arith.CmpiOp(a, b, predicate), list(itertools.product(small, small)))


@pytest.mark.parametrize(
    ("into", "out"),
    [(IndexType(), IntegerType(32)), (IndexType(), IntegerType(8)), (IntegerType(8), IndexType())],
)
def test_index_cast_twins(into: Attribute, out: Attribute) -> None:
    (a,) = (ValueOp(result_types=[into]).results[0],)
    _compare(arith.IndexCastOp(a, out), [(v,) for v in VALUES])
