"""The module's target (afc.target): the attribute, who sets it, who reads it, the default."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import StringAttr
from xdsl.utils.exceptions import VerifyException

from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.dialects.target import (
    TARGET_KEY,
    TargetAttr,
    module_target,
    resolve_target,
    set_target,
)
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes.graph_fusion import GraphFusionPass
from frontends.text import parse_text_model

from differential import apply_pipeline

CHAIN = """
func.func @main(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %e = graph.exp %x : tensor<8x256xf32>
  %r = graph.relu %e : tensor<8x256xf32>
  func.return %r : tensor<8x256xf32>
}
"""

MODEL = """\
input x: f32[8, 64]
output y = relu(x)
"""


def test_the_attribute_is_canonical_and_verified() -> None:
    assert TargetAttr("ascend910b3").chip.data == "Ascend910B3"
    assert TargetAttr("ASCEND310P3") == TargetAttr("Ascend310P3")
    with pytest.raises(VerifyException, match="unknown chip 'Ascend911'"):
        TargetAttr("Ascend911")


def test_set_target_is_idempotent_and_refuses_another_chip() -> None:
    module = parse_module(default_context(), CHAIN, "m.mlir")
    assert module_target(module) is None
    set_target(module, "ascend310p3")
    set_target(module, "Ascend310P3")
    target = module_target(module)
    assert target is not None and target.name == "Ascend310P3"
    with pytest.raises(UserError, match=r"chip Ascend910B1 contradicts the module's afc\.target"):
        set_target(module, "Ascend910B1")


def test_the_default_is_given_once_and_written(capsys: pytest.CaptureFixture[str]) -> None:
    module = parse_module(default_context(), CHAIN, "m.mlir")
    assert resolve_target(module, "ub-fusion").name == "Ascend910B1"
    assert resolve_target(module, "lower-to-buffer").name == "Ascend910B1"
    err = capsys.readouterr().err
    assert err.count("using the default Ascend910B1") == 1 and "ub-fusion" in err
    assert module.attributes[TARGET_KEY] == TargetAttr("Ascend910B1")


def test_graph_fusion_reads_but_does_not_need_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    module = parse_module(default_context(), CHAIN, "m.mlir")
    GraphFusionPass().apply(default_context(), module)
    assert TARGET_KEY not in module.attributes and capsys.readouterr().err == ""


def test_buffer_ir_without_a_target_takes_its_kernels_chip(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ctx = default_context()
    lowered = apply_pipeline(
        parse_module(ctx, CHAIN, "m.mlir"), "set-target{chip=Ascend310P3},ub-fusion,lower-to-buffer"
    )
    del lowered.attributes[TARGET_KEY]
    text = module_to_text(ctx, lowered)
    bare = parse_module(ctx, text, "k.mlir")
    files = emit_ascendc(bare)
    assert "Ascend310P3" in files["op_kernel/main_kernel0.cpp"]
    assert bare.attributes[TARGET_KEY] == TargetAttr("Ascend310P3")
    assert capsys.readouterr().err == ""
    # two kernels for different chips cannot share a module
    b1 = apply_pipeline(
        parse_module(ctx, CHAIN, "m.mlir"), "set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer"
    )
    kernel = next(op for op in b1.ops if isinstance(op, buffer.KernelOp))
    kernel.detach()
    kernel.sym_name = StringAttr("b1_kernel")
    mixed = parse_module(ctx, text, "k.mlir")
    mixed.body.block.add_op(kernel)
    with pytest.raises(UserError, match="different chips \\(Ascend310P3, Ascend910B1\\)"):
        resolve_target(mixed, "ascendc")


def test_frontends_take_a_chip() -> None:
    ctx = default_context()
    module = parse_text_model(ctx, MODEL, "m.afc", chip="ascend910b2")
    assert module.attributes[TARGET_KEY] == TargetAttr("Ascend910B2")
    assert TARGET_KEY not in parse_text_model(ctx, MODEL, "m.afc").attributes
    with pytest.raises(UserError, match="unknown chip 'Ascend1'"):
        parse_text_model(ctx, MODEL, "m.afc", chip="Ascend1")


def test_onnx_import_takes_a_chip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from frontends.onnx import import_onnx_file

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    module = import_onnx_file(default_context(), path, chip="Ascend310P3")
    assert module.attributes[TARGET_KEY] == TargetAttr("Ascend310P3")
