/*
 * op_def_registry.h: the part of CANN's host op registration afc's generated op_host/<op>.cpp
 * uses (ascend.md 2.6; asc-devkit examples/01_simd_cpp_api/02_features/99_acl_based/
 * 00_acl_compilation/custom_op/op_host/add_custom/add_custom_host.cpp):
 *
 * - ge::graphStatus, ge::DataType and ge::Format (the values of CANN's graph/types.h);
 * - gert::TilingContext with input shapes, the raw tiling data buffer, the block count,
 *   the tiling key, the schedule mode and the workspace sizes (all recorded);
 * - gert::InferShapeContext and gert::InferDataTypeContext;
 * - ops::OpDef with Input/Output(...).ParamType().DataType().Format(), SetInferShape,
 *   SetInferDataType, AICore().SetTiling().AddConfig(), and OP_ADD, which registers the op
 *   by type in a registry (ops::emu::FindOpDef) as CANN's op package does.
 *
 * The afc build maps "register/op_def_registry.h" here; the emulated launch looks the op up,
 * runs its InferShape and TilingFunc, then the kernel on the tiling bytes.
 */
#ifndef AFC_ASCENDC_EMU_OP_DEF_REGISTRY_H
#define AFC_ASCENDC_EMU_OP_DEF_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;

// the values of CANN's graph/types.h
enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT64 = 9,
    DT_BOOL = 12,
    DT_BF16 = 27,
    DT_UNDEFINED = 28,
};
enum Format {
    FORMAT_NCHW = 0,
    FORMAT_NHWC = 1,
    FORMAT_ND = 2,
};
}  // namespace ge

namespace fe {
class PlatFormInfos;
}  // namespace fe

namespace gert {

class Shape {
public:
    Shape() = default;
    explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
    size_t GetDimNum() const
    {
        return dims_.size();
    }
    int64_t GetDim(size_t index) const
    {
        return index < dims_.size() ? dims_[index] : 0;
    }
    int64_t GetShapeSize() const
    {
        int64_t size = 1;
        for (int64_t d : dims_) {
            size *= d;
        }
        return size;
    }
    void SetDimNum(size_t num)
    {
        dims_.resize(num, 0);
    }
    void SetDim(size_t index, int64_t value)
    {
        if (index < dims_.size()) {
            dims_[index] = value;
        }
    }
    void AppendDim(int64_t value)
    {
        dims_.push_back(value);
    }
    bool operator==(const Shape& other) const
    {
        return dims_ == other.dims_;
    }

private:
    std::vector<int64_t> dims_;
};

class StorageShape {
public:
    StorageShape() = default;
    explicit StorageShape(const Shape& shape) : origin_(shape), storage_(shape) {}
    const Shape& GetOriginShape() const
    {
        return origin_;
    }
    const Shape& GetStorageShape() const
    {
        return storage_;
    }

private:
    Shape origin_;
    Shape storage_;
};

class TilingData {
public:
    TilingData(void* data, size_t capacity) : data_(data), capacity_(capacity) {}
    void* GetData()
    {
        return data_;
    }
    size_t GetCapacity() const
    {
        return capacity_;
    }
    void SetDataSize(size_t size)
    {
        size_ = size;
    }
    size_t GetDataSize() const
    {
        return size_;
    }

private:
    void* data_;
    size_t capacity_;
    size_t size_ = 0;
};

class TilingContext {
public:
    TilingContext(std::vector<StorageShape> inputs, void* tilingData, size_t capacity)
        : inputs_(std::move(inputs)), raw_(tilingData, capacity)
    {
    }
    const StorageShape* GetInputShape(size_t index) const
    {
        return index < inputs_.size() ? &inputs_[index] : nullptr;
    }
    TilingData* GetRawTilingData()
    {
        return &raw_;
    }
    ge::graphStatus SetBlockDim(uint32_t blockDim)
    {
        blockDim_ = blockDim;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const
    {
        return blockDim_;
    }
    // 1: batch mode, every block starts together: what SyncAll needs when several streams
    // run (asc-devkit SyncAll.md)
    ge::graphStatus SetScheduleMode(const uint32_t scheduleMode)
    {
        scheduleMode_ = scheduleMode;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetScheduleMode() const
    {
        return scheduleMode_;
    }
    ge::graphStatus SetTilingKey(uint64_t key)
    {
        tilingKey_ = key;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const
    {
        return tilingKey_;
    }
    fe::PlatFormInfos* GetPlatformInfo() const
    {
        return nullptr;
    }
    size_t* GetWorkspaceSizes(size_t count)
    {
        workspace_.assign(count, 0);
        return workspace_.data();
    }
    size_t GetWorkspaceNum() const
    {
        return workspace_.size();
    }
    // the emulation's view of what the tiling function asked for
    const std::vector<size_t>& RecordedWorkspaceSizes() const
    {
        return workspace_;
    }

private:
    std::vector<StorageShape> inputs_;
    TilingData raw_;
    uint32_t blockDim_ = 0;
    uint32_t scheduleMode_ = 0;
    uint64_t tilingKey_ = 0;
    std::vector<size_t> workspace_;
};

class InferShapeContext {
public:
    InferShapeContext(std::vector<Shape> inputs, size_t outputs) : inputs_(std::move(inputs)), outputs_(outputs) {}
    const Shape* GetInputShape(size_t index) const
    {
        return index < inputs_.size() ? &inputs_[index] : nullptr;
    }
    Shape* GetOutputShape(size_t index)
    {
        return index < outputs_.size() ? &outputs_[index] : nullptr;
    }
    const std::vector<Shape>& OutputShapes() const
    {
        return outputs_;
    }

private:
    std::vector<Shape> inputs_;
    std::vector<Shape> outputs_;
};

class InferDataTypeContext {
public:
    InferDataTypeContext(std::vector<ge::DataType> inputs, size_t outputs)
        : inputs_(std::move(inputs)), outputs_(outputs, ge::DT_UNDEFINED)
    {
    }
    ge::DataType GetInputDataType(size_t index) const
    {
        return index < inputs_.size() ? inputs_[index] : ge::DT_UNDEFINED;
    }
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType type)
    {
        if (index >= outputs_.size()) {
            return ge::GRAPH_FAILED;
        }
        outputs_[index] = type;
        return ge::GRAPH_SUCCESS;
    }
    const std::vector<ge::DataType>& OutputDataTypes() const
    {
        return outputs_;
    }

private:
    std::vector<ge::DataType> inputs_;
    std::vector<ge::DataType> outputs_;
};

}  // namespace gert

namespace ops {

enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3 };

using TilingKernelFunc = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeKernelFunc = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeKernelFunc = ge::graphStatus (*)(gert::InferDataTypeContext*);

class OpParamDef {
public:
    explicit OpParamDef(const char* name) : name_(name) {}
    OpParamDef& ParamType(Option type)
    {
        type_ = type;
        return *this;
    }
    OpParamDef& DataType(std::vector<ge::DataType> types)
    {
        types_ = std::move(types);
        return *this;
    }
    OpParamDef& Format(std::vector<ge::Format> formats)
    {
        formats_ = std::move(formats);
        return *this;
    }
    const std::string& GetParamName() const
    {
        return name_;
    }
    Option GetParamType() const
    {
        return type_;
    }
    const std::vector<ge::DataType>& GetDataTypes() const
    {
        return types_;
    }
    const std::vector<ge::Format>& GetFormats() const
    {
        return formats_;
    }

private:
    std::string name_;
    Option type_ = REQUIRED;
    std::vector<ge::DataType> types_;
    std::vector<ge::Format> formats_;
};

class OpAICoreConfig {};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(TilingKernelFunc func)
    {
        tiling_ = func;
        return *this;
    }
    OpAICoreDef& AddConfig(const char* soc)
    {
        configs_.emplace_back(soc);
        return *this;
    }
    OpAICoreDef& AddConfig(const char* soc, OpAICoreConfig& config)
    {
        (void)config;
        return AddConfig(soc);
    }
    TilingKernelFunc GetTiling() const
    {
        return tiling_;
    }
    const std::vector<std::string>& GetConfigs() const
    {
        return configs_;
    }

private:
    TilingKernelFunc tiling_ = nullptr;
    std::vector<std::string> configs_;
};

class OpDef {
public:
    explicit OpDef(const char* type) : type_(type) {}
    virtual ~OpDef() = default;
    OpDef(const OpDef&) = delete;
    OpDef& operator=(const OpDef&) = delete;
    OpParamDef& Input(const char* name)
    {
        inputs_.emplace_back(name);
        return inputs_.back();
    }
    OpParamDef& Output(const char* name)
    {
        outputs_.emplace_back(name);
        return outputs_.back();
    }
    OpDef& SetInferShape(InferShapeKernelFunc func)
    {
        inferShape_ = func;
        return *this;
    }
    OpDef& SetInferDataType(InferDataTypeKernelFunc func)
    {
        inferDataType_ = func;
        return *this;
    }
    OpAICoreDef& AICore()
    {
        return aicore_;
    }
    const std::string& GetOpType() const
    {
        return type_;
    }
    const std::deque<OpParamDef>& GetInputs() const
    {
        return inputs_;
    }
    const std::deque<OpParamDef>& GetOutputs() const
    {
        return outputs_;
    }
    InferShapeKernelFunc GetInferShape() const
    {
        return inferShape_;
    }
    InferDataTypeKernelFunc GetInferDataType() const
    {
        return inferDataType_;
    }
    const OpAICoreDef& GetAICore() const
    {
        return aicore_;
    }

private:
    std::string type_;
    std::deque<OpParamDef> inputs_;  // a deque keeps references valid as params are added
    std::deque<OpParamDef> outputs_;
    InferShapeKernelFunc inferShape_ = nullptr;
    InferDataTypeKernelFunc inferDataType_ = nullptr;
    OpAICoreDef aicore_;
};

namespace emu {

// the op package's registry: op type -> its OpDef, filled by OP_ADD when the library loads.
// Hidden: a default-visibility static local of an inline function is one object in the
// whole process (STB_GNU_UNIQUE), and each emulation library has its own ops.
__attribute__((visibility("hidden"))) inline std::map<std::string, std::unique_ptr<OpDef>>& Registry()
{
    static std::map<std::string, std::unique_ptr<OpDef>> registry;
    return registry;
}

inline const OpDef* FindOpDef(const std::string& type)
{
    auto it = Registry().find(type);
    return it == Registry().end() ? nullptr : it->second.get();
}

template <typename T>
struct OpAdd {
    explicit OpAdd(const char* type)
    {
        Registry()[type] = std::make_unique<T>(type);
    }
};

}  // namespace emu
}  // namespace ops

#define OP_ADD(opType) static ::ops::emu::OpAdd<opType> g_afcOpAdd##opType(#opType)

// tiling/platform/platform_ascendc.h: the emulation has no system workspace
namespace platform_ascendc {
class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* info)
    {
        (void)info;
    }
    uint32_t GetLibApiWorkSpaceSize() const
    {
        return 0;
    }
};
}  // namespace platform_ascendc

#endif  // AFC_ASCENDC_EMU_OP_DEF_REGISTRY_H
