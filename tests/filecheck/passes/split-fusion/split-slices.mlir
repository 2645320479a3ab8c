// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=SplitSliceFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=SplitSliceFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=SplitSliceFusionPass},ub-fusion' | filecheck %s --check-prefix=UB

// A merged gate-up projection: the split's halves feed one SwiGLU. As two slices they
// join the SwiGLU's kernel, which reads both halves of each row straight from the
// projection's output (strided input views): the 2 x 1 MiB copy of the split is gone.
// CHECK-LABEL: func.func @gate_up
// CHECK:         %[[GU:.*]] = graph.matmul %x, %w
// CHECK-NEXT:    %[[G:.*]] = graph.slice %[[GU]] {axes = [2], ends = [1024], starts = [0], steps = [1]}
// CHECK-NEXT:    %[[U:.*]] = graph.slice %[[GU]] {axes = [2], ends = [2048], starts = [1024], steps = [1]}
// CHECK-NEXT:    graph.swiglu %[[G]], %[[U]]
// CHECK-NOT:     graph.split
// UB-LABEL: func.func @gate_up
// UB:         graph.fusion_group
// UB:           graph.slice
// UB-NEXT:      graph.slice
// UB-NEXT:      graph.swiglu
func.func @gate_up(%x: tensor<1x512x512xf16>, %w: tensor<512x2048xf16>) -> tensor<1x512x1024xf16> {
  %gu = graph.matmul %x, %w : (tensor<1x512x512xf16>, tensor<512x2048xf16>) -> tensor<1x512x2048xf16>
  %g, %u = graph.split %gu {axis = 2, sizes = [1024, 1024]} : tensor<1x512x2048xf16> -> (tensor<1x512x1024xf16>, tensor<1x512x1024xf16>)
  %y = graph.swiglu %g, %u : tensor<1x512x1024xf16>
  func.return %y : tensor<1x512x1024xf16>
}

// -----

// A merged QKV projection's output: q and k reshaped to heads for rope, v read by a
// vector op. Each part's slice joins its reader's kernel (through the head reshape);
// the rope kernels read their heads' columns with two strides (rows of a token, then
// tokens).
// CHECK-LABEL: func.func @qkv_heads
// CHECK:         %q = graph.slice %qkv {axes = [2], ends = [512], starts = [0], steps = [1]}
// CHECK-NEXT:    %k = graph.slice %qkv {axes = [2], ends = [640], starts = [512], steps = [1]}
// CHECK-NEXT:    %v = graph.slice %qkv {axes = [2], ends = [768], starts = [640], steps = [1]}
// UB-LABEL: func.func @qkv_heads
// UB-COUNT-3: graph.fusion_group (%qkv_1 = %qkv
// UB-NOT:     graph.split
func.func @qkv_heads(%qkv: tensor<1x256x768xf16>, %cos: tensor<1x256x1x64xf16>, %sin: tensor<1x256x1x64xf16>) -> (tensor<1x256x8x64xf16>, tensor<1x256x2x64xf16>, tensor<1x256x128xf16>) {
  %q, %k, %v = graph.split %qkv {axis = 2, sizes = [512, 128, 128]} : tensor<1x256x768xf16> -> (tensor<1x256x512xf16>, tensor<1x256x128xf16>, tensor<1x256x128xf16>)
  %q4 = graph.reshape %q {shape = [0, 0, 8, 64]} : tensor<1x256x512xf16> -> tensor<1x256x8x64xf16>
  %qr = graph.rope %q4, %cos, %sin {interleaved = false} : (tensor<1x256x8x64xf16>, tensor<1x256x1x64xf16>, tensor<1x256x1x64xf16>) -> tensor<1x256x8x64xf16>
  %k4 = graph.reshape %k {shape = [0, 0, 2, 64]} : tensor<1x256x128xf16> -> tensor<1x256x2x64xf16>
  %kr = graph.rope %k4, %cos, %sin {interleaved = false} : (tensor<1x256x2x64xf16>, tensor<1x256x1x64xf16>, tensor<1x256x1x64xf16>) -> tensor<1x256x2x64xf16>
  %vs = graph.sigmoid %v : tensor<1x256x128xf16>
  func.return %qr, %kr, %vs : tensor<1x256x8x64xf16>, tensor<1x256x2x64xf16>, tensor<1x256x128xf16>
}

// -----

// Negative (cost): tiny parts. The slices would fuse, but the copy kernel of the part
// read by the matmul costs a launch more than the split saves.
// CHECK-LABEL: func.func @tiny
// UB-LABEL: func.func @tiny
// CHECK:         graph.split
// LOG: not applied to graph.split %a: no estimated gain
func.func @tiny(%x: tensor<8x32xf32>, %w: tensor<16x4xf32>) -> (tensor<8x16xf32>, tensor<8x4xf32>) {
  %a, %b = graph.split %x {axis = 1, sizes = [16, 16]} : tensor<8x32xf32> -> (tensor<8x16xf32>, tensor<8x16xf32>)
  %e = graph.exp %a : tensor<8x16xf32>
  %m = graph.matmul %b, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  func.return %e, %m : tensor<8x16xf32>, tensor<8x4xf32>
}
