/*
 * tilingdata_base.h: the tiling-data macros of CANN's register/tilingdata_base.h, for
 * compiling afc's generated host code and kernels with g++ (ascend.md 2.6).
 *
 *     BEGIN_TILING_DATA_DEF(AddCustomTilingData)
 *       TILING_DATA_FIELD_DEF(int64_t, totalLength);
 *     END_TILING_DATA_DEF;
 *     REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)
 *
 * defines a plain class with set_<field>/get_<field>, SaveToBuffer and GetDataSize.
 * Its bytes are the blob the kernel reads with GET_TILING_DATA: the fields in order,
 * each at its natural alignment. The afc build maps "register/tilingdata_base.h" here.
 */
#ifndef AFC_ASCENDC_EMU_TILINGDATA_BASE_H
#define AFC_ASCENDC_EMU_TILINGDATA_BASE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#define BEGIN_TILING_DATA_DEF(name) \
    class name {                    \
    public:
#define TILING_DATA_FIELD_DEF(type, field) \
    type field = 0;                        \
    void set_##field(type value)           \
    {                                      \
        field = value;                     \
    }                                      \
    type get_##field() const               \
    {                                      \
        return field;                      \
    }
#define END_TILING_DATA_DEF                                                   \
    void SaveToBuffer(void* data, size_t capacity) const                      \
    {                                                                         \
        if (data != nullptr && capacity >= sizeof(*this)) {                   \
            std::memcpy(data, static_cast<const void*>(this), sizeof(*this)); \
        }                                                                     \
    }                                                                         \
    size_t GetDataSize() const                                                \
    {                                                                         \
        return sizeof(*this);                                                 \
    }                                                                         \
    }
#define REGISTER_TILING_DATA_CLASS(op_type, class_name) using op_type##TilingDataClass = class_name;

#endif  // AFC_ASCENDC_EMU_TILINGDATA_BASE_H
