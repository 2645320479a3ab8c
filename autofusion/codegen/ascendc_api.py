"""The Ascend C names afc's printer emits, as data (the API drifts between CANN versions).

Every identifier of the generated code that belongs to Ascend C or CANN comes from an
`AscendCApi` table; the printer never spells one itself. `CANN8` is the CANN 7.x/8.x
spelling (ascend.md 2.1: `AscendC` namespace, `extern "C" __global__ __aicore__`,
GM_ADDR, `SetBlockDim`); a later table can rename entries (e.g. CANN 9.x's
`SetSimdNumBlocks`) without touching the printer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autofusion.hardware import ChipSpec


def _vector_binary() -> dict[str, str]:
    # count-form binary vector APIs, `Op(dst, src0, src1, count)` (ascend.md 2.8)
    return {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}


def _vector_unary() -> dict[str, str]:
    # `Op(dst, src, count)` (ascend.md 2.8)
    return {
        "exp": "Exp",
        "ln": "Ln",
        "sqrt": "Sqrt",
        "rsqrt": "Rsqrt",
        "abs": "Abs",
        "relu": "Relu",
        "reciprocal": "Reciprocal",
    }


def _vector_scalar() -> dict[str, str]:
    # `Op(dst, src, T scalar, count)` (ascend.md 2.8)
    return {"adds": "Adds", "muls": "Muls", "maxs": "Maxs", "mins": "Mins"}


def _reduce() -> dict[str, str]:
    # `Op<T>(dst, src, sharedTmpBuffer, count)` (ascend.md 2.8)
    return {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}


def _compare_modes() -> dict[str, str]:
    # CMPMODE (asc-devkit kernel_utils_mode.h, ascend.md 2.8)
    return {
        "lt": "CMPMODE::LT",
        "gt": "CMPMODE::GT",
        "eq": "CMPMODE::EQ",
        "le": "CMPMODE::LE",
        "ge": "CMPMODE::GE",
        "ne": "CMPMODE::NE",
    }


def _round_modes() -> dict[str, str]:
    # RoundMode (ascend.md 2.8): CAST_NONE widens, CAST_RINT is round-half-to-even
    return {
        "none": "RoundMode::CAST_NONE",
        "rint": "RoundMode::CAST_RINT",
        "trunc": "RoundMode::CAST_TRUNC",
        "floor": "RoundMode::CAST_FLOOR",
        "ceil": "RoundMode::CAST_CEIL",
        "round": "RoundMode::CAST_ROUND",
    }


def _positions() -> dict[str, str]:
    # buffer dialect position -> TPosition (ascend.md 1.7)
    return {
        "vecin": "QuePosition::VECIN",
        "vecout": "QuePosition::VECOUT",
        "veccalc": "QuePosition::VECCALC",
        "a1": "QuePosition::A1",
        "b1": "QuePosition::B1",
        "a2": "QuePosition::A2",
        "b2": "QuePosition::B2",
        "co1": "QuePosition::CO1",
    }


def _types() -> dict[str, str]:
    # element types (ascend.md 2.4, 2.8); i1 values live in bytes
    return {
        "f32": "float",
        "f16": "half",
        "bf16": "bfloat16_t",
        "i64": "int64_t",
        "i32": "int32_t",
        "i8": "int8_t",
        "i1": "uint8_t",
    }


def _ge_types() -> dict[str, str]:
    # ge::DataType of an OpDef input or output (CANN graph/types.h); i1 lives in bytes
    return {
        "f32": "ge::DT_FLOAT",
        "f16": "ge::DT_FLOAT16",
        "bf16": "ge::DT_BF16",
        "i64": "ge::DT_INT64",
        "i32": "ge::DT_INT32",
        "i8": "ge::DT_INT8",
        "i1": "ge::DT_BOOL",
    }


def _hard_events() -> frozenset[tuple[str, str]]:
    # (source pipe, destination pipe) pairs with a HardEvent (asc-devkit kernel_event.h, ascend.md 2.9)
    names = _HARD_EVENT_TEXT.split()
    pairs = []
    for name in names:
        # split at the underscore that separates two pipe names
        for i, ch in enumerate(name):
            if ch == "_" and name[:i] in PIPES and name[i + 1 :] in PIPES:
                pairs.append((name[:i], name[i + 1 :]))
    return frozenset(pairs)


_HARD_EVENT_TEXT = """MTE2_MTE1 MTE1_MTE2 MTE1_M M_MTE1 MTE2_V V_MTE2 MTE3_V V_MTE3 M_V V_M V_V
    MTE3_MTE1 MTE1_MTE3 MTE1_V MTE2_M M_MTE2 V_MTE1 M_FIX FIX_M MTE3_MTE2 MTE2_MTE3 S_V V_S
    S_MTE2 MTE2_S S_MTE3 MTE3_S MTE2_FIX FIX_MTE2 FIX_S M_S FIX_MTE3 MTE1_FIX FIX_MTE1 FIX_FIX"""

# the pipes of an AI Core (ascend.md 2.9)
PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")

# Cast source -> destination pairs on A2 and the round modes each allows (ascend.md 2.8)
CAST_PAIRS: dict[tuple[str, str], frozenset[str]] = {
    ("f16", "f32"): frozenset({"none"}),
    ("f32", "f16"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("bf16", "f32"): frozenset({"none"}),
    ("f32", "bf16"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("f32", "i32"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("f32", "i64"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("i32", "f32"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("f16", "i8"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("f16", "i32"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    ("i8", "f16"): frozenset({"none"}),
    ("i1", "f16"): frozenset({"none"}),  # a byte mask (uint8_t) widened for Compare
    ("bf16", "i32"): frozenset({"none", "rint", "floor", "ceil", "round", "trunc"}),
    # int64 positions or indices to float (asc-devkit Cast.md, the A2 table: no CAST_NONE)
    ("i64", "f32"): frozenset({"rint", "floor", "ceil", "round", "trunc"}),
    ("i64", "i32"): frozenset({"none"}),
}

# pairs some architectures lack (__NPU_ARCH__, chips.toml `arch`): the 64-bit integer
# conversions vconv_s642f32*, vconv_s642s32 and vconv_f322s64* are in asc-devkit's
# impl/basic_api/dav_c220/kernel_operator_vec_vconv_impl.h (A2/A3, arch 2201) only,
# not in dav_c100 (Ascend910) nor dav_m200 (310P)
CAST_ARCHS: dict[tuple[str, str], frozenset[int]] = {
    ("i64", "f32"): frozenset({2201}),
    ("i64", "i32"): frozenset({2201}),
    ("f32", "i64"): frozenset({2201}),
}


def cast_modes(src: str, dst: str, arch: int) -> frozenset[str]:
    """The round modes of the Ascend C Cast from `src` to `dst` on architecture `arch`
    (empty: no such Cast there)."""
    archs = CAST_ARCHS.get((src, dst))
    if archs is not None and arch not in archs:
        return frozenset()
    return CAST_PAIRS.get((src, dst), frozenset())


# element types each vector API accepts on A2 (ascend.md 2.8)
ARITH_TYPES = frozenset({"f16", "f32", "i32"})
FLOAT_TYPES = frozenset({"f16", "f32"})
VECTOR_TYPES: dict[str, frozenset[str]] = {
    "Add": ARITH_TYPES,
    "Sub": ARITH_TYPES,
    "Mul": ARITH_TYPES,
    "Max": ARITH_TYPES,
    "Min": ARITH_TYPES,
    "Div": FLOAT_TYPES,
    "Exp": FLOAT_TYPES,
    "Ln": FLOAT_TYPES,
    "Sqrt": FLOAT_TYPES,
    "Rsqrt": FLOAT_TYPES,
    "Abs": FLOAT_TYPES,
    "Reciprocal": FLOAT_TYPES,
    "Relu": ARITH_TYPES,
    "Adds": ARITH_TYPES,
    "Muls": ARITH_TYPES,
    "Maxs": ARITH_TYPES,
    "Mins": ARITH_TYPES,
    "Duplicate": frozenset({"f16", "bf16", "f32", "i32"}),
    "ReduceSum": FLOAT_TYPES,
    "ReduceMax": FLOAT_TYPES,
    "ReduceMin": FLOAT_TYPES,
    "Compare": frozenset({"f16", "f32", "i32"}),
    "Select": frozenset({"f16", "f32"}),
    "Gather": frozenset({"f16", "bf16", "f32", "i32"}),
}


@dataclass(frozen=True)
class AscendCApi:
    """One CANN version's spelling of everything the printer emits."""

    version: str
    include: str = "kernel_operator.h"
    namespace: str = "AscendC"
    gm_addr: str = "GM_ADDR"
    entry_qualifiers: str = 'extern "C" __global__ __aicore__'
    method_qualifiers: str = "__aicore__ inline"
    gm_qualifier: str = "__gm__"
    kernel_type_macro: str = "KERNEL_TASK_TYPE_DEFAULT"
    get_tiling_data: str = "GET_TILING_DATA"
    # classes and structs
    pipe: str = "TPipe"
    queue: str = "TQue"
    tbuf: str = "TBuf"
    local_tensor: str = "LocalTensor"
    global_tensor: str = "GlobalTensor"
    copy_params: str = "DataCopyParams"
    copy_ext_params: str = "DataCopyExtParams"
    pad_ext_params: str = "DataCopyPadExtParams"
    nd2nz_params: str = "Nd2NzParams"
    # CO1 -> CO2 on coupled chips (asc-devkit kernel_struct_data_copy.h)
    copy_enhanced_params: str = "DataCopyEnhancedParams"
    block_mode_matrix: str = "BlockMode::BLOCK_MODE_MATRIX"
    load2d_params: str = "LoadData2DParams"
    load2d_transpose_params: str = "LoadData2dTransposeParams"
    load3d_params: str = "LoadData3DParamsV2"
    mmad_params: str = "MmadParams"
    fixpipe_params: str = "FixpipeParamsV220"
    fixpipe_quant: dict[str, str] = field(
        default_factory=lambda: {
            "f32": "QuantMode_t::NoQuant",
            "f16": "QuantMode_t::F322F16",
            "bf16": "QuantMode_t::F322BF16",
        }
    )
    # methods and functions
    init_buffer: str = "InitBuffer"
    alloc_tensor: str = "AllocTensor"
    enque: str = "EnQue"
    deque: str = "DeQue"
    free_tensor: str = "FreeTensor"
    tbuf_get: str = "Get"
    set_global_buffer: str = "SetGlobalBuffer"
    # GlobalTensor L2 cache mode (Atlas A2/A3; asc-devkit docs atlasascendc_api_07_00033)
    set_l2_cache_hint: str = "SetL2CacheHint"
    l2_disable: str = "CacheMode::CACHE_MODE_DISABLE"
    get_value: str = "GetValue"
    set_value: str = "SetValue"
    block_idx: str = "GetBlockIdx"
    block_num: str = "GetBlockNum"
    # mix kernels on split chips (ascend.md 2.2, 2.3, 2.9): the AIV's GetBlockIdx counts
    # vector cores, GetTaskRation is the vector cores per block there (1 on the AIC)
    task_ration: str = "GetTaskRation"
    sub_block_idx: str = "GetSubBlockIdx"
    is_aic: str = "ASCEND_IS_AIC"
    is_aiv: str = "ASCEND_IS_AIV"
    cross_core_set: str = "CrossCoreSetFlag"
    cross_core_wait: str = "CrossCoreWaitFlag"
    cross_core_mode: str = "0x2"  # AIC <-> AIV inside one block
    # every core of the launch (asc-devkit SyncAll.md: the hard sync, <false> in a mix kernel)
    sync_all: str = "SyncAll<false>"
    # copies to GM that add (asc-devkit SetAtomicAdd.md)
    set_atomic_add: str = "SetAtomicAdd"
    set_atomic_none: str = "SetAtomicNone"
    pipe_enum: str = "PIPE_{}"  # pipe_t values: PIPE_FIX, PIPE_MTE3, ...
    data_copy: str = "DataCopy"
    data_copy_pad: str = "DataCopyPad"
    duplicate: str = "Duplicate"
    cast: str = "Cast"
    compare: str = "Compare"
    select: str = "Select"
    select_tensor_mode: str = "SELMODE::VSEL_TENSOR_TENSOR_MODE"
    gather: str = "Gather"
    reinterpret_cast: str = "ReinterpretCast"
    load_data: str = "LoadData"
    load_data_with_transpose: str = "LoadDataWithTranspose"
    mmad: str = "Mmad"
    fixpipe: str = "Fixpipe"
    set_flag: str = "SetFlag"
    wait_flag: str = "WaitFlag"
    fetch_event_id: str = "FetchEventID"
    event_type: str = "event_t"
    hard_event: str = "HardEvent"
    pipe_barrier_all: str = "PipeBarrier<PIPE_ALL>"
    pipe_barrier: str = "PipeBarrier"
    vector_binary: dict[str, str] = field(default_factory=_vector_binary)
    vector_unary: dict[str, str] = field(default_factory=_vector_unary)
    vector_scalar: dict[str, str] = field(default_factory=_vector_scalar)
    reduce: dict[str, str] = field(default_factory=_reduce)
    compare_modes: dict[str, str] = field(default_factory=_compare_modes)
    round_modes: dict[str, str] = field(default_factory=_round_modes)
    positions: dict[str, str] = field(default_factory=_positions)
    types: dict[str, str] = field(default_factory=_types)
    hard_events: frozenset[tuple[str, str]] = field(default_factory=_hard_events)
    # host side (ascend.md 2.6)
    tiling_header: str = "register/tilingdata_base.h"
    host_header: str = "register/op_def_registry.h"
    tiling_namespace: str = "optiling"
    tiling_begin: str = "BEGIN_TILING_DATA_DEF"
    tiling_field: str = "TILING_DATA_FIELD_DEF"
    tiling_end: str = "END_TILING_DATA_DEF"
    tiling_register: str = "REGISTER_TILING_DATA_CLASS"
    tiling_context: str = "gert::TilingContext"
    graph_status: str = "ge::graphStatus"
    graph_success: str = "ge::GRAPH_SUCCESS"
    graph_failed: str = "ge::GRAPH_FAILED"
    set_block_dim: str = "SetBlockDim"
    set_schedule_mode: str = "SetScheduleMode"
    user_workspace: str = "GetUserWorkspace"
    platform_header: str = "tiling/platform/platform_ascendc.h"
    platform: str = "platform_ascendc::PlatformAscendC"
    lib_workspace_size: str = "GetLibApiWorkSpaceSize"
    # op registration (op_host/<op>.cpp; asc-devkit examples/01_simd_cpp_api/02_features/
    # 99_acl_based/00_acl_compilation/custom_op/op_host/add_custom/add_custom_host.cpp)
    tiling_func: str = "TilingFunc"
    op_def_namespace: str = "ops"
    op_def: str = "OpDef"
    op_add: str = "OP_ADD"
    param_required: str = "REQUIRED"
    # the workspace bytes of a pure kernel run as a MIX type: more than 0 (asc-devkit
    # 设置Kernel类型.md, 约束说明, suggests 16 or 32)
    forced_mix_workspace: int = 32
    format_nd: str = "ge::FORMAT_ND"
    infer_shape_context: str = "gert::InferShapeContext"
    infer_data_type_context: str = "gert::InferDataTypeContext"
    ge_types: dict[str, str] = field(default_factory=_ge_types)

    def kernel_type(self, chip: ChipSpec, core_type: str) -> str:
        """The KERNEL_TASK_TYPE_DEFAULT argument for a kernel (ascend.md 2.2).

        Split chips (2201) run vector-only kernels on AIV cores and cube-only ones on
        AIC cores; mixed kernels use one AIC with two AIVs. Coupled chips run every
        kernel on the AI Core; 310P adds its Vector Cores to vector kernels.
        """
        if chip.mode == "split":
            return {
                "aiv": "KERNEL_TYPE_AIV_ONLY",
                "aic": "KERNEL_TYPE_AIC_ONLY",
                "mix": "KERNEL_TYPE_MIX_AIC_1_2",
            }[core_type]
        if chip.arch == 2002 and core_type == "aiv":
            return "KERNEL_TYPE_MIX_VECTOR_CORE"
        return "KERNEL_TYPE_AICORE"

    def forced_mix(self, chip: ChipSpec, core_type: str) -> bool:
        """Whether a pure (vector-only) kernel runs as a MIX kernel type: 310P's
        MIX_VECTOR_CORE, which needs a workspace (`forced_mix_workspace`)."""
        return core_type != "mix" and "MIX" in self.kernel_type(chip, core_type)

    @staticmethod
    def has_get_tiling_data(chip: ChipSpec) -> bool:
        """GET_TILING_DATA is not supported on the Atlas training series (910, ascend.md 2.6)."""
        return chip.arch != 1001


CANN8 = AscendCApi(version="cann8")

API_TABLES: dict[str, AscendCApi] = {"cann8": CANN8}
