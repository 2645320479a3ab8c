// RUN: afc-opt %s --split-input-file --verify-diagnostics

// Each chunk holds one op the verifier must reject; the message names what is wrong.

func.func @broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.add': shapes 4x8, 3 do not broadcast (dim 1)}}
  %c = graph.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// -----

func.func @result_shape(%a: tensor<4x8xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{'graph.relu' result #0 has type tensor<4x9xf32>, but the operands give tensor<4x8xf32>}}
  %c = graph.relu %a : (tensor<4x8xf32>) -> tensor<4x9xf32>
  func.return %c : tensor<4x9xf32>
}

// -----

func.func @elt_mismatch(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.mul': operands have different element types f32 and f16}}
  %c = graph.mul %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

func.func @float_only(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.exp': expects a floating-point operand, got i32}}
  %c = graph.exp %a : tensor<4xi32>
  func.return %c : tensor<4xi32>
}

// -----

func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'graph.matmul': matmul contracting dimensions differ: 4x8 has K=8, 7x5 has K=7}}
  %c = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  func.return %c : tensor<4x5xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d': input has 3 channels but weight expects 2 x group 1 = 2}}
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d': pads must have 4 values, got 2}}
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [0, 0], dilations = [1, 1], group = 1} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %c : tensor<1x4x6x6xf32>
}

// -----

func.func @missing_prop(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{property 'axis' expected in operation 'graph.softmax'}}
  %c = graph.softmax %x : tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// -----

func.func @bad_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.softmax': axis 2 is out of range for rank 2}}
  %c = graph.softmax %x {axis = 2} : tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.gelu': approximate must be one of ('none', 'tanh')}}
  %c = graph.gelu %x {approximate = "fast"} : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.clip': min 6.0 is greater than max 0.0}}
  %c = graph.clip %x {min = 6.0, max = 0.0} : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

func.func @reshape_count(%x: tensor<4x8xf32>) -> tensor<5x6xf32> {
  // expected-error @+1 {{'graph.reshape': cannot reshape 4x8 (32 elements) into 5x6 (30)}}
  %c = graph.reshape %x {shape = [5, 6]} : tensor<4x8xf32> -> tensor<5x6xf32>
  func.return %c : tensor<5x6xf32>
}

// -----

func.func @perm(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'graph.transpose': perm [1, 1] is not a permutation of rank 2}}
  %c = graph.transpose %x {perm = [1, 1]} : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return %c : tensor<8x4xf32>
}

// -----

func.func @split_sizes(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'graph.split': split sizes [3, 4] do not add up to dim 1 = 8}}
  %a, %b = graph.split %x {axis = 1, sizes = [3, 4]} : tensor<4x8xf32> -> (tensor<4x3xf32>, tensor<4x4xf32>)
  func.return
}

// -----

func.func @gather_index_type(%t: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.gather': indices must be i32 or i64, got f32}}
  %c = graph.gather %t, %i {axis = 0} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %c : tensor<3x4xf32>
}

// -----

func.func @where_cond(%c: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.where': condition must be i1, got f32}}
  %r = graph.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x16xf32>, %g: tensor<8xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'graph.layer_norm': scale 8 does not broadcast to the normalized shape 16}}
  %r = graph.layer_norm %x, %g {axis = -1, epsilon = 1.0e-05} : (tensor<2x16xf32>, tensor<8xf32>) -> tensor<2x16xf32>
  func.return %r : tensor<2x16xf32>
}

// -----

func.func @epsilon(%x: tensor<2x16xf32>, %g: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'graph.rms_norm': epsilon must be > 0}}
  %r = graph.rms_norm %x, %g {axis = -1, epsilon = 0.0} : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  func.return %r : tensor<2x16xf32>
}

// -----

func.func @batch_norm_param(%x: tensor<1x4x2x2xf32>, %c: tensor<4xf32>, %d: tensor<3xf32>) -> tensor<1x4x2x2xf32> {
  // expected-error @+1 {{'graph.batch_norm': mean has shape 3, expected 4}}
  %r = graph.batch_norm %x, %c, %c, %d, %c {epsilon = 1.0e-05} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return %r : tensor<1x4x2x2xf32>
}

// -----

func.func @pool_window(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error @+1 {{'graph.max_pool2d': window of extent 3 does not fit input extent 2 + pad 0}}
  %r = graph.max_pool2d %x {kernel_shape = [3, 3], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = false} : tensor<1x1x2x2xf32> -> tensor<1x1x1x1xf32>
  func.return %r : tensor<1x1x1x1xf32>
}

// -----

// with ceil_mode, a window larger than the input fits only if ceil((2 - 5) / 1) + 1 >= 1
func.func @pool_window_ceil(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error @+1 {{'graph.avg_pool2d': window of extent 5 does not fit input extent 2 + pad 0}}
  %r = graph.avg_pool2d %x {kernel_shape = [5, 5], strides = [1, 1], pads = [0, 0, 0, 0], ceil_mode = true, count_include_pad = false} : tensor<1x1x2x2xf32> -> tensor<1x1x1x1xf32>
  func.return %r : tensor<1x1x1x1xf32>
}

// -----

func.func @avg_pool_dilation_zero(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+1 {{'graph.avg_pool2d': kernel, strides and dilations must be >= 1 and pads >= 0}}
  %r = graph.avg_pool2d %x {kernel_shape = [2, 2], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [0, 1], ceil_mode = false, count_include_pad = false} : tensor<1x1x4x4xf32> -> tensor<1x1x3x3xf32>
  func.return %r : tensor<1x1x3x3xf32>
}

// -----

func.func @pad_mode(%x: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad': mode must be one of ('constant', 'reflect', 'edge', 'wrap')}}
  %r = graph.pad %x {pads = [1, 1], mode = "circular", value = 0.0} : tensor<4xf32> -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// -----

func.func @constant_type() -> tensor<3xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // expected-error @+1 {{'graph.constant' must have a static shape}}
  %d = graph.constant shape_only : tensor<?x3xf32>
  func.return %c : tensor<2xf32>
}

// -----

func.func @unsupported_type(%x: tensor<4xf64>) -> tensor<4xcomplex<f32>> {
  // expected-error @+1 {{'graph.cast': result has unsupported element type complex<f32>}}
  %r = graph.cast %x : tensor<4xf64> -> tensor<4xcomplex<f32>>
  func.return %r : tensor<4xcomplex<f32>>
}

// -----

func.func @group_arity(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'graph.fusion_group' yields (tensor<8xf32>, tensor<8xf32>) but its results are (tensor<8xf32>)}}
  %0 = graph.fusion_group (%x = %a : tensor<8xf32>) -> tensor<8xf32> {
    %e = graph.exp %x : tensor<8xf32>
    graph.yield %e, %e : tensor<8xf32>, tensor<8xf32>
  }
  func.return %0 : tensor<8xf32>
}

// -----

// afc.edge_view (fusion/edge_views.py) marks a view at a group's edge only: an op in the
// middle would be dropped from the kernel as planned
func.func @edge_view_in_the_middle(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'graph.exp' is marked afc.edge_view but is not at the group's edge (reading a group input, or read only by the yield or another edge view)}}
  %0 = graph.fusion_group (%x = %a : tensor<8xf32>) -> tensor<8xf32> {
    %e = graph.relu %x : tensor<8xf32>
    %f = graph.exp %e {afc.edge_view} : tensor<8xf32>
    %g = graph.relu %f : tensor<8xf32>
    graph.yield %g : tensor<8xf32>
  }
  func.return %0 : tensor<8xf32>
}

// -----

func.func @yield_parent(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'graph.yield' expects parent op 'graph.fusion_group'}}
  graph.yield %a : tensor<8xf32>
}

// -----

func.func @isolated(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
  %0 = graph.fusion_group (%x = %a : tensor<8xf32>) -> tensor<8xf32> {
    %e = graph.add %x, %a : tensor<8xf32>
    graph.yield %e : tensor<8xf32>
  }
  func.return %0 : tensor<8xf32>
}
