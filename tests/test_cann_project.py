"""The CANN custom-op project of a compile (autofusion/codegen/cann_project.py).

Every kernel's registered OpDef, compiled with g++ against the emulation headers and
looked up by op type as CANN's runtime does, must agree with the kernel it registers:
its inputs and outputs (count, order, names, dtypes, format) with the kernel entry's
parameters, its tiling function with the tiling struct (the bytes it writes are the
struct's int64 fields, in order, with the values the IR's host code passes to the
launch), its InferShape with the launch's result shapes. Checked on the examples and on
the rows and cube kernels the codegen tests build.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import cast

import numpy as np
import pytest
from test_codegen import DEBUG_INPUT, vector_module_text
from test_codegen import feeds_for as rows_feeds
from test_codegen_cube import feeds_for as cube_feeds
from test_codegen_cube import module_text as cube_module_text
from test_codegen_cube import small_tiles
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from autofusion import dtypes
from autofusion.codegen import emulate
from autofusion.codegen.ascendc_host import tiling_struct_name
from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.codegen.cann_project import compute_unit, snake_op_name
from autofusion.codegen.emulate import RegisteredOps, run_function_emulated
from autofusion.codegen.kernel_interface import (
    entry_name,
    gm_param_names,
    kernels_of,
    op_type_of,
    tiling_field_names,
)
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer, graph
from autofusion.driver.compile import CompileOptions, compile_model
from autofusion.interpreter import argument_names, run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

# ge::DataType values (CANN graph/types.h) of afc's element types
GE_TYPES = {"f32": 0, "f16": 1, "i8": 2, "i32": 3, "i64": 9, "i1": 12, "bf16": 27}
FORMAT_ND, REQUIRED = "2", "2"


@register_impls
class _RecordLaunches(InterpreterFunctions):
    """Records each launch (input shapes, tiling, blocks, result shapes) and returns
    zeros of the result shapes instead of running the kernel: the host code needs only
    shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[tuple[int, ...]], list[int], int, list[tuple[int, ...]]]]
        self.seen = []

    @impl(buffer.LaunchOp)
    def run_launch(
        self, interp: Interpreter, op: buffer.LaunchOp, args: PythonValues
    ) -> PythonValues:
        n_in, n_t = len(op.inputs), len(op.tiling)
        dims = [int(d) for d in args[1 + n_in + n_t :]]
        shapes = []
        for r in op.outputs:
            t = cast(TensorType, r.type)
            shapes.append(tuple(d if d >= 0 else dims.pop(0) for d in t.get_shape()))
        self.seen.append(
            (
                op.kernel.root_reference.data,
                [tuple(np.shape(x)) for x in args[1 : 1 + n_in]],
                [int(v) for v in args[1 + n_in : 1 + n_in + n_t]],
                int(args[0]),
                shapes,
            )
        )
        return tuple(
            dtypes.to_storage(np.zeros(s), cast(TensorType, r.type).element_type)
            for s, r in zip(shapes, op.outputs)
        )


def check_op_defs(module: ModuleOp, files: dict[str, str], launches: _RecordLaunches) -> int:
    """Assert every kernel's OpDef, entry and tiling struct agree; returns the number of
    launches checked against the registered TilingFunc and InferShape."""
    ops = RegisteredOps.build(files)
    for kernel in kernels_of(module):
        name, op_type = kernel.sym_name.data, op_type_of(kernel)
        fields = tiling_field_names(kernel)
        gm = gm_param_names(kernel, fields)
        n_in = kernel.num_inputs.value.data
        types = [
            GE_TYPES[dtypes.type_name(cast(TensorType, a.type).element_type)]
            for a in kernel.gm_args
        ]
        lines = ops.describe(op_type)
        params = [line for line in lines if line[0] in ("input", "output")]
        assert [p[:2] for p in params] == [
            ["input" if i < n_in else "output", n] for i, n in enumerate(gm)
        ], name
        assert [p[2:] for p in params] == [[REQUIRED, str(t), "format", FORMAT_ND] for t in types]
        inferred = [int(line[2]) for line in lines if line[0] == "infer_data_type"]
        assert inferred == types[n_in:], name
        assert ["config", compute_unit(kernel.chip.data)] in lines
        assert ["tiling"] in lines and ["infer_shape"] in lines
        # the kernel entry CANN calls: the OpDef's params in order, then workspace, tiling
        entry = entry_name(kernel)
        assert entry == snake_op_name(op_type)
        match = re.search(rf"void {entry}\(([^)]*)\)", files[f"op_kernel/{name}.cpp"])
        assert match is not None
        assert match.group(1).split(", ") == [
            *(f"GM_ADDR {n}" for n in gm),
            "GM_ADDR workspace",
            "GM_ADDR tiling",
        ]
        header = files[f"op_host/{name}_tiling.h"]
        assert re.findall(r"TILING_DATA_FIELD_DEF\(int64_t, (\w+)\)", header) == fields
        assert f"REGISTER_TILING_DATA_CLASS({op_type}, {tiling_struct_name(name)})" in header
    for name, in_shapes, tiling, blocks, out_shapes in launches.seen:
        kernel = next(k for k in kernels_of(module) if k.sym_name.data == name)
        op_type = op_type_of(kernel)
        values, launch = ops.tiling(op_type, in_shapes, len(tiling_field_names(kernel)))
        assert (values, launch.blocks) == (tiling, blocks), (name, in_shapes)
        assert ops.infer_shapes(op_type, in_shapes, len(out_shapes)) == out_shapes, name
    return len(launches.seen)


def _zeros(op: graph.ConstantOp) -> np.ndarray:
    """Values for a shape-only weight: only shapes matter to the host code."""
    t = cast(TensorType, op.result.type)
    return dtypes.to_storage(np.zeros(t.get_shape()), t.element_type)


def record(module: ModuleOp, feeds: Callable[[str], dict[str, np.ndarray]]) -> _RecordLaunches:
    """The launches of every function of `module` on feeds(function name)."""
    recorder = _RecordLaunches()
    for f in module.ops:
        if isinstance(f, func.FuncOp) and f.body.blocks and not f.sym_visibility:
            entry = f.sym_name.data
            run_function(module, feeds(entry), entry, _zeros, overrides=[recorder])
    return recorder


def example_feeds(module: ModuleOp, entry: str, size: int) -> dict[str, np.ndarray]:
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    rng = np.random.default_rng(0)
    feeds = {}
    for name, t in zip(argument_names(f), f.function_type.inputs.data):
        t = cast(TensorType, t)
        shape = tuple(size if d < 0 else d for d in t.get_shape())
        feeds[name] = dtypes.to_storage(rng.standard_normal(shape), t.element_type)
    return feeds


@pytest.mark.parametrize(
    "example,chip",
    [
        ("examples/mlp.afc", "Ascend910B1"),
        ("examples/llama_layer.afc", "Ascend910B1"),
        ("examples/llama_layer.afc", "Ascend310P3"),
        ("examples/resnet_block.afc", "Ascend910B1"),
    ],
)
def test_example_op_defs_agree_with_their_kernels(example: str, chip: str) -> None:
    c = compile_model(example, CompileOptions(chip=chip), stop_after="ascend c")
    assert c.buffer is not None
    files = {
        path.removeprefix("kernels/"): data.decode()
        for path, data in c.files.items()
        if path.startswith("kernels/")
    }
    launches = record(c.buffer, lambda entry: example_feeds(cast(ModuleOp, c.buffer), entry, 3))
    assert check_op_defs(c.buffer, files, launches) == len(kernels_of(c.buffer))
    # the package: every op's kernel file and OpDef source, the chip's SoC
    presets = json.loads(files["CMakePresets.json"])["configurePresets"][0]["cacheVariables"]
    assert presets["ASCEND_COMPUTE_UNIT"]["value"] == compute_unit(chip)
    for kernel in kernels_of(c.buffer):
        name = kernel.sym_name.data
        assert (
            f"OP_TYPE {op_type_of(kernel)}\n    KERNEL_FILE {name}.cpp\n"
            in files["op_kernel/CMakeLists.txt"]
        )
        assert f"    {name}.cpp\n" in files["op_host/CMakeLists.txt"]


def test_rows_kernel_op_defs_agree_with_their_kernels() -> None:
    module = parse_module(default_context(), vector_module_text("Ascend910B1", "f16"), "r.mlir")
    apply_pipeline(module, "set-target{chip=Ascend910B1},lower-to-buffer")
    launches = record(module, lambda entry: rows_feeds(module, entry, 67, seed=0))
    assert check_op_defs(module, emit_ascendc(module), launches) == len(kernels_of(module))


def test_cube_kernel_op_defs_agree_with_their_kernels() -> None:
    module = parse_module(default_context(), cube_module_text("f16"), "cube.mlir")
    with small_tiles():
        apply_pipeline(
            module, "set-target{chip=Ascend910B1},graph-fusion,ub-fusion,lower-to-buffer"
        )
    launches = record(module, lambda entry: cube_feeds(module, entry, seed=0))
    assert check_op_defs(module, emit_ascendc(module), launches) == len(kernels_of(module))


def test_a_wrong_op_def_is_caught() -> None:
    """The check can fail: an OpDef whose output type disagrees with the kernel's."""
    module = parse_module(default_context(), vector_module_text("Ascend910B1", "f16"), "r.mlir")
    apply_pipeline(module, "set-target{chip=Ascend910B1},lower-to-buffer")
    files = emit_ascendc(module)
    name = kernels_of(module)[0].sym_name.data
    host = files[f"op_host/{name}.cpp"]
    files[f"op_host/{name}.cpp"] = host.replace(
        'Output("out0").ParamType(REQUIRED).DataType({ge::DT_FLOAT16})',
        'Output("out0").ParamType(REQUIRED).DataType({ge::DT_FLOAT})',
    )
    assert files[f"op_host/{name}.cpp"] != host
    with pytest.raises(AssertionError):
        check_op_defs(module, files, _RecordLaunches())


def test_snake_op_names_follow_cann() -> None:
    """The table of asc-devkit's 命名转换规则对照表.md."""
    table = {
        "AddCustom": "add_custom",
        "Conv2DCustom": "conv2_d_custom",
        "GatherV2Custom": "gather_v2_custom",
        "TopKCustom": "top_k_custom",
        "GRUCell": "gru_cell",
        "HTTPServerCustom": "http_server_custom",
        "AbcAAc": "abc_a_ac",
        "MainKernel10": "main_kernel10",
    }
    assert {k: snake_op_name(k) for k in table} == table


def _files_twice(text: str) -> Iterator[dict[str, str]]:
    for _ in range(2):
        module = parse_module(default_context(), text, "r.mlir")
        apply_pipeline(module, "set-target{chip=Ascend910B1},lower-to-buffer")
        yield emit_ascendc(module)


def test_project_is_deterministic() -> None:
    first, second = _files_twice(vector_module_text("Ascend910B1", "f32"))
    assert first == second
    assert list(first)[-5:] == [
        "CMakeLists.txt",
        "CMakePresets.json",
        "build.sh",
        "op_host/CMakeLists.txt",
        "op_kernel/CMakeLists.txt",
    ]


def test_the_emulated_launch_runs_the_registered_tiling_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`afc run --emulate` launches through the OpDef: a TilingFunc that asks for one
    block more than the host IR computes is caught at the launch."""
    module = parse_module(default_context(), DEBUG_INPUT, "in.mlir")
    apply_pipeline(module, "set-target{chip=Ascend910B1},lower-to-buffer")
    files = emit_ascendc(module)
    host = files["op_host/main_kernel0.cpp"]
    wrong = host.replace("context->SetBlockDim(", "context->SetBlockDim(1 + ")
    assert wrong != host

    def tampered(m: ModuleOp, debug: bool = False) -> dict[str, str]:
        return {**emit_ascendc(m, debug), "op_host/main_kernel0.cpp": wrong}

    monkeypatch.setattr(emulate, "emit_ascendc", tampered)
    feeds = {"arg0": np.ones((5, 40), np.float32), "arg1": np.ones(40, np.float32)}
    with pytest.raises(UserError, match=r"@main_kernel0: the registered TilingFunc computed"):
        run_function_emulated(module, feeds)
