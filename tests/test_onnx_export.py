"""ONNX export against ONNX Runtime: every graph op, fusion groups, determinism, errors.

Each case is graph IR; the exported model must pass onnx.checker (full check) and give,
on ONNX Runtime with all graph optimizations disabled, what our interpreter gives on the
same random inputs.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from xdsl.dialects.builtin import ModuleOp, TensorType  # noqa: E402
from xdsl.ir import Operation  # noqa: E402

from autofusion import dtypes, narrow_types  # noqa: E402
from autofusion.diagnostics import UserError  # noqa: E402
from autofusion.dialects import graph  # noqa: E402
from autofusion.dialects.graph_fused import FFN_GATED  # noqa: E402
from autofusion.interpreter import find_function, random_inputs, run_function  # noqa: E402
from autofusion.mlir_io import default_context, parse_module  # noqa: E402
from frontends.onnx import export_ops, export_table  # noqa: E402
from frontends.onnx.export import OnnxTarget, export_module, serialize  # noqa: E402
from frontends.onnx.values import ELEMENT_TYPES  # noqa: E402

TensorProto = onnx.TensorProto

# --------------------------------------------------------------------------------------
# Harness
# --------------------------------------------------------------------------------------

# (rtol, atol) by output element type; f16/bf16 get one rounding of slack per op
TOLERANCE = {
    TensorProto.FLOAT: (1e-5, 1e-5),
    TensorProto.DOUBLE: (1e-12, 1e-12),
    TensorProto.FLOAT16: (4e-3, 4e-3),
    TensorProto.BFLOAT16: (2e-2, 2e-2),
}


def parse(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "export.mlir")


def shape_only_fill(op: graph.ConstantOp) -> np.ndarray:
    """Deterministic values for a shape-only weight, fed to ONNX Runtime as an input."""
    t = cast(TensorType, op.result.type)
    rng = np.random.default_rng(len(t.get_shape()))
    return dtypes.to_storage(rng.standard_normal(t.get_shape()), t.element_type)


def run_ort(
    model: Any, feeds: Mapping[str, np.ndarray], shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, np.ndarray]:
    """Run `model` on ONNX Runtime's CPU provider with no graph optimizations.

    bf16 values travel as their raw bits (numpy has no bf16), float8 ones as their codes.
    """
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(serialize(model), so, providers=["CPUExecutionProvider"])
    binding = sess.io_binding()
    for vi in model.graph.input:
        arr = feeds[vi.name]
        elem = vi.type.tensor_type.elem_type
        if elem == TensorProto.BFLOAT16:
            arr = dtypes.f32_to_bf16_bits(arr)
        elif _float8(elem):
            arr = narrow_types.codes_of(arr, _float8(elem))
        binding.bind_ortvalue_input(
            vi.name,
            ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(arr), elem),
        )
    buffers = {}
    for vi in model.graph.output:
        elem = vi.type.tensor_type.elem_type
        if elem == TensorProto.BFLOAT16:
            dtype = np.dtype(np.uint16)
        elif _float8(elem):
            dtype = np.dtype(np.uint8)
        else:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        buffers[vi.name] = np.zeros(shapes[vi.name], dtype)
        binding.bind_ortvalue_output(
            vi.name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buffers[vi.name], elem)
        )
    sess.run_with_iobinding(binding)
    out = {}
    for vi in model.graph.output:
        arr = buffers[vi.name]
        elem = vi.type.tensor_type.elem_type
        if elem == TensorProto.BFLOAT16:
            arr = dtypes.bf16_bits_to_f32(arr)
        elif _float8(elem):
            arr = narrow_types.decode(arr, _float8(elem))
        out[vi.name] = arr
    return out


def _float8(elem: int) -> str:
    """The afc name of a one-byte float8 ONNX type (held as float32 values), else ''."""
    t = ELEMENT_TYPES.get(elem)
    name = dtypes.type_name(t) if t is not None and dtypes.is_narrow(t) else ""
    return name if name and narrow_types.BITS[name] == 8 else ""


def compare(
    model: Any, want: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray], scale: float = 1.0
) -> None:
    for vi in model.graph.output:
        w, g = want[vi.name], got[vi.name]
        assert w.shape == g.shape, vi.name
        elem = vi.type.tensor_type.elem_type
        if elem in TOLERANCE:
            rtol, atol = TOLERANCE[elem]
            np.testing.assert_allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol * scale,
                atol * scale,
                err_msg=vi.name,
            )
        else:
            np.testing.assert_array_equal(g, w, err_msg=vi.name)


def check(
    text: str,
    opset: int | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
    positive: bool = False,
    scale: float = 1.0,
    seed: int = 0,
) -> Any:
    """Export, check and run `text` on ONNX Runtime against the interpreter; return the model."""
    module = parse(text)
    model = export_module(module, opset)
    onnx.checker.check_model(model, full_check=True)
    f = find_function(module)
    feeds = dict(random_inputs(f, seed))
    if positive:
        feeds = {
            k: np.abs(v) + v.dtype.type(0.5) if v.dtype.kind == "f" else v for k, v in feeds.items()
        }
    feeds.update(inputs or {})
    want = run_function(module, feeds, shape_only_fill=shape_only_fill)
    # shape-only weights are extra graph inputs: feed them what the interpreter used
    for op in f.walk():
        if isinstance(op, graph.ConstantOp) and op.value is None:
            name_attr = op.attributes["name"]
            feeds[cast(Any, name_attr).data] = shape_only_fill(op)
    got = run_ort(model, feeds, {k: v.shape for k, v in want.items()})
    compare(model, want, got, scale)
    return model


def fn(args: str, body: str, results: str) -> str:
    """`func.func @main(args) -> (result types)` returning %r (or %r0, %r1, ... for several)."""
    types = [t.strip() for t in results.split(";")]
    names = ["%r"] if len(types) == 1 else [f"%r{i}" for i in range(len(types))]
    ret = f"func.return {', '.join(names)} : {', '.join(types)}"
    return f"func.func @main({args}) -> ({', '.join(types)}) {{\n{body}\n  {ret}\n}}"


def unary(op: str, t: str, props: str = "") -> str:
    return fn(f"%x: {t}", f"  %r = graph.{op} %x{props} : {t}", t)


def ops_of(model: Any) -> list[str]:
    return [n.op_type for n in model.graph.node]


def function_names(model: Any) -> list[str]:
    return [f.name for f in model.functions]


# --------------------------------------------------------------------------------------
# Elementwise ops
# --------------------------------------------------------------------------------------

# graph op -> the ONNX op (or ai.afc function) it becomes at opset 17
FLOAT_UNARY = {
    "neg": "Neg",
    "abs": "Abs",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "rsqrt": "Rsqrt",
    "reciprocal": "Reciprocal",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "erf": "Erf",
    "silu": "Silu",
    "sin": "Sin",
    "cos": "Cos",
}
POSITIVE = {"log", "sqrt", "rsqrt"}
FUNCTIONS = {"rsqrt", "silu"}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("t", ["tensor<3x5xf32>", "tensor<?x5xf32>", "tensor<3x5xf16>"])
def test_float_unary(name: str, t: str) -> None:
    model = check(unary(name, t), positive=name in POSITIVE)
    assert ops_of(model) == [FLOAT_UNARY[name]]
    assert function_names(model) == ([FLOAT_UNARY[name]] if name in FUNCTIONS else [])
    assert model.graph.node[0].domain == ("ai.afc" if name in FUNCTIONS else "")


@pytest.mark.parametrize("t", ["tensor<4x6xf32>", "tensor<4x6xf16>"])
def test_silu_is_swish_from_opset_24(t: str) -> None:
    model = check(unary("silu", t), opset=24)
    assert ops_of(model) == ["Swish"] and not model.functions


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("t", ["tensor<4x6xf32>", "tensor<?x6xf16>"])
def test_gelu(approximate: str, opset: int, t: str) -> None:
    model = check(unary("gelu", t, f' {{approximate = "{approximate}"}}'), opset=opset)
    if opset >= 20:
        assert ops_of(model) == ["Gelu"]
    else:
        assert function_names(model) == ["GeluTanh" if approximate == "tanh" else "Gelu"]


@pytest.mark.parametrize(
    ("props", "t"),
    [
        ("{min = 0.0, max = 6.0}", "tensor<4x6xf32>"),
        ("{min = -0.5}", "tensor<4x6xf32>"),
        ("{max = 0.25}", "tensor<4x6xf16>"),
        ("{min = 2.0, max = 5.0}", "tensor<4x6xi32>"),
        ("{max = 3.0}", "tensor<4x6xi64>"),
    ],
)
def test_clip(props: str, t: str) -> None:
    model = check(unary("clip", t, " " + props))
    assert ops_of(model)[-1] == "Clip"


def test_not() -> None:
    check(unary("not", "tensor<3x4xi1>"))


CASTS = [
    ("f32", "f16"),
    ("f16", "f32"),
    ("f32", "bf16"),
    ("bf16", "f32"),
    ("f32", "i32"),
    ("f32", "i64"),
    ("f32", "i8"),
    ("i64", "f32"),
    ("i32", "i64"),
    ("i64", "i32"),
    ("f32", "i1"),
    ("i1", "f32"),
    ("i1", "i64"),
    ("f16", "bf16"),
    ("f32", "ui8"),
    ("ui8", "f32"),
    ("i16", "i64"),
    ("ui16", "i32"),
    ("ui32", "f32"),
    ("ui64", "i64"),
    ("i64", "ui64"),
    ("i1", "ui8"),
]


@pytest.mark.parametrize(("src", "dst"), CASTS)
def test_cast(src: str, dst: str) -> None:
    a, b = f"tensor<3x?x{src}>", f"tensor<3x?x{dst}>"
    text = fn(f"%x: {a}", f"  %r = graph.cast %x : {a} -> {b}", b)
    inputs = None
    if src == "f32":
        # values with fractions of both signs (truncation) and in i8 range
        inputs = {
            "arg0": np.array(
                [[-2.7, -0.5, 0.0, 0.4], [1.5, 3.99, -7.2, 100.25], [5e-3, -1e-4, 2.5, 33.3]],
                np.float32,
            )
        }
    check(text, inputs=inputs)


BINARY = ["add", "sub", "mul", "div", "max", "min"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_binary_broadcast(name: str, elt: str) -> None:
    a, b, r = (f"tensor<{s}x{elt}>" for s in ("2x1x5", "3x1", "2x3x5"))
    check(fn(f"%a: {a}, %b: {b}", f"  %r = graph.{name} %a, %b : ({a}, {b}) -> {r}", r))


@pytest.mark.parametrize("name", BINARY)
def test_binary_dynamic(name: str) -> None:
    a, b, r = "tensor<?x1x5xf32>", "tensor<3x1xf32>", "tensor<?x3x5xf32>"
    check(fn(f"%a: {a}, %b: {b}", f"  %r = graph.{name} %a, %b : ({a}, {b}) -> {r}", r))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "max", "min"])
@pytest.mark.parametrize("elt", ["i32", "i64", "i16", "i8", "ui8", "ui16", "ui32", "ui64"])
def test_binary_integer(name: str, elt: str) -> None:
    if name in ("max", "min") and elt in ("i16", "ui16"):
        pytest.skip("ONNX Runtime's CPU provider has no Max/Min kernel for int16/uint16")
    a, b = f"tensor<4x5x{elt}>", f"tensor<5x{elt}>"
    check(fn(f"%a: {a}, %b: {b}", f"  %r = graph.{name} %a, %b : ({a}, {b}) -> {a}", a))


@pytest.mark.parametrize("elt", ["i32", "i64"])
def test_integer_division_truncates(elt: str) -> None:
    t = f"tensor<6x{elt}>"
    dt = np.int32 if elt == "i32" else np.int64
    inputs = {
        "arg0": np.array([7, -7, 7, -7, 0, 9], dt),
        "arg1": np.array([2, 2, -2, -2, 3, -4], dt),
    }
    check(fn(f"%a: {t}, %b: {t}", f"  %r = graph.div %a, %b : {t}", t), inputs=inputs)


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_pow(elt: str) -> None:
    a, b = f"tensor<3x4x{elt}>", f"tensor<4x{elt}>"
    check(
        fn(f"%a: {a}, %b: {b}", f"  %r = graph.pow %a, %b : ({a}, {b}) -> {a}", a),
        positive=True,
        scale=4,
    )


@pytest.mark.parametrize("name", ["and", "or"])
def test_logical(name: str) -> None:
    a, b = "tensor<2x3xi1>", "tensor<3xi1>"
    check(fn(f"%a: {a}, %b: {b}", f"  %r = graph.{name} %a, %b : ({a}, {b}) -> {a}", a))


@pytest.mark.parametrize("name", ["equal", "less", "greater"])
@pytest.mark.parametrize("elt", ["f32", "i64", "f16"])
def test_compare(name: str, elt: str) -> None:
    a, b, r = f"tensor<?x4x{elt}>", f"tensor<4x{elt}>", "tensor<?x4xi1>"
    check(fn(f"%a: {a}, %b: {b}", f"  %r = graph.{name} %a, %b : ({a}, {b}) -> {r}", r))


def test_equal_on_i1() -> None:
    t = "tensor<5xi1>"
    check(fn(f"%a: {t}, %b: {t}", f"  %r = graph.equal %a, %b : {t}", t))


@pytest.mark.parametrize("elt", ["f32", "i64", "f16"])
def test_where_broadcasts_three_ways(elt: str) -> None:
    c, x, y, r = (
        "tensor<2x1x4xi1>",
        f"tensor<3x1x{elt}>",
        f"tensor<4x{elt}>",
        f"tensor<2x3x4x{elt}>",
    )
    check(
        fn(
            f"%c: {c}, %x: {x}, %y: {y}",
            f"  %r = graph.where %c, %x, %y : ({c}, {x}, {y}) -> {r}",
            r,
        )
    )


# --------------------------------------------------------------------------------------
# Reductions and softmax
# --------------------------------------------------------------------------------------

REDUCTIONS = [
    ("[1]", "false", "tensor<2x3x4xf32>", "tensor<2x4xf32>"),
    ("[]", "true", "tensor<2x3x4xf32>", "tensor<1x1x1xf32>"),
    ("[-1, 0]", "true", "tensor<?x3x4xf32>", "tensor<1x3x1xf32>"),
    ("[2]", "false", "tensor<?x3x4xf16>", "tensor<?x3xf16>"),
]


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
@pytest.mark.parametrize(("axes", "keep", "a", "r"), REDUCTIONS)
@pytest.mark.parametrize("opset", [11, 13, 18])
def test_reduce(name: str, axes: str, keep: str, a: str, r: str, opset: int) -> None:
    text = fn(
        f"%x: {a}", f"  %r = graph.{name} %x {{axes = {axes}, keepdims = {keep}}} : {a} -> {r}", r
    )
    model = check(text, opset=opset, scale=4)
    takes_input = opset >= (13 if name == "reduce_sum" else 18) and axes != "[]"
    node = model.graph.node[-1]
    assert (len(node.input) == 2) == takes_input
    assert ("axes" in [a.name for a in node.attribute]) == (not takes_input and axes != "[]")


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_min"])
def test_reduce_integer(name: str) -> None:
    a, r = "tensor<3x4xi64>", "tensor<3xi64>"
    check(
        fn(f"%x: {a}", f"  %r = graph.{name} %x {{axes = [1], keepdims = false}} : {a} -> {r}", r)
    )


@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("t", ["tensor<2x3x4xf32>", "tensor<?x3x4xf16>"])
def test_softmax(axis: int, opset: int, t: str) -> None:
    model = check(unary("softmax", t, f" {{axis = {axis}}}"), opset=opset)
    native = opset >= 13 or axis == -1
    assert ops_of(model) == ["Softmax"]
    assert function_names(model) == ([] if native else ["Softmax"])


# --------------------------------------------------------------------------------------
# Cube ops and epilogues
# --------------------------------------------------------------------------------------

MATMULS = [
    ("tensor<3x4xf32>", "tensor<4x5xf32>", "tensor<3x5xf32>"),
    ("tensor<2x1x3x4xf32>", "tensor<5x4x6xf32>", "tensor<2x5x3x6xf32>"),
    ("tensor<4xf32>", "tensor<2x4x5xf32>", "tensor<2x5xf32>"),
    ("tensor<2x3x4xf32>", "tensor<4xf32>", "tensor<2x3xf32>"),
    ("tensor<?x3x4xf32>", "tensor<4x5xf32>", "tensor<?x3x5xf32>"),
    ("tensor<3x8xf16>", "tensor<8x5xf16>", "tensor<3x5xf16>"),
]


@pytest.mark.parametrize(("a", "b", "r"), MATMULS)
def test_matmul(a: str, b: str, r: str) -> None:
    model = check(
        fn(f"%a: {a}, %b: {b}", f"  %r = graph.matmul %a, %b : ({a}, {b}) -> {r}", r), scale=4
    )
    assert ops_of(model) == ["MatMul"]


EPILOGUES = [
    "",
    ' {activation = "relu"}',
    ' {activation = "clip", clip_max = 0.5, clip_min = -0.25}',
    ' {activation = "clip", clip_min = 0.0}',
    ' {activation = "gelu"}',
    ' {activation = "gelu_tanh"}',
    ' {activation = "silu"}',
    ' {activation = "sigmoid"}',
]


@pytest.mark.parametrize("props", EPILOGUES)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_matmul_bias_epilogue(props: str, elt: str) -> None:
    a, b, c, r = (f"tensor<{s}x{elt}>" for s in ("?x3x8", "8x5", "5", "?x3x5"))
    text = fn(
        f"%a: {a}, %b: {b}, %c: {c}",
        f"  %r = graph.matmul %a, %b, %c{props} : ({a}, {b}, {c}) -> {r}",
        r,
    )
    model = check(text, scale=4)
    act = props.split('"')[1] if props else ""
    suffix = {
        "": "",
        "relu": "Relu",
        "clip": "Clip",
        "gelu": "Gelu",
        "gelu_tanh": "GeluTanh",
        "silu": "Silu",
        "sigmoid": "Sigmoid",
    }[act]
    assert function_names(model) == ["MatMulBias" + suffix]


def test_matmul_epilogue_without_bias_at_opset_24() -> None:
    a, b, r = "tensor<3x8xf32>", "tensor<8x5xf32>", "tensor<3x5xf32>"
    model = check(
        fn(
            f"%a: {a}, %b: {b}",
            f'  %r = graph.matmul %a, %b {{activation = "silu"}} : ({a}, {b}) -> {r}',
            r,
        ),
        opset=24,
    )
    assert function_names(model) == ["MatMulSilu"]
    assert [n.op_type for n in model.functions[0].node] == ["MatMul", "Swish"]


GEMMS = [
    ("tensor<3x4xf32>", "tensor<4x5xf32>", None, "false", "false", "1.0", "1.0"),
    ("tensor<4x3xf32>", "tensor<4x5xf32>", "tensor<5xf32>", "true", "false", "0.5", "2.0"),
    ("tensor<3x4xf32>", "tensor<5x4xf32>", "tensor<3x5xf32>", "false", "true", "1.5", "-1.0"),
    ("tensor<4x3xf32>", "tensor<5x4xf32>", "tensor<1xf32>", "true", "true", "1.0", "0.25"),
    ("tensor<3x4xf32>", "tensor<4x5xf32>", "tensor<3x1xf32>", "false", "false", "1.0", "1.0"),
    ("tensor<?x4xf16>", "tensor<4x5xf16>", "tensor<5xf16>", "false", "false", "1.0", "1.0"),
]


@pytest.mark.parametrize(("a", "b", "c", "ta", "tb", "alpha", "beta"), GEMMS)
@pytest.mark.parametrize(
    "act", ["", ', activation = "relu"', ', activation = "clip", clip_min = -1.0, clip_max = 1.0']
)
def test_gemm(
    a: str, b: str, c: str | None, ta: str, tb: str, alpha: str, beta: str, act: str
) -> None:
    m = a.split("<")[1].split("x")[1 if ta == "true" else 0]
    n = b.split("<")[1].split("x")[0 if tb == "true" else 1]
    elt = a.rsplit("x", 1)[-1][:-1]
    r = f"tensor<{m}x{n}x{elt}>"
    operands, types = ("%a, %b, %c", f"{a}, {b}, {c}") if c else ("%a, %b", f"{a}, {b}")
    args = f"%a: {a}, %b: {b}" + (f", %c: {c}" if c else "")
    props = f"{{alpha = {alpha}, beta = {beta}, trans_a = {ta}, trans_b = {tb}{act}}}"
    model = check(fn(args, f"  %r = graph.gemm {operands} {props} : ({types}) -> {r}", r), scale=4)
    assert ops_of(model) == (["Gemm"] if not act else ["GemmRelu" if "relu" in act else "GemmClip"])


CONVS = [
    # input, weight, bias, strides, pads, dilations, group, result
    ("1x3x9x9", "4x3x3x3", "4", "[2, 2]", "[1, 0, 2, 1]", "[1, 1]", 1, "1x4x5x4"),
    ("2x4x8x8", "6x2x3x3", None, "[1, 1]", "[1, 1, 1, 1]", "[2, 2]", 2, "2x6x6x6"),
    ("1x4x6x6", "4x1x3x3", "4", "[1, 1]", "[0, 0, 0, 0]", "[1, 1]", 4, "1x4x4x4"),
    ("?x3x7x7", "2x3x1x1", "2", "[1, 1]", "[0, 0, 0, 0]", "[1, 1]", 1, "?x2x7x7"),
]


@pytest.mark.parametrize(("x", "w", "b", "strides", "pads", "dil", "group", "r"), CONVS)
@pytest.mark.parametrize("act", ["", ', activation = "relu"', ', activation = "gelu_tanh"'])
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_conv2d(
    x: str,
    w: str,
    b: str | None,
    strides: str,
    pads: str,
    dil: str,
    group: int,
    r: str,
    act: str,
    elt: str,
) -> None:
    xt, wt, rt = (f"tensor<{s}x{elt}>" for s in (x, w, r))
    bt = f"tensor<{b}x{elt}>" if b else None
    args = f"%x: {xt}, %w: {wt}" + (f", %b: {bt}" if bt else "")
    operands, types = ("%x, %w, %b", f"{xt}, {wt}, {bt}") if bt else ("%x, %w", f"{xt}, {wt}")
    props = f"{{dilations = {dil}, group = {group}, pads = {pads}, strides = {strides}{act}}}"
    model = check(
        fn(args, f"  %r = graph.conv2d {operands} {props} : ({types}) -> {rt}", rt), scale=8
    )
    assert ops_of(model) == (
        ["Conv"] if not act else ["ConvRelu" if "relu" in act else "ConvGeluTanh"]
    )


# --------------------------------------------------------------------------------------
# Normalizations
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", ["tensor<2x3x4x4xf32>", "tensor<?x3xf32>", "tensor<2x3x5xf16>"])
def test_batch_norm(t: str) -> None:
    elt = t.rsplit("x", 1)[-1][:-1]
    c = f"tensor<3x{elt}>"
    args = f"%x: {t}, %s: {c}, %b: {c}, %m: {c}, %v: {c}"
    text = fn(
        args,
        f"  %r = graph.batch_norm %x, %s, %b, %m, %v {{epsilon = 1.0e-05}} : ({t}, {c}, {c}, {c}, {c}) -> {t}",
        t,
    )
    check(
        text,
        inputs={"arg4": np.linspace(0.5, 2, 3).astype(np.float32 if elt == "f32" else np.float16)},
    )


LAYER_NORMS = [
    ("tensor<2x3x8xf32>", -1, "tensor<8xf32>", "tensor<8xf32>"),
    ("tensor<?x3x8xf32>", 1, "tensor<3x8xf32>", None),
    ("tensor<2x4x6xf32>", 1, "tensor<6xf32>", "tensor<1x6xf32>"),
    ("tensor<2x3x8xf16>", -1, "tensor<8xf16>", "tensor<8xf16>"),
]


@pytest.mark.parametrize(("x", "axis", "s", "b"), LAYER_NORMS)
@pytest.mark.parametrize("opset", [13, 17])
def test_layer_norm(x: str, axis: int, s: str, b: str | None, opset: int) -> None:
    args = f"%x: {x}, %s: {s}" + (f", %b: {b}" if b else "")
    operands, types = ("%x, %s, %b", f"{x}, {s}, {b}") if b else ("%x, %s", f"{x}, {s}")
    text = fn(
        args,
        f"  %r = graph.layer_norm {operands} {{axis = {axis}, epsilon = 1.0e-05}} : ({types}) -> {x}",
        x,
    )
    model = check(text, opset=opset, scale=4)
    assert ops_of(model) == ["LayerNormalization"] and bool(model.functions) == (opset < 17)


@pytest.mark.parametrize(
    ("x", "axis", "s"),
    [("tensor<2x3x8xf32>", -1, "tensor<8xf32>"), ("tensor<?x3x8xf16>", 1, "tensor<3x8xf16>")],
)
@pytest.mark.parametrize("opset", [17, 23])
def test_rms_norm(x: str, axis: int, s: str, opset: int) -> None:
    text = fn(
        f"%x: {x}, %s: {s}",
        f"  %r = graph.rms_norm %x, %s {{axis = {axis}, epsilon = 1.0e-06}} : ({x}, {s}) -> {x}",
        x,
    )
    model = check(text, opset=opset, scale=4)
    assert ops_of(model) == ["RMSNormalization"] and bool(model.functions) == (opset < 23)


# --------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------

POOLS = [
    (
        "max_pool2d",
        "1x2x9x9",
        "{ceil_mode = false, dilations = [1, 1], kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}",
        "1x2x5x5",
    ),
    (
        "max_pool2d",
        "1x2x8x8",
        "{ceil_mode = true, dilations = [2, 1], kernel_shape = [2, 3], pads = [0, 1, 0, 0], strides = [2, 2]}",
        "1x2x4x4",
    ),
    (
        "avg_pool2d",
        "1x2x9x9",
        "{ceil_mode = false, count_include_pad = false, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}",
        "1x2x5x5",
    ),
    (
        "avg_pool2d",
        "1x2x9x9",
        "{ceil_mode = false, count_include_pad = true, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}",
        "1x2x5x5",
    ),
    (
        "avg_pool2d",
        "1x2x8x8",
        "{ceil_mode = true, count_include_pad = false, kernel_shape = [3, 3], pads = [0, 0, 0, 0], strides = [2, 2]}",
        "1x2x4x4",
    ),
    (
        "max_pool2d",
        "?x2x8x8",
        "{ceil_mode = false, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]}",
        "?x2x4x4",
    ),
]


@pytest.mark.parametrize(("name", "x", "props", "r"), POOLS)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_pool(name: str, x: str, props: str, r: str, elt: str) -> None:
    xt, rt = f"tensor<{x}x{elt}>", f"tensor<{r}x{elt}>"
    check(fn(f"%x: {xt}", f"  %r = graph.{name} %x {props} : {xt} -> {rt}", rt))


@pytest.mark.parametrize("elt", ["ui8", "i8"])
def test_integer_max_pool(elt: str) -> None:
    _, x, props, r = POOLS[0]
    xt, rt = f"tensor<{x}x{elt}>", f"tensor<{r}x{elt}>"
    check(fn(f"%x: {xt}", f"  %r = graph.max_pool2d %x {props} : {xt} -> {rt}", rt))


@pytest.mark.parametrize(
    ("x", "r"),
    [("tensor<2x3x5x4xf32>", "tensor<2x3x1x1xf32>"), ("tensor<?x3x7xf16>", "tensor<?x3x1xf16>")],
)
def test_global_avg_pool(x: str, r: str) -> None:
    check(fn(f"%x: {x}", f"  %r = graph.global_avg_pool %x : {x} -> {r}", r))


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------

MOVES = [
    ("reshape", "tensor<2x3x4xf32>", "{shape = [0, -1]}", "tensor<2x12xf32>"),
    ("reshape", "tensor<?x6xf32>", "{shape = [0, 2, 3]}", "tensor<?x2x3xf32>"),
    ("reshape", "tensor<2x6xbf16>", "{shape = [3, -1]}", "tensor<3x4xbf16>"),
    ("transpose", "tensor<2x3x4xf32>", "{perm = [2, 0, 1]}", "tensor<4x2x3xf32>"),
    ("transpose", "tensor<?x3xbf16>", "{perm = [1, 0]}", "tensor<3x?xbf16>"),
    ("transpose", "tensor<2x3xi1>", "{perm = [1, 0]}", "tensor<3x2xi1>"),
    (
        "slice",
        "tensor<6x8xf32>",
        "{axes = [0, 1], ends = [5, 9223372036854775807], starts = [1, -3], steps = [2, 1]}",
        "tensor<2x3xf32>",
    ),
    (
        "slice",
        "tensor<6x8xf32>",
        "{axes = [-1], ends = [-9223372036854775807], starts = [-2], steps = [-3]}",
        "tensor<6x3xf32>",
    ),
    (
        "slice",
        "tensor<?x8xi64>",
        "{axes = [1], ends = [6], starts = [2], steps = [1]}",
        "tensor<?x4xi64>",
    ),
    ("expand", "tensor<3x1xf32>", "{shape = [2, -1, 4]}", "tensor<2x3x4xf32>"),
    ("expand", "tensor<1x4xi64>", "{shape = [3, 1]}", "tensor<3x4xi64>"),
    (
        "pad",
        "tensor<3x4xf32>",
        '{mode = "constant", pads = [1, 0, 2, 1], value = 1.5}',
        "tensor<6x5xf32>",
    ),
    (
        "pad",
        "tensor<3x4xf32>",
        '{mode = "reflect", pads = [2, 1, 0, 2], value = 0.0}',
        "tensor<5x7xf32>",
    ),
    (
        "pad",
        "tensor<3x4xf16>",
        '{mode = "edge", pads = [0, 3, 1, 0], value = 0.0}',
        "tensor<4x7xf16>",
    ),
    (
        "pad",
        "tensor<3x4xf32>",
        '{mode = "constant", pads = [-1, 1, 0, -2], value = 0.0}',
        "tensor<2x3xf32>",
    ),
    (
        "pad",
        "tensor<3x4xi32>",
        '{mode = "constant", pads = [1, 1, 1, 1], value = 7.0}',
        "tensor<5x6xi32>",
    ),
]


@pytest.mark.parametrize(("name", "x", "props", "r"), MOVES)
def test_data_movement(name: str, x: str, props: str, r: str) -> None:
    check(fn(f"%x: {x}", f"  %r = graph.{name} %x {props} : {x} -> {r}", r))


def test_concat() -> None:
    a, b, c, r = "tensor<2x?x1xf32>", "tensor<2x?x3xf32>", "tensor<2x?x2xf32>", "tensor<2x?x6xf32>"
    check(
        fn(
            f"%a: {a}, %b: {b}, %c: {c}",
            f"  %r = graph.concat %a, %b, %c {{axis = -1}} : ({a}, {b}, {c}) -> {r}",
            r,
        )
    )


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split(opset: int) -> None:
    x = "tensor<?x6xf32>"
    body = "  %r0, %r1, %r2 = graph.split %x {axis = 1, sizes = [1, 2, 3]} : tensor<?x6xf32> -> (tensor<?x1xf32>, tensor<?x2xf32>, tensor<?x3xf32>)"
    model = check(
        fn(f"%x: {x}", body, "tensor<?x1xf32>; tensor<?x2xf32>; tensor<?x3xf32>"), opset=opset
    )
    assert len(model.graph.node[-1].input) == (2 if opset >= 13 else 1)


@pytest.mark.parametrize(
    ("data", "idx", "axis", "r"),
    [
        ("tensor<10x4xf32>", "tensor<2x3xi64>", 0, "tensor<2x3x4xf32>"),
        ("tensor<3x8xf16>", "tensor<5xi32>", 1, "tensor<3x5xf16>"),
    ],
)
def test_gather(data: str, idx: str, axis: int, r: str) -> None:
    text = fn(
        f"%d: {data}, %i: {idx}",
        f"  %r = graph.gather %d, %i {{axis = {axis}}} : ({data}, {idx}) -> {r}",
        r,
    )
    inputs = {"arg1": np.array([0, -1, 7, -8, 3], np.int32)} if axis == 1 else None
    check(text, inputs=inputs)


# --------------------------------------------------------------------------------------
# Named fused ops
# --------------------------------------------------------------------------------------

ATTENTIONS = [
    # layout, q, k, v, mask, result
    ("BNSD", "2x4x5x8", "2x2x5x8", "2x2x5x6", None, "2x4x5x6"),
    ("BNSD", "2x4x5x8", "2x4x7x8", "2x4x7x6", "2x1x1x7xi1", "2x4x5x6"),
    ("BNSD", "1x4x5x8", "1x1x5x8", "1x1x5x8", "1x4x5x5xf32", "1x4x5x8"),
    ("BSND", "2x5x4x8", "2x5x2x8", "2x5x2x8", None, "2x5x4x8"),
    ("BNSD", "1x2x?x8", "1x2x?x8", "1x2x?x8", None, "1x2x?x8"),
    ("BSND", "2x5x4x8", "2x5x2x8", "2x5x2x8", "5xi64", "2x5x4x8"),  # position ids
]


@pytest.mark.parametrize(("layout", "q", "k", "v", "mask", "r"), ATTENTIONS)
@pytest.mark.parametrize("causal", ["false", "true"])
@pytest.mark.parametrize(("elt", "opset"), [("f32", 17), ("f16", 17), ("f32", 11)])
def test_flash_attention(
    layout: str, q: str, k: str, v: str, mask: str | None, r: str, causal: str, elt: str, opset: int
) -> None:
    qt, kt, vt, rt = (f"tensor<{s}x{elt}>" for s in (q, k, v, r))
    mt = None
    if mask:
        integer = mask.endswith(("i1", "i64"))
        mt = f"tensor<{mask}>" if integer else f"tensor<{mask.rsplit('x', 1)[0]}x{elt}>"
    args = f"%q: {qt}, %k: {kt}, %v: {vt}" + (f", %m: {mt}" if mt else "")
    operands = "%q, %k, %v" + (", %m" if mt else "")
    types = f"{qt}, {kt}, {vt}" + (f", {mt}" if mt else "")
    props = f'{{causal = {causal}, layout = "{layout}", scale = 0.35}}'
    text = fn(args, f"  %r = graph.flash_attention {operands} {props} : ({types}) -> {rt}", rt)
    inputs = {}
    if mt and mask and mask.endswith("i1"):
        m = np.random.default_rng(1).random((2, 1, 1, 7)) < 0.6
        m[..., 0] = True  # no fully masked row
        inputs["arg3"] = m
    if mask and mask.endswith("i64"):  # shuffled ids: key j hidden where ids[j] > ids[i]
        inputs["arg3"] = np.random.default_rng(1).permutation(5).astype(np.int64)
    model = check(text, opset=opset, inputs=inputs, scale=4)
    assert function_names(model) == ["FlashAttention"]


@pytest.mark.parametrize("interleaved", ["false", "true"])
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_rope(interleaved: str, elt: str) -> None:
    x, c = f"tensor<?x4x6x8x{elt}>", f"tensor<6x8x{elt}>"
    text = fn(
        f"%x: {x}, %c: {c}, %s: {c}",
        f"  %r = graph.rope %x, %c, %s {{interleaved = {interleaved}}} : ({x}, {c}, {c}) -> {x}",
        x,
    )
    assert function_names(check(text)) == ["Rope"]


@pytest.mark.parametrize("opset", [17, 23])
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_partial_rope(opset: int, elt: str) -> None:
    """rotary_dim (Phi): the Slice/rope/Concat function, also where RotaryEmbedding-23 is."""
    x, c = f"tensor<?x4x6x8x{elt}>", f"tensor<1x1x6x4x{elt}>"
    props = "interleaved = false, rotary_dim = 4"
    text = fn(
        f"%x: {x}, %c: {c}, %s: {c}",
        f"  %r = graph.rope %x, %c, %s {{{props}}} : ({x}, {c}, {c}) -> {x}",
        x,
    )
    assert function_names(check(text, opset=opset)) == ["Rope"]


def test_swiglu() -> None:
    g, u = "tensor<2x?x8xf32>", "tensor<8xf32>"
    assert function_names(
        check(fn(f"%g: {g}, %u: {u}", f"  %r = graph.swiglu %g, %u : ({g}, {u}) -> {g}", g))
    ) == ["SwiGLU"]


FFN_CASES = {
    # activation, weight1 matrices (merged: one [K1, 2F]), bias1, bias2, residual
    "swiglu_residual": ("swiglu", 2, False, False, True),
    "swiglu_merged_biases": ("swiglu", 1, True, True, False),
    "geglu": ("geglu", 2, True, False, True),
    "geglu_tanh_merged": ("geglu_tanh", 1, True, True, False),
    "reglu": ("reglu", 1, False, True, True),
    "gelu_tanh": ("gelu_tanh", 1, True, True, False),
    "relu": ("relu", 1, False, False, False),
}


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("case", FFN_CASES)
def test_ffn(case: str, elt: str) -> None:
    act, n_w1, bias1, bias2, residual = FFN_CASES[case]
    f = 12
    x, y = f"tensor<2x?x8x{elt}>", f"tensor<2x?x6x{elt}>"
    width = 2 * f if n_w1 == 1 and act in FFN_GATED else f
    w1 = [f"tensor<8x{width}x{elt}>"] * n_w1
    args = [("x", x), *((f"w{i}", t) for i, t in enumerate(w1)), ("w2", f"tensor<{f}x6x{elt}>")]
    if bias1:
        args += [(f"b{i}", f"tensor<{width}x{elt}>") for i in range(n_w1)]
    if bias2:
        args.append(("c", f"tensor<6x{elt}>"))
    if residual:
        args.append(("res", y))
    sizes = [1, n_w1, 1, n_w1 if bias1 else 0, int(bias2), int(residual)]
    names = ", ".join(f"%{n}" for n, _ in args)
    types = ", ".join(t for _, t in args)
    segments = ", ".join(map(str, sizes))
    body = (
        f'  %r = graph.ffn {names} {{activation = "{act}", '
        f"operandSegmentSizes = array<i32: {segments}>}} : ({types}) -> {y}"
    )
    text = fn(", ".join(f"%{n}: {t}" for n, t in args), body, y)
    assert function_names(check(text, scale=4)) == ["FFN"]


@pytest.mark.parametrize("opset", [13, 17, 23])
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_add_norms(opset: int, elt: str) -> None:
    x, s = f"tensor<2x?x8x{elt}>", f"tensor<8x{elt}>"
    body = (
        f"  %r0, %r1 = graph.add_layer_norm %x, %y, %s, %s {{axis = -1, epsilon = 1.0e-05}} : ({x}, {x}, {s}, {s}) -> ({x}, {x})\n"
        f"  %r2, %r3 = graph.add_rms_norm %x, %y, %s {{axis = 2, epsilon = 1.0e-06}} : ({x}, {x}, {s}) -> ({x}, {x})"
    )
    model = check(
        fn(f"%x: {x}, %y: {x}, %s: {s}", body, f"{x}; {x}; {x}; {x}"), opset=opset, scale=4
    )
    assert function_names(model) == ["AddLayerNorm", "AddRmsNorm"]


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_split_norms(elt: str) -> None:
    # the statistics are float32 whatever the input's type
    x, st, s = f"tensor<2x3x8x{elt}>", "tensor<2x3x1xf32>", f"tensor<8x{elt}>"
    body = (
        f"  %m, %rs = graph.layer_norm_stats %x {{axis = -1, epsilon = 1.0e-05}} : {x} -> ({st}, {st})\n"
        f"  %r0 = graph.layer_norm_apply %x, %m, %rs, %s, %s {{axis = -1}} : ({x}, {st}, {st}, {s}, {s}) -> {x}\n"
        f"  %r1 = graph.layer_norm_apply %x, %m, %rs, %s {{axis = -1}} : ({x}, {st}, {st}, {s}) -> {x}\n"
        f"  %q = graph.rms_norm_stats %x {{axis = 2, epsilon = 1.0e-06}} : {x} -> {st}\n"
        f"  %r2 = graph.rms_norm_apply %x, %q, %s {{axis = 2}} : ({x}, {st}, {s}) -> {x}"
    )
    model = check(fn(f"%x: {x}, %s: {s}", body, f"{x}; {x}; {x}"), scale=4)
    assert function_names(model) == [
        "LayerNormStats",
        "LayerNormApply",
        "LayerNormApply_1",
        "RmsNormStats",
        "RmsNormApply",
    ]


def test_every_graph_op_has_an_entry() -> None:
    """A new graph op must get a TABLE entry (constants and fusion groups are structural)."""
    structural = {graph.ConstantOp, graph.FusionGroupOp, graph.YieldOp}
    missing = [
        op.name
        for op in graph.Graph.operations
        if op not in export_table.TABLE and op not in structural
    ]
    assert not missing, f"graph ops without an ONNX export: {missing}"


# --------------------------------------------------------------------------------------
# Weights, names and value_info
# --------------------------------------------------------------------------------------

CONSTANTS_TEMPLATE = """
func.func @main(%x: tensor<2x3xf32> {graph.name = "input"}) -> (tensor<2x3xf32> {graph.name = "y"}, tensor<2x3xf32> {graph.name = "input_copy"}, tensor<3xf32> {graph.name = "w_out"}, tensor<2x3xf32> {graph.name = "y_again"}, tensor<2x3xi64> {graph.name = "ints"}) {
  %w = graph.constant {name = "fc.weight"} dense_resource<HANDLE> : tensor<3xf32>
  %w2 = graph.constant {name = "fc.weight"} dense_resource<HANDLE> : tensor<3xf32>
  %s = graph.constant {name = "y"} dense<2.5> : tensor<2x3xf32>
  %b = graph.constant {name = "bf"} dense<[1.5, -2.0078125, 3.0e+38]> : tensor<3xbf16>
  %h = graph.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf16>
  %d = graph.constant dense<[1.0e-3, 2.0, 3.0]> : tensor<3xf64>
  %i = graph.constant dense<[[1, -2, 3], [4, 5, -6]]> : tensor<2x3xi64>
  %m = graph.constant dense<[true, false, true]> : tensor<3xi1>
  %a = graph.add %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %a2 = graph.mul %a, %w2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %bc = graph.cast %b : tensor<3xbf16> -> tensor<3xf32>
  %hc = graph.cast %h : tensor<3xf16> -> tensor<3xf32>
  %dc = graph.cast %d : tensor<3xf64> -> tensor<3xf32>
  %t = graph.add %a2, %bc : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t2 = graph.add %t, %hc : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t3 = graph.mul %t2, %dc : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t4 = graph.where %m, %t3, %s : (tensor<3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t4, %x, %w, %t4, %i : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xi64>
}
{-#
  dialect_resources: {
    builtin: {
      HANDLE: "0x100000000000803F00000040000080C0"
    }
  }
#-}
"""
_handles = itertools.count()


def constants_text() -> str:
    """CONSTANTS_TEMPLATE with a fresh resource handle: xDSL 0.74 keeps blobs per process
    and renames a handle declared twice, leaving the second parse without its blob."""
    return CONSTANTS_TEMPLATE.replace("HANDLE", f"fc_weight_{next(_handles)}x")


def test_constants_become_initializers() -> None:
    model = check(constants_text())
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    # the same weight twice is one initializer; names come from `name` (uniquified
    # against the output "y"), else from the SSA name
    assert list(inits) == ["fc.weight", "y_1", "bf", "h", "d", "i", "m"]
    assert [i.name for i in g.input] == ["input"]
    assert [o.name for o in g.output] == ["y", "input_copy", "w_out", "y_again", "ints"]
    assert all(t.raw_data and t.data_location == TensorProto.DEFAULT for t in inits.values())
    assert inits["bf"].data_type == TensorProto.BFLOAT16
    bits = np.frombuffer(inits["bf"].raw_data, "<u2")
    assert list(bits[:2]) == [0x3FC0, 0xC000]
    assert bits[2] == dtypes.f32_to_bf16_bits(np.array([3.0e38], np.float32))[0]
    assert inits["m"].data_type == TensorProto.BOOL and inits["m"].raw_data == b"\x01\x00\x01"
    assert onnx.numpy_helper.to_array(inits["i"]).tolist() == [[1, -2, 3], [4, 5, -6]]
    # outputs that are not node outputs of the graph (an input, a weight, a repeat) are copies
    identities = [(n.input[0], n.output[0]) for n in g.node if n.op_type == "Identity"]
    assert identities == [
        ("input", "input_copy"),
        ("fc.weight", "w_out"),
        ("y", "y_again"),
        ("i", "ints"),
    ]


def test_every_intermediate_has_value_info() -> None:
    model = check(constants_text())
    g = model.graph
    infos = {v.name: v for v in g.value_info}
    boundary = {v.name for v in [*g.input, *g.output, *g.initializer]}
    produced = [o for n in g.node for o in n.output if o not in boundary]
    assert produced and sorted(produced) == sorted(infos)
    for v in infos.values():
        assert v.type.tensor_type.HasField("shape") and v.type.tensor_type.elem_type


def test_dynamic_dims_are_dim_params() -> None:
    model = check(
        fn(
            "%x: tensor<?x3x?xf32>",
            "  %e = graph.exp %x : tensor<?x3x?xf32>\n  %r = graph.neg %e : tensor<?x3x?xf32>",
            "tensor<?x3x?xf32>",
        )
    )
    dims = [(d.dim_param, d.dim_value) for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [("arg0_dim0", 0), ("", 3), ("arg0_dim2", 0)]
    (e,) = model.graph.value_info
    assert [d.dim_param or d.dim_value for d in e.type.tensor_type.shape.dim] == [
        "e_dim0",
        3,
        "e_dim2",
    ]


def test_shape_only_weight_becomes_an_input() -> None:
    text = fn(
        "%x: tensor<?x4xf32>",
        '  %w = graph.constant {name = "model.w"} shape_only : tensor<4x5xf32>\n'
        "  %r = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x5xf32>) -> tensor<?x5xf32>",
        "tensor<?x5xf32>",
    )
    model = check(text)
    assert [i.name for i in model.graph.input] == ["arg0", "model.w"]
    w = model.graph.input[1].type.tensor_type
    assert [d.dim_value for d in w.shape.dim] == [4, 5] and not model.graph.initializer


def test_node_names_come_from_locations() -> None:
    text = (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %r = graph.rsqrt %x : tensor<4xf32> loc("layer1/rsqrt")\n'
        '  %s = graph.relu %r : tensor<4xf32> loc(fused["a", "b"])\n'
        "  func.return %s : tensor<4xf32>\n}"
    )
    model = check(text, positive=True)
    assert [n.name for n in model.graph.node] == ["layer1/rsqrt", "a+b"]


def test_named_functions_are_shared_per_body() -> None:
    t, h = "tensor<4xf32>", "tensor<4xf16>"
    body = (
        f'  %a = graph.gelu %x {{approximate = "none"}} : {t}\n'
        f'  %b = graph.gelu %a {{approximate = "none"}} : {t}\n'
        f"  %c = graph.cast %b : {t} -> {h}\n"
        f'  %d = graph.gelu %c {{approximate = "none"}} : {h}\n'
        f"  %r = graph.cast %d : {h} -> {t}"
    )
    model = check(fn(f"%x: {t}", body, t))
    # f32 bodies are shared; the f16 body casts to float32 first, so it is another function
    assert [n.op_type for n in model.graph.node] == ["Gelu", "Gelu", "Cast", "Gelu_1", "Cast"]
    assert function_names(model) == ["Gelu", "Gelu_1"]
    assert model.functions[1].node[0].op_type == "Cast"


# --------------------------------------------------------------------------------------
# Fusion groups
# --------------------------------------------------------------------------------------

GROUPS = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g:2 = graph.fusion_group (%a = %x : tensor<4x8xf32>, %b = %w : tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {afc.benefit_us = 1.5 : f64} {
    %c = graph.constant {name = "bias"} dense<0.5> : tensor<8xf32>
    %m = graph.matmul %a, %b, %c {activation = "relu"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %t = graph.gelu %m {approximate = "none"} : tensor<4x8xf32>
    graph.yield %t, %a : tensor<4x8xf32>, tensor<4x8xf32>
  }
  %h = graph.fusion_group (%p = %g#0 : tensor<4x8xf32>) -> tensor<4x8xf32> attributes {name = "tail"} {
    %inner = graph.fusion_group (%q = %p : tensor<4x8xf32>) -> tensor<4x8xf32> {
      %k = graph.constant {name = "bias"} dense<0.5> : tensor<8xf32>
      %e = graph.add %q, %k : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %r = graph.rsqrt %e : tensor<4x8xf32>
      graph.yield %r : tensor<4x8xf32>
    }
    %n = graph.neg %inner : tensor<4x8xf32>
    graph.yield %n : tensor<4x8xf32>
  }
  %s:2 = graph.fusion_group (%u = %h : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %z = graph.softmax %u {axis = -1} : tensor<4x8xf32>
    graph.yield %z, %z : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %g#0, %g#1, %s#0, %s#1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
"""


@pytest.mark.parametrize("opset", [17, 20])
def test_fusion_groups_become_functions(opset: int) -> None:
    model = check(GROUPS, opset=opset, scale=4)
    g = model.graph
    fns = {f.name: f for f in model.functions}
    assert [(n.op_type, n.domain) for n in g.node] == [
        ("fusion_group_0", "ai.afc"),
        ("tail", "ai.afc"),
        ("fusion_group_3", "ai.afc"),
    ]
    assert [i.name for i in g.initializer] == ["bias"]  # hoisted from both groups, once
    assert list(g.node[0].input) == ["arg0", "arg1", "bias"]
    assert list(g.node[1].input) == ["out0", "bias"]
    group0 = fns["fusion_group_0"]
    assert list(group0.input) == ["a", "b", "bias"] and len(group0.output) == 2
    assert group0.doc_string == "afc.benefit_us = 1.500000e+00 : f64"
    # the epilogue and gelu (before opset 20) are functions called from the group's body
    gelu_domain = "ai.afc" if opset < 20 else ""
    assert [(n.op_type, n.domain) for n in group0.node][:2] == [
        ("MatMulBiasRelu", "ai.afc"),
        ("Gelu", gelu_domain),
    ]
    assert [o.domain for o in group0.opset_import] == ["", "ai.afc"]
    # a yielded block argument and a repeated value are copied
    assert (
        group0.node[-1].op_type == "Identity"
        and fns["fusion_group_3"].node[-1].op_type == "Identity"
    )
    # the nested group is a function called from its parent's function
    tail = fns["tail"]
    assert tail.node[0].op_type == "fusion_group_2" and list(tail.input) == ["p", "bias"]
    assert "fusion_group_2" in fns and "Rsqrt" in fns


def test_fusion_group_names_are_unique() -> None:
    text = GROUPS.replace('attributes {name = "tail"}', 'attributes {name = "fusion_group_3"}')
    model = check(text, scale=4)
    assert [n.op_type for n in model.graph.node] == [
        "fusion_group_0",
        "fusion_group_3",
        "fusion_group_3_1",
    ]


# --------------------------------------------------------------------------------------
# Opsets and determinism
# --------------------------------------------------------------------------------------


def test_explicit_opset_wins_over_the_module_attribute() -> None:
    body = unary("gelu", "tensor<4xf32>", ' {approximate = "tanh"}')
    with_attr = f"builtin.module attributes {{graph.opset = 20 : i64}} {{\n{body}\n}}"
    model = export_module(parse(with_attr))
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 20)]
    assert model.ir_version == 9 and ops_of(model) == ["Gelu"]
    assert export_module(parse(with_attr), opset=13).opset_import[0].version == 13
    old = f"builtin.module attributes {{graph.opset = 9 : i64}} {{\n{body}\n}}"
    assert export_module(parse(old)).opset_import[0].version == 11
    assert export_module(parse(body), opset=13).opset_import[0].version == 13
    assert export_module(parse(body)).opset_import[0].version == 17


def test_output_is_deterministic(tmp_path: Path) -> None:
    """Byte-identical across exports, parses and processes (hash seeds)."""
    first = serialize(export_module(parse(GROUPS)))
    assert serialize(export_module(parse(GROUPS))) == first
    src = tmp_path / "groups.mlir"
    src.write_text(GROUPS)
    script = (
        "import sys\n"
        "from autofusion.mlir_io import default_context, parse_module\n"
        "from frontends.onnx.export import export_module, serialize\n"
        f"m = parse_module(default_context(), open({str(src)!r}).read(), 'g.mlir')\n"
        "sys.stdout.buffer.write(serialize(export_module(m)))\n"
    )
    for seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        )
        assert out.stdout == first


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------

ERRORS = [
    (
        unary("sin", "tensor<4xbf16>"),
        None,
        "cannot export 'graph.sin' to ONNX opset 17: ONNX Sin-7 does not accept bf16 for its input 'input' (it takes f16, f32, f64)",
    ),
    (
        fn("%a: tensor<4xi1>", "  %r = graph.add %a, %a : tensor<4xi1>", "tensor<4xi1>"),
        None,
        "cannot export 'graph.add' to ONNX opset 17: ONNX Add-14 does not accept i1",
    ),
    (
        unary("exp", "tensor<4xbf16>"),
        11,
        "cannot export 'graph.exp' to ONNX opset 11: ONNX Exp-6 does not accept bf16",
    ),
    (unary("relu", "tensor<4xf32>"), 10, "ONNX export supports opsets 11 to"),
    (unary("relu", "tensor<4xf32>"), 99, "not 99"),
    (
        fn(
            "%a: tensor<4xf32>",
            '  %r = "test.op"(%a) : (tensor<4xf32>) -> tensor<4xf32>',
            "tensor<4xf32>",
        ),
        None,
        "'test.op' has no ONNX export (only graph ops do)",
    ),
    (
        fn(
            "%q: tensor<1x?x4x8xf32>, %k: tensor<1x2x4x8xf32>",
            '  %r = graph.flash_attention %q, %k, %k {causal = false, layout = "BNSD", scale = 1.0} : (tensor<1x?x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x?x4x8xf32>',
            "tensor<1x?x4x8xf32>",
        ),
        None,
        "grouped-query attention with a dynamic number of heads (? query, 2 key/value heads) cannot be exported",
    ),
    (
        fn(
            "%x: tensor<2x?xf32>, %c: tensor<2x?xf32>",
            "  %r = graph.rope %x, %c, %c {interleaved = false} : tensor<2x?xf32>",
            "tensor<2x?xf32>",
        ),
        None,
        "a dynamic rotary dimension",
    ),
    (
        'func.func @main(%a: tensor<4xf32> {graph.name = "t"}) -> (tensor<4xf32> {graph.name = "t"}) {\n  %r = graph.relu %a : tensor<4xf32>\n  func.return %r : tensor<4xf32>\n}',
        None,
        "the model has two inputs/outputs named 't'",
    ),
    (
        'builtin.module attributes {graph.opset = "17"} {\n'
        + unary("relu", "tensor<4xf32>")
        + "\n}",
        None,
        'module attribute graph.opset must be an integer, got "17"',
    ),
    (
        unary("relu", "tensor<4xf32>").replace("@main", "@a")
        + "\n"
        + unary("relu", "tensor<4xf32>").replace("@main", "@b"),
        None,
        "the module has several functions (@a, @b)",
    ),
]


@pytest.mark.parametrize(("text", "opset", "message"), ERRORS)
def test_errors_are_one_line(text: str, opset: int | None, message: str) -> None:
    with pytest.raises(UserError) as info:
        export_module(parse(text), opset)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_entry_selects_the_function() -> None:
    text = (
        unary("relu", "tensor<4xf32>").replace("@main", "@a")
        + "\n"
        + unary("exp", "tensor<4xf32>").replace("@main", "@b")
    )
    model = export_module(parse(text), entry="b")
    assert model.graph.name == "b" and ops_of(model) == ["Exp"]
    with pytest.raises(UserError, match="no function @c in the module"):
        export_module(parse(text), entry="c")


def test_checker_failure_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table entry that emits an invalid node is afc's bug: a clear internal error."""
    from autofusion.tools.afc_opt import main as afc_opt_main
    from frontends.onnx.export import ExportInternalError

    bad = export_ops.Standard(lambda e: e.nodes("Transpose", e.inputs, e.outputs, perm=[0]), "bad")
    key: type[Operation] = graph.TransposeOp
    monkeypatch.setitem(export_table.TABLE, key, bad)
    text = fn(
        "%x: tensor<2x3xf32>",
        "  %r = graph.transpose %x {perm = [1, 0]} : tensor<2x3xf32> -> tensor<3x2xf32>",
        "tensor<3x2xf32>",
    )
    with pytest.raises(
        ExportInternalError, match=r"^the exported ONNX model fails onnx\.checker: "
    ):
        export_module(parse(text))
    src = tmp_path / "t.mlir"
    src.write_text(text)
    assert afc_opt_main([str(src), "-t", "onnx"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "afc-opt: internal error (ExportInternalError): the exported ONNX model fails onnx.checker"
    )
    assert err.count("\n") == 1


def test_missing_onnx_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(UserError, match=r"pip install 'afc\[onnx\]'"):
        export_module(parse(unary("relu", "tensor<4xf32>")))


# --------------------------------------------------------------------------------------
# The afc-opt target
# --------------------------------------------------------------------------------------


def test_target_prints_text() -> None:
    import io

    out = io.StringIO()
    OnnxTarget(opset=18).emit(default_context(), parse(GROUPS), out)
    text = out.getvalue()
    assert (
        'opset_import: ["" : 18, "ai.afc" : 1]' in text
        and "fusion_group_0 (a, b, bias) => (" in text
    )
    assert onnx.printer.to_text(export_module(parse(GROUPS), 18)) + "\n" == text


def test_target_writes_the_model_file(tmp_path: Path) -> None:
    import io

    out = io.StringIO()
    path = tmp_path / "fused.onnx"
    OnnxTarget(file=str(path)).emit(default_context(), parse(GROUPS), out)
    data = path.read_bytes()
    assert data == serialize(export_module(parse(GROUPS)))
    assert (
        out.getvalue()
        == f"wrote {path}: ONNX opset 17, 3 nodes, 7 functions, 1 initializers, {len(data)} bytes\n"
    )
    onnx.checker.check_model(str(path), full_check=True)


def _afc_opt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    afc_opt = Path(sys.executable).parent / "afc-opt"
    return subprocess.run(
        [str(afc_opt), *args], check=False, capture_output=True, text=True, cwd=cwd
    )


def test_afc_opt_target(tmp_path: Path) -> None:
    src = tmp_path / "m.mlir"
    src.write_text(GROUPS)
    text = _afc_opt(str(src), "-t", "onnx", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "fusion_group_0 (a, b, bias)" in text.stdout
    wrote = _afc_opt(str(src), "-t", 'onnx{file="out.onnx" opset=13}', cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    assert wrote.stdout.startswith("wrote out.onnx: ONNX opset 13, 3 nodes")
    assert onnx.load(str(tmp_path / "out.onnx")).opset_import[0].version == 13
    # a failed export leaves no file behind and says why in one line
    src.write_text(unary("sin", "tensor<4xbf16>"))
    bad = _afc_opt(str(src), "-t", 'onnx{file="bad.onnx"}', cwd=tmp_path)
    assert bad.returncode == 1 and not (tmp_path / "bad.onnx").exists()
    assert (
        bad.stderr
        == "afc-opt: error: cannot export 'graph.sin' to ONNX opset 17: ONNX Sin-7 does not accept bf16 for its input 'input' (it takes f16, f32, f64)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir", "out.onnx"]


def test_ops_of_one_source_statement_get_unique_node_names() -> None:
    """Frontends give every op of one statement its name (`pos = cast(reshape(p))`);
    ONNX Runtime rejects a graph with two nodes of one name."""
    from xdsl.dialects.builtin import NameLoc, StringAttr, UnknownLoc

    module = parse(
        fn(
            "%x: tensor<2x3xf32>",
            "  %e = graph.exp %x : tensor<2x3xf32>\n  %r = graph.neg %e : tensor<2x3xf32>",
            "tensor<2x3xf32>",
        )
    )
    for op in find_function(module).body.block.ops:
        if op.name.startswith("graph."):
            op.location = NameLoc(StringAttr("pos"), UnknownLoc())
    model = export_module(module)
    assert [n.name for n in model.graph.node] == ["pos", "pos_1"]
    ort = pytest.importorskip("onnxruntime")
    ort.InferenceSession(serialize(model), providers=["CPUExecutionProvider"])
