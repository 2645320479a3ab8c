"""Vision operators and Einsum through the ONNX importer, the interpreter and the exporter.

* ONNX's backend node cases of these op types: each passes against the reference outputs,
  or is refused with the reason in `REFUSED`; each passing case is also exported back to
  ONNX and run on ONNX Runtime against the same reference.
* Models built with onnx.helper (dynamic dims, attribute combinations the node cases
  miss) against ONNX Runtime on the original model.
* A torch-exported UNet-style decoder block (upsampling, transposed conv, pixel shuffle).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_backend_nodes import _arrays, _cases, _check, _import, check_outputs  # noqa: E402
from test_onnx_import import compiled_ops  # noqa: E402

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import shape_inference as si  # noqa: E402
from autofusion.interpreter import find_function, run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

VISION_OPS = frozenset(
    {
        "Resize",
        "Upsample",
        "ConvTranspose",
        "DepthToSpace",
        "SpaceToDepth",
        "LpPool",
        "GlobalLpPool",
        "Einsum",
        "GridSample",
        "AffineGrid",
        "MaxUnpool",
        "Col2Im",
        "DeformConv",
        "RoiAlign",
    }
)

# ops that import as other graph ops, so export as those (Upsample as Resize)
LOWERED = frozenset({"Upsample", "Einsum"})

# case -> (rtol, atol) where the reference data is not exact
TOLERANCE_OVERRIDE = {
    # the expected values are written with 4 decimals
    "test_gridsample_bicubic": (1e-3, 1e-4),
    "test_roialign_aligned_false": (1e-3, 1e-4),
    "test_roialign_aligned_true": (1e-3, 1e-4),
}

# case -> the text of afc's refusal (each is a documented limitation)
REFUSED: dict[str, str] = {}


def _vision_cases() -> list[str]:
    return sorted(
        name
        for name, (model, _, _) in _cases().items()
        if {n.op_type for n in model.graph.node} & VISION_OPS
    )


def _imported(name: str) -> tuple[Any, Any, dict[str, np.ndarray], list[np.ndarray]]:
    """(module, model as imported, feeds, reference outputs); inputs that must be
    constants have become initializers of the model (see `_import`)."""
    model, raw_inputs, raw_outputs = _cases()[name]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    module, feeds = _import(model, _arrays(raw_inputs))
    return module, model, feeds, _arrays(raw_outputs)


def run_ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds))


# --------------------------------------------------------------------------------------
# ONNX backend node cases
# --------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _tolerances(monkeypatch: pytest.MonkeyPatch) -> None:
    import test_onnx_backend_nodes

    for name, tol in TOLERANCE_OVERRIDE.items():
        monkeypatch.setitem(test_onnx_backend_nodes.TOLERANCE_OVERRIDE, name, tol)


@pytest.mark.parametrize("name", _vision_cases())
def test_backend_case(name: str) -> None:
    if name in REFUSED:
        model, raw_inputs, _ = _cases()[name]
        with pytest.raises(UserError, match=REFUSED[name]):
            _import(onnx.ModelProto.FromString(model.SerializeToString()), _arrays(raw_inputs))
        return
    module, _, feeds, outputs = _imported(name)
    check_outputs(name, module, feeds, outputs)


# ONNX Runtime's CPU provider has no bf16 MatMul, ReduceSum or Transpose
ON_ORT = [n for n in _vision_cases() if n not in REFUSED and "bfloat16" not in n]


@pytest.mark.parametrize("name", ON_ORT)
def test_backend_case_exports_to_the_same_operator(name: str) -> None:
    """The imported case exported back to ONNX is the same operator, and ONNX Runtime
    gives the same outputs on it as on the original case."""
    module, original, feeds, outputs = _imported(name)
    if name.startswith("test_roialign"):
        # ONNX Runtime has no RoiAlign-22 kernel: export at 16, check the reference
        model = export_module(module, 16)
        for k, (got, want) in enumerate(zip(run_ort(model, feeds), outputs)):
            _check(f"{name}:ort{k}", got, want)
        return
    model = export_module(module)
    kept = {n.op_type for n in original.graph.node} - LOWERED
    assert kept <= {n.op_type for n in model.graph.node}
    for k, (got, want) in enumerate(zip(run_ort(model, feeds), run_ort(original, feeds))):
        _check(f"{name}:ort{k}", got, want)


def test_refusals_name_real_cases() -> None:
    assert set(REFUSED) <= set(_vision_cases())


# --------------------------------------------------------------------------------------
# Models built with onnx.helper, against ONNX Runtime
# --------------------------------------------------------------------------------------


def one_node_model(
    node: Any, inputs: list[Any], outputs: list[Any], inits: list[Any], opset: int = 19
) -> Any:
    g = helper.make_graph([node], "g", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def f32(name: str, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def afc_run(model: Any, feeds: dict[str, np.ndarray]) -> tuple[Any, list[np.ndarray]]:
    module = import_onnx_model(default_context(), model, "m")
    return module, list(run_function(module, feeds).values())


def assert_matches_ort(
    model: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-5
) -> Any:
    module, got = afc_run(model, feeds)
    want = run_ort(model, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return module


def result_shapes(module: Any) -> list[list[int]]:
    return [list(t.get_shape()) for t in find_function(module).function_type.outputs.data]


RNG = np.random.default_rng(0)
DYN = si.DYN

RESIZE_CASES = {
    # name: attributes, scales (or None), sizes (or None), axes
    "linear_half_pixel": ({"mode": "linear"}, [1, 1, 2.0, 1.5], None),
    "nearest_ceil_asymmetric": (
        {"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "asymmetric"},
        [1, 1, 1.7, 0.6],
        None,
    ),
    "cubic_pytorch_half_pixel": (
        {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"},
        None,
        [2, 3, 7, 1],
    ),
    "cubic_antialias_down": ({"mode": "cubic", "antialias": 1}, [1, 1, 0.4, 0.7], None),
    "linear_antialias_align_corners": (
        {"mode": "linear", "antialias": 1, "coordinate_transformation_mode": "align_corners"},
        # in * scale is whole: ORT's align_corners differs from ONNX's reference otherwise
        [1, 1, 0.4, 2.0],
        None,
    ),
    "half_pixel_symmetric": (
        {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
        [1, 1, 1.3, 0.8],
        None,
    ),
    "nearest_tf_half_pixel_for_nn": (
        {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
        [1, 1, 1.7, 0.6],
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(RESIZE_CASES))
def test_resize_against_ort(case: str) -> None:
    attrs, scales, sizes = RESIZE_CASES[case]
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    ins = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.asarray(scales, np.float32), "scales"))
        ins.append("scales")
    else:
        inits.append(numpy_helper.from_array(np.asarray(sizes, np.int64), "sizes"))
        ins += ["", "sizes"]
    node = helper.make_node("Resize", ins, ["y"], **attrs)
    opset = 13 if "tf_half_pixel_for_nn" in case else 19  # a Resize-13 mode
    model = one_node_model(node, [f32("x", [2, 3, 5, 6])], [f32("y", None)], inits, opset)
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    module = assert_matches_ort(model, {"x": x})
    np.testing.assert_allclose(
        run_ort(export_module(module), {"x": x})[0],
        afc_run(model, {"x": x})[1][0],
        rtol=1e-5,
        atol=1e-6,
    )


def test_resize_dynamic_batch_and_axes() -> None:
    """A symbolic batch stays `?`; axes and keep_aspect_ratio_policy resolve at import."""
    inits = [numpy_helper.from_array(np.asarray([9, 5], np.int64), "sizes")]
    node = helper.make_node(
        "Resize",
        ["x", "", "", "sizes"],
        ["y"],
        mode="linear",
        axes=[3, 2],
        keep_aspect_ratio_policy="not_smaller",
    )
    model = one_node_model(node, [f32("x", ["N", 3, 4, 6])], [f32("y", None)], inits)
    for batch in (1, 3):
        x = RNG.standard_normal((batch, 3, 4, 6)).astype(np.float32)
        module = assert_matches_ort(model, {"x": x})
    assert result_shapes(module) == [[DYN, 3, 6, 9]]


def test_resize_of_a_constant_folds_with_the_interpreter_semantics() -> None:
    """A Resize whose input is an initializer is folded at import by the interpreter's
    own implementation: no graph.resize is left and the constant is the resized one."""
    table = RNG.standard_normal((1, 2, 3, 3)).astype(np.float16)
    inits = [
        numpy_helper.from_array(table, "t"),
        numpy_helper.from_array(np.asarray([1, 1, 2, 1.5], np.float32), "s"),
    ]
    nodes = [
        helper.make_node("Resize", ["t", "", "s"], ["r"], mode="cubic"),
        helper.make_node("Add", ["x", "r"], ["y"]),
    ]
    half = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT16, shape)  # noqa: E731
    g = helper.make_graph(nodes, "g", [half("x", [1, 2, 6, 4])], [half("y", None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    x = RNG.standard_normal((1, 2, 6, 4)).astype(np.float16)
    module = assert_matches_ort(model, {"x": x}, rtol=2e-3, atol=1e-3)  # f16 ulps
    names = {op.name for op in find_function(module).walk()}
    assert "graph.resize" not in names and "graph.add" in names


def test_upsample_is_floor_nearest() -> None:
    """Upsample-10 (deprecated; ORT only runs it up to opset 9) is nearest with the
    floor of asymmetric source coordinates: integer scales repeat elements."""
    inits = [numpy_helper.from_array(np.asarray([1, 1, 2, 3], np.float32), "scales")]
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    model = one_node_model(node, [f32("x", [1, 2, 3, 4])], [f32("y", None)], inits, opset=13)
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    _, (y,) = afc_run(model, {"x": x})
    np.testing.assert_array_equal(y, np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))


CONV_TRANSPOSE_CASES = {
    "output_shape_same_lower": (
        {"strides": [2, 2], "output_shape": [11, 9], "auto_pad": "SAME_LOWER"},
        (4, 3, 3, 3),
        1,
    ),
    "group_dilation_output_padding": (
        {"strides": [3, 2], "dilations": [2, 1], "group": 2, "output_padding": [1, 1]},
        (4, 2, 3, 2),
        2,
    ),
    "same_upper": ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (4, 3, 2, 4), 1),
    "pads_bias": ({"strides": [1, 2], "pads": [1, 0, 2, 1]}, (4, 5, 3, 3), 1),
}


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
def test_conv_transpose_against_ort(case: str) -> None:
    attrs, wshape, group = CONV_TRANSPOSE_CASES[case]
    w = RNG.standard_normal(wshape).astype(np.float32)
    b = RNG.standard_normal(wshape[1] * group).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    model = one_node_model(node, [f32("x", ["N", 4, 5, 4])], [f32("y", None)], inits)
    x = RNG.standard_normal((2, 4, 5, 4)).astype(np.float32)
    assert_matches_ort(model, {"x": x}, rtol=1e-4)


@pytest.mark.parametrize(
    ("op", "mode"), [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"), ("SpaceToDepth", "DCR")]
)
def test_depth_space_dynamic_against_ort(op: str, mode: str) -> None:
    attrs: dict[str, Any] = {"blocksize": 2}
    if op == "DepthToSpace":
        attrs["mode"] = mode
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    # a symbolic W would have to be even for SpaceToDepth: only N is symbolic there
    width = "W" if op == "DepthToSpace" else 6
    model = one_node_model(node, [f32("x", ["N", 8, 4, width])], [f32("y", None)], [], opset=13)
    x = RNG.standard_normal((3, 8, 4, 6)).astype(np.float32)
    module = assert_matches_ort(model, {"x": x})
    want = [DYN, 2, 8, DYN] if op == "DepthToSpace" else [DYN, 32, 2, 3]
    assert result_shapes(module) == [want]


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pools_against_ort(p: int) -> None:
    x = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    node = helper.make_node(
        "LpPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=p
    )
    model = one_node_model(node, [f32("x", [2, 3, 7, 6])], [f32("y", None)], [], opset=18)
    assert_matches_ort(model, {"x": x}, rtol=1e-4)
    node = helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)
    model = one_node_model(node, [f32("x", ["N", 3, 7, 6])], [f32("y", None)], [], opset=18)
    assert_matches_ort(model, {"x": x}, rtol=1e-4)


EINSUM_CASES = {
    # equation: input shapes ("N" is symbolic)
    "bhqd,bhkd->bhqk": [["N", 2, 3, 4], ["N", 2, 5, 4]],
    "ij,jk": [[3, 4], [4, 5]],
    "i,j->ij": [[3], [4]],
    "ij,jk,kl->il": [[2, 3], [3, 4], [4, 5]],
    "bij,bjk,bkl->bl": [[2, 3, 4], [2, 4, 5], [2, 5, 3]],
    "abc,cd->dba": [[2, 3, 4], [4, 5]],
    "iij->j": [[3, 3, 4]],
    "ii": [[4, 4]],
    "...ij,...jk->...ik": [["N", 2, 3, 4], ["N", 2, 4, 5]],
    "ab...,bc->...ac": [[2, 3, 4, 5], [3, 6]],
    "bnm,bmk->bk": [["N", 3, 4], ["N", 4, 5]],
    "xy,xy->": [[3, 4], [3, 4]],
}


@pytest.mark.parametrize("equation", sorted(EINSUM_CASES))
def test_einsum_against_ort(equation: str) -> None:
    shapes = EINSUM_CASES[equation]
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    ins = [f32(n, s) for n, s in zip(names, shapes)]
    model = one_node_model(node, ins, [f32("y", None)], [], opset=13)
    feeds = {
        n: RNG.standard_normal([2 if d == "N" else d for d in s]).astype(np.float32)
        for n, s in zip(names, shapes)
    }
    module = assert_matches_ort(model, feeds, rtol=1e-4)
    ops = {op.name for op in find_function(module).walk()}
    assert "graph.matmul" in ops or "graph.reduce_sum" in ops or len(shapes) == 1


GRID_CASES = {
    # (mode, padding_mode, align_corners, opset, input shape, grid shape)
    "bilinear_reflection_16": ("bilinear", "reflection", 0, 16, [2, 3, 5, 6], [2, 4, 7, 2]),
    "bicubic_border_16": ("bicubic", "border", 1, 16, [2, 3, 5, 6], [2, 4, 7, 2]),
    "nearest_zeros_20": ("nearest", "zeros", 0, 20, [2, 3, 5, 6], [2, 4, 7, 2]),
    "cubic_reflection_20": ("cubic", "reflection", 1, 20, [1, 2, 6, 5], [1, 3, 3, 2]),
    "linear_border_3d_20": ("linear", "border", 0, 20, [1, 2, 3, 4, 5], [1, 2, 3, 4, 3]),
}


@pytest.mark.parametrize("case", sorted(GRID_CASES))
def test_grid_sample_against_ort(case: str) -> None:
    """Locations reach past the borders (grid values in [-1.6, 1.6]), except for cubic
    with border padding: there ONNX's reference (which afc follows) clamps the location
    before taking the 4 taps, while ONNX Runtime (as PyTorch) clamps each tap."""
    mode, padding, aligned, opset, xs, gs = GRID_CASES[case]
    reach = 1.0 if (mode, padding) == ("bicubic", "border") else 1.6
    node = helper.make_node(
        "GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=aligned
    )
    model = one_node_model(node, [f32("x", xs), f32("g", gs)], [f32("y", None)], [], opset)
    feeds = {
        "x": RNG.standard_normal(xs).astype(np.float32),
        "g": RNG.uniform(-reach, reach, gs).astype(np.float32),
    }
    module = assert_matches_ort(model, feeds, rtol=1e-4)
    got = run_ort(export_module(module), feeds)
    np.testing.assert_allclose(got[0], run_ort(model, feeds)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_against_ort(align_corners: int) -> None:
    size = numpy_helper.from_array(np.asarray([2, 3, 5, 7], np.int64), "size")
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=align_corners)
    model = one_node_model(node, [f32("theta", ["N", 2, 3])], [f32("y", None)], [size], 20)
    theta = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    module = assert_matches_ort(model, {"theta": theta})
    assert result_shapes(module) == [[DYN, 5, 7, 2]]


@pytest.mark.parametrize(
    ("mode", "coord", "ratio"),
    [("avg", "half_pixel", 0), ("avg", "output_half_pixel", 2), ("max", "half_pixel", 2)],
)
def test_roi_align_against_ort(mode: str, coord: str, ratio: int) -> None:
    """Regions partly outside the image, adaptive and fixed sampling (ORT runs RoiAlign-16)."""
    node = helper.make_node(
        "RoiAlign",
        ["x", "rois", "idx"],
        ["y"],
        mode=mode,
        coordinate_transformation_mode=coord,
        output_height=3,
        output_width=4,
        sampling_ratio=ratio,
        spatial_scale=0.5,
    )
    ins = [
        f32("x", [2, 3, 10, 12]),
        f32("rois", ["R", 4]),
        helper.make_tensor_value_info("idx", TensorProto.INT64, ["R"]),
    ]
    model = one_node_model(node, ins, [f32("y", None)], [], opset=16)
    corners = RNG.uniform(-4, 26, (5, 2, 2))
    rois = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    feeds = {
        "x": RNG.standard_normal((2, 3, 10, 12)).astype(np.float32),
        "rois": rois.astype(np.float32),
        "idx": np.asarray([0, 1, 1, 0, 1], np.int64),
    }
    module = assert_matches_ort(model, feeds, rtol=1e-4)
    assert result_shapes(module) == [[DYN, 3, 3, 4]]


def test_einsum_refuses_broadcasting_ellipsis() -> None:
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="...ij,...jk->...ik", name="e")
    ins = [f32("a", [2, 3, 4]), f32("b", [1, 4, 5])]
    model = one_node_model(node, ins, [f32("y", None)], [], opset=13)
    with pytest.raises(UserError, match=r"node 'e' .*label '0' has sizes 2 and 1; broadcasting"):
        import_onnx_model(default_context(), model, "m")


def test_lp_pool_3d_against_ort() -> None:
    """A 3-D graph.lp_pool with strides, dilations and pads, and a symbolic batch."""
    x = RNG.standard_normal((2, 2, 6, 7, 5)).astype(np.float32)
    attrs = {"kernel_shape": [3, 2, 2], "strides": [2, 1, 2], "dilations": [1, 2, 1]}
    node = helper.make_node("LpPool", ["x"], ["y"], pads=[1, 0, 1, 0, 1, 1], p=3, **attrs)
    model = one_node_model(node, [f32("x", ["N", 2, 6, 7, 5])], [f32("y", None)], [], 18)
    module = assert_matches_ort(model, {"x": x}, rtol=1e-4)
    assert result_shapes(module)[0][0] == DYN


REFUSALS = {
    "antialias_nearest": (
        helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest", antialias=1),
        "antialias=1 is not supported",
        19,
    ),
    "tf_half_pixel_for_nn_at_18": (
        helper.make_node(
            "Resize", ["x", "", "s"], ["y"], coordinate_transformation_mode="tf_half_pixel_for_nn"
        ),
        "coordinate_transformation_mode='tf_half_pixel_for_nn' is not supported",
        18,
    ),
    "upsample_downscale": (
        helper.make_node("Upsample", ["x", "s"], ["y"]),
        r"scales \[1.0, 1.0, 0.5, 0.5\] must give one value >= 1 per axis",
        13,
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_name_node_and_attribute(case: str) -> None:
    node, message, opset = REFUSALS[case]
    node.name = "n0"
    s = numpy_helper.from_array(np.asarray([1, 1, 0.5, 0.5], np.float32), "s")
    model = one_node_model(node, [f32("x", [1, 1, 4, 4])], [f32("y", None)], [s], opset=opset)
    with pytest.raises(UserError, match=f"node 'n0' .*{message}"):
        import_onnx_model(default_context(), model, "m")


def test_vision_ops_compile_as_library_kernels(tmp_path: Any) -> None:
    """No kernel template takes the opaque vision ops: `afc compile --check` keeps each
    as a library kernel of its own, fuses what lies between, and checks the numbers
    (interpreter, buffer kernels and ONNX Runtime on fused.onnx) against the original."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    s = numpy_helper.from_array(np.asarray([1, 1, 2, 2], np.float32), "s")
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w"], ["t"], strides=[2, 2]),
        helper.make_node("Relu", ["t"], ["u"]),
        helper.make_node("Resize", ["u", "", "s"], ["v"], mode="linear"),
        helper.make_node("DepthToSpace", ["v"], ["y"], blocksize=1),
    ]
    g = helper.make_graph(nodes, "g", [f32("x", [1, 4, 6, 6])], [f32("y", None)], [w, s])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    names = [op.name for op in compiled_ops(tmp_path, model)]
    for op in ("graph.conv_transpose", "graph.resize", "graph.depth_to_space"):
        assert op in names


# --------------------------------------------------------------------------------------
# A torch-exported UNet-style decoder block
# --------------------------------------------------------------------------------------


def _unet_block() -> Any:
    torch = pytest.importorskip("torch")

    class Decoder(torch.nn.Module):
        """Nearest and bilinear upsampling, a stride-2 transposed conv with a skip
        connection, and a pixel shuffle (DepthToSpace CRD)."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
            self.nearest = torch.nn.Upsample(scale_factor=2, mode="nearest")
            self.bilinear = torch.nn.Upsample(scale_factor=2, mode="bilinear")
            self.corners = torch.nn.Upsample(size=(13, 11), mode="bicubic", align_corners=True)
            self.tconv = torch.nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
            self.shuffle = torch.nn.PixelShuffle(2)

        def forward(self, x: Any, skip: Any) -> tuple[Any, Any, Any]:
            h = torch.nn.functional.silu(self.conv(x))
            up = self.nearest(h) + self.bilinear(h)
            merged = torch.cat([self.tconv(h), skip], 1) + up
            return merged, self.shuffle(up), self.corners(h)

    torch.manual_seed(0)
    return torch, Decoder().eval()


@pytest.mark.parametrize("dynamo", [False, True])
def test_torch_unet_decoder_block(dynamo: bool, tmp_path: Any) -> None:
    torch, block = _unet_block()
    x, skip = torch.randn(2, 8, 8, 8), torch.randn(2, 8, 16, 16)
    path = tmp_path / "decoder.onnx"
    torch.onnx.export(block, (x, skip), str(path), dynamo=dynamo, input_names=["x", "skip"])
    model = onnx.load(str(path))
    ops = {n.op_type for n in model.graph.node}
    assert {"Resize", "ConvTranspose", "DepthToSpace"} <= ops
    with torch.no_grad():
        want = [t.numpy() for t in block(x, skip)]
    feeds = {"x": x.numpy(), "skip": skip.numpy()}
    module, got = afc_run(model, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    for g, w in zip(got, run_ort(model, feeds)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    names = {op.name for op in find_function(module).walk()}
    assert {"graph.resize", "graph.conv_transpose", "graph.depth_to_space"} <= names


# --------------------------------------------------------------------------------------
# Bad nodes: one line naming the node and what is wrong
# --------------------------------------------------------------------------------------

W = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
I64 = TensorProto.INT64

BAD_NODES: dict[str, tuple[Any, list[Any], list[Any], str]] = {
    "conv_transpose_output_padding": (
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[5, 5]),
        [f32("x", [1, 4, 5, 5])],
        [W],
        r"output_padding \[5, 5\] must be below stride or dilation",
    ),
    "depth_to_space_channels": (
        helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=3),
        [f32("x", [1, 8, 5, 5])],
        [],
        "channels 8 is not divisible by 9",
    ),
    "grid_sample_locations": (
        helper.make_node("GridSample", ["x", "g"], ["y"]),
        [f32("x", [1, 4, 5, 5]), f32("g", [1, 3, 3, 3])],
        [],
        "grid 1x3x3x3 does not hold 2-D locations for input 1x4x5x5",
    ),
    "einsum_invented_label": (
        helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,jk->q"),
        [f32("x", [3, 3])],
        [],
        "output 'q' repeats or invents a label",
    ),
    "roi_align_rois": (
        helper.make_node("RoiAlign", ["x", "r", "i"], ["y"]),
        [f32("x", [1, 4, 5, 5]), f32("r", [2, 5]), helper.make_tensor_value_info("i", I64, [2])],
        [],
        r"rois \[R, 4\]",
    ),
    "col2im_channels": (
        helper.make_node("Col2Im", ["x", "is", "bs"], ["y"]),
        [f32("x", [1, 5, 4])],
        [
            numpy_helper.from_array(np.asarray([3, 3], np.int64), "is"),
            numpy_helper.from_array(np.asarray([2, 2], np.int64), "bs"),
        ],
        "channels 5 is not divisible by 4",
    ),
    "lp_pool_p": (
        helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=0),
        [f32("x", [1, 4, 5, 5])],
        [],
        r"attribute p=0 is not supported \(p >= 1\)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_NODES))
def test_bad_nodes_are_one_line_errors(case: str) -> None:
    node, ins, inits, message = BAD_NODES[case]
    node.name = "bad"
    model = one_node_model(node, ins, [f32("y", None)], inits, opset=20)
    with pytest.raises(UserError, match=rf"^node 'bad' \(\w+-\d+\): .*{message}") as e:
        import_onnx_model(default_context(), model, "m")
    assert "\n" not in e.value.message
