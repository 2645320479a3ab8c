/*
 * afc_emu_op.h: run a registered op's host side as CANN's runtime does before a launch
 * (ascend.md 2.6): look the op type up among the OpDefs that OP_ADD registered, infer the
 * output shapes, run its TilingFunc on the input shapes and collect the tiling bytes, the
 * block count, the schedule mode and the workspace size. afc's harness (emulate.py) calls
 * these, then launches the kernel on exactly those tiling bytes.
 */
#ifndef AFC_ASCENDC_EMU_OP_H
#define AFC_ASCENDC_EMU_OP_H

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "op_def_registry.h"

namespace ops {
namespace emu {

// room for the tiling data, as the framework gives TilingFunc a fixed-capacity buffer
constexpr size_t TILING_CAPACITY = 64 * 1024;

struct TilingRun {
    std::vector<uint8_t> data = std::vector<uint8_t>(TILING_CAPACITY, 0);
    size_t dataSize = 0;
    uint32_t blockDim = 0;
    uint32_t scheduleMode = 0;
    size_t workspace = 0;
};

inline std::vector<gert::Shape> ShapesOf(const int64_t* dims, const int64_t* ranks, int64_t count)
{
    std::vector<gert::Shape> shapes;
    for (int64_t i = 0, at = 0; i < count; at += ranks[i], ++i) {
        shapes.emplace_back(std::vector<int64_t>(dims + at, dims + at + ranks[i]));
    }
    return shapes;
}

inline const OpDef* FindOp(const char* type, char* error, size_t errorLen)
{
    const OpDef* op = FindOpDef(type);
    if (op == nullptr) {
        std::snprintf(error, errorLen, "no OpDef registers op type %s (OP_ADD)", type);
    }
    return op;
}

// Returns 0 and the output shapes (dims flat, ranks) or non-zero with a one-line error.
inline int InferShapes(const char* type, const std::vector<gert::Shape>& inputs, std::vector<gert::Shape>& outputs,
                       char* error, size_t errorLen)
{
    const OpDef* op = FindOp(type, error, errorLen);
    if (op == nullptr) {
        return 1;
    }
    if (op->GetInferShape() == nullptr) {
        std::snprintf(error, errorLen, "op %s registers no InferShape", type);
        return 1;
    }
    gert::InferShapeContext context(inputs, op->GetOutputs().size());
    if (op->GetInferShape()(&context) != ge::GRAPH_SUCCESS) {
        std::snprintf(error, errorLen, "InferShape of op %s rejected the shapes", type);
        return 1;
    }
    outputs = context.OutputShapes();
    return 0;
}

inline int RunTiling(const char* type, const std::vector<gert::Shape>& inputs, TilingRun& run, char* error,
                     size_t errorLen)
{
    const OpDef* op = FindOp(type, error, errorLen);
    if (op == nullptr) {
        return 1;
    }
    if (op->GetAICore().GetTiling() == nullptr) {
        std::snprintf(error, errorLen, "op %s registers no tiling function (AICore().SetTiling)", type);
        return 1;
    }
    std::vector<gert::StorageShape> shapes;
    for (const gert::Shape& s : inputs) {
        shapes.emplace_back(s);
    }
    gert::TilingContext context(shapes, run.data.data(), run.data.size());
    if (op->GetAICore().GetTiling()(&context) != ge::GRAPH_SUCCESS) {
        std::snprintf(error, errorLen, "TilingFunc of op %s rejected the shapes", type);
        return 1;
    }
    run.dataSize = context.GetRawTilingData()->GetDataSize();
    run.blockDim = context.GetBlockDim();
    run.scheduleMode = context.GetScheduleMode();
    run.workspace = 0;
    for (size_t bytes : context.RecordedWorkspaceSizes()) {
        run.workspace += bytes;
    }
    if (run.dataSize == 0 || run.dataSize > run.data.size()) {
        std::snprintf(error, errorLen, "TilingFunc of op %s set %zu bytes of tiling data", type, run.dataSize);
        return 1;
    }
    return 0;
}

// The registered OpDef as text, one line per item: `input|output <name> <DataType>...
// format <Format>...`, `infer_data_type <output> <DataType>` (InferDataType run on the
// declared input types), `config <soc>`, `tiling`, `infer_shape`.
inline std::string DescribeOpDef(const OpDef& op)
{
    std::string out;
    auto params = [&out](const char* kind, const std::deque<OpParamDef>& list) {
        for (const OpParamDef& p : list) {
            out += std::string(kind) + " " + p.GetParamName() + " " + std::to_string(p.GetParamType());
            for (ge::DataType t : p.GetDataTypes()) {
                out += " " + std::to_string(static_cast<int>(t));
            }
            out += " format";
            for (ge::Format f : p.GetFormats()) {
                out += " " + std::to_string(static_cast<int>(f));
            }
            out += "\n";
        }
    };
    params("input", op.GetInputs());
    params("output", op.GetOutputs());
    if (op.GetInferDataType() != nullptr) {
        std::vector<ge::DataType> types;
        for (const OpParamDef& p : op.GetInputs()) {
            types.push_back(p.GetDataTypes().empty() ? ge::DT_UNDEFINED : p.GetDataTypes()[0]);
        }
        gert::InferDataTypeContext context(types, op.GetOutputs().size());
        if (op.GetInferDataType()(&context) == ge::GRAPH_SUCCESS) {
            for (size_t i = 0; i < context.OutputDataTypes().size(); ++i) {
                out += "infer_data_type " + std::to_string(i) + " " +
                       std::to_string(static_cast<int>(context.OutputDataTypes()[i])) + "\n";
            }
        }
    }
    for (const std::string& soc : op.GetAICore().GetConfigs()) {
        out += "config " + soc + "\n";
    }
    if (op.GetAICore().GetTiling() != nullptr) {
        out += "tiling\n";
    }
    if (op.GetInferShape() != nullptr) {
        out += "infer_shape\n";
    }
    return out;
}

}  // namespace emu
}  // namespace ops

#endif  // AFC_ASCENDC_EMU_OP_H
