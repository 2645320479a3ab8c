// A cut of IREE's flow-level IR (iree-compile --compile-to=flow), plus a tied result,
// a workload and a two-result dispatch, for tests/test_iree_dispatches.py.
module {
  flow.executable private @g$async_dispatch_0 {
    flow.executable.export public @g$async_dispatch_0_matmul_4x16x8_f32 workgroups() -> (index, index, index) {
      flow.return %x, %y, %z : index, index, index
    }
    builtin.module {
      func.func @g$async_dispatch_0_matmul_4x16x8_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>>, %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x16xf32>>, %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16xf32>>) {
        %0 = flow.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : !flow.dispatch.tensor<readonly:tensor<4x8xf32>> -> tensor<4x8xf32>
        return
      }
    }
  }
  util.func public @g$async(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.fence, %arg3: !hal.fence) -> !hal.buffer_view {
    %2 = flow.dispatch @g$async_dispatch_0::@g$async_dispatch_0_matmul_4x16x8_f32(%0, %1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %3 = flow.dispatch @ex1::@mask[%c4](%2, %m) : (tensor<4x16xf32>, tensor<4x16xi1>) -> %2
    %r = flow.tensor.reshape %3 : tensor<4x16xf32> -> tensor<64xf32>
    %4:2 = flow.dispatch @ex2::@split(%3) {stream.affinity = #hal.device.promise<@__device_0>} : (tensor<4x16xf32>) -> (tensor<4x8xf16>, tensor<4x8xbf16>)
    util.return %4#0 : tensor<4x8xf16>
  }
}
