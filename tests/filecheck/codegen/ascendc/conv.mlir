// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' -t ascendc | filecheck %s

// A 3x3 conv + bias + relu on a split chip: an explicit im2col (CopyIn loads the
// resident bias). At step u the AIVs
// wait until the AIC has read the X_col slot they are about to refill (flag 3), build
// the tile's byte-offset table (scalar SetValue rows, then Add per tap and Mins), and
// for every other input channel each: DataCopy its rows into UB, Duplicate the zero
// block the padding taps read, Gather all taps' pixels, DataCopy them into the slot;
// then flag 2. The AIC waits for flag 2, loads the slot like a matmul's B (Nd2Nz),
// hands the slot back after its MTE2 reads (flag 3) and Fixpipes the tile into the
// epilogue's workspace. Both workspaces lie in the user workspace, 512-byte aligned.

// CHECK:       op_kernel/conv3x3_kernel0.cpp: Ascend C kernel @conv3x3_kernel0 (template "conv", Ascend910B1, mix)
// CHECK:         ws_colGm.SetGlobalBuffer((__gm__ half*)(userWorkspace + (ws_bytes + 511) / 512 * 512));
// CHECK:         if ASCEND_IS_AIV {
// CHECK-NEXT:        pipe.InitBuffer(q_fmap, 2,
// CHECK-NEXT:        pipe.InitBuffer(q_col, 2,
// CHECK-NEXT:        pipe.InitBuffer(offsetsBuf,
// CHECK-NEXT:        offsets = offsetsBuf.Get<int32_t>();
// CHECK:       __aicore__ inline void Process()
// CHECK:           for (int64_t step = [[FIRST:v[0-9]+]]; step < [[LAST:v[0-9]+]] + 1; ++step) {
// CHECK-NEXT:          if (step < [[LAST]]) {
// CHECK:                   CrossCoreWaitFlag(3);
// CHECK:                   Compute(
// CHECK:                   int64_t sub = GetSubBlockIdx();
// CHECK:                       CopyIn2(
// CHECK:                       Compute2(
// CHECK:                       CopyOut(
// CHECK:                   CrossCoreSetFlag<0x2, PIPE_MTE3>(2);
// CHECK:               if ([[FIRST]] < step) {
// CHECK-NEXT:              int64_t tile = step - 1;
// CHECK:                   Cube(
// CHECK:                   CrossCoreWaitFlag(0);
// CHECK:       __aicore__ inline void Compute(
// CHECK:               offsets.SetValue(r * tn + j, static_cast<int32_t>(
// CHECK:               offsets.SetValue({{.*}} + s * tn + j{{[0-9]*}}, static_cast<int32_t>(
// CHECK:           event_t eventIdSToV = static_cast<event_t>(pipe.FetchEventID(HardEvent::S_V));
// CHECK:           for (int64_t tap = 0; tap < 9; ++tap) {
// CHECK-NEXT:          Add(
// CHECK:           Mins(
// CHECK:       __aicore__ inline void CopyIn2(
// CHECK:           DataCopy{{(Pad)?}}(fmap, in0Gm[
// CHECK:       __aicore__ inline void Compute2(
// CHECK:           Duplicate(fmap{{[0-9]*}}[{{[0-9]+}}], static_cast<half>(0.0f), 16);
// CHECK:           Gather(cols, fmap{{[0-9]*}}, offsets[tn * 6].ReinterpretCast<uint32_t>(), 0,
// CHECK:       __aicore__ inline void CopyOut(
// CHECK:           DataCopy{{(Pad)?}}(ws_colGm[
// CHECK:       __aicore__ inline void Cube(
// CHECK:           CrossCoreWaitFlag(2);
// CHECK:               DataCopy(b1, ws_colGm[
// CHECK:               Mmad(
// CHECK:               CrossCoreSetFlag<0x2, PIPE_MTE2>(3);
// CHECK:           Fixpipe(wsGm[
// CHECK:           CrossCoreSetFlag<0x2, PIPE_FIX>(0);
// CHECK:       KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
// CHECK:       op_host/conv3x3_kernel0.cpp
// CHECK:         workspaceSizes[0] = platform.GetLibApiWorkSpaceSize() + static_cast<size_t>((tilingResults[{{[0-9]+}}] + 511) / 512 * 512 + (tilingResults[{{[0-9]+}}] + 511) / 512 * 512);

func.func @conv3x3(%x: tensor<1x16x8x16xf16>, %w: tensor<32x16x3x3xf16>, %b: tensor<32xf16>) -> tensor<1x32x8x16xf16> {
  %c = graph.conv2d %x, %w, %b {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x16x8x16xf16>, tensor<32x16x3x3xf16>, tensor<32xf16>) -> tensor<1x32x8x16xf16>
  %y = graph.relu %c : tensor<1x32x8x16xf16>
  func.return %y : tensor<1x32x8x16xf16>
}
