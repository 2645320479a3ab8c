"""bishengir's UB rule in afc's hfusion export (autofusion/codegen/hfusion_ub.py).

A PURE_ELEMWISE device function that reads f16 and computes a reciprocal in f32 (a
sigmoid) overflows bishengir 1.2.0's plan-memory UB above 24576 elements; the export emits
it for a block of rows and the host function calls it per block. Checked: the real bishengir-compile reaches
module.hivm.opt.mlir with every blocked function (and fails without the blocking), and
afc's interpreter of the blocked export gives the graph's outputs. A function that row
blocks cannot bring under the limit (a transpose, one row already too large) is cut at step
boundaries into parts that fit (ub_cuts); a part that still cannot fit is a host call: no
device function is exported over the limit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen import hfusion_ub
from autofusion.codegen.hfusion_bishengir import bishengir_tool, compile_to_hivm, inferred_kinds
from autofusion.codegen.hfusion_export import export_module, run_export
from autofusion.codegen.hfusion_ir import (
    DeviceFunction,
    HostCall,
    Step,
    Value,
    device_module_text,
    print_module,
)
from autofusion.codegen.hfusion_ub import UB_LIMITS, UBLimit, over_limit, row_blocks
from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.ub_fusion import UbFusionPass

ROOT = Path(__file__).resolve().parent.parent
SPLIT_SLICES = ROOT / "tests" / "filecheck" / "passes" / "split-fusion" / "split-slices.mlir"
needs_bishengir = pytest.mark.skipif(
    bishengir_tool("bishengir-compile") is None,
    reason="bishengir is not installed: the ascendnpu-ir wheel (pip install -e '.[hfusion]', "
    "CPython 3.11 on x86-64 Linux only) could not be installed here",
)


def group_module(body: str, t: str, extra: str = "") -> ModuleOp:
    """One fusion group over %x (and %g of type `extra`) whose last line defines %p."""
    params = f"%x: {t}" + (f", %g: {extra}" if extra else "")
    args = f"%xa = %x : {t}" + (f", %ga = %g : {extra}" if extra else "")
    text = f"""func.func @main({params}) -> {t} {{
  %y = graph.fusion_group ({args}) -> {t} {{
    {body}
    graph.yield %p : {t}
  }}
  func.return %y : {t}
}}"""
    return parse_module(default_context(), text, "group.mlir")


BIG = "tensor<1024x4096xf16>"
SIGMOID = f"%p = graph.sigmoid %xa : {BIG}"
SOFTMAX = f"%p = graph.softmax %xa {{axis = -1 : i64}} : {BIG}"
RMS_NORM = f"%p = graph.rms_norm %xa, %ga {{axis = -1, epsilon = 1.0e-06}} : ({BIG}, tensor<4096xf16>) -> {BIG}"


def split_slices_modules() -> list[ModuleOp]:
    modules = []
    for text in SPLIT_SLICES.read_text().split("// -----"):
        module = parse_module(default_context(), text, SPLIT_SLICES.name)
        UbFusionPass().apply(default_context(), module)
        modules.append(module)
    return modules


def assert_runs_to_graph(module: ModuleOp) -> None:
    inputs = random_inputs(find_function(module), 3, 128)
    want = run_function(module, inputs)
    got = run_export(export_module(module), module, inputs)
    for name, w in want.items():
        assert got[name].shape == w.shape and got[name].dtype == w.dtype
        # f16 groups keep their intermediates in f32: a few f16 ulps from op-by-op rounding
        np.testing.assert_allclose(got[name].astype(np.float64), w, 2e-2, 2e-2)


def test_limits_say_where_they_were_measured() -> None:
    for key, limit in UB_LIMITS.items():
        assert limit.measured and limit.pattern, key
    assert UB_LIMITS["PURE_ELEMWISE", "f16", "f32", "rec", "", 0].max_elements == 24576


def test_big_sigmoid_is_called_per_row_block() -> None:
    export = export_module(group_module(SIGMOID, BIG))
    (fn,) = export.program.devices
    (call,) = export.program.host_body
    assert fn.params[0].shape == (4, 4096) and fn.results[0].shape == (4, 4096)
    assert call.blocking is not None and (call.blocking.rows, call.blocking.block) == (1024, 4)
    assert call.args[0].shape == (1024, 4096)
    assert any("called on 256 blocks of 4 rows" in r for r in export.program.remarks)


SILU = f"""%s = graph.sigmoid %xa : {BIG}
    %p = graph.mul %xa, %s : {BIG}"""


@pytest.mark.parametrize("body", [SOFTMAX, RMS_NORM], ids=["softmax", "rms_norm"])
def test_shapes_hfusion_tiles_stay_whole(body: str) -> None:
    export = export_module(group_module(body, BIG, "tensor<4096xf16>"))
    (fn,) = export.program.devices
    assert fn.params[0].shape == (1024, 4096)
    assert not export.program.remarks


def test_rows_mixed_by_a_step_are_not_blocked() -> None:
    x = Value("x", "f16", (256, 256))
    c = Value("c", "f32", (256, 256))
    t = Value("t", "f32", (256, 256))
    r = Value("r", "f32", (256, 256))
    steps = [
        Step("hfusion.cast", (x,), c),
        Step("hfusion.elemwise_unary", (c,), r, (("fun", "rec"),)),
        Step("linalg.transpose", (r,), t, (("perm", (1, 0)),)),
    ]
    why = row_blocks("PURE_ELEMWISE", [x], steps, [t])
    assert isinstance(why, str)
    assert why.endswith("not row-blocked: linalg.transpose has no row-blocked form")


def test_blocked_exports_run_to_the_graph_outputs() -> None:
    """The host loop (extract_slice, call, insert_slice per block) in afc's interpreter."""
    blocked = 0
    for module in [group_module(SIGMOID, BIG), *split_slices_modules()]:
        export = export_module(module)
        blocked += sum(1 for c in export.program.host_body if getattr(c, "blocking", None))
        assert_runs_to_graph(module)
    assert blocked >= 3  # the sigmoid, the swiglu of @gate_up, the sigmoid of @qkv_heads


def _reaches_hivm(fn: DeviceFunction, tmp_path: Path) -> None:
    result = compile_to_hivm(device_module_text(fn), tmp_path / fn.name)
    assert result.reached_hivm, f"{fn.name}: {result.first_error}"
    assert result.first_error == "", result.first_error


@needs_bishengir
def test_split_slices_device_functions_reach_hivm(tmp_path: Path) -> None:
    for i, module in enumerate(split_slices_modules()):
        for fn in export_module(module).program.devices:
            _reaches_hivm(fn, tmp_path / str(i))


@needs_bishengir
@pytest.mark.parametrize(
    "body", [SIGMOID, SOFTMAX, RMS_NORM, SILU], ids=["sigmoid", "softmax", "rms_norm", "silu"]
)
def test_big_groups_reach_hivm(body: str, tmp_path: Path) -> None:
    (fn,) = export_module(group_module(body, BIG, "tensor<4096xf16>")).program.devices
    _reaches_hivm(fn, tmp_path)


@needs_bishengir
def test_the_sigmoid_unblocked_overflows_ub(tmp_path: Path) -> None:
    """The limit is real: the same sigmoid as one whole function fails plan-memory."""
    (fn,) = export_module(group_module(SIGMOID, BIG)).program.devices
    whole = _resized(fn, (4, 4096), (1024, 4096))
    result = compile_to_hivm(device_module_text(whole), tmp_path)
    assert not result.reached_hivm
    assert "ub overflow" in result.log or "block number is more than" in result.log


def _resized(fn: DeviceFunction, block: tuple[int, ...], shape: tuple[int, ...]) -> DeviceFunction:
    """`fn` with every value of the block's shape at `shape` instead (the unblocked function)."""

    def grow(v: Value) -> Value:
        return Value(v.name, v.dtype, shape) if v.shape == block else v

    return DeviceFunction(
        fn.name,
        [grow(p) for p in fn.params],
        [
            Step(s.kind, tuple(grow(v) for v in s.operands), grow(s.result), s.attrs)
            for s in fn.steps
        ],
        [grow(r) for r in fn.results],
        fn.fusion_kind,
        fn.source,
    )


@needs_bishengir
def test_bishengir_parses_the_host_loop() -> None:
    """The whole module (device function + scf.for host loop) is valid AscendNPU IR."""
    export = export_module(group_module(SIGMOID, BIG))
    assert "scf.for" in print_module(export.program)
    assert inferred_kinds(print_module(export.program))["afc_g1"] == "PURE_ELEMWISE"


# groups the row blocks cannot bring under the limit: the rows move (a transpose), or one
# row is over it
TRANSPOSED = """%t = graph.transpose %xa {perm = [1, 0]} : tensor<512x256xf16> -> tensor<256x512xf16>
    %p = graph.sigmoid %t : tensor<256x512xf16>"""
ONE_ROW = "%p = graph.sigmoid %xa : tensor<2x32768xf16>"
UNBLOCKABLE = {
    "transposed": (TRANSPOSED, "tensor<512x256xf16>", "tensor<256x512xf16>"),
    "one_row": (ONE_ROW, "tensor<2x32768xf16>", "tensor<2x32768xf16>"),
}


def unblockable(name: str) -> ModuleOp:
    body, t, out = UNBLOCKABLE[name]
    text = f"""func.func @main(%x: {t}) -> {out} {{
  %y = graph.fusion_group (%xa = %x : {t}) -> {out} {{
    {body}
    graph.yield %p : {out}
  }}
  func.return %y : {out}
}}"""
    return parse_module(default_context(), text, f"{name}.mlir")


@pytest.mark.parametrize("name", sorted(UNBLOCKABLE))
def test_unblockable_groups_are_cut_into_parts_that_fit(name: str) -> None:
    module = unblockable(name)
    export = export_module(module)
    devices = export.program.devices
    assert len(devices) >= 2
    for fn in devices:
        assert over_limit(fn.fusion_kind, fn.params, fn.steps, fn.results) == "", fn.name
    assert not any(c.reason for c in export.program.host_body if isinstance(c, HostCall))
    assert "so each part fits bishengir's UB" in export.program.remarks[0]
    assert_runs_to_graph(module)


def test_a_step_over_the_limit_alone_is_a_host_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a (hypothetical) limit on an f32 reciprocal, the reciprocal alone cannot fit: it
    stays on the host with the reason; the rest are device functions; numbers unchanged."""
    tight = UBLimit("test: f32 reciprocal", 1024, "not measured: a test table")
    limits = {("PURE_ELEMWISE", "", "f32", "rec", "", 0): tight, **UB_LIMITS}
    monkeypatch.setattr(hfusion_ub, "UB_LIMITS", limits)
    module = unblockable("one_row")
    export = export_module(module)
    (host,) = [c for c in export.program.host_body if isinstance(c, HostCall) and c.reason]
    assert [s.attr_or("fun", "") for s in host.steps] == ["rec"]
    assert "exceed bishengir's UB limit of 1024 (test: f32 reciprocal)" in host.reason
    assert any(r.startswith(f"{host.callee}: kept as a host call") for r in export.program.remarks)
    assert len(export.program.devices) == 2
    for fn in export.program.devices:
        assert over_limit(fn.fusion_kind, fn.params, fn.steps, fn.results) == "", fn.name
        assert all(s.attr_or("fun", "") != "rec" for s in fn.steps)
    assert_runs_to_graph(module)


@needs_bishengir
def test_one_row_over_the_limit_overflows_whole_and_compiles_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old export (the function whole, as without UB_LIMITS) fails plan-memory with "ub
    overflow"; every device function of the cut export reaches module.hivm.opt.mlir."""
    for fn in export_module(unblockable("one_row")).program.devices:
        _reaches_hivm(fn, tmp_path / "cut")
    monkeypatch.setattr(hfusion_ub, "UB_LIMITS", {})
    (whole,) = export_module(unblockable("one_row")).program.devices
    result = compile_to_hivm(device_module_text(whole), tmp_path / "whole")
    assert not result.reached_hivm
    assert "ub overflow, requires 2096128 bits while 1572864 bits available" in result.log


@needs_bishengir
def test_transposed_parts_reach_hivm(tmp_path: Path) -> None:
    for fn in export_module(unblockable("transposed")).program.devices:
        _reaches_hivm(fn, tmp_path)


SIGMOID_ADD = (
    "%s = graph.sigmoid %xa : tensor<256x128xf16>\n    %p = graph.add %s, %ga : tensor<256x128xf16>"
)
SMALL = "tensor<256x128xf16>"


def test_limits_follow_the_pattern() -> None:
    """A silu (one f16 input, the reciprocal times a tensor) stays whole at 1024x4096; a
    sigmoid + g (two f16 inputs: 96 bits of UB per element) is blocked to 16384 elements,
    below the one-input limit of 24576."""
    silu = export_module(group_module(SILU, BIG))
    assert not silu.program.remarks
    assert silu.program.devices[0].params[0].shape == (1024, 4096)
    two = export_module(group_module(SIGMOID_ADD, SMALL, SMALL))
    (call,) = two.program.host_body
    assert isinstance(call, HostCall) and call.blocking is not None
    assert (call.blocking.rows, call.blocking.block) == (256, 128)
    assert "UB limit of 16384 (reads two f16 tensors" in two.program.remarks[0]
    assert_runs_to_graph(group_module(SIGMOID_ADD, SMALL, SMALL))


@needs_bishengir
def test_two_input_limit_is_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sigmoid + g at 256x128 (32768 elements) reaches HIVM in blocks of 128 rows; whole, and
    in blocks of 192 rows as the one-input limit would allow, it overflows UB."""
    module = group_module(SIGMOID_ADD, SMALL, SMALL)
    (fn,) = export_module(module).program.devices
    _reaches_hivm(fn, tmp_path / "blocked")
    for rows in (256, 192):
        sized = _resized(fn, (128, 128), (rows, 128))
        result = compile_to_hivm(device_module_text(sized), tmp_path / str(rows))
        assert not result.reached_hivm, rows
        assert "ub overflow" in result.log, rows
