// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' -t ascendc | filecheck %s

// A bias + GELU group over f16 rows of 40 elements (80 bytes: not a 32-byte multiple)
// becomes one vector kernel: its entry, the kernel class with Init / Process / CopyIn /
// Compute / CopyOut, the tiling-data struct and the host tiling functions.

// CHECK-LABEL: // ===== op_kernel/main_kernel0.cpp =====
// CHECK:       #include "kernel_operator.h"
// CHECK:       using namespace AscendC;

// CHECK:       class KernelMainKernel0 {
// CHECK:       public:
// CHECK:         __aicore__ inline void Init(GM_ADDR in0, GM_ADDR in1, GM_ADDR out0, int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols, int64_t tile_stride, int64_t col_tiles, int64_t tiles, int64_t per_core)
// CHECK:           in0Gm.SetGlobalBuffer((__gm__ half*)in0);
// CHECK:           pipe.InitBuffer(q_in0, 2, [[BYTES:.*]]);
// CHECK:           pipe.InitBuffer(q_out0, 2, {{.*}});
// CHECK:           pipe.InitBuffer([[WORK:work[0-9]+]]Buf, {{.*}});
// CHECK-NEXT:      [[WORK]] = [[WORK]]Buf.Get<float>();

// The tile loop: this core's tiles, a tail tile clipped to the rows and columns left.
// CHECK:         __aicore__ inline void Process()
// CHECK:           for (int64_t tile = [[FIRST:.*]]; tile < afc::Min([[FIRST]] + per_core, tiles); ++tile) {
// CHECK:             int64_t nrows = afc::Min(tile_rows, rows - {{.*}});
// CHECK:             int64_t ncols = afc::Min(tile_cols, cols - {{.*}});
// CHECK:             CopyIn({{.*}});
// CHECK-NEXT:        Compute({{.*}});
// CHECK-NEXT:        CopyOut({{.*}});

// 80-byte rows need DataCopyPad: GM gaps in bytes, UB gaps in 32-byte blocks.
// CHECK:       private:
// CHECK:         __aicore__ inline void CopyIn(
// CHECK:           LocalTensor<half> slot = q_in0.AllocTensor<half>();
// CHECK-NEXT:      DataCopyExtParams [[P:copyParams[0-9]*]]{static_cast<uint16_t>(nrows), static_cast<uint32_t>(ncols * 2), static_cast<uint32_t>((cols - ncols) * 2), static_cast<uint32_t>((tile_stride * 2 - (ncols * 2 + 31) / 32 * 32) / 32), 0};
// CHECK-NEXT:      DataCopyPad(slot, in0Gm[{{.*}}], [[P]], DataCopyPadExtParams<half>{false, 0, 0, 0});
// CHECK-NEXT:      q_in0.EnQue(slot);

// f16 is widened to float, computed with count-form vector calls, narrowed with CAST_RINT.
// CHECK:         __aicore__ inline void Compute(
// CHECK:           LocalTensor<half> x = q_in0.DeQue<half>();
// CHECK-NEXT:      Cast([[WORK]], x, RoundMode::CAST_NONE, nrows * tile_stride);
// CHECK:           Add({{.*}}, ncols);
// CHECK:           Exp({{.*}}, nrows * tile_stride);
// CHECK:           Reciprocal(
// CHECK:           LocalTensor<half> y = q_out0.AllocTensor<half>();
// CHECK-NEXT:      Cast(y, {{.*}}, RoundMode::CAST_RINT, nrows * tile_stride);
// CHECK-NEXT:      q_out0.EnQue(y);
// CHECK:           q_in0.FreeTensor(x);

// CHECK:         __aicore__ inline void CopyOut(
// CHECK:           LocalTensor<half> y2 = q_out0.DeQue<half>();
// CHECK-NEXT:      DataCopyExtParams [[Q:copyParams[0-9]*]]{static_cast<uint16_t>(nrows), static_cast<uint32_t>(ncols * 2), static_cast<uint32_t>((tile_stride * 2 - (ncols * 2 + 31) / 32 * 32) / 32), static_cast<uint32_t>((cols - ncols) * 2), 0};
// CHECK-NEXT:      DataCopyPad(out0Gm[{{.*}}], y2, [[Q]]);
// CHECK-NEXT:      q_out0.FreeTensor(y2);

// CHECK:       private:
// CHECK-NEXT:    TPipe pipe;
// CHECK:         TQue<QuePosition::VECIN, 2> q_in0;
// CHECK:         TQue<QuePosition::VECOUT, 2> q_out0;
// CHECK:         TBuf<QuePosition::VECCALC> [[WORK]]Buf;
// CHECK-NEXT:    LocalTensor<float> [[WORK]];
// CHECK:       };

// CHECK:       extern "C" __global__ __aicore__ void main_kernel0(GM_ADDR in0, GM_ADDR in1, GM_ADDR out0, GM_ADDR workspace, GM_ADDR tiling)
// CHECK-NEXT:  {
// CHECK-NEXT:      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
// CHECK-NEXT:      GET_TILING_DATA(tilingData, tiling);
// CHECK-NEXT:      KernelMainKernel0 op;
// CHECK-NEXT:      op.Init(in0, in1, out0, tilingData.rows, tilingData.cols, {{.*}}, tilingData.per_core);
// CHECK-NEXT:      op.Process();
// CHECK-NEXT:  }

// CHECK-LABEL: // ===== op_host/main_kernel0_tiling.h =====
// CHECK:       #include "register/tilingdata_base.h"
// CHECK:       namespace optiling {
// CHECK-NEXT:  BEGIN_TILING_DATA_DEF(MainKernel0TilingData)
// CHECK-NEXT:      TILING_DATA_FIELD_DEF(int64_t, rows);
// CHECK-NEXT:      TILING_DATA_FIELD_DEF(int64_t, cols);
// CHECK:           TILING_DATA_FIELD_DEF(int64_t, per_core);
// CHECK-NEXT:  END_TILING_DATA_DEF;
// CHECK:       REGISTER_TILING_DATA_CLASS(MainKernel0, MainKernel0TilingData)

// The tiling rule @main_kernel0_tiling as C++, and the TilingFunc CANN calls: it checks
// the static dimensions, reads the dynamic one from the context and sets the block count.
// CHECK-LABEL: // ===== op_host/main_kernel0.cpp =====
// CHECK:       #include "main_kernel0_tiling.h"
// CHECK-NEXT:  #include "register/op_def_registry.h"
// CHECK:       namespace optiling {
// CHECK:       void MainKernel0Tiling(int64_t rows, int64_t cols, int64_t (&results)[9])
// CHECK:           results[8] =
// CHECK:       static ge::graphStatus TilingFunc(gert::TilingContext* context)
// CHECK:           const gert::StorageShape* input0 = context->GetInputShape(0);
// CHECK-NEXT:      if (input0 == nullptr || input0->GetStorageShape().GetDimNum() != 2 || input0->GetStorageShape().GetDim(1) != 40) {
// CHECK-NEXT:          return ge::GRAPH_FAILED;
// CHECK:           int64_t tilingResults[9];
// CHECK-NEXT:      MainKernel0Tiling({{.*}}, tilingResults);
// CHECK-NEXT:      MainKernel0TilingData tiling;
// CHECK-NEXT:      tiling.set_rows(tilingResults[0]);
// CHECK:           context->SetBlockDim(static_cast<uint32_t>(tilingResults[8]));
// CHECK-NEXT:      tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
// CHECK-NEXT:      context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
// CHECK:           return ge::GRAPH_SUCCESS;
// CHECK:       }  // namespace optiling

// The op's registration: the output shape from the input's dynamic dim, the output
// type, the inputs and outputs as the kernel takes them, the tiling function and the
// SoC of the chip (ascend910b for Ascend910B1).
// CHECK:       namespace ge {
// CHECK:       static ge::graphStatus InferShape(gert::InferShapeContext* context)
// CHECK:           const gert::Shape* input0 = context->GetInputShape(0);
// CHECK-NEXT:      if (input0 == nullptr || input0->GetDimNum() != 2) {
// CHECK:           int64_t [[ROWS:v[0-9]*]] = input0->GetDim(0);
// CHECK-NEXT:      gert::Shape* output0 = context->GetOutputShape(0);
// CHECK:           output0->SetDimNum(2);
// CHECK-NEXT:      output0->SetDim(0, [[ROWS]]);
// CHECK-NEXT:      output0->SetDim(1, 40);
// CHECK:       static ge::graphStatus InferDataType(gert::InferDataTypeContext* context)
// CHECK-NEXT:  {
// CHECK-NEXT:      context->SetOutputDataType(0, ge::DT_FLOAT16);
// CHECK:       namespace ops {
// CHECK-NEXT:  class MainKernel0 : public OpDef {
// CHECK-NEXT:  public:
// CHECK-NEXT:      explicit MainKernel0(const char* name) : OpDef(name)
// CHECK-NEXT:      {
// CHECK-NEXT:          this->Input("in0").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
// CHECK-NEXT:          this->Input("in1").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
// CHECK-NEXT:          this->Output("out0").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
// CHECK-NEXT:          this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
// CHECK-NEXT:          this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
// CHECK-NEXT:      }
// CHECK-NEXT:  };
// CHECK-NEXT:  OP_ADD(MainKernel0);

// The project builds the op package: the chip's SoC, the op type and its kernel file.
// CHECK-LABEL: // ===== CMakeLists.txt =====
// CHECK:       find_package(ASC REQUIRED HINTS ${ASCEND_CANN_PACKAGE_PATH}/compiler/tikcpp/ascendc_kernel_cmake)
// CHECK:       npu_op_package(${package_name}
// CHECK-LABEL: // ===== CMakePresets.json =====
// CHECK:       "ASCEND_COMPUTE_UNIT": {
// CHECK-NEXT:      "type": "STRING",
// CHECK-NEXT:      "value": "ascend910b"
// CHECK-LABEL: // ===== build.sh =====
// CHECK:       cmake --build build_out --target binary package
// CHECK-LABEL: // ===== op_host/CMakeLists.txt =====
// CHECK:       set(host_ops_srcs
// CHECK-NEXT:      main_kernel0.cpp
// CHECK:       npu_op_library(cust_opapi ACLNN
// CHECK-LABEL: // ===== op_kernel/CMakeLists.txt =====
// CHECK:       npu_op_kernel_sources(ascendc_kernels
// CHECK-NEXT:      OP_TYPE MainKernel0
// CHECK-NEXT:      KERNEL_FILE main_kernel0.cpp

func.func @main(%x: tensor<?x40xf16>, %b: tensor<40xf16>) -> tensor<?x40xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<?x40xf16>, %bb = %b : tensor<40xf16>) -> tensor<?x40xf16> {
    %a = graph.add %xx, %bb : (tensor<?x40xf16>, tensor<40xf16>) -> tensor<?x40xf16>
    %y = graph.gelu %a {approximate = "tanh"} : tensor<?x40xf16>
    graph.yield %y : tensor<?x40xf16>
  }
  func.return %r : tensor<?x40xf16>
}
