"""The reference interpreter against independent numpy formulations of ONNX semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

RNG = np.random.default_rng(0)


def run(body: str, args: str, result: str, **inputs: np.ndarray) -> np.ndarray:
    """Run a one-result function whose body ends in `%r`."""
    text = f"func.func @main({args}) -> {result} {{\n{body}\n  func.return %r : {result}\n}}"
    module = parse_module(default_context(), text, "test.mlir")
    names = [a.split(":")[0].strip().lstrip("%") for a in args.split(", ") if a]
    feeds = {f"arg{i}": inputs[n] for i, n in enumerate(names)}
    return run_function(module, feeds)["out0"]


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol, atol)


UNARY = {
    "neg": lambda x: -x,
    "abs": np.abs,
    "exp": np.exp,
    "sqrt": lambda x: np.sqrt(np.abs(x)),
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x)),
    "reciprocal": lambda x: 1 / x,
    "relu": lambda x: np.where(x > 0, x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "erf": np.vectorize(math.erf),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "sin": np.sin,
    "cos": np.cos,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str) -> None:
    x = f32(3, 5)
    if name in ("sqrt", "rsqrt"):
        body = "  %a = graph.abs %x : tensor<3x5xf32>\n  %r = graph.{0} %a : tensor<3x5xf32>"
    else:
        body = "  %r = graph.{0} %x : tensor<3x5xf32>"
    got = run(body.format(name), "%x: tensor<3x5xf32>", "tensor<3x5xf32>", x=x)
    close(got, UNARY[name](x.astype(np.float64)))


def test_log_of_positive() -> None:
    x = np.abs(f32(7)) + 0.1
    close(
        run("  %r = graph.log %x : tensor<7xf32>", "%x: tensor<7xf32>", "tensor<7xf32>", x=x),
        np.log(x),
    )


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate: str) -> None:
    x = f32(4, 6) * 3
    got = run(
        f'  %r = graph.gelu %x {{approximate = "{approximate}"}} : tensor<4x6xf32>',
        "%x: tensor<4x6xf32>",
        "tensor<4x6xf32>",
        x=x,
    )
    xd = x.astype(np.float64)
    if approximate == "none":
        want = 0.5 * xd * (1 + np.vectorize(math.erf)(xd / math.sqrt(2)))
    else:
        want = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))
    close(got, want)


def test_clip_relu6_and_one_sided() -> None:
    x = f32(10) * 8
    r6 = run(
        "  %r = graph.clip %x {min = 0.0, max = 6.0} : tensor<10xf32>",
        "%x: tensor<10xf32>",
        "tensor<10xf32>",
        x=x,
    )
    close(r6, np.minimum(np.maximum(x, 0), 6))
    lo = run(
        "  %r = graph.clip %x {min = -1.0} : tensor<10xf32>",
        "%x: tensor<10xf32>",
        "tensor<10xf32>",
        x=x,
    )
    close(lo, np.maximum(x, -1))


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(name: str) -> None:
    a, b = f32(2, 1, 5), f32(3, 1)
    got = run(
        f"  %r = graph.{name} %a, %b : (tensor<2x1x5xf32>, tensor<3x1xf32>) -> tensor<2x3x5xf32>",
        "%a: tensor<2x1x5xf32>, %b: tensor<3x1xf32>",
        "tensor<2x3x5xf32>",
        a=a,
        b=b,
    )
    close(got, BINARY[name](a.astype(np.float64), b.astype(np.float64)))


def test_pow_and_integer_division_truncates() -> None:
    a = np.abs(f32(6)) + 0.5
    close(
        run(
            "  %r = graph.pow %a, %b : tensor<6xf32>",
            "%a: tensor<6xf32>, %b: tensor<6xf32>",
            "tensor<6xf32>",
            a=a,
            b=np.full(6, 1.5, np.float32),
        ),
        a.astype(np.float64) ** 1.5,
    )
    ia = np.array([7, -7, 7, -7, 0, 9], np.int64)
    ib = np.array([2, 2, -2, -2, 3, 3], np.int64)
    got = run(
        "  %r = graph.div %a, %b : tensor<6xi64>",
        "%a: tensor<6xi64>, %b: tensor<6xi64>",
        "tensor<6xi64>",
        a=ia,
        b=ib,
    )
    np.testing.assert_array_equal(got, [3, -3, -3, 3, 0, 3])


def test_comparisons_and_where() -> None:
    a, b = f32(4, 3), f32(3)
    body = """
  %lt = graph.less %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  %gt = graph.greater %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  %eq = graph.equal %a, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
  %both = graph.and %gt, %eq : tensor<4x3xi1>
  %either = graph.or %lt, %both : tensor<4x3xi1>
  %neither = graph.not %either : tensor<4x3xi1>
  %r = graph.where %neither, %a, %b : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>"""
    got = run(body, "%a: tensor<4x3xf32>, %b: tensor<3xf32>", "tensor<4x3xf32>", a=a, b=b)
    neither = ~((a < b) | ((a > b) & (a == a)))
    close(got, np.where(neither, a, b))


@pytest.mark.parametrize(
    ("op", "fn"),
    [
        ("reduce_sum", np.sum),
        ("reduce_mean", np.mean),
        ("reduce_max", np.max),
        ("reduce_min", np.min),
    ],
)
def test_reductions(op: str, fn) -> None:  # type: ignore[no-untyped-def]
    x = f32(2, 3, 4)
    got = run(
        f"  %r = graph.{op} %x {{axes = [-1, 0], keepdims = true}} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>",
        "%x: tensor<2x3x4xf32>",
        "tensor<1x3x1xf32>",
        x=x,
    )
    close(got, fn(x.astype(np.float64), axis=(0, 2), keepdims=True))
    every = run(
        f"  %r = graph.{op} %x {{axes = [], keepdims = false}} : tensor<2x3x4xf32> -> tensor<f32>",
        "%x: tensor<2x3x4xf32>",
        "tensor<f32>",
        x=x,
    )
    close(every, fn(x.astype(np.float64)))


def test_softmax_is_stable_for_large_inputs() -> None:
    x = f32(3, 7) * 50 + 1000
    got = run(
        "  %r = graph.softmax %x {axis = 1} : tensor<3x7xf32>",
        "%x: tensor<3x7xf32>",
        "tensor<3x7xf32>",
        x=x,
    )
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    close(got, e / e.sum(axis=1, keepdims=True))


def test_matmul_batched_broadcast_and_vector() -> None:
    a, b, v = f32(2, 1, 4, 8), f32(3, 8, 5), f32(8)
    got = run(
        "  %r = graph.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>",
        "%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>",
        "tensor<2x3x4x5xf32>",
        a=a,
        b=b,
    )
    close(got, np.matmul(a.astype(np.float64), b), rtol=1e-5, atol=1e-5)
    vec = run(
        "  %r = graph.matmul %v, %b : (tensor<8xf32>, tensor<3x8x5xf32>) -> tensor<3x5xf32>",
        "%v: tensor<8xf32>, %b: tensor<3x8x5xf32>",
        "tensor<3x5xf32>",
        v=v,
        b=b,
    )
    close(vec, np.matmul(v.astype(np.float64), b), atol=1e-5)


def test_gemm() -> None:
    a, b, c = f32(8, 4), f32(5, 8), f32(5)
    got = run(
        "  %r = graph.gemm %a, %b, %c {trans_a = true, trans_b = true, alpha = 0.5, beta = 2.0} "
        ": (tensor<8x4xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<4x5xf32>",
        "%a: tensor<8x4xf32>, %b: tensor<5x8xf32>, %c: tensor<5xf32>",
        "tensor<4x5xf32>",
        a=a,
        b=b,
        c=c,
    )
    close(got, 0.5 * a.T.astype(np.float64) @ b.T + 2 * c, atol=1e-5)


def conv_reference(x, w, b, stride, pad, dil, group):  # type: ignore[no-untyped-def]
    """Direct nested-loop convolution (the definition), in float64."""
    n, _, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3]))).astype(np.float64)
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, m, oh, ow))
    mg = m // group
    for oc in range(m):
        g = oc // mg
        for i in range(oh):
            for j in range(ow):
                for ic in range(cg):
                    for p in range(kh):
                        for q in range(kw):
                            out[:, oc, i, j] += (
                                xp[
                                    :,
                                    g * cg + ic,
                                    i * stride[0] + p * dil[0],
                                    j * stride[1] + q * dil[1],
                                ]
                                * w[oc, ic, p, q]
                            )
        if b is not None:
            out[:, oc] += b[oc]
    return out


@pytest.mark.parametrize(
    ("group", "stride", "pad", "dil"),
    [
        (1, (1, 1), (0, 0, 0, 0), (1, 1)),
        (1, (2, 2), (1, 1, 1, 1), (1, 1)),
        (3, (1, 2), (2, 1, 0, 1), (2, 1)),
    ],
)
def test_conv2d(group: int, stride, pad, dil) -> None:  # type: ignore[no-untyped-def]
    x, w, b = f32(2, 3, 7, 6), f32(6, 3 // group, 3, 2), f32(6)
    want = conv_reference(x, w, b, stride, pad, dil, group)
    oh, ow = want.shape[2:]
    got = run(
        f"  %r = graph.conv2d %x, %w, %b {{strides = {list(stride)}, pads = {list(pad)}, "
        f"dilations = {list(dil)}, group = {group}}} : (tensor<2x3x7x6xf32>, "
        f"tensor<6x{3 // group}x3x2xf32>, tensor<6xf32>) -> tensor<2x6x{oh}x{ow}xf32>",
        f"%x: tensor<2x3x7x6xf32>, %w: tensor<6x{3 // group}x3x2xf32>, %b: tensor<6xf32>",
        f"tensor<2x6x{oh}x{ow}xf32>",
        x=x,
        w=w,
        b=b,
    )
    close(got, want, atol=1e-5)


def test_norms() -> None:
    x, g, b = f32(2, 5, 8), f32(8), f32(8)
    ln = run(
        "  %r = graph.layer_norm %x, %g, %b {axis = -1, epsilon = 1.0e-05} "
        ": (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>",
        "%x: tensor<2x5x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>",
        "tensor<2x5x8xf32>",
        x=x,
        g=g,
        b=b,
    )
    xd = x.astype(np.float64)
    mu, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    close(ln, (xd - mu) / np.sqrt(var + 1e-5) * g + b, atol=1e-5)
    rms = run(
        "  %r = graph.rms_norm %x, %g {axis = -1, epsilon = 1.0e-06} "
        ": (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>",
        "%x: tensor<2x5x8xf32>, %g: tensor<8xf32>",
        "tensor<2x5x8xf32>",
        x=x,
        g=g,
    )
    close(rms, xd / np.sqrt((xd**2).mean(-1, keepdims=True) + 1e-6) * g, atol=1e-5)
    xi, c = f32(2, 4, 3, 3), [f32(4) for _ in range(4)]
    c[3] = np.abs(c[3])
    bn = run(
        "  %r = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05} : (tensor<2x4x3x3xf32>, "
        "tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>",
        "%x: tensor<2x4x3x3xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>",
        "tensor<2x4x3x3xf32>",
        x=xi,
        s=c[0],
        b=c[1],
        m=c[2],
        v=c[3],
    )
    r = (1, 4, 1, 1)
    want = (xi - c[2].reshape(r)) / np.sqrt(c[3].reshape(r) + 1e-5) * c[0].reshape(r) + c[
        1
    ].reshape(r)
    close(bn, want, atol=1e-5)


def pool_reference(x, k, s, pads, kind, ceil, include_pad=False):  # type: ignore[no-untyped-def]
    n, c, h, w = x.shape

    def out_dim(size, kk, ss, p0, p1):  # type: ignore[no-untyped-def]
        num = size + p0 + p1 - kk
        o = -(-num // ss) + 1 if ceil else num // ss + 1
        if ceil and (o - 1) * ss >= size + p0:
            o -= 1
        return o

    oh, ow = out_dim(h, k[0], s[0], pads[0], pads[2]), out_dim(w, k[1], s[1], pads[1], pads[3])
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - pads[0], j * s[1] - pads[1]
            r1, c1 = r0 + k[0], c0 + k[1]
            win = x[:, :, max(r0, 0) : min(r1, h), max(c0, 0) : min(c1, w)].astype(np.float64)
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                if include_pad:
                    cnt = (min(r1, h + pads[2]) - r0) * (min(c1, w + pads[3]) - c0)
                else:
                    cnt = win.shape[2] * win.shape[3]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


@pytest.mark.parametrize("ceil", [False, True])
@pytest.mark.parametrize("include_pad", [False, True])
def test_pools(ceil: bool, include_pad: bool) -> None:
    x = f32(1, 2, 7, 6)
    k, s, p = (3, 2), (2, 2), (1, 0, 1, 1)
    for kind, op, extra in (
        ("max", "max_pool2d", "dilations = [1, 1]"),
        ("avg", "avg_pool2d", f"count_include_pad = {str(include_pad).lower()}"),
    ):
        want = pool_reference(x, k, s, p, kind, ceil, include_pad)
        oh, ow = want.shape[2:]
        got = run(
            f"  %r = graph.{op} %x {{kernel_shape = [3, 2], strides = [2, 2], pads = [1, 0, 1, 1], "
            f"ceil_mode = {str(ceil).lower()}, {extra}}} : tensor<1x2x7x6xf32> -> tensor<1x2x{oh}x{ow}xf32>",
            "%x: tensor<1x2x7x6xf32>",
            f"tensor<1x2x{oh}x{ow}xf32>",
            x=x,
        )
        close(got, want, atol=1e-6)
    gap = run(
        "  %r = graph.global_avg_pool %x : tensor<1x2x7x6xf32> -> tensor<1x2x1x1xf32>",
        "%x: tensor<1x2x7x6xf32>",
        "tensor<1x2x1x1xf32>",
        x=x,
    )
    close(gap, x.mean(axis=(2, 3), keepdims=True))


def test_data_movement() -> None:
    x = f32(2, 6, 8)
    reshaped = run(
        "  %r = graph.reshape %x {shape = [0, -1, 4]} : tensor<?x6x8xf32> -> tensor<?x12x4xf32>",
        "%x: tensor<?x6x8xf32>",
        "tensor<?x12x4xf32>",
        x=x,
    )
    close(reshaped, x.reshape(2, 12, 4))
    t = run(
        "  %r = graph.transpose %x {perm = [2, 0, 1]} : tensor<2x6x8xf32> -> tensor<8x2x6xf32>",
        "%x: tensor<2x6x8xf32>",
        "tensor<8x2x6xf32>",
        x=x,
    )
    close(t, x.transpose(2, 0, 1))
    s = run(
        "  %r = graph.slice %x {starts = [1, -1], ends = [9223372036854775807, -9223372036854775807], "
        "axes = [1, 2], steps = [2, -3]} : tensor<2x6x8xf32> -> tensor<2x3x3xf32>",
        "%x: tensor<2x6x8xf32>",
        "tensor<2x3x3xf32>",
        x=x,
    )
    close(s, x[:, 1::2, ::-3])
    c = run(
        "  %r = graph.concat %x, %x, %x {axis = -1} : (tensor<2x6x8xf32>, tensor<2x6x8xf32>, "
        "tensor<2x6x8xf32>) -> tensor<2x6x24xf32>",
        "%x: tensor<2x6x8xf32>",
        "tensor<2x6x24xf32>",
        x=x,
    )
    close(c, np.concatenate([x, x, x], -1))
    e = run(
        "  %r = graph.expand %y {shape = [2, -1, 1]} : tensor<3x4xf32> -> tensor<2x3x4xf32>",
        "%y: tensor<3x4xf32>",
        "tensor<2x3x4xf32>",
        y=f32(3, 4),
    )
    assert e.shape == (2, 3, 4) and np.array_equal(e[0], e[1])
    p = run(
        '  %r = graph.pad %x {pads = [0, 1, -2, 0, 2, 1], mode = "reflect", value = 0.0} '
        ": tensor<2x6x8xf32> -> tensor<2x9x7xf32>",
        "%x: tensor<2x6x8xf32>",
        "tensor<2x9x7xf32>",
        x=x,
    )
    close(p, np.pad(x[:, :, 2:], ((0, 0), (1, 2), (0, 1)), mode="reflect"))


def test_split_and_gather() -> None:
    text = """
func.func @main(%x: tensor<4x6xf32>, %t: tensor<10x3xf32>, %i: tensor<2x2xi64>)
    -> (tensor<4x2xf32>, tensor<4x4xf32>, tensor<2x2x3xf32>) {
  %a, %b = graph.split %x {axis = 1, sizes = [2, 4]} : tensor<4x6xf32> -> (tensor<4x2xf32>, tensor<4x4xf32>)
  %g = graph.gather %t, %i {axis = 0} : (tensor<10x3xf32>, tensor<2x2xi64>) -> tensor<2x2x3xf32>
  func.return %a, %b, %g : tensor<4x2xf32>, tensor<4x4xf32>, tensor<2x2x3xf32>
}"""
    module = parse_module(default_context(), text, "t.mlir")
    x, t = f32(4, 6), f32(10, 3)
    idx = np.array([[0, -1], [9, 3]])
    out = run_function(module, {"arg0": x, "arg1": t, "arg2": idx})
    close(out["out0"], x[:, :2])
    close(out["out1"], x[:, 2:])
    close(out["out2"], t[np.array([[0, 9], [9, 3]])])


def test_f16_and_bf16_round_after_every_op() -> None:
    x = np.array([1.0, 1 + 2**-9, 3.14159, -2.71828], np.float32)
    h = run(
        "  %h = graph.cast %x : tensor<4xf32> -> tensor<4xf16>\n"
        "  %s = graph.add %h, %h : tensor<4xf16>\n"
        "  %r = graph.cast %s : tensor<4xf16> -> tensor<4xf32>",
        "%x: tensor<4xf32>",
        "tensor<4xf32>",
        x=x,
    )
    np.testing.assert_array_equal(h, (x.astype(np.float16) * 2).astype(np.float32))
    b = run(
        "  %r = graph.cast %x : tensor<4xf32> -> tensor<4xbf16>",
        "%x: tensor<4xf32>",
        "tensor<4xbf16>",
        x=x,
    )
    # bf16 keeps 8 bits of mantissa: 1 + 2^-9 rounds to 1 (ties to even), pi to 3.140625
    np.testing.assert_array_equal(b, [1.0, 1.0, 3.140625, -2.71875])
    assert dtypes.round_bf16(np.array([1 + 2**-8 + 2**-9], np.float32))[0] == 1 + 2**-7


def test_cast_float_to_int_truncates() -> None:
    x = np.array([1.7, -1.7, 2.5, -0.2], np.float32)
    got = run(
        "  %r = graph.cast %x : tensor<4xf32> -> tensor<4xi32>",
        "%x: tensor<4xf32>",
        "tensor<4xi32>",
        x=x,
    )
    np.testing.assert_array_equal(got, [1, -1, 2, 0])


def test_fusion_group_runs_its_body() -> None:
    a, b = f32(8), f32(8)
    got = run(
        "  %r = graph.fusion_group (%x = %a : tensor<8xf32>, %y = %b : tensor<8xf32>) -> tensor<8xf32> {\n"
        "    %s = graph.mul %x, %y : tensor<8xf32>\n"
        "    %e = graph.relu %s : tensor<8xf32>\n"
        "    graph.yield %e : tensor<8xf32>\n"
        "  }",
        "%a: tensor<8xf32>, %b: tensor<8xf32>",
        "tensor<8xf32>",
        a=a,
        b=b,
    )
    close(got, np.maximum(a * b, 0))


def test_named_inputs_and_outputs() -> None:
    text = """
func.func @main(%x: tensor<2xf32> {graph.name = "input_ids"}) -> (tensor<2xf32> {graph.name = "logits"}) {
  %r = graph.neg %x : tensor<2xf32>
  func.return %r : tensor<2xf32>
}"""
    module = parse_module(default_context(), text, "t.mlir")
    out = run_function(module, {"input_ids": np.array([1.0, 2.0], np.float32)})
    assert list(out) == ["logits"]
    close(out["logits"], [-1.0, -2.0])
    with pytest.raises(UserError, match="missing input"):
        run_function(module, {})
    with pytest.raises(UserError, match="has shape 3"):
        run_function(module, {"input_ids": np.zeros(3, np.float32)})
    with pytest.raises(UserError, match="unknown input"):
        run_function(module, {"input_ids": np.zeros(2, np.float32), "x": np.zeros(2)})


def test_dynamic_dims_take_the_input_shape() -> None:
    for n in (1, 5):
        x = f32(n, 3)
        got = run(
            "  %r = graph.softmax %x {axis = -1} : tensor<?x3xf32>",
            "%x: tensor<?x3xf32>",
            "tensor<?x3xf32>",
            x=x,
        )
        assert got.shape == (n, 3)
