"""Fitted tilings remembered per group shape (lowering/fitted_tiling.py): a group of a
shape built before takes that build's tiling, the plan and the kernels are the ones a
build of every group gives, and groups that differ in anything a template reads have
different shapes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autofusion.fusion.partition import FusionPolicy, FusionResult, Partitioner
from autofusion.hardware import get_chip
from autofusion.interpreter import find_function
from autofusion.lowering import cube_common, fitted_tiling, row_kernel
from autofusion.lowering.fitted_tiling import group_shape
from autofusion.lowering.template import GroupParts
from autofusion.mlir_io import default_context, module_to_text, parse_module
from frontends.text import parse_text_model

from differential import apply_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import make_qwen2_5_7b

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


def _parts(text: str) -> list[GroupParts]:
    """The one-op groups of the function's ops but its return, as ub-fusion sees them."""
    module = parse_module(default_context(), text, "m.mlir")
    block = find_function(module).body.block
    part = Partitioner(block, get_chip(CHIP), FusionPolicy(), FusionResult())
    return [part.parts([op]) for op in list(block.ops)[:-1]]


def _shapes(text: str) -> list[object]:
    """The shapes of the function's last two ops before its return, each a group."""
    return [group_shape(parts) for parts in _parts(text)[-2:]]


def _fuse(
    text: str, passes: str, monkeypatch: pytest.MonkeyPatch, remember: bool
) -> tuple[str, int]:
    """The module after `passes` and how many kernels settle and the rows template built
    while planning (rows kernels, each try of a shrinking tile, and cube kernels)."""
    builds = 0
    rows_build, cube_build = row_kernel.RowKernel.build, cube_common.CubeKernel.build

    def counted(build: Callable[[Any], object]) -> Callable[[Any], object]:
        def count(self: Any) -> object:
            nonlocal builds
            builds += 1
            return build(self)

        return count

    with monkeypatch.context() as m:
        m.setattr(row_kernel.RowKernel, "build", counted(rows_build))
        m.setattr(cube_common.CubeKernel, "build", counted(cube_build))
        if not remember:
            m.setattr(fitted_tiling, "group_shape", lambda parts: None)
        module = parse_module(default_context(), text, "m.mlir")
        apply_pipeline(module, passes)
    return module_to_text(default_context(), module), builds


def test_a_repeated_group_is_built_once_and_planned_as_if_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ub = f"set-target{{chip={CHIP}}},ub-fusion"
    remembered, fewer = _fuse(TWO_SLICES, ub, monkeypatch, remember=True)
    built, every = _fuse(TWO_SLICES, ub, monkeypatch, remember=False)
    assert remembered == built
    assert remembered.count("tile_elems = 15616") == 2  # both shrunk from 22976
    # a build that does not fit, then one that does: twice per group without the memo
    assert (fewer, every) == (2, 4)


def test_repeated_layers_are_planned_as_if_each_were_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two Qwen2.5-7B layers: their matmuls with a norm epilogue shrink the epilogue's
    tile (and tn), which the second layer's takes from the first's build by at_tiling."""
    module = parse_text_model(
        default_context(), make_qwen2_5_7b.model_text(2), "qwen.afc", chip=CHIP
    )
    text = module_to_text(default_context(), module)
    passes = "graph-fusion,split-fusion,ub-fusion"
    remembered, fewer = _fuse(text, passes, monkeypatch, remember=True)
    built, every = _fuse(text, passes, monkeypatch, remember=False)
    assert remembered == built
    assert "epilogue_tile_elems = 2816" in remembered  # shrunk from 3648 by settle
    assert fewer < every


def test_a_repeated_group_lowers_at_its_remembered_tiling() -> None:
    module = parse_module(default_context(), TWO_SLICES, "m.mlir")
    apply_pipeline(module, f"set-target{{chip={CHIP}}},ub-fusion,lower-to-buffer")
    text = module_to_text(default_context(), module)
    assert text.count("buffer.kernel") == 2  # lower-to-buffer refuses a tiling that differs


def test_fits_are_remembered_only_inside_the_block() -> None:
    parts = _parts(TWO_SLICES)[0]
    calls: list[int] = []

    def fit() -> dict[str, int]:
        calls.append(1)
        return {"tile": 8}

    chip = get_chip(CHIP)
    for _ in range(2):
        assert fitted_tiling.fitted_tiling("rows", parts, chip, {"tile": 16}, fit) == {"tile": 8}
    assert len(calls) == 2  # no memo outside fits_remembered
    with fitted_tiling.fits_remembered():
        for template, tiling in (("rows", 16), ("rows", 16), ("rows", 8)):
            fitted_tiling.fitted_tiling(template, parts, chip, {"tile": tiling}, fit)
        assert len(calls) == 3  # built at 16, fitted at 8: it fits at 8 as is
        fitted_tiling.fitted_tiling("matmul", parts, chip, {"tile": 16}, fit)
        fitted_tiling.fitted_tiling("rows", parts, get_chip("Ascend310P3"), {"tile": 16}, fit)
        assert len(calls) == 5  # another template, another chip
    fitted_tiling.fitted_tiling("rows", parts, chip, {"tile": 16}, fit)
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


# the same relu of an argument and of another kernel's result: both read a GM tensor
PRODUCERS = """
func.func @main(%x: tensor<8x64xf32>, %y: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %e = graph.exp %y : tensor<8x64xf32>
  %a = graph.relu %x : tensor<8x64xf32>
  %b = graph.relu %e : tensor<8x64xf32>
  func.return %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
}
"""


@pytest.mark.parametrize(
    ("text", "same"),
    [
        (PRODUCERS, True),
        (SPLATS.replace("%SECOND", "%two"), True),
        (SPLATS.replace("%SECOND", "%three"), False),  # a splat's value is read into code
        (VIEWS, False),  # views of one tensor, or of two
    ],
)
def test_what_inputs_are_is_part_of_the_shape(text: str, same: bool) -> None:
    a, b = _shapes(text)
    assert a is not None and b is not None
    assert (a == b) is same
