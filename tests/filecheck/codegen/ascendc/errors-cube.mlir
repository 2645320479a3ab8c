// RUN: not afc-opt %s -p 'ub-fusion{chip=Ascend910B1},lower-to-buffer{chip=Ascend910B1}' -t ascendc 2>&1 | filecheck %s

// What the cube kernels still cannot print is one line naming the op: a conv with a
// 3x3 kernel needs LoadData3DV2, whose feature map is NC1HWC0 and whose result is pixel
// major (pointwise convs are plain GEMMs and print; tests/test_codegen_cube.py).

// CHECK: afc-opt: error: buffer.im2col{{.*}}: LoadData3DV2 expands an NC1HWC0 feature map
// CHECK-NOT: Traceback

func.func @conv3x3(%x: tensor<1x16x8x16xf16>, %w: tensor<32x16x3x3xf16>) -> tensor<1x32x8x16xf16> {
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<1x16x8x16xf16>, tensor<32x16x3x3xf16>) -> tensor<1x32x8x16xf16>
  %y = graph.relu %c : tensor<1x32x8x16xf16>
  func.return %y : tensor<1x32x8x16xf16>
}
