/*
 * op_def_registry.h: the part of CANN's host op registration afc's generated tiling
 * functions use (ascend.md 2.6): ge::graphStatus and gert::TilingContext with input
 * shapes, the raw tiling data buffer, the block count, the tiling key and the
 * workspace sizes. The afc build maps "register/op_def_registry.h" here; a harness
 * builds a TilingContext from shapes and calls the generated TilingFunc.
 */
#ifndef AFC_ASCENDC_EMU_OP_DEF_REGISTRY_H
#define AFC_ASCENDC_EMU_OP_DEF_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
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
    // 1: batch mode, every block starts together (what a kernel that calls SyncAll needs)
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

private:
    std::vector<StorageShape> inputs_;
    TilingData raw_;
    uint32_t blockDim_ = 0;
    uint32_t scheduleMode_ = 0;
    uint64_t tilingKey_ = 0;
    std::vector<size_t> workspace_;
};

}  // namespace gert

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
