"""DFT and STFT (graph.dft / graph.stft, exported back as themselves), MelWeightMatrix and
EyeLike (frontends/onnx/ops_signal.py), Pad mode wrap (graph.pad, exported back as Pad)
and GatherND batch_dims: afc's interpreter against ONNX Runtime on onnx.helper-built models
(the attribute and input combinations the backend cases miss), and the refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_import import (  # noqa: E402
    check_against_ort,
    compiled_ops,
    error_of,
    init,
    make_model,
    ops,
    ort_run,
    vi,
)

from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.interpreter.graph_library import dft_tables  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(1)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("onesided", [False, True])
@pytest.mark.parametrize("length", [5, 8, 11])
def test_dft_tables_are_numpy_fft(inverse: bool, onesided: bool, length: int) -> None:
    """The matrices reproduce numpy's fft, rfft, ifft and irfft, truncating or zero-padding
    an input of 8 points to `length`."""
    n = 8
    x = RNG.standard_normal(n) + 1j * RNG.standard_normal(n)
    a, b, c, d = dft_tables(n, length, inverse, onesided)
    real = x.real @ a + x.imag @ b
    imag = x.real @ c + x.imag @ d
    if inverse and onesided:
        want = np.fft.irfft(x, n=length)
    elif inverse:
        want = np.fft.ifft(x, n=length)
    else:
        want = np.fft.fft(x, n=length)[: length // 2 + 1 if onesided else length]
    np.testing.assert_allclose(real + 1j * imag, want, atol=1e-12)


@pytest.mark.parametrize(
    ("shape", "attrs", "length", "axis"),
    [
        ([2, 6, 1], {}, None, 1),  # real input
        ([2, 6, 2], {"inverse": 1}, 4, -2),  # truncated
        ([3, 5, 4, 2], {}, 7, 2),  # zero-padded, another axis
        ([2, 6, 1], {"onesided": 1}, None, 1),
        ([2, 4, 2], {"inverse": 1, "onesided": 1}, 7, 1),
    ],
)
def test_dft_20_matches_onnxruntime(
    shape: list[int], attrs: dict, length: int | None, axis: int
) -> None:
    inits = [init("axis", np.array(axis, np.int64))]
    names = ["x", "", "axis"]
    if length is not None:
        inits.append(init("n", np.array(length, np.int64)))
        names[1] = "n"
    node = helper.make_node("DFT", names, ["y"], **attrs)
    m = make_model([node], [vi("x", F, shape)], [vi("y", F, None)], inits, opset=20)
    feeds = {"x": randn(*shape)}
    module = check_against_ort(m, feeds)
    assert ops(module) == ["graph.dft"]
    want = {"inverse": 0, "onesided": 0} | attrs
    for opset in (17, 20):  # the axis is an attribute of DFT-17, an input of DFT-20
        exported = export_module(module, opset)
        dft = exported_node(exported, "DFT")
        assert attributes(dft) == (want if opset == 20 else want | {"axis": axis % len(shape)})
        assert constants(exported, dft.input[1:]) == [
            *([length] if length is not None else [None]),
            *([axis % len(shape)] if opset == 20 else []),
        ]
        got = ort_run(exported, feeds)[0]
        np.testing.assert_allclose(got, ort_run(m, feeds)[0], rtol=1e-4, atol=1e-4)


def test_dft_of_a_symbolic_dim_matches_onnxruntime() -> None:
    """graph.dft builds its tables at run time, so the transformed dim may be symbolic."""
    node = helper.make_node("DFT", ["x"], ["y"], axis=1, onesided=1)
    m = make_model([node], [vi("x", F, [2, "n", 1])], [vi("y", F, None)], opset=17)
    check_against_ort(m, {"x": randn(2, 9, 1)})


@pytest.mark.parametrize("window", [False, True])
def test_stft_matches_onnxruntime_and_exports_as_stft(window: bool) -> None:
    names = ["x", "step", "w", ""] if window else ["x", "step", "", "size"]
    node = helper.make_node("STFT", names, ["y"], onesided=int(window))
    inits = [init("step", np.array(3, np.int64)), init("size", np.array(8, np.int64))]
    inputs = [vi("x", F, ["B", 20, 1])] + ([vi("w", F, [8])] if window else [])
    m = make_model([node], inputs, [vi("y", F, None)], inits[: 1 if window else 2], opset=17)
    feeds = {"x": randn(2, 20, 1)} | ({"w": np.hanning(8).astype(np.float32)} if window else {})
    module = check_against_ort(m, feeds)
    assert ops(module) == ["graph.stft"]
    exported = export_module(module)
    stft = exported_node(exported, "STFT")
    assert attributes(stft) == {"onesided": int(window)}
    assert constants(exported, [stft.input[1], stft.input[3]]) == [3, 8]
    assert stft.input[2] == ("w" if window else "")
    np.testing.assert_allclose(ort_run(exported, feeds)[0], ort_run(m, feeds)[0], rtol=1e-5)


def exported_node(model: onnx.ModelProto, op_type: str) -> onnx.NodeProto:
    """The one node of the exported model that is not a Constant, of type `op_type`."""
    (node,) = [n for n in model.graph.node if n.op_type != "Constant"]
    assert node.op_type == op_type
    return node


def attributes(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def constants(model: onnx.ModelProto, names: list[str]) -> list:
    """The values of the Constant nodes defining `names` (None for an omitted input)."""
    values = {
        n.output[0]: numpy_helper.to_array(n.attribute[0].t).tolist()
        for n in model.graph.node
        if n.op_type == "Constant"
    }
    return [values[n] if n else None for n in names]


def test_mel_weight_matrix_matches_onnxruntime() -> None:
    args = {"bins": 6, "n": 32, "rate": 8000, "low": 100.0, "high": 3500.0}
    inits = [
        init(k, np.array(v, np.float32 if isinstance(v, float) else np.int64))
        for k, v in args.items()
    ]
    node = helper.make_node("MelWeightMatrix", list(args), ["y"])
    m = make_model([node], [], [vi("y", F, None)], inits, opset=17)
    check_against_ort(m, {})


def test_eye_like_matches_onnxruntime() -> None:
    node = helper.make_node("EyeLike", ["x"], ["y"], k=-1, dtype=TensorProto.INT32)
    m = make_model([node], [vi("x", F, [3, 5])], [vi("y", TensorProto.INT32, None)], opset=22)
    check_against_ort(m, {"x": randn(3, 5)})


@pytest.mark.parametrize(
    ("shape", "pads"),
    [
        ([3, 4], [1, 0, 2, 3]),
        (["N", 4], [1, 0, 2, 9]),  # a symbolic dim wrapped; pads past the dim wrap again
        ([3, 5], [0, -2, 1, 4]),  # a negative pad crops before the wrap (ONNX Runtime)
    ],
    ids=["static", "symbolic_far", "crop"],
)
def test_wrap_pad_matches_onnxruntime_and_exports_as_pad(shape: list, pads: list) -> None:
    p = init("p", np.array(pads, np.int64))
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")
    m = make_model([node], [vi("x", F, shape)], [vi("y", F, None)], [p], opset=19)
    x = randn(*[3 if d == "N" else d for d in shape])
    module = check_against_ort(m, {"x": x})
    assert ops(module) == ["graph.pad"]
    exported = export_module(module)
    (pad,) = [n for n in exported.graph.node if n.op_type != "Constant"]
    assert pad.op_type == "Pad" and helper.get_attribute_value(pad.attribute[0]) == b"wrap"
    np.testing.assert_array_equal(ort_run(exported, {"x": x})[0], ort_run(m, {"x": x})[0])
    with pytest.raises(
        UserError, match=r"cannot export 'graph\.pad' to ONNX opset 18: Pad mode wrap"
    ):
        export_module(module, 18)


def test_gather_nd_batch_dims_matches_onnxruntime() -> None:
    idx = init("i", np.array([[[1, 0], [0, 2]], [[1, 1], [0, 0]]], np.int64))
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)
    m = make_model([node], [vi("x", F, [2, 2, 3, 4])], [vi("y", F, None)], [idx], opset=13)
    check_against_ort(m, {"x": randn(2, 2, 3, 4)})


def test_refusals() -> None:
    node = helper.make_node("DFT", ["x"], ["y"], name="f", axis=2)
    m = make_model([node], [vi("x", F, [2, 6, 1])], [vi("y", F, None)], opset=17)
    assert error_of(m) == "node 'f' (DFT-17): axis 2 must name a dim other than the last of rank 3"
    length = init("n", np.array(0, np.int64))
    node = helper.make_node("DFT", ["x", "n"], ["y"], name="f")
    m = make_model([node], [vi("x", F, [2, 6, 1])], [vi("y", F, None)], [length], opset=17)
    assert error_of(m) == "node 'f' (DFT-17): dft_length 0 must be positive"
    step = init("step", np.array(2, np.int64))
    node = helper.make_node("STFT", ["x", "step", "w"], ["y"], name="s")
    ins = [vi("x", F, [1, 6, 1]), vi("w", F, [8])]
    m = make_model([node], ins, [vi("y", F, None)], [step], opset=17)
    assert error_of(m) == "node 's' (STFT-17): frame_step 2 and frame_length 8 do not frame 6"
    node = helper.make_node("STFT", ["x", "step", "", "size"], ["y"], name="s")
    ins = [vi("x", F, [1, 6, 1]), vi("size", TensorProto.INT64, [])]
    m = make_model([node], ins, [vi("y", F, None)], [step], opset=17)
    assert "node 's' (STFT-17): frame_length (input #3) must be a constant" in error_of(m)
    pads = init("p", np.array([1, 0], np.int64))
    node = helper.make_node("Pad", ["x", "p"], ["y"], name="pad", mode="wrap")
    m = make_model([node], [vi("x", F, [3])], [vi("y", F, None)], [pads], opset=18)
    assert error_of(m) == (
        "node 'pad' (Pad-18): attribute mode='wrap' is not supported (constant, reflect, edge)"
    )


def test_wrap_pad_compiles_and_checks(tmp_path: Path) -> None:
    """`afc compile --check` with a wrap graph.pad between vector ops: no kernel template
    pads, so it stays a library op, and fused.onnx writes it back as Pad (mode wrap)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Pad", ["r", "p"], ["w"], mode="wrap"),
        helper.make_node("Sigmoid", ["w"], ["y"]),
    ]
    p = init("p", np.array([0, 1, 2, 0, 2, 1], np.int64))
    m = make_model(nodes, [vi("x", F, [2, 4, 8])], [vi("y", F, None)], [p], opset=19)
    pads = [op for op in compiled_ops(tmp_path, m) if op.name == "graph.pad"]
    assert len(pads) == 1 and pads[0].properties["mode"].data == "wrap"


def test_dft_compiles_and_checks(tmp_path: Path) -> None:
    """`afc compile --check` with graph.dft between vector ops: a library op of its own,
    and fused.onnx writes it back as DFT."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("DFT", ["r", "", "axis"], ["f"], onesided=1),
        helper.make_node("Sigmoid", ["f"], ["y"]),
    ]
    axis = init("axis", np.array(1, np.int64))
    m = make_model(nodes, [vi("x", F, [2, 16, 1])], [vi("y", F, None)], [axis], opset=20)
    names = [op.name for op in compiled_ops(tmp_path, m)]
    assert names.count("graph.dft") == 1
