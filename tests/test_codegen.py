"""Ascend C code generation (`-t ascendc`) and the CPU emulation of the API it uses.

Every kind of generated kernel is compiled with `g++ -std=c++17 -Wall -Werror` against
autofusion/codegen/include/kernel_operator.h and run through `buffer.launch`; its outputs
must match the buffer interpreter's. Kernels of one chip and element type share one
compiled library (built once, cached by content hash), so the suite compiles each kernel
once. The emulator itself is tested with a hand-written program that misuses the API in
every way it must reject.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.utils.exceptions import VerifyException

from autofusion import dtypes
from autofusion.codegen import emulate
from autofusion.codegen.ascendc_api import CANN8, AscendCApi
from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.codegen.emulate import EmulatedKernels, run_function_emulated
from autofusion.diagnostics import LocatedVerifyError, SourceLocation, UserError
from autofusion.dialects import buffer
from autofusion.interpreter import make_interpreter, run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")

# f16/bf16 outputs may differ by one rounding of their type (the f32 math before the
# final rounding differs in the last bits: library exp, reduction order)
TOLERANCE = {"f32": (2e-5, 2e-5), "f16": (1e-3, 1e-3), "bf16": (8e-3, 8e-3)}


# ---------------------------------------------------------------------------------------
# Fusion-group cases: one function per case, all lowered into one module per chip/type
# ---------------------------------------------------------------------------------------


def _case(name: str, body: str, args: list[tuple[str, str]], results: list[tuple[str, str]]) -> str:
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    bind = ", ".join(f"%{n}_ = %{n} : {t}" for n, t in args)
    rtypes = ", ".join(t for _, t in results)
    yields = ", ".join(f"%{n}" for n, _ in results)
    rets = ", ".join(f"%g#{i}" for i in range(len(results)))
    return f"""
func.func @{name}({sig}) -> ({rtypes}) {{
  %g:{len(results)} = graph.fusion_group ({bind}) -> ({rtypes}) {{
{body}
    graph.yield {yields} : {rtypes}
  }}
  func.return {rets} : {rtypes}
}}"""


def vector_cases(e: str, c: int) -> dict[str, str]:
    """The fusion groups every chip/type is tested with; rows are dynamic, c columns."""
    t, v, col = f"tensor<?x{c}x{e}>", f"tensor<{c}x{e}>", f"tensor<?x1x{e}>"
    s = f"tensor<{e}>"
    return {
        # elementwise chain with broadcasting: a row vector, a splat constant, a full
        # operand and a per-row column
        "chain": _case(
            "chain",
            f"    %k = graph.constant dense<0.5> : {s}\n"
            f"    %a = graph.add %x_, %b_ : ({t}, {v}) -> {t}\n"
            f"    %m = graph.mul %a, %k : ({t}, {s}) -> {t}\n"
            f"    %d = graph.sub %m, %y_ : {t}\n"
            f"    %q = graph.div %d, %r_ : ({t}, {col}) -> {t}\n"
            f"    %o = graph.max %q, %x_ : {t}",
            [("x", t), ("b", v), ("y", t), ("r", col)],
            [("o", t)],
        ),
        "gelu_erf": _case(
            "gelu_erf",
            f"    %a = graph.add %x_, %b_ : ({t}, {v}) -> {t}\n"
            f'    %o = graph.gelu %a {{approximate = "none"}} : {t}',
            [("x", t), ("b", v)],
            [("o", t)],
        ),
        "gelu_tanh_silu": _case(
            "gelu_tanh_silu",
            f'    %a = graph.gelu %x_ {{approximate = "tanh"}} : {t}\n    %o = graph.silu %a : {t}',
            [("x", t)],
            [("o", t)],
        ),
        "layer_norm": _case(
            "layer_norm",
            f"    %o = graph.layer_norm %x_, %w_, %b_ {{axis = -1, epsilon = 1.0e-05}} : "
            f"({t}, {v}, {v}) -> {t}",
            [("x", t), ("w", v), ("b", v)],
            [("o", t)],
        ),
        "rms_norm": _case(
            "rms_norm",
            f"    %o = graph.rms_norm %x_, %w_ {{axis = -1, epsilon = 1.0e-06}} : ({t}, {v}) -> {t}",
            [("x", t), ("w", v)],
            [("o", t)],
        ),
        "softmax": _case(
            "softmax",
            f"    %o = graph.softmax %x_ {{axis = -1}} : {t}\n"
            f"    %mx = graph.reduce_max %x_ {{axes = [-1], keepdims = false}} : ({t}) -> tensor<?x{e}>",
            [("x", t)],
            [("o", t), ("mx", f"tensor<?x{e}>")],
        ),
        "add_rms_norm": _case(
            "add_rms_norm",
            f"    %o, %s = graph.add_rms_norm %x_, %r_, %w_ {{axis = -1, epsilon = 1.0e-06}} : "
            f"({t}, {t}, {v}) -> ({t}, {t})",
            [("x", t), ("r", t), ("w", v)],
            [("o", t), ("s", t)],
        ),
        "per_row": _case(
            "per_row",
            f"    %d = graph.div %x_, %r_ : ({t}, {col}) -> {t}\n"
            f"    %e = graph.sub %r_, %d : ({col}, {t}) -> {t}\n"
            f"    %o = graph.max %e, %x_ : {t}",
            [("x", t), ("r", col)],
            [("o", t)],
        ),
    }


PER_CHANNEL = """
func.func @per_channel(%x: tensor<2x3x5x6xE>, %s: tensor<3x1x1xE>, %b: tensor<1x3x1x1xE>) -> tensor<2x3x5x6xE> {
  %r = graph.fusion_group (%xx = %x : tensor<2x3x5x6xE>, %ss = %s : tensor<3x1x1xE>, %bb = %b : tensor<1x3x1x1xE>) -> tensor<2x3x5x6xE> {
    %m = graph.mul %xx, %ss : (tensor<2x3x5x6xE>, tensor<3x1x1xE>) -> tensor<2x3x5x6xE>
    %a = graph.add %m, %bb : (tensor<2x3x5x6xE>, tensor<1x3x1x1xE>) -> tensor<2x3x5x6xE>
    %y = graph.relu %a : tensor<2x3x5x6xE>
    graph.yield %y : tensor<2x3x5x6xE>
  }
  func.return %r : tensor<2x3x5x6xE>
}"""

CHIP_COLS = {"Ascend910B1": 37, "Ascend910": 64}
CASES = sorted([*vector_cases("f32", 8), "per_channel"])
# Ascend910 has no DataCopyPad: the lowering takes only groups whose transfers are
# 32-byte multiples there (per-row values are not)
CASES_910 = ["chain_aligned", "gelu_erf", "layer_norm", "rms_norm", "add_rms_norm"]

_LIBRARIES: dict[tuple[str, str], tuple[ModuleOp, EmulatedKernels]] = {}


def vector_module_text(chip: str, elt: str) -> str:
    cases = vector_cases(elt, CHIP_COLS[chip])
    if chip == "Ascend910":
        texts = [cases[n] for n in CASES_910 if n in cases]
        # the chain without its per-row column (a per-row value is a 4-byte transfer)
        texts.append(
            cases["gelu_erf"]
            .replace("@gelu_erf", "@chain_aligned")
            .replace('graph.gelu %a {approximate = "none"}', "graph.relu %a")
        )
        return "\n".join(texts)
    return "\n".join([*cases.values(), PER_CHANNEL.replace("E>", f"{elt}>")])


def library(chip: str, elt: str) -> tuple[ModuleOp, EmulatedKernels]:
    """The lowered module of every case for (chip, elt) and its compiled kernels."""
    key = (chip, elt)
    if key not in _LIBRARIES:
        module = parse_module(default_context(), vector_module_text(chip, elt), "cases.mlir")
        apply_pipeline(module, f"set-target{{chip={chip}}},lower-to-buffer")
        _LIBRARIES[key] = (module, EmulatedKernels(module))
    return _LIBRARIES[key]


def feeds_for(module: ModuleOp, entry: str, rows: int, seed: int) -> dict[str, np.ndarray]:
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    rng = np.random.default_rng(seed)
    feeds = {}
    for i, t in enumerate(f.function_type.inputs.data):
        shape = tuple(rows if d < 0 else d for d in t.get_shape())
        value = rng.standard_normal(shape)
        if i > 0 and t.get_shape()[-1] == 1:  # a per-row divisor: keep it away from zero
            value = np.abs(value) + 1.0
        feeds[f"arg{i}"] = dtypes.to_storage(value, t.element_type)
    return feeds


def assert_same(
    want: dict[str, np.ndarray], got: dict[str, np.ndarray], elt: str, what: str
) -> None:
    rtol, atol = TOLERANCE[elt]
    assert list(got) == list(want)
    for key, value in want.items():
        w, g = value.astype(np.float64), got[key].astype(np.float64)
        assert w.shape == g.shape
        assert not np.isnan(g).any(), f"{what} {key}: NaN (an unwritten or padded lane leaked)"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{what} {key}")


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", CASES)
def test_vector_kernels_match_the_interpreter(case: str, elt: str) -> None:
    module, kernels = library("Ascend910B1", elt)
    rows_list = (1, 3, 67) if case != "per_channel" else (0,)
    for rows in rows_list:
        feeds = feeds_for(module, case, rows, seed=rows)
        want = run_function(module, feeds, case)
        got = run_function_emulated(module, feeds, case, kernels)
        assert_same(want, got, elt, f"{case} {elt} rows={rows}")


def test_each_kernel_file_compiles_on_its_own() -> None:
    """The library builds all kernels as one unit; each file also compiles alone with
    -Wall -Werror (given its tiling header, as an op project's build provides it)."""
    _, kernels = library("Ascend910B1", "f16")
    assert "-Wall" in emulate.CXXFLAGS and "-Werror" in emulate.CXXFLAGS
    for name in kernels.files:
        if name.startswith("op_kernel/") and name.endswith(".cpp"):
            emulate.compile_check(kernels.files, name)


@pytest.mark.parametrize("case,elt", [("chain", "f16"), ("softmax", "f32")])
def test_tail_cores_and_tail_tiles(case: str, elt: str) -> None:
    """Enough rows that cores take several tiles, the last tile is short and the last
    cores have no work at all."""
    module, kernels = library("Ascend910B1", elt)
    rows = 10000
    kernel = next(k for k in kernels.kernels if k.startswith(f"{case}_kernel"))
    results = kernels.tiling_rule(kernel, [rows, CHIP_COLS["Ascend910B1"]])
    params = dict(zip(kernels.kernels[kernel].fields, results[:-1]))
    blocks = results[-1]
    assert params["per_core"] >= 2 and rows % params["tile_rows"] != 0
    assert params["per_core"] * blocks > params["tiles"]
    feeds = feeds_for(module, case, rows, seed=7)
    assert_same(
        run_function(module, feeds, case),
        run_function_emulated(module, feeds, case, kernels),
        elt,
        f"{case} rows={rows}",
    )


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_ascend910_without_datacopypad(elt: str) -> None:
    """910 (A1): no DataCopyPad, no GET_TILING_DATA, 4 queue buffers per position."""
    module, kernels = library("Ascend910", elt)
    for name, text in kernels.files.items():
        assert "DataCopyPad" not in text, name
        if name.startswith("op_kernel/") and name.endswith(".cpp"):
            assert "KERNEL_TYPE_AICORE" in text and "tilingGm.GetValue(0)" in text
            assert "GET_TILING_DATA" not in text
    for case in CASES_910:
        for rows in (1, 5, 70):
            feeds = feeds_for(module, case, rows, seed=rows)
            want = run_function(module, feeds, case)
            got = run_function_emulated(module, feeds, case, kernels)
            assert_same(want, got, elt, f"Ascend910 {case} {elt} rows={rows}")


def test_ascend910_unaligned_rows_are_caught() -> None:
    """A kernel whose rows are not 32-byte multiples, moved to Ascend910 (no DataCopyPad):
    the interpreter refuses the copy; the generated DataCopy would silently truncate on
    the hardware, which the emulator does too, or reports under strict truncation."""
    text = _case(
        "main",
        '    %o = graph.gelu %x_ {approximate = "tanh"} : tensor<?x40xf16>',
        [("x", "tensor<?x40xf16>")],
        [("o", "tensor<?x40xf16>")],
    )
    module = apply_pipeline(
        parse_module(default_context(), text, "g.mlir"),
        "set-target{chip=Ascend910B1},lower-to-buffer",
    )
    # the module's target and the kernel's chip move together (the verifier keeps them equal)
    moved = str(module).replace('"Ascend910B1"', '"Ascend910"')
    module = parse_module(default_context(), moved, "moved.mlir")
    feeds = {"arg0": np.ones((3, 40), np.float16)}
    with pytest.raises(Exception, match="no DataCopyPad"):
        run_function(module, feeds)
    files = emit_ascendc(module)
    assert "DataCopyPad" not in files["op_kernel/main_kernel0.cpp"]
    with pytest.raises(
        UserError, match=r"DataCopy of \d+ elements \(\d+ bytes\) is not a multiple of 32"
    ):
        run_function_emulated(module, feeds)
    truncated = run_function_emulated(module, feeds, kernels=EmulatedKernels(module, strict=False))
    assert np.isnan(truncated["out0"].astype(np.float32)).any()  # the tail never arrives


# ---------------------------------------------------------------------------------------
# Hand-written kernels: every buffer op, the cube path
# ---------------------------------------------------------------------------------------

F32_UB = "memref<?xf32, #buffer.space<ub>>"
F32_GM = "memref<?xf32, #buffer.space<gm>>"

ALL_OPS = f"""
func.func @main(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x8xf32>) {{
  %blocks = arith.constant 2 : index
  %rows = arith.constant 2 : index
  %o, %s = buffer.launch @every_op blocks(%blocks) (%x, %y) tiling(%rows) dims() : (tensor<4x64xf32>, tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x8xf32>)
  func.return %o, %s : tensor<4x64xf32>, tensor<4x8xf32>
}}
buffer.kernel @every_op(%x: {F32_GM}, %y: {F32_GM}, %o: {F32_GM}, %s: {F32_GM}, %rows: index) attributes {{chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 2, num_outputs = 2}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %lo = arith.constant -0.25 : f32
  %zero = arith.constant 0.0 : f32
  %qx = buffer.alloc_queue %c256 buffers 2 max_bytes 256 of f32 : !buffer.queue<vecin>
  %qy = buffer.alloc_queue %c256 buffers 2 max_bytes 256 of f32 : !buffer.queue<vecin>
  %qo = buffer.alloc_queue %c256 buffers 2 max_bytes 256 of f32 : !buffer.queue<vecout>
  %qs = buffer.alloc_queue %c32 buffers 1 max_bytes 32 of f32 : !buffer.queue<vecout>
  %t1 = buffer.alloc_buf "veccalc" %c256 max_bytes 256 -> {F32_UB}
  %t2 = buffer.alloc_buf "veccalc" %c256 max_bytes 256 -> {F32_UB}
  %t3 = buffer.alloc_buf "veccalc" %c256 max_bytes 256 -> {F32_UB}
  %mask = buffer.alloc_buf "veccalc" %c64 max_bytes 64 -> memref<?xi8, #buffer.space<ub>>
  %red = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> {F32_UB}
  %tmp = buffer.alloc_buf "veccalc" %c256 max_bytes 256 -> {F32_UB}
  %bid = buffer.block_idx
  %nb = buffer.block_num
  %row0 = arith.muli %bid, %rows : index
  scf.for %r = %c0 to %rows step %c1 {{
    %row = arith.addi %row0, %r : index
    %off = arith.muli %row, %c64 : index
    buffer.stage "copy_in" {{
      %xs = buffer.queue_alloc %qx : !buffer.queue<vecin> -> {F32_UB}
      %xg = buffer.view %x[%off] : {F32_GM}
      buffer.copy %xg to %xs blocks %c1 x %c64 strides %c0, %c0 : {F32_GM} to {F32_UB}
      buffer.enque %qx, %xs : !buffer.queue<vecin>, {F32_UB}
      %ys = buffer.queue_alloc %qy : !buffer.queue<vecin> -> {F32_UB}
      %yg = buffer.view %y[%off] : {F32_GM}
      buffer.copy %yg to %ys blocks %c2 x %c32 strides %c32, %c32 : {F32_GM} to {F32_UB}
      buffer.enque %qy, %ys : !buffer.queue<vecin>, {F32_UB}
    }}
    buffer.stage "compute" {{
      %xd = buffer.deque %qx : !buffer.queue<vecin> -> {F32_UB}
      %yd = buffer.deque %qy : !buffer.queue<vecin> -> {F32_UB}
      buffer.vbinary "sub" %t1, %xd, %yd, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      buffer.vunary "abs" %t1, %t1, %c64 : {F32_UB}, {F32_UB}
      buffer.vscalar "adds" %t1, %t1, %one, %c64 : {F32_UB}, {F32_UB}, f32
      buffer.vunary "ln" %t2, %t1, %c64 : {F32_UB}, {F32_UB}
      buffer.vunary "sqrt" %t3, %t1, %c64 : {F32_UB}, {F32_UB}
      buffer.vbinary "div" %t2, %t2, %t3, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      buffer.vunary "rsqrt" %t3, %t1, %c64 : {F32_UB}, {F32_UB}
      buffer.vbinary "mul" %t2, %t2, %t3, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      buffer.vcompare "gt" %mask, %xd, %yd, %c64 : memref<?xi8, #buffer.space<ub>>, {F32_UB}, {F32_UB}
      buffer.vselect %t1, %mask, %xd, %yd, %c64 : {F32_UB}, memref<?xi8, #buffer.space<ub>>, {F32_UB}, {F32_UB}
      buffer.vbinary "max" %t3, %t1, %t2, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      buffer.vbinary "min" %t3, %t3, %xd, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      buffer.vunary "relu" %t1, %yd, %c64 : {F32_UB}, {F32_UB}
      buffer.vscalar "muls" %t1, %t1, %half, %c64 : {F32_UB}, {F32_UB}, f32
      buffer.vunary "exp" %t1, %t1, %c64 : {F32_UB}, {F32_UB}
      buffer.vunary "reciprocal" %t1, %t1, %c64 : {F32_UB}, {F32_UB}
      buffer.vbinary "add" %t3, %t3, %t1, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      buffer.vscalar "maxs" %t3, %t3, %lo, %c64 : {F32_UB}, {F32_UB}, f32
      buffer.vscalar "mins" %t3, %t3, %one, %c64 : {F32_UB}, {F32_UB}, f32
      buffer.vreduce "min" %red, %t3, %tmp, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      %mn = buffer.get_value %red[%c0] : {F32_UB} -> f32
      buffer.vreduce "max" %red, %t3, %tmp, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      %mx = buffer.get_value %red[%c0] : {F32_UB} -> f32
      buffer.vreduce "sum" %red, %t3, %tmp, %c64 : {F32_UB}, {F32_UB}, {F32_UB}
      %sm = buffer.get_value %red[%c0] : {F32_UB} -> f32
      %acc = scf.for %i = %c0 to %c64 step %c16 iter_args(%a = %zero) -> (f32) {{
        %e = buffer.get_value %t3[%i] : {F32_UB} -> f32
        %n = arith.addf %a, %e : f32
        scf.yield %n : f32
      }}
      %first = arith.cmpi eq, %bid, %c0 : index
      scf.if %first {{
        buffer.set_value %t2[%c0], %acc : {F32_UB}, f32
        scf.yield
      }} else {{
        buffer.set_value %t2[%c0], %sm : {F32_UB}, f32
        scf.yield
      }}
      buffer.set_value %t2[%c1], %mn : {F32_UB}, f32
      buffer.set_value %t2[%c2], %mx : {F32_UB}, f32
      %t2v = buffer.view %t2[%c8] : {F32_UB}
      buffer.vdup %t2v, %mx, %c8 : {F32_UB}, f32
      %ot = buffer.queue_alloc %qo : !buffer.queue<vecout> -> {F32_UB}
      buffer.copy %t3 to %ot blocks %c1 x %c64 strides %c0, %c0 : {F32_UB} to {F32_UB}
      buffer.enque %qo, %ot : !buffer.queue<vecout>, {F32_UB}
      %st = buffer.queue_alloc %qs : !buffer.queue<vecout> -> {F32_UB}
      buffer.copy %t2 to %st blocks %c1 x %c7 strides %c0, %c0 : {F32_UB} to {F32_UB}
      %nbi = arith.index_cast %nb : index to i64
      %nbf = arith.sitofp %nbi : i64 to f32
      buffer.set_value %st[%c7], %nbf : {F32_UB}, f32
      buffer.enque %qs, %st : !buffer.queue<vecout>, {F32_UB}
      buffer.queue_free %qx, %xd : !buffer.queue<vecin>, {F32_UB}
      buffer.queue_free %qy, %yd : !buffer.queue<vecin>, {F32_UB}
    }}
    buffer.stage "copy_out" {{
      %od = buffer.deque %qo : !buffer.queue<vecout> -> {F32_UB}
      %og = buffer.view %o[%off] : {F32_GM}
      buffer.copy %od to %og blocks %c2 x %c32 strides %c32, %c32 : {F32_UB} to {F32_GM}
      buffer.queue_free %qo, %od : !buffer.queue<vecout>, {F32_UB}
      %sd = buffer.deque %qs : !buffer.queue<vecout> -> {F32_UB}
      %soff = arith.muli %row, %c8 : index
      %sg = buffer.view %s[%soff] : {F32_GM}
      buffer.copy %sd to %sg blocks %c1 x %c8 strides %c0, %c0 : {F32_UB} to {F32_GM}
      buffer.queue_free %qs, %sd : !buffer.queue<vecout>, {F32_UB}
    }}
  }}
  buffer.return
}}
"""


def test_every_vector_op_prints_and_runs() -> None:
    """One kernel with every vector-side buffer op: the emulator agrees with the
    interpreter, and the queues, events and copies it needs are all exercised."""
    module = parse_module(default_context(), ALL_OPS, "every_op.mlir")
    files = emit_ascendc(module)
    code = files["op_kernel/every_op.cpp"]
    for api in ("Compare(", "Select(", "ReduceMin(", "ReduceMax(", "ReduceSum(", "Duplicate("):
        assert api in code
    assert "DataCopyParams" in code and "SetFlag<HardEvent::V_S>" in code
    assert "Muls(st, t2, 1.0f, 7);" in code  # a 28-byte UB copy is an exact vector copy
    rng = np.random.default_rng(3)
    feeds = {"arg0": rng.standard_normal((4, 64)), "arg1": rng.standard_normal((4, 64))}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    assert_same(
        run_function(module, feeds), run_function_emulated(module, feeds), "f32", "every_op"
    )


def _cube(chip: str = "Ascend910B1") -> str:
    l1, l0a, l0b, l0c = (
        f"memref<?x{t}, #buffer.space<{s}>>"
        for t, s in (("f16", "l1"), ("f16", "l0a"), ("f16", "l0b"), ("f32", "l0c"))
    )
    gm16, gm32 = "memref<?xf16, #buffer.space<gm>>", F32_GM
    return f"""
func.func @main(%a: tensor<64x64xf16>, %b: tensor<64x32xf16>, %a2: tensor<20x32xf16>, %b2: tensor<32x48xf16>) -> (tensor<64x32xf16>, tensor<20x48xf32>) {{
  %two = arith.constant 2 : index
  %one = arith.constant 1 : index
  %m = arith.constant 32 : index
  %n = arith.constant 32 : index
  %k = arith.constant 64 : index
  %kb = arith.constant 16 : index
  %c = buffer.launch @matmul_relu blocks(%two) (%a, %b) tiling(%m, %n, %k, %kb) dims() : (tensor<64x64xf16>, tensor<64x32xf16>) -> tensor<64x32xf16>
  %m2 = arith.constant 20 : index
  %n2 = arith.constant 48 : index
  %k2 = arith.constant 32 : index
  %c2 = buffer.launch @matmul_queues blocks(%one) (%a2, %b2) tiling(%m2, %n2, %k2) dims() : (tensor<20x32xf16>, tensor<32x48xf16>) -> tensor<20x48xf32>
  func.return %c, %c2 : tensor<64x32xf16>, tensor<20x48xf32>
}}
buffer.kernel @matmul_relu(%a: {gm16}, %b: {gm16}, %c: {gm16}, %m: index, %n: index, %k: index, %kb: index) attributes {{chip = "{chip}", template = "matmul", core_type = "aic", num_inputs = 2, num_outputs = 1}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %m_mmad = arith.maxsi %m, %c16 : index
  %mkb = arith.muli %m, %kb : index
  %a_bytes = arith.muli %mkb, %c2 : index
  %kbn = arith.muli %kb, %n : index
  %b_bytes = arith.muli %kbn, %c2 : index
  %mn = arith.muli %m, %n : index
  %c_bytes = arith.muli %mn, %c4 : index
  %a1 = buffer.alloc_buf "a1" %a_bytes max_bytes 4096 -> {l1}
  %b1 = buffer.alloc_buf "b1" %b_bytes max_bytes 4096 -> {l1}
  %a2 = buffer.alloc_buf "a2" %a_bytes max_bytes 4096 -> {l0a}
  %b2 = buffer.alloc_buf "b2" %b_bytes max_bytes 4096 -> {l0b}
  %co = buffer.alloc_buf "co1" %c_bytes max_bytes 4096 -> {l0c}
  %bid = buffer.block_idx
  %row0 = arith.muli %bid, %m : index
  %a_off = arith.muli %row0, %k : index
  %ablk = buffer.view %a[%a_off] : {gm16}
  %steps = arith.divsi %k, %kb : index
  scf.for %s = %c0 to %steps step %c1 {{
    %k0 = arith.muli %s, %kb : index
    %a_src = buffer.view %ablk[%k0] : {gm16}
    buffer.copy %a_src to %a1 blocks %m x %kb strides %k, %kb : {gm16} to {l1}
    %b_off = arith.muli %k0, %n : index
    %b_src = buffer.view %b[%b_off] : {gm16}
    buffer.copy %b_src to %b1 blocks %kb x %n strides %n, %n : {gm16} to {l1}
    buffer.copy %a1 to %a2 blocks %m x %kb strides %kb, %kb : {l1} to {l0a}
    buffer.copy %b1 to %b2 blocks %kb x %n strides %n, %n : {l1} to {l0b}
    %acc = arith.cmpi ne, %s, %c0 : index
    buffer.pipe_barrier "M" small_mmad(%m_mmad, %n)
    buffer.mmad %co, %a2, %b2, %m_mmad, %n, %kb, %acc : {l0c}, {l0a}, {l0b}
  }}
  %c_off = arith.muli %row0, %n : index
  %c_dst = buffer.view %c[%c_off] : {gm16}
  buffer.copy %co to %c_dst blocks %m x %n strides %n, %n relu true : {l0c} to {gm16}
  buffer.return
}}
buffer.kernel @matmul_queues(%a: {gm16}, %b: {gm16}, %c: {gm32}, %m: index, %n: index, %k: index) attributes {{chip = "{chip}", template = "matmul", core_type = "aic", num_inputs = 2, num_outputs = 1}} {{
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %false = arith.constant false
  %m16 = arith.ceildivsi %m, %c16 : index
  %mp = arith.muli %m16, %c16 : index
  %k16 = arith.ceildivsi %k, %c16 : index
  %kp = arith.muli %k16, %c16 : index
  %n16 = arith.ceildivsi %n, %c16 : index
  %np = arith.muli %n16, %c16 : index
  %mk = arith.muli %mp, %kp : index
  %a_bytes = arith.muli %mk, %c2 : index
  %kn = arith.muli %kp, %np : index
  %b_bytes = arith.muli %kn, %c2 : index
  %mn = arith.muli %mp, %np : index
  %c_bytes = arith.muli %mn, %c4 : index
  %qa1 = buffer.alloc_queue %a_bytes buffers 1 max_bytes 2048 of f16 : !buffer.queue<a1>
  %qb1 = buffer.alloc_queue %b_bytes buffers 1 max_bytes 3072 of f16 : !buffer.queue<b1>
  %qa2 = buffer.alloc_queue %a_bytes buffers 1 max_bytes 2048 of f16 : !buffer.queue<a2>
  %qb2 = buffer.alloc_queue %b_bytes buffers 1 max_bytes 3072 of f16 : !buffer.queue<b2>
  %qc = buffer.alloc_queue %c_bytes buffers 1 max_bytes 6144 of f32 : !buffer.queue<co1>
  buffer.stage "copy_in" {{
    %a1 = buffer.queue_alloc %qa1 : !buffer.queue<a1> -> {l1}
    buffer.copy %a to %a1 blocks %m x %k strides %k, %k : {gm16} to {l1}
    buffer.enque %qa1, %a1 : !buffer.queue<a1>, {l1}
    %b1 = buffer.queue_alloc %qb1 : !buffer.queue<b1> -> {l1}
    buffer.copy %b to %b1 blocks %k x %n strides %n, %n : {gm16} to {l1}
    buffer.enque %qb1, %b1 : !buffer.queue<b1>, {l1}
  }}
  buffer.stage "compute" {{
    %a1 = buffer.deque %qa1 : !buffer.queue<a1> -> {l1}
    %b1 = buffer.deque %qb1 : !buffer.queue<b1> -> {l1}
    %a2 = buffer.queue_alloc %qa2 : !buffer.queue<a2> -> {l0a}
    buffer.copy %a1 to %a2 blocks %m x %k strides %k, %k : {l1} to {l0a}
    buffer.enque %qa2, %a2 : !buffer.queue<a2>, {l0a}
    %b2 = buffer.queue_alloc %qb2 : !buffer.queue<b2> -> {l0b}
    buffer.copy %b1 to %b2 blocks %k x %n strides %n, %n : {l1} to {l0b}
    buffer.enque %qb2, %b2 : !buffer.queue<b2>, {l0b}
    buffer.queue_free %qa1, %a1 : !buffer.queue<a1>, {l1}
    buffer.queue_free %qb1, %b1 : !buffer.queue<b1>, {l1}
    %a2d = buffer.deque %qa2 : !buffer.queue<a2> -> {l0a}
    %b2d = buffer.deque %qb2 : !buffer.queue<b2> -> {l0b}
    %c1 = buffer.queue_alloc %qc : !buffer.queue<co1> -> {l0c}
    %m_mmad = arith.maxsi %m, %c16 : index
    buffer.mmad %c1, %a2d, %b2d, %m_mmad, %n, %k, %false : {l0c}, {l0a}, {l0b}
    buffer.enque %qc, %c1 : !buffer.queue<co1>, {l0c}
    buffer.queue_free %qa2, %a2d : !buffer.queue<a2>, {l0a}
    buffer.queue_free %qb2, %b2d : !buffer.queue<b2>, {l0b}
  }}
  buffer.stage "copy_out" {{
    %cd = buffer.deque %qc : !buffer.queue<co1> -> {l0c}
    buffer.copy %cd to %c blocks %m x %n strides %n, %n : {l0c} to {gm32}
    buffer.queue_free %qc, %cd : !buffer.queue<co1>, {l0c}
  }}
  buffer.return
}}
"""


def test_cube_kernels_match_the_interpreter() -> None:
    """GM -> L1 (Nz) -> L0A (Zz) / L0B (Zn) -> Mmad -> L0C (Nz) -> Fixpipe -> GM, with
    TBufs and events (a K loop accumulating, ReLU and f16 on the way out) and with
    queues (m = 20 rows: a padded fractal). L1/L0 buffers hold the fractal layout, so
    they are sized for rows rounded up to 16 (the emulator checks it)."""
    module = parse_module(default_context(), _cube(), "cube.mlir")
    files = emit_ascendc(module)
    code = files["op_kernel/matmul_relu.cpp"]
    for api in ("Nd2NzParams", "LoadData(", "Mmad(", "Fixpipe(", "KERNEL_TYPE_AIC_ONLY"):
        assert api in code
    for event in ("MTE2_MTE1", "MTE1_M", "M_FIX", "M_MTE1", "MTE1_MTE2"):
        assert f"SetFlag<HardEvent::{event}>" in code
    assert "TQue<QuePosition::A1, 1>" in files["op_kernel/matmul_queues.cpp"]
    rng = np.random.default_rng(5)
    shapes = [(64, 64), (64, 32), (20, 32), (32, 48)]
    feeds = {f"arg{i}": rng.standard_normal(s).astype(np.float16) for i, s in enumerate(shapes)}
    want = run_function(module, feeds)
    got = run_function_emulated(module, feeds)
    np.testing.assert_array_equal(got["out0"], want["out0"])
    np.testing.assert_allclose(got["out1"], want["out1"], rtol=1e-6, atol=1e-5)
    a, b = (feeds[k].astype(np.float64) for k in ("arg0", "arg1"))
    np.testing.assert_allclose(got["out0"].astype(np.float64), np.maximum(a @ b, 0), atol=2e-2)


def test_cube_op_on_a_vector_core_is_rejected() -> None:
    """The same matmul declared core_type "aiv" runs on an AIV core, which has no cube."""
    module = parse_module(default_context(), _cube().replace('"aic"', '"aiv"'), "cube.mlir")
    feeds = {
        f"arg{i}": np.ones(s, np.float16)
        for i, s in enumerate([(64, 64), (64, 32), (20, 32), (32, 48)])
    }
    with pytest.raises(UserError, match="cube instruction in a vector-only"):
        run_function_emulated(module, feeds)


WORKSPACE = f"""
func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {{
  %blocks = arith.constant 2 : index
  %rows = arith.constant 2 : index
  %bytes = arith.constant 1024 : index
  %o = buffer.launch @round_trip blocks(%blocks) (%x) tiling(%rows, %bytes) dims() : (tensor<4x64xf32>) -> tensor<4x64xf32>
  func.return %o : tensor<4x64xf32>
}}
buffer.kernel @round_trip(%x: {F32_GM}, %o: {F32_GM}, %rows: index, %ws_bytes: index) attributes {{chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %two = arith.constant 2.0 : f32
  %ws = buffer.workspace %ws_bytes : {F32_GM}
  %t = buffer.alloc_buf "veccalc" %c256 max_bytes 256 -> {F32_UB}
  %u = buffer.alloc_buf "veccalc" %c256 max_bytes 256 -> {F32_UB}
  %bid = buffer.block_idx
  %row0 = arith.muli %bid, %rows : index
  scf.for %r = %c0 to %rows step %c1 {{
    %row = arith.addi %row0, %r : index
    %off = arith.muli %row, %c64 : index
    %xg = buffer.view %x[%off] : {F32_GM}
    buffer.copy %xg to %t blocks %c1 x %c64 strides %c0, %c0 : {F32_GM} to {F32_UB}
    buffer.vscalar "muls" %t, %t, %two, %c64 : {F32_UB}, {F32_UB}, f32
    %wg = buffer.view %ws[%off] : {F32_GM}
    buffer.copy %t to %wg blocks %c1 x %c64 strides %c0, %c0 : {F32_UB} to {F32_GM}
    buffer.copy %wg to %u blocks %c1 x %c64 strides %c0, %c0 : {F32_GM} to {F32_UB}
    %og = buffer.view %o[%off] : {F32_GM}
    buffer.copy %u to %og blocks %c1 x %c64 strides %c0, %c0 : {F32_UB} to {F32_GM}
  }}
  buffer.return
}}
"""


def test_workspace_round_trip() -> None:
    """A kernel's GM workspace: the launcher allocates what the tiling says, the kernel
    finds it with GetUserWorkspace, and the GM write is ordered before the read back."""
    module = parse_module(default_context(), WORKSPACE, "ws.mlir")
    files = emit_ascendc(module)
    code, host = files["op_kernel/round_trip.cpp"], files["op_host/round_trip.cpp"]
    assert "GM_ADDR userWorkspace = GetUserWorkspace(workspace);" in code
    assert "SetFlag<HardEvent::MTE3_MTE2>" in code
    assert '#include "tiling/platform/platform_ascendc.h"' in host
    assert (
        "workspaceSizes[0] = platform.GetLibApiWorkSpaceSize() + static_cast<size_t>((1024 + 511) / 512 * 512);"
        in host
    )
    x = np.arange(256, dtype=np.float32).reshape(4, 64)
    assert_same(
        run_function(module, {"arg0": x}),
        run_function_emulated(module, {"arg0": x}),
        "f32",
        "workspace",
    )
    kernels = EmulatedKernels(module)
    assert kernels.tiling_func("round_trip", [[4, 64]]) == ([2, 1024], 2)


def test_mix_kernels_on_split_chips_say_where_each_op_runs() -> None:
    """A mix kernel on a split chip runs its cube stages on the AIC and the others on
    the AIVs (tests/test_codegen_cube.py): an op on L1/L0 outside a stage has no core."""
    text = _cube().replace('core_type = "aic"', 'core_type = "mix"', 1)
    with pytest.raises(
        VerifyException, match=r"buffer\.\w+ touches AIC buffers outside a buffer\.stage"
    ):
        parse_module(default_context(), text, "mix.mlir")


def test_matmul_template_kernel() -> None:
    """A matmul group as the lowering's matmul template emits it (cube only: Fixpipe to GM)."""
    text = _case(
        "main",
        "    %o = graph.matmul %a_, %b_ : (tensor<50x64xf16>, tensor<64x40xf16>) -> tensor<50x40xf16>",
        [("a", "tensor<50x64xf16>"), ("b", "tensor<64x40xf16>")],
        [("o", "tensor<50x40xf16>")],
    )
    try:
        module = _lowered(text)
    except UserError as e:
        pytest.skip(f"the lowering has no matmul template here: {e}")
    rng = np.random.default_rng(2)
    feeds = {
        "arg0": rng.standard_normal((50, 64)).astype(np.float16),
        "arg1": rng.standard_normal((64, 40)).astype(np.float16),
    }
    assert_same(
        run_function(module, feeds), run_function_emulated(module, feeds), "f16", "matmul template"
    )


# ---------------------------------------------------------------------------------------
# Host side: the tiling twins
# ---------------------------------------------------------------------------------------


@register_impls
class _RecordLaunches(InterpreterFunctions):
    """Records the (tiling, blocks) of every launch instead of running it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, tuple[list[int], int]] = {}

    @impl(buffer.LaunchOp)
    def run_launch(
        self, interp: Interpreter, op: buffer.LaunchOp, args: PythonValues
    ) -> PythonValues:
        n_in, n_t = len(op.inputs), len(op.tiling)
        self.seen[op.kernel.root_reference.data] = (
            [int(v) for v in args[1 + n_in : 1 + n_in + n_t]],
            int(args[0]),
        )
        raise _Stop


class _Stop(Exception):
    pass


def test_host_tiling_functions_agree_with_the_ir() -> None:
    """The C++ tiling rule equals the IR's on many (rows, cols); the TilingFunc computes
    from input shapes what the IR's host code passes to the launch."""
    module, kernels = library("Ascend910B1", "f32")
    rules = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    rng = np.random.default_rng(1)
    for name, info in kernels.kernels.items():
        assert info.rule_arity is not None and info.has_tiling_func
        rule = rules[f"{name}_tiling"]
        interp = make_interpreter(module)
        for rows, cols in [(1, 1), (3, 37), (4096, 37), *rng.integers(1, 100000, (5, 2)).tolist()]:
            args = [rows, cols][: info.rule_arity[0]]
            assert kernels.tiling_rule(name, args) == list(interp.call_op(rule, tuple(args))), (
                name,
                rows,
                cols,
            )
    for case in CASES:
        for rows in (1, 67, 5000):
            entry = next(k for k in kernels.kernels if k.startswith(f"{case}_kernel"))
            feeds = feeds_for(module, case, rows if case != "per_channel" else 0, seed=0)
            recorder = _RecordLaunches()
            interp = make_interpreter(module)
            interp.register_implementations(recorder, override=True)
            f = rules[case]
            with pytest.raises(_Stop):
                interp.call_op(f, tuple(feeds[f"arg{i}"] for i in range(len(feeds))))
            # the launch's inputs are the function's arguments, in order
            shapes = [list(feeds[f"arg{i}"].shape) for i in range(len(feeds))]
            assert kernels.tiling_func(entry, shapes) == recorder.seen[entry], (case, rows)


def test_tiling_func_rejects_shapes_the_kernel_was_not_built_for() -> None:
    _, kernels = library("Ascend910B1", "f32")
    entry = next(k for k in kernels.kernels if k.startswith("rms_norm_kernel"))
    with pytest.raises(UserError, match="rejected the shapes"):
        kernels.tiling_func(entry, [[5, 38], [37]])  # 37 columns are static in the IR


# ---------------------------------------------------------------------------------------
# The printer: determinism, options, diagnostics, the API table
# ---------------------------------------------------------------------------------------

DEBUG_INPUT = """
func.func @main(%x: tensor<?x40xf32>, %g: tensor<40xf32>) -> tensor<?x40xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<?x40xf32>, %gg = %g : tensor<40xf32>) -> tensor<?x40xf32> {
    %y = graph.rms_norm %xx, %gg {axis = -1, epsilon = 1.0e-06} : (tensor<?x40xf32>, tensor<40xf32>) -> tensor<?x40xf32> loc("model.py":7:9)
    %s = graph.silu %y : tensor<?x40xf32> loc("model.py":8:3)
    graph.yield %s : tensor<?x40xf32>
  }
  func.return %r : tensor<?x40xf32>
}
"""


def _tool(name: str) -> str:
    """A console script of this environment."""
    return str(Path(sys.executable).parent / name)


def _lowered(text: str, chip: str = "Ascend910B1") -> ModuleOp:
    return apply_pipeline(
        parse_module(default_context(), text, "in.mlir"),
        f"set-target{{chip={chip}}},lower-to-buffer",
    )


def test_output_is_deterministic(tmp_path: Path) -> None:
    module_a, module_b = _lowered(DEBUG_INPUT), _lowered(DEBUG_INPUT)
    assert emit_ascendc(module_a, debug=True) == emit_ascendc(module_b, debug=True)
    source = tmp_path / "in.mlir"
    source.write_text(DEBUG_INPUT)
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [_tool("afc-opt"), str(source), "-p", "lower-to-buffer", "-t", "ascendc{debug=true}"],
            capture_output=True,
            env=env,
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and b'extern "C" __global__ __aicore__' in outputs[0]


def test_debug_comments_map_statements_to_graph_ops() -> None:
    plain = emit_ascendc(_lowered(DEBUG_INPUT))["op_kernel/main_kernel0.cpp"]
    debug = emit_ascendc(_lowered(DEBUG_INPUT), debug=True)["op_kernel/main_kernel0.cpp"]
    assert "model.py" not in plain
    assert "ReduceSum(red_dst" in debug
    reduce_line = next(line for line in debug.splitlines() if "ReduceSum(" in line)
    assert reduce_line.endswith("// graph.rms_norm at model.py:7:9")
    exp_line = next(line for line in debug.splitlines() if "Exp(" in line)
    assert exp_line.endswith("// graph.silu at model.py:8:3")
    # the queue bookkeeping has no graph op
    assert not next(line for line in debug.splitlines() if "EnQue(" in line).rstrip().endswith("3")


def test_dir_option_writes_every_file(tmp_path: Path) -> None:
    from autofusion.tools.afc_opt import main as afc_opt

    source = tmp_path / "in.mlir"
    source.write_text(DEBUG_INPUT)
    out = tmp_path / "kernels"
    assert afc_opt([str(source), "-p", "lower-to-buffer", "-t", f"ascendc{{dir={out}}}"]) == 0
    files = emit_ascendc(_lowered(DEBUG_INPUT))
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == sorted(files)
    for name, text in files.items():
        assert (out / name).read_text() == text


def test_compile_errors_are_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AFC_CACHE_DIR", str(tmp_path))
    real = emulate.emit_ascendc

    def broken(module: ModuleOp, debug: bool = False) -> dict[str, str]:
        files = real(module, debug)
        files["op_kernel/main_kernel0.cpp"] += "int broken = undeclared_name;\n"
        return files

    monkeypatch.setattr(emulate, "emit_ascendc", broken)
    with pytest.raises(UserError) as info:
        EmulatedKernels(_lowered(DEBUG_INPUT))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("emulation build failed: op_kernel/main_kernel0.cpp:")
    assert "undeclared_name" in message and "was not declared" in message


def test_api_names_come_from_the_table() -> None:
    api = AscendCApi(
        version="renamed",
        set_block_dim="SetSimdNumBlocks",
        data_copy_pad="DataCopyPadV2",
        vector_unary={**CANN8.vector_unary, "exp": "ExpV2"},
    )
    # f16 rows of 40 elements are 80 bytes: they need DataCopyPad
    files = emit_ascendc(_lowered(DEBUG_INPUT.replace("f32", "f16")), api=api)
    kernel, host = files["op_kernel/main_kernel0.cpp"], files["op_host/main_kernel0.cpp"]
    assert "ExpV2(" in kernel and "Exp(" not in kernel
    assert "DataCopyPadV2(" in kernel and "DataCopyPad(" not in kernel
    assert "context->SetSimdNumBlocks(" in host


# fields of the API table that are no name of their own: the table's key, a format
# string (its uses are PIPE_M and PIPE_ALL) and a literal flag mode
NOT_NAMES = {"version", "pipe_enum", "cross_core_mode"}


def emitted_names() -> set[str]:
    """Every name the cann8 table can print: its strings, its maps' values, the kernel
    types of every chip and core type, and the pipes of buffer.pipe_barrier."""
    from autofusion.hardware import get_chip, known_chips

    names: set[str] = set()
    for f in dataclasses.fields(CANN8):
        value = getattr(CANN8, f.name)
        if f.name in NOT_NAMES:
            continue
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, dict):
            names |= {str(v) for v in value.values()}
    for chip in known_chips():
        names |= {CANN8.kernel_type(get_chip(chip), c) for c in buffer.KernelOp.CORE_TYPES}
    names |= {CANN8.pipe_enum.format(p) for p in buffer.BARRIER_PIPES}
    return names


def test_every_emitted_name_is_in_the_conformance_table() -> None:
    """docs/codegen.md's conformance table names every API the printer can emit."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "codegen.md").read_text()
    table = doc[doc.index("## Conformance table") :]
    table = table[: table.index("\n## ")]
    missing = sorted(n for n in emitted_names() if f"`{n}`" not in table)
    assert not missing, f"not in the conformance table of docs/codegen.md: {missing}"


BAD_OPS = {
    "cast f16 -> bf16": (
        'buffer.vcast %b, %a, %c8 round "rint" : memref<?xbf16, #buffer.space<ub>>, memref<?xf16, #buffer.space<ub>>',
        r"buffer\.vcast.*Cast from f16 to bf16",
    ),
    "bf16 arithmetic": (
        'buffer.vbinary "add" %b, %b, %b, %c8 : memref<?xbf16, #buffer.space<ub>>, memref<?xbf16, #buffer.space<ub>>, memref<?xbf16, #buffer.space<ub>>',
        r"buffer\.vbinary.*Add does not take bf16",
    ),
    "bf16 UB copy of 14 bytes": (
        "buffer.copy %b to %b2 blocks %c1 x %c7 strides %c0, %c0 : memref<?xbf16, #buffer.space<ub>> to memref<?xbf16, #buffer.space<ub>>",
        r"buffer\.copy.*a UB copy of bf16 that is not a 32-byte multiple",
    ),
    "allocation in a loop": (
        "scf.for %i = %c0 to %c8 step %c1 {\n"
        '    %t = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>\n'
        "  }",
        r"buffer\.alloc_buf.*allocated once, at the kernel's top level",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_OPS))
def test_inexpressible_ops_are_one_line_errors(case: str) -> None:
    op, message = BAD_OPS[case]
    text = f"""
buffer.kernel @k() attributes {{chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 0, num_outputs = 0}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %a = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>
  %b = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  %b2 = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xbf16, #buffer.space<ub>>
  {op}
  buffer.return
}}"""
    # a rule of the buffer verifier (ascendc_rules.py, fractal_rules.py): parsing rejects
    # it, at the op
    with pytest.raises(LocatedVerifyError, match=message) as verified:
        parse_module(default_context(), text, "bad.mlir")
    location = verified.value.location
    assert isinstance(location, SourceLocation) and location.line >= 11  # the op's line
    assert "\n" not in str(verified.value)


def test_bf16_on_a_chip_without_bf16_is_an_error() -> None:
    text = _case(
        "main",
        "    %o = graph.relu %x_ : tensor<?x64xbf16>",
        [("x", "tensor<?x64xbf16>")],
        [("o", "tensor<?x64xbf16>")],
    )
    module = _lowered(text)
    text = str(module).replace('"Ascend910B1"', '"Ascend910"')
    with pytest.raises(LocatedVerifyError, match="uses bf16, which Ascend910 does not have"):
        parse_module(default_context(), text, "m.mlir")


# ---------------------------------------------------------------------------------------
# afc run --emulate
# ---------------------------------------------------------------------------------------


def test_afc_run_emulate(tmp_path: Path) -> None:
    lowered = tmp_path / "k.mlir"
    lowered.write_text(str(_lowered(DEBUG_INPUT)))
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "in.npz",
        arg0=rng.standard_normal((9, 40)).astype(np.float32),
        arg1=rng.standard_normal(40).astype(np.float32),
    )
    afc = [_tool("afc")]
    for flag, out in (([], "i.npz"), (["--emulate"], "e.npz")):
        subprocess.run(
            [
                *afc,
                "run",
                str(lowered),
                *flag,
                "--inputs",
                str(tmp_path / "in.npz"),
                "-o",
                str(tmp_path / out),
            ],
            check=True,
        )
    want, got = np.load(tmp_path / "i.npz"), np.load(tmp_path / "e.npz")
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=2e-5, atol=2e-5)
    # an emulator assertion is a one-line error, and no output is written
    bad = tmp_path / "bad.mlir"
    # declared cube-only, the kernel's vector instructions have no vector unit to run on
    bad.write_text(str(_lowered(DEBUG_INPUT)).replace('core_type = "aiv"', 'core_type = "aic"'))
    done = subprocess.run(
        [
            *afc,
            "run",
            str(bad),
            "--emulate",
            "--inputs",
            str(tmp_path / "in.npz"),
            "-o",
            str(tmp_path / "bad.npz"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "afc: error: emulated kernel @main_kernel0:"
    )
    assert not (tmp_path / "bad.npz").exists()


# ---------------------------------------------------------------------------------------
# The emulator rejects what Ascend C forbids
# ---------------------------------------------------------------------------------------

MISUSE = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "kernel_operator.h"
using namespace AscendC;

static void UbOverflow() { TPipe pipe; TQue<QuePosition::VECIN, 2> q; pipe.InitBuffer(q, 2, 100 * 1024); }
static void AllocWithoutFreeSlot() {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>(); LocalTensor<float> b = q.AllocTensor<float>(); (void)a; (void)b;
}
static void DequeNothing() { TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 256); q.DeQue<float>(); }
static void FreeForeign() {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q1, q2; pipe.InitBuffer(q1, 1, 256); pipe.InitBuffer(q2, 1, 256);
    LocalTensor<float> a = q1.AllocTensor<float>(); q2.FreeTensor(a);
}
static void EnqueBeyondDepth() {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>(); LocalTensor<float> b = q.AllocTensor<float>(); q.EnQue(a); q.EnQue(b);
}
static void EnqueTwice() {
    TPipe pipe; TQue<QuePosition::VECIN, 2> q; pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>(); q.EnQue(a); q.EnQue(a);
}
static void UseAfterFree() {
    TPipe pipe; TQue<QuePosition::VECOUT, 1> q; pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>(); q.FreeTensor(a); Duplicate(a, 1.0f, 64);
}
static void UseWhileQueued() {
    TPipe pipe; TQue<QuePosition::VECOUT, 1> q; pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>(); q.EnQue(a); Duplicate(a, 1.0f, 64);
}
static void Unaligned() {
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 1024);
    LocalTensor<float> t = b.Get<float>(); Duplicate(t, 0.0f, 64); Add(t[3], t[3], t[3], 8);
}
static void PartialOverlap() {
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 1024);
    LocalTensor<float> t = b.Get<float>(); Duplicate(t, 0.0f, 128); Add(t[8], t, t, 64);
}
static void Race() {
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>(); Duplicate(t, 1.0f, 64); float v = t.GetValue(0); (void)v;
}
static void Synced() {
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>(); Duplicate(t, 1.0f, 64);
    event_t e = static_cast<event_t>(pipe.FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);
    std::printf("%g\n", static_cast<double>(t.GetValue(0)));
}
static void WaitWithoutSet() { TPipe pipe; WaitFlag<HardEvent::V_S>(0); }
static void SetNeverWaited() { TPipe pipe; SetFlag<HardEvent::MTE2_V>(1); }
static void QueueBuffersPerPosition() {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q[5];
    for (auto& x : q) { pipe.InitBuffer(x, 2, 32); }
}
static void TooManyBuffers() {
    TPipe pipe; std::vector<TBuf<QuePosition::VECCALC>> bufs(65);
    for (auto& x : bufs) { pipe.InitBuffer(x, 32); }
}
static void SecondPipe() { TPipe a; TPipe b; }
static void GmOutOfBounds() {
    float* g = static_cast<float*>(GmAlloc(64 * sizeof(float)));
    GlobalTensor<float> gt; gt.SetGlobalBuffer(g);
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 1024);
    DataCopy(b.Get<float>(), gt[32], 64);
}
static void TruncatedCopy() {
    float* g = static_cast<float*>(GmAlloc(64 * sizeof(float)));
    for (int i = 0; i < 64; ++i) { g[i] = static_cast<float>(i); }
    GlobalTensor<float> gt; gt.SetGlobalBuffer(g);
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, -1.0f, 64);
    SetFlag<HardEvent::V_MTE2>(0); WaitFlag<HardEvent::V_MTE2>(0);
    DataCopy(t, gt, 10);  // 40 bytes: the hardware moves 32
    SetFlag<HardEvent::MTE2_S>(0); WaitFlag<HardEvent::MTE2_S>(0);
    for (int i = 0; i < 10; ++i) { std::printf("%g ", static_cast<double>(t.GetValue(i))); }
    std::printf("\n");
}
static void DataCopyPadOn910() {
    emu::ChipConfig c = emu::Chip(); c.name = "Ascend910"; c.arch = 1001; c.dataCopyPad = false; emu::SetChipConfig(c);
    float* g = static_cast<float*>(GmAlloc(64 * sizeof(float)));
    GlobalTensor<float> gt; gt.SetGlobalBuffer(g);
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 256);
    DataCopyExtParams p{1, 40, 0, 0, 0};
    DataCopyPad(b.Get<float>(), gt, p, DataCopyPadExtParams<float>{false, 0, 0, 0});
}
static void CubeOnVectorCore() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe; TBuf<QuePosition::A2> a; TBuf<QuePosition::B2> b; TBuf<QuePosition::CO1> c;
    pipe.InitBuffer(a, 512); pipe.InitBuffer(b, 512); pipe.InitBuffer(c, 1024);
    MmadParams p; p.m = 16; p.n = 16; p.k = 16;
    Mmad(c.Get<float>(), a.Get<half>(), b.Get<half>(), p);
}
static void CastHalfToBf16() {
    TPipe pipe; TBuf<QuePosition::VECCALC> a, b; pipe.InitBuffer(a, 64); pipe.InitBuffer(b, 64);
    Duplicate(a.Get<half>(), half(1.0f), 16);
    Cast(b.Get<bfloat16_t>(), a.Get<half>(), RoundMode::CAST_RINT, 16);
}
static void L2HintOn910() {
    emu::ChipConfig c = emu::Chip(); c.name = "Ascend910"; c.arch = 1001; emu::SetChipConfig(c);
    float* g = static_cast<float*>(GmAlloc(64 * sizeof(float)));
    GlobalTensor<float> gt; gt.SetGlobalBuffer(g); gt.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
}
static void L2HintBeforeBuffer() { GlobalTensor<float> gt; gt.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE); }
static void L2HintPersistent() {
    float* g = static_cast<float*>(GmAlloc(64 * sizeof(float)));
    GlobalTensor<float> gt; gt.SetGlobalBuffer(g); gt.SetL2CacheHint(CacheMode::CACHE_MODE_PERSISTENT);
}
static void L2Bypass() {  // a hinted view reads the same values
    float* g = static_cast<float*>(GmAlloc(64 * sizeof(float)));
    for (int i = 0; i < 64; ++i) { g[i] = static_cast<float>(i); }
    GlobalTensor<float> gt; gt.SetGlobalBuffer(g, 64); gt.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>();
    DataCopy(t, gt[8], 8);
    SetFlag<HardEvent::MTE2_S>(0); WaitFlag<HardEvent::MTE2_S>(0);
    for (int i = 0; i < 8; ++i) { std::printf("%g ", static_cast<double>(t.GetValue(i))); }
    std::printf("\n");
}
static void CompareNot256() {
    emu::ChipConfig c = emu::Chip(); c.strictTruncation = true; emu::SetChipConfig(c);
    TPipe pipe; TBuf<QuePosition::VECCALC> a, m; pipe.InitBuffer(a, 256); pipe.InitBuffer(m, 32);
    Duplicate(a.Get<float>(), 1.0f, 64);
    Compare(m.Get<uint8_t>(), a.Get<float>(), a.Get<float>(), CMPMODE::EQ, 40);
}

int main(int argc, char** argv)
{
    if (argc == 4 && std::string(argv[1]) == "halfs") {  // half/bf16 bits -> float, float -> bits
        std::FILE* out = std::fopen(argv[2], "wb");
        for (uint32_t b = 0; b < 65536; ++b) {
            float h = half::FromBits(static_cast<uint16_t>(b)), f = bfloat16_t::FromBits(static_cast<uint16_t>(b));
            std::fwrite(&h, 4, 1, out); std::fwrite(&f, 4, 1, out);
        }
        std::fclose(out);
        std::FILE* in = std::fopen(argv[3], "rb");
        std::vector<float> xs; float x;
        while (std::fread(&x, 4, 1, in) == 1) { xs.push_back(x); }
        std::fclose(in);
        out = std::fopen(argv[2], "ab");
        for (float v : xs) { uint16_t h = half(v).bits, f = bfloat16_t(v).bits; std::fwrite(&h, 2, 1, out); std::fwrite(&f, 2, 1, out); }
        std::fclose(out);
        return 0;
    }
    emu::ChipConfig c = emu::DefaultChipConfig(); c.strictTruncation = false; emu::SetChipConfig(c);
    const std::string name = argc > 1 ? argv[1] : "";
#define CASE(f) if (name == #f) { emu::RunBlocks(1, f); return 0; }
    CASE(UbOverflow) CASE(AllocWithoutFreeSlot) CASE(DequeNothing) CASE(FreeForeign) CASE(EnqueBeyondDepth)
    CASE(EnqueTwice) CASE(UseAfterFree) CASE(UseWhileQueued) CASE(Unaligned) CASE(PartialOverlap) CASE(Race)
    CASE(Synced) CASE(WaitWithoutSet) CASE(SetNeverWaited) CASE(QueueBuffersPerPosition) CASE(TooManyBuffers)
    CASE(SecondPipe) CASE(GmOutOfBounds) CASE(TruncatedCopy) CASE(DataCopyPadOn910) CASE(CubeOnVectorCore)
    CASE(CastHalfToBf16) CASE(CompareNot256) CASE(L2HintOn910) CASE(L2HintBeforeBuffer) CASE(L2HintPersistent)
    CASE(L2Bypass)
    std::fprintf(stderr, "unknown case %s\n", name.c_str());
    return 2;
}
"""

MISUSE_CASES = {
    "UbOverflow": r"TPipe::InitBuffer\(TQue<VECIN, 2>\): UB needs 204800 bytes, Ascend910B1 has 188160",
    "AllocWithoutFreeSlot": r"TQue<VECIN, 1>::AllocTensor with no free buffer",
    "DequeNothing": r"TQue<VECIN, 1>::DeQue with nothing enqueued",
    "FreeForeign": r"FreeTensor of a tensor this queue did not hand out",
    "EnqueBeyondDepth": r"EnQue: 1 tensors are already queued, the queue depth is 1",
    "EnqueTwice": r"EnQue of a tensor that is not allocated",
    "UseAfterFree": r"Duplicate: use of a VECOUT tensor after FreeTensor",
    "UseWhileQueued": r"Duplicate: use of a VECOUT tensor between EnQue and DeQue",
    "Unaligned": r"Add: src0 address 12 in UB is not 32-byte aligned",
    "PartialOverlap": r"Add: dst and src overlap partially",
    "Race": r"LocalTensor::GetValue: PIPE_S reads a VECCALC buffer .* that PIPE_V wrote without synchronisation",
    "WaitWithoutSet": r"WaitFlag<HardEvent::V_S>\(0\) without a matching SetFlag",
    "SetNeverWaited": r"SetFlag<HardEvent::MTE2_V>\(1\) was never waited for",
    "QueueBuffersPerPosition": r"10 queue buffers at VECIN, Ascend910B1 allows 8 per position",
    "TooManyBuffers": r"65 buffers, a TPipe allows 64",
    "SecondPipe": r"a second TPipe while one is alive",
    "GmOutOfBounds": r"DataCopy: GM access of 256 bytes at .* is outside every GM buffer",
    "DataCopyPadOn910": r"DataCopyPad is not available on Ascend910",
    "CubeOnVectorCore": r"Mmad: cube instruction in a vector-only \(KERNEL_TYPE_AIV_ONLY\) kernel",
    "CastHalfToBf16": r"Cast from half to bfloat16_t with RoundMode::CAST_RINT is not supported",
    "CompareNot256": r"Compare of 40 elements \(160 bytes\) is not a multiple of 256 bytes",
    "L2HintOn910": r"GlobalTensor::SetL2CacheHint is not available on Ascend910 \(Atlas A2/A3 only\)",
    "L2HintBeforeBuffer": r"SetL2CacheHint before SetGlobalBuffer",
    "L2HintPersistent": r"CacheMode 4 is not CACHE_MODE_DISABLE or CACHE_MODE_NORMAL on Ascend910B1",
}


@pytest.fixture(scope="module")
def misuse_program() -> Path:
    """The hand-written misuse program, compiled once (cached by content)."""
    import hashlib

    headers = b"".join(h.read_bytes() for h in sorted(emulate.INCLUDE_DIR.glob("*.h")))
    key = hashlib.sha256(
        MISUSE.encode() + headers + emulate.compiler_version().encode()
    ).hexdigest()[:24]
    exe = emulate.cache_dir() / f"afc-misuse-{key}"
    if not exe.exists():
        src = exe.with_suffix(".cpp.tmp")
        src.write_text(MISUSE)
        tmp = exe.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(
            [
                emulate.CXX,
                *emulate.CXXFLAGS,
                f"-I{emulate.INCLUDE_DIR}",
                "-x",
                "c++",
                str(src),
                "-o",
                str(tmp),
            ],
            check=True,
        )
        os.replace(tmp, exe)
    return exe


@pytest.mark.parametrize("case", sorted(MISUSE_CASES))
def test_emulator_aborts_on_misuse(misuse_program: Path, case: str) -> None:
    done = subprocess.run(
        [str(misuse_program), case], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == -signal.SIGABRT, done.stderr
    assert done.stderr.startswith("ascendc-emu: error: block 0 of 1: ")
    assert done.stderr.count("\n") == 1
    import re

    assert re.search(MISUSE_CASES[case], done.stderr), done.stderr


def test_emulator_accepts_synchronised_access_and_truncates_like_the_hardware(
    misuse_program: Path,
) -> None:
    done = subprocess.run(
        [str(misuse_program), "Synced"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "1"
    done = subprocess.run(
        [str(misuse_program), "TruncatedCopy"], capture_output=True, text=True, check=True
    )
    # 10 floats are 40 bytes; DataCopy moves 32 of them: elements 8 and 9 keep their value
    assert done.stdout.split() == ["0", "1", "2", "3", "4", "5", "6", "7", "-1", "-1"]


def test_emulator_reads_through_an_l2_bypass_hint_unchanged(misuse_program: Path) -> None:
    done = subprocess.run(
        [str(misuse_program), "L2Bypass"], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [str(i) for i in range(8, 16)]


def test_half_and_bfloat16_round_to_nearest_even(misuse_program: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            rng.standard_normal(20000).astype(np.float32) * np.float32(1000),
            np.float32(2.0) ** rng.integers(-30, 20, 20000).astype(np.float32)
            * rng.random(20000).astype(np.float32),
            np.arange(65536, dtype=np.uint16)
            .view(np.float16)
            .astype(np.float32),  # every half value
            (np.arange(65536, dtype=np.uint32) << 16).view(np.float32),  # every bf16 value
            np.array(
                [
                    65504,
                    65519.99,
                    65520,
                    1e9,
                    -1e9,
                    np.inf,
                    -np.inf,
                    2.0**-24,
                    2.0**-25,
                    3 * 2.0**-26,
                ],
                np.float32,
            ),
        ]
    )
    values = values[~np.isnan(values)]
    with np.errstate(over="ignore"):
        want_bits = values.astype(np.float16).view(np.uint16)
    out, inp = tmp_path / "out.bin", tmp_path / "in.bin"
    values.astype(np.float32).tofile(inp)
    subprocess.run([str(misuse_program), "halfs", str(out), str(inp)], check=True)
    data = out.read_bytes()
    table = np.frombuffer(data[: 65536 * 8], np.float32).reshape(65536, 2)
    bits = np.frombuffer(data[65536 * 8 :], np.uint16).reshape(-1, 2)
    want_half = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(table[:, 0], want_half)
    np.testing.assert_array_equal(
        table[:, 1], dtypes.bf16_bits_to_f32(np.arange(65536, dtype=np.uint16))
    )
    np.testing.assert_array_equal(bits[:, 0], want_bits)
    np.testing.assert_array_equal(bits[:, 1], dtypes.f32_to_bf16_bits(values))


def test_divisibility_of_deep_shared_host_expressions_is_linear() -> None:
    """Tiling functions share subexpressions: x_{i+1} = x_i + x_i for 200 levels must not
    be walked 2**200 times (it was, before facts were memoized per scope)."""
    from autofusion.dialects.tiling_facts import Divisibility

    levels = 200
    body = ["%c8 = arith.constant 8 : index", "%x0 = arith.addi %c8, %c8 : index"]
    body += [f"%x{i + 1} = arith.addi %x{i}, %x{i} : index" for i in range(levels)]
    text = (
        "func.func @tiling(%n: index) -> index {\n  "
        + "\n  ".join(body)
        + f"\n  %r = func.call @inner(%x{levels}) : (index) -> index\n  func.return %r : index\n}}\n"
        "func.func @inner(%a: index) -> index {\n  %m = arith.muli %a, %a : index\n"
        "  func.return %m : index\n}\n"
    )
    module = parse_module(default_context(), text, "deep.mlir")
    facts = Divisibility(module)
    tiling = next(op for op in module.ops if isinstance(op, func.FuncOp))
    ret = tiling.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    fact = facts._host(ret.operands[0], {})
    assert fact.exact == (16 * 2**levels) ** 2


@pytest.mark.parametrize(
    ("name", "ctype"),
    [
        ("i8", "int8_t"),
        ("i16", "int16_t"),
        ("ui8", "uint8_t"),
        ("ui32", "uint32_t"),
        ("i1", "bool"),
    ],
)
def test_scalar_type_keeps_signedness(name: str, ctype: str) -> None:
    from autofusion.codegen.cpp_scalar import scalar_type

    assert scalar_type(dtypes.ELEMENT_TYPES[name]) == ctype
