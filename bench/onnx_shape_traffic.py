"""One-node-one-kernel traffic of an ONNX model from its static shapes, with no run.

bench/model_suite.py sizes tensors by running the model; a Qwen2.5-7B decoder layer is
too big to run for that, so its sizes come from ONNX shape inference instead. ORT's
contrib ops have no ONNX shape function: their output shapes come from OUTPUT_SHAPE
below, and inference is repeated until nothing more is learned.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Shape = list[int]


def _fused_matmul(ins: list[Shape | None], attrs: dict[str, int]) -> Shape | None:
    a, b = ins[0], ins[1]
    if a is None or b is None:
        return None
    a = a[:-2] + a[-2:][::-1] if attrs.get("transA") else a
    b = b[:-2] + b[-2:][::-1] if attrs.get("transB") else b
    batch = list(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
    return [*batch, a[-2], b[-1]]


# com.microsoft op -> its first output's shape from the input shapes and int attributes
OUTPUT_SHAPE: dict[str, Callable[[list[Shape | None], dict[str, int]], Shape | None]] = {
    "FusedMatMul": _fused_matmul,
    "QuickGelu": lambda ins, _: ins[0],
    "BiasGelu": lambda ins, _: ins[0],
    "FastGelu": lambda ins, _: ins[0],
}


def _static(t: object) -> tuple[Shape, int] | None:
    """(shape, element bytes) of a ValueInfoProto when fully static."""
    from onnx import helper

    tt = t.type.tensor_type  # type: ignore[attr-defined]
    if not tt.HasField("shape") or tt.elem_type == 0:
        return None
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
    if any(d < 0 for d in dims):
        return None
    return dims, np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)).itemsize


def shape_traffic(model: object) -> tuple[int, int]:
    """(kernels, bytes) of `model` under the one-node-one-kernel rule, sized by shapes."""
    import onnx
    from onnx import helper

    assert isinstance(model, onnx.ModelProto)
    while True:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        infos = [*model.graph.input, *model.graph.output, *model.graph.value_info]
        known = {v.name: s for v in infos if (s := _static(v)) is not None}
        for t in model.graph.initializer:
            known[t.name] = (
                list(t.dims),
                np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize,
            )
        elem_types = {v.name: v.type.tensor_type.elem_type for v in infos}
        elem_types.update({t.name: t.data_type for t in model.graph.initializer})
        added = 0
        for node in model.graph.node:
            rule = OUTPUT_SHAPE.get(node.op_type) if node.domain == "com.microsoft" else None
            if rule is None or node.output[0] in known:
                continue
            attrs = {a.name: a.i for a in node.attribute if a.type == onnx.AttributeProto.INT}
            shape = rule([known[i][0] if i in known else None for i in node.input], attrs)
            if shape is not None and node.input[0] in elem_types:
                info = helper.make_tensor_value_info(
                    node.output[0], elem_types[node.input[0]], shape
                )
                model.graph.value_info.append(info)
                added += 1
        if not added:
            break
    kernels = traffic = 0
    for node in model.graph.node:
        if node.op_type == "Constant":
            continue
        kernels += 1
        for name in (t for t in [*node.input, *node.output] if t):
            if name not in known:
                raise ValueError(
                    f"no static shape for {name!r} ({node.op_type} node {node.name!r})"
                )
            shape, size = known[name]
            traffic += int(np.prod(shape, dtype=np.int64)) * size
    return kernels, traffic
