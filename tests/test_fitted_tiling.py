"""Fitted tilings remembered per group shape (lowering/fitted_tiling.py): a group of a
shape built before takes that build's tiling, the plan and the kernels are the ones a
build of every group gives, and groups that differ in anything a template reads have
different shapes."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from autofusion.fusion.partition import FusionPolicy, FusionResult, Partitioner
from autofusion.hardware import get_chip
from autofusion.interpreter import find_function
from autofusion.lowering import row_kernel
from autofusion.lowering.fitted_tiling import fits_remembered, fitted_tiling, group_shape
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes import ub_fusion

from differential import apply_pipeline

CHIP = "Ascend910B1"

# two slices of one shape: the per-value budget (22976 elements) does not count the
# kernel's working buffers, so settle shrinks the tile the first build needs
SLICES = """
func.func @main(%x: tensor<2048x4096xf16>, %y: tensor<2048x4096x{t}>) -> (tensor<2048x3584xf16>, tensor<2048x{n}x{t}>) {{
  %a = graph.slice %x {{axes = [1], ends = [3584], starts = [0], steps = [1]}} : tensor<2048x4096xf16> -> tensor<2048x3584xf16>
  %b = graph.slice %y {{axes = [1], ends = [{n}], starts = [0], steps = [1]}} : tensor<2048x4096x{t}> -> tensor<2048x{n}x{t}>
  func.return %a, %b : tensor<2048x3584xf16>, tensor<2048x{n}x{t}>
}}
"""
TWO_SLICES = SLICES.format(t="f16", n=3584)


def _shapes(text: str, last: int = 2) -> list[object]:
    """The shapes of the one-op groups of the function's last `last` ops before its return."""
    module = parse_module(default_context(), text, "m.mlir")
    block = find_function(module).body.block
    policy = FusionPolicy()
    part = Partitioner(block, get_chip(CHIP), policy, FusionResult())
    ops = list(block.ops)[-1 - last : -1]
    return [group_shape(part.parts([op])) for op in ops]


def _ub_fusion(text: str, monkeypatch: pytest.MonkeyPatch, remember: bool) -> tuple[str, int]:
    """ub-fusion's output and the number of rows kernels it built."""
    builds = 0
    build = row_kernel.RowKernel.build

    def counted(self: row_kernel.RowKernel) -> object:
        nonlocal builds
        builds += 1
        return build(self)

    with monkeypatch.context() as m:
        m.setattr(row_kernel.RowKernel, "build", counted)
        if not remember:
            m.setattr(ub_fusion, "fits_remembered", nullcontext)
        module = parse_module(default_context(), text, "m.mlir")
        apply_pipeline(module, f"set-target{{chip={CHIP}}},ub-fusion")
    return module_to_text(default_context(), module), builds


def test_a_repeated_group_is_built_once_and_planned_as_if_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remembered, fewer = _ub_fusion(TWO_SLICES, monkeypatch, remember=True)
    built, every = _ub_fusion(TWO_SLICES, monkeypatch, remember=False)
    assert remembered == built
    assert remembered.count("tile_elems = 15616") == 2  # both shrunk from 22976
    # a build that does not fit, then one that does: twice per group without the memo
    assert (fewer, every) == (2, 4)


def test_a_repeated_group_lowers_at_its_remembered_tiling() -> None:
    module = parse_module(default_context(), TWO_SLICES, "m.mlir")
    apply_pipeline(module, f"set-target{{chip={CHIP}}},ub-fusion,lower-to-buffer")
    text = module_to_text(default_context(), module)
    assert text.count("buffer.kernel") == 2  # lower-to-buffer refuses a tiling that differs


def test_fits_are_remembered_only_inside_the_block() -> None:
    (shape, _) = _shapes(TWO_SLICES)
    assert shape is not None
    module = parse_module(default_context(), TWO_SLICES, "m.mlir")
    block = find_function(module).body.block
    part = Partitioner(block, get_chip(CHIP), FusionPolicy(), FusionResult())
    parts = part.parts([next(iter(block.ops))])
    calls: list[int] = []

    def fit() -> dict[str, int]:
        calls.append(1)
        return {"tile": 8}

    chip = get_chip(CHIP)
    for _ in range(2):
        assert fitted_tiling("rows", parts, chip, {"tile": 16}, fit) == {"tile": 8}
    assert len(calls) == 2  # no memo outside fits_remembered
    with fits_remembered():
        fitted_tiling("rows", parts, chip, {"tile": 16}, fit)
        fitted_tiling("rows", parts, chip, {"tile": 16}, fit)
        fitted_tiling("rows", parts, chip, {"tile": 8}, fit)  # built at 8, it fits as is
        assert len(calls) == 3
        fitted_tiling("matmul", parts, chip, {"tile": 16}, fit)  # another template
        fitted_tiling("rows", parts, get_chip("Ascend310P3"), {"tile": 16}, fit)
        assert len(calls) == 5
    fitted_tiling("rows", parts, chip, {"tile": 16}, fit)
    assert len(calls) == 6


def test_groups_of_one_shape_and_their_differences() -> None:
    a, b = _shapes(TWO_SLICES)
    assert a is not None and a == b
    assert len(set(_shapes(SLICES.format(t="f16", n=3568)))) == 2  # the slice's bounds
    assert len(set(_shapes(SLICES.format(t="f32", n=3584)))) == 2  # the element type


SPLATS = """
func.func @main(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %a = graph.mul %x, %two : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  %b = graph.mul %x, %SECOND : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  func.return %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
}
"""

VIEWS = """
func.func @main(%x: tensor<8x64xf32>, %y: tensor<8x64xf32>) -> (tensor<512xf32>, tensor<512xf32>) {
  %rx = graph.reshape %x {shape = [512]} : tensor<8x64xf32> -> tensor<512xf32>
  %rx2 = graph.reshape %x {shape = [512]} : tensor<8x64xf32> -> tensor<512xf32>
  %ry = graph.reshape %y {shape = [512]} : tensor<8x64xf32> -> tensor<512xf32>
  %a = graph.add %rx, %rx2 : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
  %b = graph.add %rx, %ry : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
  func.return %a, %b : tensor<512xf32>, tensor<512xf32>
}
"""


@pytest.mark.parametrize(
    ("text", "same"),
    [
        (SPLATS.replace("%SECOND", "%two"), True),
        (SPLATS.replace("%SECOND", "%three"), False),  # a splat's value is read into code
        (VIEWS, False),  # views of one tensor, or of two
    ],
)
def test_what_inputs_are_is_part_of_the_shape(text: str, same: bool) -> None:
    a, b = _shapes(text)
    assert a is not None and b is not None
    assert (a == b) is same
