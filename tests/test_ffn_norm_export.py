"""ONNX export of graph.ffn's norm_epsilon: the exported FFN function computes the RMS
statistics of x and scales the gate/up products by them (ONNX Runtime vs interpreter)."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_onnx_export import check, fn, function_names


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("bias1", [False, True])
def test_ffn_with_norm_epsilon(elt: str, bias1: bool) -> None:
    x, w, d = f"tensor<2x?x8x{elt}>", f"tensor<8x12x{elt}>", f"tensor<12x8x{elt}>"
    args = [("x", x), ("wg", w), ("wu", w), ("wd", d)]
    if bias1:
        args += [("bg", f"tensor<12x{elt}>"), ("bu", f"tensor<12x{elt}>")]
    args.append(("res", x))
    names = ", ".join(f"%{n}" for n, _ in args)
    types = ", ".join(t for _, t in args)
    body = (
        f'  %r = graph.ffn {names} {{activation = "swiglu", norm_epsilon = 1.0e-02 : f64, '
        f"operandSegmentSizes = array<i32: 1, 2, 1, {2 if bias1 else 0}, 0, 1>}} : "
        f"({types}) -> {x}"
    )
    model = check(fn(", ".join(f"%{n}: {t}" for n, t in args), body, x), scale=4)
    assert function_names(model) == ["FFN"]
    ops = [n.op_type for f in model.functions for n in f.node]
    assert "ReduceMean" in ops and "Reciprocal" in ops
