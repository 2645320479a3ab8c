func.func @swiglu(%x: tensor<?x256xf16>, %wg: tensor<256x512xf16>, %wu: tensor<256x512xf16>, %wd: tensor<512x256xf16>) -> tensor<?x256xf16> {
  %y = graph.fusion_group (%x_ = %x : tensor<?x256xf16>, %wg_ = %wg : tensor<256x512xf16>, %wu_ = %wu : tensor<256x512xf16>, %wd_ = %wd : tensor<512x256xf16>) -> (tensor<?x256xf16>) {
    %r = graph.ffn %x_, %wg_, %wu_, %wd_ {activation = "swiglu", operandSegmentSizes = array<i32: 1, 2, 1, 0, 0, 0>} : (tensor<?x256xf16>, tensor<256x512xf16>, tensor<256x512xf16>, tensor<512x256xf16>) -> tensor<?x256xf16>
    graph.yield %r : tensor<?x256xf16>
  } loc("model.py":12:5)
  func.return %y : tensor<?x256xf16>
}
