"""Integer inputs of a rows kernel, widened to float32 by the kernel's own Cast.

The Llama layer's position ids are int64; the rotary tables take them as float32. On A2
the vector unit has Cast int64 -> float32 (rint, floor, ceil, round, trunc; no
CAST_NONE: asc-devkit Cast.md, dav_c220's vconv_s642f32*), so the rows kernel copies the
ids in as int64 and widens them with CAST_RINT, numpy's rounding: no library cast is
left. Chips without the pair (Ascend910, 310P) keep the cast a library op. The graph
interpreter, the buffer level and the emulated Ascend C agree, also on ids past 2^24
where float32 rounds.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen.emulate import run_function_emulated
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

TABLE = """
func.func @table(%ids: tensor<?x1xINT>) -> (tensor<?x4xf32>, tensor<?x4xf16>) {
  %g:2 = graph.fusion_group (%i = %ids : tensor<?x1xINT>) -> (tensor<?x4xf32>, tensor<?x4xf16>) {
    %f = graph.constant dense<[[1.0, 0.5, -2.0, 0.001]]> : tensor<1x4xf32>
    %p = graph.cast %i : tensor<?x1xINT> -> tensor<?x1xf32>
    %e = graph.mul %p, %f : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
    %h = graph.cast %e : tensor<?x4xf32> -> tensor<?x4xf16>
    graph.yield %e, %h : tensor<?x4xf32>, tensor<?x4xf16>
  }
  func.return %g#0, %g#1 : tensor<?x4xf32>, tensor<?x4xf16>
}
"""

ROUNDING = {"i64": "rint", "i32": "none"}
# the largest ids times 0.5 overflow f16 to inf, in numpy as in the kernel
OVERFLOW = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def table(elt: str) -> str:
    return TABLE.replace("INT", elt)


def ids(elt: str) -> np.ndarray:
    """Positions 0..4098, negatives, and (int64) ids that float32 must round."""
    values = [*range(4099), -1, -7, -40000, 2**24 + 1, 2**31 - 1]
    if elt == "i64":
        values += [2**40 + 3, -(2**53) - 1, 2**62 + 2**38 + 1]
    dtype = np.int64 if elt == "i64" else np.int32
    return np.array(values, dtype=dtype).reshape(-1, 1)


def lowered(text: str, chip: str = "Ascend910B1") -> ModuleOp:
    module = parse_module(default_context(), text, "table.mlir")
    return apply_pipeline(module, f"set-target{{chip={chip}}},lower-to-buffer")


@OVERFLOW
@pytest.mark.parametrize("elt", ["i64", "i32"])
def test_buffer_level_equals_the_graph(elt: str) -> None:
    """The kernel copies the ids in as integers and widens them with one Cast (rint for
    int64, which has no CAST_NONE); its float32 and f16 results equal numpy's."""
    text = table(elt)
    module = lowered(text)
    casts = [op for op in module.walk() if isinstance(op, buffer.VCastOp)]
    widen = [c for c in casts if str(c.src.type.element_type) == elt]  # type: ignore[attr-defined]
    assert [c.round.data for c in widen] == [ROUNDING[elt]]
    feeds = {"arg0": ids(elt)}
    want = run_function(parse_module(default_context(), text, "table.mlir"), feeds)
    got = run_function(module, feeds)
    assert want.keys() == got.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    # the ids past 2^24 are rounded, as numpy's astype rounds them
    exact = ids(elt)[:, 0].astype(np.float32)
    np.testing.assert_array_equal(got["out0"][:, 0], exact)


@OVERFLOW
@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize("elt", ["i64", "i32"])
def test_emulated_equals_the_buffer_level(elt: str) -> None:
    """The generated Cast<float, int64_t>(..., CAST_RINT, n) computes what the buffer
    interpreter does (the emulator accepts the pair on A2 only)."""
    module = lowered(table(elt))
    feeds = {"arg0": ids(elt)}
    want, got = run_function(module, feeds), run_function_emulated(module, feeds)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def test_no_int64_cast_off_a2() -> None:
    """Ascend910 has no int64 Cast: its rows kernel refuses the group, by name."""
    with pytest.raises(UserError, match=r"graph.cast of i64: the chip's Cast has no i64"):
        lowered(table("i64"), "Ascend910")
