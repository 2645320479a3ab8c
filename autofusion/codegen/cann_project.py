"""The CANN custom-op project of a compile, in the layout msOpGen generates.

For every buffer.kernel @k with a launch (op type `K` = camel case of its entry name,
ascendc.op_type_of):

* `op_host/k.cpp`: the tiling rule and `static TilingFunc` in `namespace optiling`
  (ascendc_host.py), `InferShape`/`InferDataType` in `namespace ge`, and the OpDef
  `class K : public OpDef` (inputs and outputs with dtype and format, SetInferShape,
  SetInferDataType, `AICore().SetTiling(optiling::TilingFunc).AddConfig("<soc>")`) with
  `OP_ADD(K)` in `namespace ops`. Layout and spellings follow asc-devkit
  examples/01_simd_cpp_api/02_features/99_acl_based/00_acl_compilation/custom_op/op_host/
  add_custom/add_custom_host.cpp and the msOpGen quick start (docs/zh/guide/编程指南/
  高级编程/Aclnn算子工程化开发/Aclnn算子工程化开发快速入门.md).
* `op_host/k_tiling.h` and `op_kernel/k.cpp`: the tiling data and the kernel (ascendc.py).

and once per project `CMakeLists.txt`, `CMakePresets.json`, `build.sh`,
`op_host/CMakeLists.txt` and `op_kernel/CMakeLists.txt`: `./build.sh` (with CANN's
set_env.sh sourced) builds `build_out/custom_opp_<os>_<arch>.run`, whose op_api holds
`aclnnKGetWorkspaceSize`/`aclnnK` for every op (CANN generates them from the OpDefs).
The CMake uses the `npu_op_*` functions of CANN's ASC package (asc-devkit
docs/zh/guide/编程指南/高级编程/Aclnn算子工程化开发/编译与部署/基本流程.md, "编译组织";
examples/…/00_acl_compilation/custom_op/{,op_host/,op_kernel/}CMakeLists.txt).

A kernel without a launch in the module (hand-written buffer IR) has no host code to
register: it gets no OpDef and stays out of the CMake project.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol, cast

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue

from autofusion import dtypes
from autofusion.codegen.ascendc_api import AscendCApi
from autofusion.codegen.ascendc_host import HostPrinter, _ContextPrinter, host_slice
from autofusion.codegen.cpp_scalar import CppWriter, Namer, ScalarPrinter
from autofusion.codegen.kernel_interface import (
    entry_name,
    gm_param_names,
    kernels_of,
    workspace_fields,
)
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.hardware import get_chip

# afc's chip -> the SoC name CANN uses in AddConfig and ASCEND_COMPUTE_UNIT (asc-devkit
# cmake/asc/fwk_modules/config.cmake ASC_VALID_SOC_LIST; msOpGen maps a chip model to it,
# "ascend910b" covering Ascend910B1..B4)
COMPUTE_UNITS: dict[str, str] = {
    "Ascend910": "ascend910",
    "Ascend910B1": "ascend910b",
    "Ascend910B2": "ascend910b",
    "Ascend910B3": "ascend910b",
    "Ascend910B4": "ascend910b",
    "Ascend310P3": "ascend310p",
}

VENDOR = "afc"  # vendor_name: the package installs into vendors/afc


def compute_unit(chip: str) -> str:
    """The CANN SoC name of afc's chip `chip` (a clear error for a chip without one)."""
    if chip not in COMPUTE_UNITS:
        raise UserError(
            f"chip {chip}: no CANN compute unit is known for it (known: "
            f"{', '.join(sorted(COMPUTE_UNITS))})"
        )
    return COMPUTE_UNITS[chip]


def snake_op_name(op_type: str) -> str:
    """CANN's OpType -> kernel entry / file name (AddCustom -> add_custom, Conv2DCustom ->
    conv2_d_custom; asc-devkit …/Aclnn算子工程化开发/附录/命名转换规则对照表.md): an upper-case
    letter starts a word after a lower-case letter or digit, or after an upper-case one
    when a lower-case letter follows."""
    out: list[str] = []
    for i, ch in enumerate(op_type):
        if ch.isupper() and i > 0:
            prev = op_type[i - 1]
            nxt = op_type[i + 1] if i + 1 < len(op_type) else ""
            if prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower()):
                out.append("_")
        out.append(ch.lower())
    return "".join(out)


class _ShapePrinter(_ContextPrinter):
    """The host code before a launch, reading dims from a gert::InferShapeContext."""

    DIM_TEXT = "{shape}->GetDim({dim})"
    RANK_TEXT = "{shape}->GetDimNum()"
    SHAPE_TYPE = "const gert::Shape*"
    CHECKS_STATIC = False


class OpHostPrinter:
    """op_host/<k>.cpp of one kernel: tiling code, shape and type inference, OpDef."""

    def __init__(
        self, module: ModuleOp, kernel: buffer.KernelOp, api: AscendCApi, debug: bool
    ) -> None:
        self.kernel = kernel
        self.api = api
        self.host = HostPrinter(module, kernel, api, debug)
        self.name = self.host.name
        self.op_type = self.host.op_type
        self.gm = gm_param_names(kernel, self.host.fields)
        self.num_inputs = kernel.num_inputs.value.data
        self.soc = compute_unit(kernel.chip.data)

    @property
    def registered(self) -> bool:
        """Whether the kernel becomes an op of the package (its launch defines TilingFunc)."""
        return self.host.launch is not None

    def check_names(self) -> None:
        """The kernel entry must be CANN's name for the op type (the build derives one
        from the other)."""
        entry = entry_name(self.kernel)
        if snake_op_name(self.op_type) != entry:
            raise UserError(
                f"kernel @{self.name}: CANN names the kernel of op type {self.op_type} "
                f"'{snake_op_name(self.op_type)}', but its entry is '{entry}'; rename the "
                "kernel to lower_snake_case words"
            )

    def source(self) -> str | None:
        """The text of op_host/<k>.cpp (None when the module has neither a tiling rule nor
        a launch of the kernel)."""
        parts = self.host.tiling_parts()
        if not parts:
            return None
        w = CppWriter()
        w.line(f"// op_host/{self.name}.cpp: host side of op {self.op_type}, generated by afc")
        w.line(f'#include "{self.name}_tiling.h"')
        w.line(f'#include "{self.api.host_header}"')
        if self.registered and workspace_fields(self.kernel):
            w.line(f'#include "{self.api.platform_header}"')
        w.line()
        shape = self._infer_shape() if self.registered else None
        helpers = ScalarPrinter(Namer(), "inline")
        for part in [*parts, *([shape] if shape else [])]:
            helpers.helpers_used |= part.helpers_used
        if helpers.helpers_used:
            w.lines.extend(helpers.helper_text())
            w.line()
        w.line(f"namespace {self.api.tiling_namespace} {{")
        for i, part in enumerate(parts):
            if i:
                w.line()
            w.lines.extend(part.w.lines)
        w.line(f"}}  // namespace {self.api.tiling_namespace}")
        if shape is not None:
            self.check_names()
            write_registration(w, shape, self)
        return w.text() + "\n"

    def _infer_shape(self) -> ScalarPrinter:
        """InferShape: static output dims as literals, dynamic ones computed from the
        input shapes as the host code before the launch computes the launch's dims."""
        launch = cast(buffer.LaunchOp, self.host.launch)
        what = f"the output shape of @{self.name}"
        ordered = host_slice(launch, list(launch.dims), what)
        namer = Namer({"context"})
        printer = _ShapePrinter(namer, launch, self.host.rule, set(ordered))
        printer.decide_inlining(iter(ordered))
        w = printer.w
        ctx = self.api.infer_shape_context
        with w.function(f"static {self.api.graph_status} InferShape({ctx}* context)"):
            printer.read_inputs(list(launch.inputs), self.api.graph_failed)
            for op in ordered:
                if op not in printer.inlined:
                    printer.statement(op)
            dims = iter(list(launch.dims))
            for i, result in enumerate(launch.outputs):
                out = namer.fresh(f"output{i}")
                shape = cast(TensorType, result.type).get_shape()
                w.line(f"gert::Shape* {out} = context->GetOutputShape({i});")
                with w.block(f"if ({out} == nullptr)"):
                    w.line(f"return {self.api.graph_failed};")
                w.line(f"{out}->SetDimNum({len(shape)});")
                for d, size in enumerate(shape):
                    value = str(size) if size >= 0 else printer.expr(next(dims)).text
                    w.line(f"{out}->SetDim({d}, {value});")
            w.line(f"return {self.api.graph_success};")
        return printer

    def write_infer_data_type(self, w: CppWriter) -> None:
        """InferDataType: the kernel's output element types (fixed by the IR)."""
        ctx = self.api.infer_data_type_context
        with w.function(f"static {self.api.graph_status} InferDataType({ctx}* context)"):
            for i, arg in enumerate(self.kernel.gm_args[self.num_inputs :]):
                w.line(f"context->SetOutputDataType({i}, {self._ge_type(arg)});")
            w.line(f"return {self.api.graph_success};")

    def _ge_type(self, arg: SSAValue) -> str:
        element = dtypes.type_name(cast(TensorType, arg.type).element_type)
        if element not in self.api.ge_types:
            raise UserError(f"kernel @{self.name}: no ge::DataType for element type {element}")
        return self.api.ge_types[element]

    def write_op_def(self, w: CppWriter) -> None:
        params = [
            ("Input" if i < self.num_inputs else "Output", param, self._ge_type(arg))
            for i, (param, arg) in enumerate(zip(self.gm, self.kernel.gm_args))
        ]
        write_op_def(w, self.api, self.op_type, params, self.soc)


class Registers(Protocol):
    """The host printer of an op: it writes InferDataType and the OpDef."""

    def write_infer_data_type(self, w: CppWriter) -> None: ...

    def write_op_def(self, w: CppWriter) -> None: ...


def write_registration(w: CppWriter, shape: ScalarPrinter, host: Registers) -> None:
    """`namespace ge` with InferShape (printed in `shape`) and InferDataType, then the
    OpDef: what registers an op after its tiling code."""
    w.line()
    w.line("namespace ge {")
    w.lines.extend(shape.w.lines)
    w.line()
    host.write_infer_data_type(w)
    w.line("}  // namespace ge")
    w.line()
    host.write_op_def(w)


def write_op_def(
    w: CppWriter, api: AscendCApi, op_type: str, params: list[tuple[str, str, str]], soc: str
) -> None:
    """The OpDef `class <op_type> : public OpDef` and its OP_ADD: `params` are (Input or
    Output, name, ge::DataType) in the kernel's GM order."""
    w.line(f"namespace {api.op_def_namespace} {{")
    w.line(f"class {op_type} : public {api.op_def} {{")
    w.line("public:")
    w.level += 1
    with w.function(f"explicit {op_type}(const char* name) : {api.op_def}(name)"):
        for kind, param, ge_type in params:
            w.line(
                f'this->{kind}("{param}").ParamType({api.param_required})'
                f".DataType({{{ge_type}}}).Format({{{api.format_nd}}});"
            )
        w.line("this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);")
        w.line(
            f"this->AICore().SetTiling({api.tiling_namespace}::{api.tiling_func})"
            f'.AddConfig("{soc}");'
        )
    w.level -= 1
    w.line("};")
    w.line(f"{api.op_add}({op_type});")
    w.line(f"}}  // namespace {api.op_def_namespace}")


class PackageOp(Protocol):
    """An op of the package: a kernel's OpHostPrinter or a super kernel's."""

    name: str
    op_type: str
    soc: str


def project_build_files(ops: Sequence[PackageOp]) -> dict[str, str]:
    """CMakeLists.txt, CMakePresets.json and build.sh of the package of `ops` (none
    without ops), and the op_host/op_kernel CMakeLists."""
    if not ops:
        return {}
    units = sorted({op.soc for op in ops})
    return {
        "CMakeLists.txt": _root_cmake(),
        "CMakePresets.json": _presets(units),
        "build.sh": _BUILD_SH,
        "op_host/CMakeLists.txt": _host_cmake(ops),
        "op_kernel/CMakeLists.txt": _kernel_cmake(ops),
    }


def _root_cmake() -> str:
    return f"""# CMakeLists.txt: the CANN custom-op package of an afc compile, generated by afc.
# Build it with ./build.sh after sourcing CANN's set_env.sh (it reads CMakePresets.json).
cmake_minimum_required(VERSION 3.16.0)
project(opp)

# the npu_op_* functions of CANN's ASC CMake package
find_package(ASC REQUIRED HINTS ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)

if(NOT DEFINED vendor_name)
    set(vendor_name {VENDOR})
endif()
set(package_name ${{vendor_name}})
npu_op_package(${{package_name}}
    TYPE RUN
    CONFIG
        ENABLE_SOURCE_PACKAGE ${{ENABLE_SOURCE_PACKAGE}}
        ENABLE_BINARY_PACKAGE ${{ENABLE_BINARY_PACKAGE}}
        INSTALL_PATH ${{CMAKE_BINARY_DIR}}/
)

add_subdirectory(op_host)
add_subdirectory(op_kernel)
"""


def _presets(units: list[str]) -> str:
    def var(kind: str, value: str) -> dict[str, str]:
        return {"type": kind, "value": value}

    preset = {
        "version": 1,
        "cmakeMinimumRequired": {"major": 3, "minor": 19, "patch": 0},
        "configurePresets": [
            {
                "name": "default",
                "displayName": "Default Config",
                "description": "Default build using Unix Makefiles generator",
                "generator": "Unix Makefiles",
                "binaryDir": "${sourceDir}/build_out",
                "cacheVariables": {
                    "CMAKE_BUILD_TYPE": var("STRING", "Release"),
                    "ENABLE_SOURCE_PACKAGE": var("BOOL", "True"),
                    "ENABLE_BINARY_PACKAGE": var("BOOL", "True"),
                    "ASCEND_COMPUTE_UNIT": var("STRING", ";".join(units)),
                    "vendor_name": var("STRING", VENDOR),
                    "ASCEND_CANN_PACKAGE_PATH": var(
                        "PATH", "/usr/local/Ascend/ascend-toolkit/latest"
                    ),
                    "ASCEND_PYTHON_EXECUTABLE": var("STRING", "python3"),
                    "CMAKE_INSTALL_PREFIX": var("PATH", "${sourceDir}/build_out"),
                },
            }
        ],
    }
    return json.dumps(preset, indent=4) + "\n"


def _host_cmake(ops: Sequence[PackageOp]) -> str:
    sources = "\n".join(f"    {op.name}.cpp" for op in ops)
    return f"""# op_host/CMakeLists.txt: OpDefs and tiling -> aclnn API, op proto and tiling libraries
set(host_ops_srcs
{sources}
)
npu_op_code_gen(
    SRC ${{host_ops_srcs}}
    PACKAGE ${{package_name}}
    OUT_DIR ${{ASCEND_AUTOGEN_PATH}}
)

file(GLOB autogen_aclnn_src ${{ASCEND_AUTOGEN_PATH}}/aclnn_*.cpp)
set_source_files_properties(${{autogen_aclnn_src}} PROPERTIES GENERATED TRUE)
npu_op_library(cust_opapi ACLNN
    ${{autogen_aclnn_src}}
)

file(GLOB proto_src ${{ASCEND_AUTOGEN_PATH}}/op_proto.cc)
set_source_files_properties(${{proto_src}} PROPERTIES GENERATED TRUE)
npu_op_library(cust_op_proto GRAPH
    ${{host_ops_srcs}}
    ${{proto_src}}
)

npu_op_library(cust_optiling TILING
    ${{host_ops_srcs}}
)

npu_op_package_add(${{package_name}}
    LIBRARY
        cust_optiling
        cust_opapi
        cust_op_proto
)
"""


def _kernel_cmake(ops: Sequence[PackageOp]) -> str:
    sources = "".join(
        f"npu_op_kernel_sources(ascendc_kernels\n"
        f"    OP_TYPE {op.op_type}\n"
        f"    KERNEL_FILE {op.name}.cpp\n"
        ")\n\n"
        for op in ops
    )
    return f"""# op_kernel/CMakeLists.txt: the kernels of the package, one per op type
{sources}npu_op_kernel_library(ascendc_kernels
    SRC_BASE ${{CMAKE_CURRENT_SOURCE_DIR}}
    TILING_LIBRARY cust_optiling
)

npu_op_package_add(${{package_name}}
    LIBRARY
        ascendc_kernels
)
"""


# build.sh: configure from the preset (CMake >= 3.19 reads it itself; older CMake gets its
# cache variables as -D options, as msOpGen's build.sh does), then build the kernels
# and the .run package (targets `binary` and `package`, 基本流程.md "执行编译")
_BUILD_SH = """#!/bin/bash
# build.sh: build the op package into build_out/custom_opp_<os>_<arch>.run, generated by afc.
# Source CANN's set_env.sh first; set ASCEND_COMPUTE_UNIT etc. in CMakePresets.json.
set -e
cd "$(dirname "$0")"
if [ -z "${ASCEND_HOME_PATH}" ]; then
    echo "build.sh: ASCEND_HOME_PATH is not set; source <CANN install>/set_env.sh first" >&2
    exit 1
fi
version=$(cmake --version | head -n 1 | awk '{print $3}')
if printf '3.19.0\\n%s\\n' "${version}" | sort -V -C; then
    cmake -S . -B build_out --preset=default
else
    options=$(python3 -c '
import json, os
preset = json.load(open("CMakePresets.json"))["configurePresets"][0]
for key, var in preset["cacheVariables"].items():
    print("-D%s=%s" % (key, str(var["value"]).replace("${sourceDir}", os.getcwd())))
')
    # shellcheck disable=SC2086
    cmake -S . -B build_out ${options}
fi
cmake --build build_out --target binary package -j"$(nproc)"
"""


def emit_op_host(
    module: ModuleOp, api: AscendCApi, debug: bool, staged: Sequence[PackageOp] = ()
) -> dict[str, str]:
    """op_host/<k>.cpp of every kernel and the project's build files: path -> text.

    `staged`: the super kernels (super_kernel_ascendc.py); a kernel launched only as
    one of their stages is no op of its own."""
    files: dict[str, str] = {}
    ops: list[PackageOp] = [*staged]
    only_staged = staged_kernels(module) if staged else set()
    for kernel in kernels_of(module):
        get_chip(kernel.chip.data)  # an unknown chip fails here with its own message
        if kernel.sym_name.data in only_staged:
            continue
        printer = OpHostPrinter(module, kernel, api, debug)
        source = printer.source()
        if source is not None:
            files[f"op_host/{printer.name}.cpp"] = source
        if printer.registered:
            ops.append(printer)
    files.update(project_build_files(ops))
    return files


def staged_kernels(module: ModuleOp) -> set[str]:
    """The kernels every launch of which is a stage of a super kernel."""
    from autofusion.codegen.super_kernel import SUPER_ATTR

    marked: dict[str, bool] = {}
    for op in module.walk():
        if isinstance(op, buffer.LaunchOp):
            name = op.kernel.root_reference.data
            marked[name] = marked.get(name, True) and SUPER_ATTR in op.attributes
    return {name for name, all_marked in marked.items() if all_marked}


__all__ = [
    "COMPUTE_UNITS",
    "OpHostPrinter",
    "PackageOp",
    "compute_unit",
    "emit_op_host",
    "project_build_files",
    "snake_op_name",
    "staged_kernels",
    "write_op_def",
    "write_registration",
]
