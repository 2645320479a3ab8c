"""LpPool, GlobalLpPool, Col2Im and AffineGrid as graph ops of their own
(graph.lp_pool, global_lp_pool, col2im, affine_grid), exported back as themselves.

Each onnx.helper-built model is imported and run by afc's interpreter against ONNX
Runtime; its export (`export_module`) is one node of the same operator with the same
attributes (auto_pad resolved to explicit pads), which ONNX Runtime runs to the
original's outputs. Bad attributes and inputs are one-line errors naming the node.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_import import compiled_ops  # noqa: E402
from test_onnx_vision_ops import (  # noqa: E402
    assert_matches_ort,
    f32,
    one_node_model,
    result_shapes,
    run_ort,
)

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import shape_inference as si  # noqa: E402
from autofusion.interpreter import find_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

RNG = np.random.default_rng(11)
DYN = si.DYN


def ints(name: str, values: list[int]) -> Any:
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def graph_ops(module: Any) -> list[str]:
    return [op.name for op in find_function(module).walk() if op.name.startswith("graph.")]


def exported_node(module: Any, opset: int | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """(exported model, its one node besides Constants, that node's attributes)."""
    model = export_module(module) if opset is None else export_module(module, opset)
    (node,) = [n for n in model.graph.node if n.op_type != "Constant"]
    return model, node, {a.name: helper.get_attribute_value(a) for a in node.attribute}


def check_round_trip(
    model: Any, feeds: dict[str, np.ndarray], graph_op: str, want_attrs: dict[str, Any]
) -> Any:
    """afc against ONNX Runtime; the module is the one graph op; its export is the same
    operator with `want_attrs` and runs on ONNX Runtime to the original's outputs."""
    module = assert_matches_ort(model, feeds, rtol=1e-5, atol=1e-5)
    assert graph_ops(module) == [graph_op]
    exported, node, attrs = exported_node(module)
    assert node.op_type == model.graph.node[0].op_type
    assert attrs == want_attrs
    for got, want in zip(run_ort(exported, feeds), run_ort(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return module


# --------------------------------------------------------------------------------------
# LpPool, GlobalLpPool
# --------------------------------------------------------------------------------------

LP_POOL_CASES: dict[str, tuple[dict[str, Any], list[Any], int, dict[str, Any]]] = {
    # name: (node attributes, input shape, opset, the exported node's other attributes)
    "1d_p1_opset11": (
        {"kernel_shape": [4], "strides": [2], "pads": [0, 1], "p": 1},
        [2, 3, 9],
        11,
        {},
    ),
    "2d_same_upper_symbolic": (
        {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        ["N", 3, 7, 6],
        18,
        {"pads": [1, 0, 1, 0], "dilations": [1, 1], "p": 2},
    ),
    "2d_dilated_p3": (
        {"kernel_shape": [2, 3], "pads": [1, 0, 0, 2], "dilations": [2, 1], "p": 3},
        [1, 2, 6, 7],
        22,
        {"strides": [1, 1]},
    ),
    "3d_dilated": (
        {"kernel_shape": [2, 2, 2], "strides": [1, 2, 1], "dilations": [1, 1, 2]},
        [2, 2, 4, 5, 6],
        18,
        {"pads": [0] * 6, "p": 2},
    ),
}


@pytest.mark.parametrize("case", sorted(LP_POOL_CASES))
def test_lp_pool_exports_as_itself(case: str) -> None:
    attrs, shape, opset, rest = LP_POOL_CASES[case]
    node = helper.make_node("LpPool", ["x"], ["y"], **attrs)
    model = one_node_model(node, [f32("x", shape)], [f32("y", None)], [], opset)
    x = RNG.standard_normal([2 if d == "N" else d for d in shape]).astype(np.float32)
    spatial = len(shape) - 2
    want = {k: v for k, v in attrs.items() if k != "auto_pad"}
    want.setdefault("strides", [1] * spatial)
    want.setdefault("pads", [0] * 2 * spatial)
    want.setdefault("p", 2)
    if opset >= 18:
        want.setdefault("dilations", [1] * spatial)
    want.update(rest)
    module = check_round_trip(model, {"x": x}, "graph.lp_pool", want)
    if shape[0] == "N":
        assert result_shapes(module) == [[DYN, 3, 4, 3]]


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [["N", 3, 5, 4], [2, 2, 3, 4, 5]], ids=["2d", "3d"])
def test_global_lp_pool_exports_as_itself(p: int, shape: list[Any]) -> None:
    node = helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)
    model = one_node_model(node, [f32("x", shape)], [f32("y", None)], [], 18)
    x = RNG.standard_normal([2 if d == "N" else d for d in shape]).astype(np.float32)
    module = check_round_trip(model, {"x": x}, "graph.global_lp_pool", {"p": p})
    batch = DYN if shape[0] == "N" else shape[0]
    assert result_shapes(module) == [[batch, shape[1], *[1] * (len(shape) - 2)]]


def test_lp_pool_exports_dilations_only_from_opset_18() -> None:
    """LpPool-11 has no dilations: unit ones are left out below opset 18, others refused."""
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 1])
    model = one_node_model(node, [f32("x", [1, 2, 5, 5])], [f32("y", None)], [], 18)
    module = import_onnx_model(default_context(), model, "m")
    with pytest.raises(UserError, match="LpPool with dilations needs opset 18, not 17"):
        export_module(module, 17)
    plain = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2])
    model = one_node_model(plain, [f32("x", [1, 2, 5, 5])], [f32("y", None)], [], 18)
    _, node, attrs = exported_node(import_onnx_model(default_context(), model, "m"), 17)
    assert node.op_type == "LpPool" and "dilations" not in attrs


# --------------------------------------------------------------------------------------
# Col2Im
# --------------------------------------------------------------------------------------

COL2IM_CASES: dict[str, tuple[list[int], list[int], dict[str, Any], list[Any]]] = {
    # name: (image_shape, block_shape, attributes, input shape)
    "plain": ([5, 5], [2, 2], {}, [2, 8, 16]),
    "strides_pads_dilations": (
        [6, 7],
        [2, 3],
        {"strides": [2, 1], "pads": [1, 0, 0, 2], "dilations": [2, 1]},
        ["N", 12, 21],
    ),
    "3d": ([3, 4, 5], [1, 2, 2], {"strides": [1, 2, 1]}, [1, 8, 24]),
}


@pytest.mark.parametrize("case", sorted(COL2IM_CASES))
def test_col2im_exports_as_itself(case: str) -> None:
    image, block, attrs, shape = COL2IM_CASES[case]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    inits = [ints("image", image), ints("block", block)]
    model = one_node_model(node, [f32("x", shape)], [f32("y", None)], inits, 18)
    x = RNG.standard_normal([2 if d == "N" else d for d in shape]).astype(np.float32)
    r = len(image)
    want = {"strides": [1] * r, "pads": [0] * 2 * r, "dilations": [1] * r} | attrs
    if r == 3:  # ONNX Runtime's Col2Im is 2-D only: check the export's form and inputs
        module = import_onnx_model(default_context(), model, "m")
        assert graph_ops(module) == ["graph.col2im"]
        exported, node, got = exported_node(module)
        assert node.op_type == "Col2Im" and got == want
        consts = {
            n.output[0]: numpy_helper.to_array(n.attribute[0].t).tolist()
            for n in exported.graph.node
            if n.op_type == "Constant"
        }
        assert [consts[n] for n in node.input[1:]] == [image, block]
        return
    module = check_round_trip(model, {"x": x}, "graph.col2im", want)
    assert result_shapes(module)[0][2:] == image


def test_col2im_3d_matches_onnx_reference() -> None:
    """A 3-D Col2Im (which ONNX Runtime does not run) against ONNX's reference."""
    from onnx.reference import ReferenceEvaluator

    from autofusion.interpreter import run_function

    image, block, attrs, shape = COL2IM_CASES["3d"]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    inits = [ints("image", image), ints("block", block)]
    model = one_node_model(node, [f32("x", shape)], [f32("y", None)], inits, 18)
    x = RNG.standard_normal(shape).astype(np.float32)
    (got,) = run_function(import_onnx_model(default_context(), model, "m"), {"x": x}).values()
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------------------
# AffineGrid
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 5, 7], [2, 1, 3, 4, 5]], ids=["2d", "3d"])
def test_affine_grid_exports_as_itself(align_corners: int, size: list[int]) -> None:
    r = len(size) - 2
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=align_corners)
    ins = [f32("theta", ["N", r, r + 1])]
    model = one_node_model(node, ins, [f32("y", None)], [ints("size", size)], 20)
    theta = RNG.standard_normal((2, r, r + 1)).astype(np.float32)
    module = check_round_trip(
        model, {"theta": theta}, "graph.affine_grid", {"align_corners": align_corners}
    )
    assert result_shapes(module) == [[DYN, *size[2:], r]]


# --------------------------------------------------------------------------------------
# Bad attributes and inputs
# --------------------------------------------------------------------------------------

BAD_NODES: dict[str, tuple[Any, list[Any], list[Any], int, str]] = {
    # name: (node, inputs, initializers, opset, the error after "node 'bad' (Op-N): ")
    "lp_pool_ceil_mode": (
        helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=1),
        [f32("x", [1, 2, 5, 5])],
        [],
        18,
        r"attribute ceil_mode=1 is not supported \(only ceil_mode=0: ONNX Runtime",
    ),
    "lp_pool_kernel_rank": (
        helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2, 2]),
        [f32("x", [1, 2, 5, 5])],
        [],
        18,
        r"kernel_shape must have 2 values, got \[2, 2, 2\]",
    ),
    "lp_pool_zero_stride": (
        helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 1]),
        [f32("x", [1, 2, 5, 5])],
        [],
        18,
        "kernel, strides and dilations must be >= 1 and pads >= 0",
    ),
    "global_lp_pool_p": (
        helper.make_node("GlobalLpPool", ["x"], ["y"], p=-1),
        [f32("x", [1, 2, 5, 5])],
        [],
        18,
        r"attribute p=-1 is not supported \(p >= 1\)",
    ),
    "global_lp_pool_rank": (
        helper.make_node("GlobalLpPool", ["x"], ["y"]),
        [f32("x", [2, 5])],
        [],
        18,
        r"expects \[N, C\] and spatial dims, got 2x5",
    ),
    "col2im_missing_block_shape": (
        helper.make_node("Col2Im", ["x", "image"], ["y"]),
        [f32("x", [1, 8, 16])],
        [ints("image", [5, 5])],
        18,
        r"required input #2 \('block_shape'\) is missing",
    ),
    "col2im_computed_image_shape": (
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"]),
        [f32("x", [1, 8, 16]), helper.make_tensor_value_info("image", TensorProto.INT64, [2])],
        [ints("block", [2, 2])],
        18,
        r"image_shape \(input #1\) must be a constant",
    ),
    "col2im_negative_pads": (
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"], pads=[-1, 0, 0, 0]),
        [f32("x", [1, 8, 16])],
        [ints("image", [5, 5]), ints("block", [2, 2])],
        18,
        "image_shape, block_shape, strides and dilations must be >= 1, pads >= 0",
    ),
    "col2im_block_count": (
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"]),
        [f32("x", [1, 8, 15])],
        [ints("image", [5, 5]), ints("block", [2, 2])],
        18,
        r"15 columns for 16 blocks \(\[4, 4\]\) of the image",
    ),
    "affine_grid_theta": (
        helper.make_node("AffineGrid", ["theta", "size"], ["y"]),
        [f32("theta", [2, 3, 3])],
        [ints("size", [2, 3, 5, 7])],
        20,
        r"theta 2x3x3 is not \[N, 2, 3\]",
    ),
    "affine_grid_size": (
        helper.make_node("AffineGrid", ["theta", "size"], ["y"]),
        [f32("theta", [2, 2, 3])],
        [ints("size", [2, 3, 0, 7])],
        20,
        r"size \[2, 3, 0, 7\] is not a positive \[N, C, H, W\]",
    ),
    "affine_grid_align_corners": (
        helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=2),
        [f32("theta", [2, 2, 3])],
        [ints("size", [2, 3, 5, 7])],
        20,
        r"attribute align_corners=2 is not supported \(0 or 1\)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_NODES))
def test_bad_nodes_are_one_line_errors(case: str) -> None:
    node, ins, inits, opset, message = BAD_NODES[case]
    node.name = "bad"
    model = one_node_model(node, ins, [f32("y", None)], inits, opset)
    with pytest.raises(UserError, match=rf"^node 'bad' \(\w+-\d+\): .*{message}") as e:
        import_onnx_model(default_context(), model, "m")
    assert "\n" not in e.value.message


def test_vision_library_ops_compile_and_check(tmp_path: Any) -> None:
    """`afc compile --check`: the four ops stay library ops of their own between fused
    kernels, and fused.onnx (which writes them back as themselves) matches the original
    on ONNX Runtime."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("LpPool", ["r"], ["lp"], kernel_shape=[2, 2], p=3),
        helper.make_node("GlobalLpPool", ["lp"], ["g"]),
        helper.make_node("Reshape", ["lp", "flat"], ["cols"]),
        helper.make_node("Col2Im", ["cols", "image", "block"], ["img"]),
        helper.make_node("Sigmoid", ["img"], ["y"]),
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"]),
        helper.make_node("Tanh", ["grid"], ["z"]),
    ]
    inits = [
        ints("flat", [1, 4, 16]),
        ints("image", [5, 5]),
        ints("block", [2, 2]),
        ints("size", [1, 1, 3, 4]),
    ]
    ins = [f32("x", [1, 4, 5, 5]), f32("theta", [1, 2, 3])]
    outs = [f32("y", None), f32("g", None), f32("z", None)]
    g = helper.make_graph(nodes, "g", ins, outs, initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    names = [op.name for op in compiled_ops(tmp_path, model)]
    for op in ("graph.lp_pool", "graph.global_lp_pool", "graph.col2im", "graph.affine_grid"):
        assert names.count(op) == 1
