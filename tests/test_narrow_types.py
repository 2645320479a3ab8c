"""The storage-only element types (autofusion/narrow_types.py): conversions against
ml_dtypes and onnx.numpy_helper (ONNX's reference), every bit pattern of each 8-bit format,
ONNX import and export of their tensors, refusals, and what ub-fusion does with them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autofusion import dtypes, narrow_types
from autofusion.diagnostics import LocatedVerifyError, UserError
from autofusion.mlir_io import default_context, parse_module

ml_dtypes = pytest.importorskip("ml_dtypes")

# afc's name -> (ml_dtypes type, ONNX TensorProto's name)
TYPES = {
    "f8E4M3FN": (ml_dtypes.float8_e4m3fn, "FLOAT8E4M3FN"),
    "f8E4M3FNUZ": (ml_dtypes.float8_e4m3fnuz, "FLOAT8E4M3FNUZ"),
    "f8E5M2": (ml_dtypes.float8_e5m2, "FLOAT8E5M2"),
    "f8E5M2FNUZ": (ml_dtypes.float8_e5m2fnuz, "FLOAT8E5M2FNUZ"),
    "f4E2M1FN": (ml_dtypes.float4_e2m1fn, "FLOAT4E2M1"),
    "f8E8M0FNU": (ml_dtypes.float8_e8m0fnu, "FLOAT8E8M0"),
    "i4": (ml_dtypes.int4, "INT4"),
    "ui4": (ml_dtypes.uint4, "UINT4"),
    "i2": (ml_dtypes.int2, "INT2"),
    "ui2": (ml_dtypes.uint2, "UINT2"),
}
ML = {name: ml for name, (ml, _) in TYPES.items()}
FLOAT8 = ["f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ"]


def _samples() -> np.ndarray:
    """Values around every binade the formats cover, ties, specials and overflow."""
    rng = np.random.default_rng(0)
    scales = (1e-5, 1e-3, 1e-1, 1, 10, 300, 1e4, 1e5)
    random = [rng.standard_normal(4000) * s for s in scales]
    special = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 464, 480, 248, 61440, 0.25, 2.5, 5]
    return np.concatenate([*random, np.array(special)]).astype(np.float32)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.array_equal(got.view(np.uint8), want.view(np.uint8)))


@pytest.mark.parametrize("name", [*FLOAT8, "f4E2M1FN", "f8E8M0FNU"])
def test_every_bit_pattern_decodes_as_ml_dtypes_and_round_trips(name: str) -> None:
    n = 16 if name == "f4E2M1FN" else 256
    codes = np.arange(n, dtype=np.uint8)
    want = codes.view(ML[name]).astype(np.float32)
    got = narrow_types.decode(codes, name)
    np.testing.assert_array_equal(got, want)  # NaNs in the same places
    keep = ~np.isnan(got)
    np.testing.assert_array_equal(narrow_types.encode(got, name)[keep], codes[keep])
    # the storage bytes are MLIR's: one code per element
    mlir_type = dtypes.ELEMENT_TYPES[name]
    raw = dtypes.to_bytes(got[keep], mlir_type)
    assert raw == codes[keep].tobytes()
    np.testing.assert_array_equal(dtypes.from_bytes(raw, mlir_type, (-1,)), got[keep])


@pytest.mark.parametrize("source", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("name", [*FLOAT8, "f4E2M1FN"])
def test_rounding_matches_onnx_reference(name: str, saturate: bool, source: type) -> None:
    from onnx.numpy_helper import saturate_cast

    with np.errstate(all="ignore"):
        x = _samples().astype(source)
        if name == "f4E2M1FN" or not saturate:  # Cast's saturate concerns float8 only
            want = x.astype(ML[name])
        else:
            want = saturate_cast(x, ML[name])
    got = narrow_types.round_float(x, name, saturate)
    assert _same(narrow_types.encode(got, name), want.view(np.uint8))


@pytest.mark.parametrize("mode", narrow_types.ROUND_MODES)
@pytest.mark.parametrize("saturate", [True, False])
def test_e8m0_matches_onnx_reference(saturate: bool, mode: str) -> None:
    from onnx.numpy_helper import to_float8e8m0

    x = np.concatenate([np.abs(_samples()), np.float32([2.0**-127, 2.0**-130, 3e38, 1.7e38])])
    want = to_float8e8m0(x, saturate, mode).view(np.uint8)
    got = narrow_types.encode(narrow_types.round_e8m0(x, saturate, mode), "f8E8M0FNU")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["i4", "ui4", "i2", "ui2"])
def test_small_integers_truncate_and_wrap_as_ml_dtypes(name: str) -> None:
    floats = np.concatenate([np.arange(-40, 40) + 0.5, np.arange(-40, 40) - 0.7]).astype(np.float32)
    ints = np.arange(-300, 300)
    for x in (floats, ints):
        want = x.astype(ML[name]).astype(np.int64)
        np.testing.assert_array_equal(narrow_types.wrap_integer(x, name).astype(np.int64), want)
    # NaN and inf become 0
    special = np.float32([np.nan, np.inf, -np.inf])
    np.testing.assert_array_equal(narrow_types.wrap_integer(special, name), [0, 0, 0])


def test_saturate_false_overflows_per_format() -> None:
    x = np.float32([1e6, -1e6, np.inf])
    assert np.isnan(narrow_types.round_float(x, "f8E4M3FN", saturate=False)).all()
    np.testing.assert_array_equal(
        narrow_types.round_float(x, "f8E5M2", saturate=False), [np.inf, -np.inf, np.inf]
    )
    np.testing.assert_array_equal(
        narrow_types.round_float(x, "f8E5M2", saturate=True), [57344, -57344, 57344]
    )


def test_a_value_outside_the_format_is_not_encoded() -> None:
    with pytest.raises(ValueError, match=r"0\.30000001192092896 is not a value of f8E4M3FN"):
        narrow_types.encode(np.float32([0.3]), "f8E4M3FN")


@pytest.mark.parametrize(("bits", "count"), [(4, 5), (2, 7), (8, 3)])
def test_packing_matches_onnx(bits: int, count: int) -> None:
    from onnx import numpy_helper

    codes = (np.arange(count) % (1 << bits)).astype(np.uint8)
    packed = narrow_types.pack(codes, bits)
    if bits == 4:
        want = numpy_helper._pack_4bitx2(codes)
    elif bits == 2:
        want = numpy_helper._pack_2bitx4(codes)
    else:
        want = codes
    assert packed == want.tobytes()


# --------------------------------------------------------------------------------------
# Graph dialect, ONNX import and export, ub-fusion
# --------------------------------------------------------------------------------------

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from test_onnx_backend_nodes import _plain  # noqa: E402

from autofusion.interpreter import run_function  # noqa: E402
from frontends.onnx import import_onnx_model  # noqa: E402
from frontends.onnx.export import export_module  # noqa: E402


def _cast_model(name: str, attrs: dict[str, object], odd: bool) -> onnx.ModelProto:
    """w (an initializer of type `name`) and Cast(x -> name, attrs), both back to float."""
    elem = getattr(TensorProto, TYPES[name][1])
    values = np.float32([0.5, -1.0, 3.0, 2.0, -2.0][: 3 if odd else 4])
    if name.startswith("u"):
        values = np.abs(values)
    w = helper.make_tensor("w", elem, [len(values)], values)
    nodes = [
        helper.make_node("Cast", ["x"], ["q"], to=elem, **attrs),
        helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["w"], ["z"], to=TensorProto.FLOAT),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [
            helper.make_tensor_value_info("q", elem, [5]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [5]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [len(values)]),
        ],
        [w],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])


CAST_ATTRS = {
    "f8E4M3FN": {"saturate": 0},
    "f8E4M3FNUZ": {},
    "f8E5M2": {"saturate": 0},
    "f8E5M2FNUZ": {},
    "f4E2M1FN": {},
    "f8E8M0FNU": {"round_mode": "nearest"},
    "i4": {},
    "ui4": {},
    "i2": {},
    "ui2": {},
}


@pytest.mark.parametrize("odd", [False, True])
@pytest.mark.parametrize("name", sorted(TYPES))
def test_import_and_export_agree_with_onnx_reference(name: str, odd: bool) -> None:
    """Casts with their attributes and an initializer (packed for sub-byte types, with
    an odd element count) through the importer and the exporter, against ONNX's
    reference on the original model."""
    model = _cast_model(name, CAST_ATTRS[name], odd)
    x = np.float32([0.3, 1e6, -7.7, 2.5, np.nan if "f8" in name else 1.0])
    want = [_plain(v) for v in ReferenceEvaluator(model).run(None, {"x": x})]
    module = import_onnx_model(default_context(), model, "m")
    got = list(run_function(module, {"x": x}).values())
    exported = export_module(module)
    again = import_onnx_model(default_context(), exported, "again")
    for result in (got, list(run_function(again, {"x": x}).values())):
        for g, w in zip(result, want, strict=True):
            np.testing.assert_array_equal(g, w)
    assert exported.graph.output[0].type.tensor_type.elem_type == getattr(
        TensorProto, TYPES[name][1]
    )
    casts = [n for n in exported.graph.node if n.op_type == "Cast"]
    attrs = {a.name for n in casts for a in n.attribute}
    assert set(CAST_ATTRS[name]) <= attrs


def test_arithmetic_on_a_narrow_type_is_refused_by_the_verifier() -> None:
    text = """
    func.func @f(%x: tensor<4xi4>) -> tensor<4xi4> {
      %y = graph.neg %x : tensor<4xi4>
      func.return %y : tensor<4xi4>
    }"""
    with pytest.raises(LocatedVerifyError, match=r"f.mlir:3:7: .*graph\.neg does not take i4"):
        parse_module(default_context(), text, "f.mlir")


def test_a_narrow_group_stays_a_library_op(tmp_path: Path) -> None:
    """ub-fusion keeps casts to and from float8 out of vector kernels (the vector unit has
    no float8 arithmetic), and --check's kernels and ONNX Runtime agree."""
    from autofusion.driver.compile import compile_model
    from autofusion.driver.pipeline import CompileOptions

    path = tmp_path / "m.mlir"
    path.write_text(
        """
func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = graph.exp %x : tensor<4x64xf32>
  %a = graph.cast %y {saturate = false} : tensor<4x64xf32> -> tensor<4x64xf8E5M2>
  %b = graph.cast %a : tensor<4x64xf8E5M2> -> tensor<4x64xf32>
  %c = graph.mul %b, %b : tensor<4x64xf32>
  func.return %c : tensor<4x64xf32>
}"""
    )
    c = compile_model(str(path), CompileOptions(check=True))
    report = c.files["report.md"].decode()
    assert "| graph.cast @ a | library | graph.cast @ a |" in report
    assert "| graph.cast @ b | library | graph.cast @ b |" in report
    assert c.check is not None and c.check["ok"], c.check
    assert any(k["what"].startswith("ONNX Runtime") and k["ok"] for k in c.check["comparisons"])


def test_data_movement_on_float8_runs_and_other_ops_are_refused() -> None:
    """Identity, Reshape, Squeeze and Transpose move float8 values as ONNX's reference does;
    Concat is refused naming the node, the op and the type."""
    e4m3 = TensorProto.FLOAT8E4M3FN
    shape = helper.make_tensor("shape", TensorProto.INT64, [3], [4, 1, 2])
    nodes = [
        helper.make_node("Identity", ["x"], ["i"]),
        helper.make_node("Reshape", ["i", "shape"], ["r"]),
        helper.make_node("Squeeze", ["r"], ["s"]),
        helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0]),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", e4m3, [2, 4])],
        [helper.make_tensor_value_info("y", e4m3, [2, 4])],
        [shape],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    x = np.float32([[0.5, -1.0, 448, 3.0], [0.125, -0.0, 2.0, 6.0]])
    want = ReferenceEvaluator(model).run(None, {"x": x.astype(TYPES["f8E4M3FN"][0])})[0]
    got = run_function(import_onnx_model(default_context(), model, "m"), {"x": x})["y"]
    np.testing.assert_array_equal(got, _plain(want))
    model.graph.node.append(helper.make_node("Concat", ["y", "y"], ["c"], name="cat", axis=0))
    model.graph.output.append(helper.make_tensor_value_info("c", e4m3, [4, 4]))
    with pytest.raises(UserError, match=r"^node 'cat' \(Concat-13\): .* does not take f8E4M3FN"):
        import_onnx_model(default_context(), model, "m")
