// RUN: afc-opt %s --split-input-file --verify-diagnostics

// Each chunk holds one vision op the verifier must reject; the message names what is wrong.

func.func @resize_mode(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @+1 {{'graph.resize': mode 'bilinear' is not one of nearest, linear, cubic}}
  %0 = graph.resize %x {mode = "bilinear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----


func.func @resize_antialias_nearest(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32> {
  // expected-error @+1 {{'graph.resize': antialias applies to linear and cubic modes only}}
  %0 = graph.resize %x {mode = "nearest", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = true, scales = array<f64: 1.0, 1.0, 0.5, 0.5>} : tensor<1x3x4x4xf32> -> tensor<1x3x2x2xf32>
  func.return %0 : tensor<1x3x2x2xf32>
}

// -----


func.func @resize_no_scales(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @+1 {{'graph.resize': needs scales or sizes}}
  %0 = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----


func.func @resize_scale_count(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @+1 {{'graph.resize': scales has 2 entries for a rank-4 input}}
  %0 = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 2.0, 2.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----


func.func @resize_roi_mode(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @+1 {{'graph.resize': roi is given exactly when the mode is tf_crop_and_resize}}
  %0 = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, roi = array<f64: 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----


func.func @resize_result(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x9x9xf32> {
  // expected-error @+1 {{'graph.resize' result #0 has type tensor<1x3x9x9xf32>, but the operands give tensor<1x3x8x8xf32>}}
  %0 = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x9x9xf32>
  func.return %0 : tensor<1x3x9x9xf32>
}

// -----


func.func @resize_linear_int(%x: tensor<1x3x4x4xi8>) -> tensor<1x3x8x8xi8> {
  // expected-error @+1 {{'graph.resize': linear mode needs a floating-point input, got i8}}
  %0 = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x4x4xi8> -> tensor<1x3x8x8xi8>
  func.return %0 : tensor<1x3x8x8xi8>
}

// -----


func.func @conv_transpose_output_padding(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x11x11xf32> {
  // expected-error @+1 {{'graph.conv_transpose': output_padding [2, 2] must be below stride or dilation}}
  %0 = graph.conv_transpose %x, %w {strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], output_padding = [2, 2], group = 1} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x11x11xf32>
  func.return %0 : tensor<1x3x11x11xf32>
}

// -----


func.func @conv_transpose_group(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x9x7x7xf32> {
  // expected-error @+1 {{'graph.conv_transpose': input channels 4 and weight 4x3x3x3 do not fit group 3}}
  %0 = graph.conv_transpose %x, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], output_padding = [0, 0], group = 3} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x9x7x7xf32>
  func.return %0 : tensor<1x9x7x7xf32>
}

// -----


func.func @conv_transpose_pads(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{'graph.conv_transpose': pads has 2 entries, expected 4}}
  %0 = graph.conv_transpose %x, %w {strides = [1, 1], pads = [0, 0], dilations = [1, 1], output_padding = [0, 0], group = 1} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----


func.func @depth_to_space_channels(%x: tensor<1x6x3x3xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+1 {{'graph.depth_to_space': channels 6 is not divisible by 4}}
  %0 = graph.depth_to_space %x {blocksize = 2, mode = "DCR"} : tensor<1x6x3x3xf32> -> tensor<1x1x6x6xf32>
  func.return %0 : tensor<1x1x6x6xf32>
}

// -----


func.func @space_to_depth_height(%x: tensor<1x1x5x4xf32>) -> tensor<1x4x2x2xf32> {
  // expected-error @+1 {{'graph.space_to_depth': height 5 is not divisible by 2}}
  %0 = graph.space_to_depth %x {blocksize = 2, mode = "DCR"} : tensor<1x1x5x4xf32> -> tensor<1x4x2x2xf32>
  func.return %0 : tensor<1x4x2x2xf32>
}

// -----


func.func @space_to_depth_mode(%x: tensor<1x1x4x4xf32>) -> tensor<1x4x2x2xf32> {
  // expected-error @+1 {{'graph.space_to_depth': mode 'RCD' is not one of DCR, CRD}}
  %0 = graph.space_to_depth %x {blocksize = 2, mode = "RCD"} : tensor<1x1x4x4xf32> -> tensor<1x4x2x2xf32>
  func.return %0 : tensor<1x4x2x2xf32>
}

// -----

func.func @grid_sample_locations(%x: tensor<1x3x5x6xf32>, %g: tensor<1x4x7x3xf32>) -> tensor<1x3x4x7xf32> {
  // expected-error @+1 {{'graph.grid_sample': grid 1x4x7x3 does not hold 2-D locations for input 1x3x5x6}}
  %0 = graph.grid_sample %x, %g {mode = "linear", padding_mode = "zeros", align_corners = false} : (tensor<1x3x5x6xf32>, tensor<1x4x7x3xf32>) -> tensor<1x3x4x7xf32>
  func.return %0 : tensor<1x3x4x7xf32>
}

// -----

func.func @grid_sample_padding(%x: tensor<1x3x5x6xf32>, %g: tensor<1x4x7x2xf32>) -> tensor<1x3x4x7xf32> {
  // expected-error @+1 {{'graph.grid_sample': padding_mode 'wrap' is not one of zeros, border, reflection}}
  %0 = graph.grid_sample %x, %g {mode = "linear", padding_mode = "wrap", align_corners = false} : (tensor<1x3x5x6xf32>, tensor<1x4x7x2xf32>) -> tensor<1x3x4x7xf32>
  func.return %0 : tensor<1x3x4x7xf32>
}

// -----

func.func @max_unpool_output_shape(%x: tensor<1x3x2x2xf32>, %i: tensor<1x3x2x2xi64>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'graph.max_unpool': output_shape [1, 3, 3, 3] is smaller than 1x3x4x4}}
  %0 = graph.max_unpool %x, %i {kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], output_shape = [1, 3, 3, 3]} : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xi64>) -> tensor<1x3x3x3xf32>
  func.return %0 : tensor<1x3x3x3xf32>
}

// -----

func.func @max_unpool_indices(%x: tensor<1x3x2x2xf32>, %i: tensor<1x3x2x2xi32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'graph.max_unpool': indices must be i64, got i32}}
  %0 = graph.max_unpool %x, %i {kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xi32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @deform_conv2d_offset(%x: tensor<1x4x5x5xf32>, %w: tensor<6x4x3x3xf32>, %off: tensor<1x18x5x5xf32>, %b: tensor<6xf32>, %m: tensor<1x18x1x1xf32>) -> tensor<1x6x5x5xf32> {
  // expected-error @+1 {{'graph.deform_conv2d': offset 1x18x5x5 is not 1x36x5x5}}
  %0 = graph.deform_conv2d %x, %w, %off, %b, %m {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, offset_group = 2} : (tensor<1x4x5x5xf32>, tensor<6x4x3x3xf32>, tensor<1x18x5x5xf32>, tensor<6xf32>, tensor<1x18x1x1xf32>) -> tensor<1x6x5x5xf32>
  func.return %0 : tensor<1x6x5x5xf32>
}

// -----

func.func @roi_align_rois(%x: tensor<2x8x16x16xf32>, %r: tensor<5x5xf32>, %i: tensor<5xi64>) -> tensor<5x8x3x4xf32> {
  // expected-error @+1 {{'graph.roi_align': expects input [N, C, H, W], rois [R, 4], batch_indices [R], got 2x8x16x16, 5x5, 5}}
  %0 = graph.roi_align %x, %r, %i {mode = "avg", coordinate_transformation_mode = "half_pixel", output_height = 3, output_width = 4, sampling_ratio = 0, spatial_scale = 1.0} : (tensor<2x8x16x16xf32>, tensor<5x5xf32>, tensor<5xi64>) -> tensor<5x8x3x4xf32>
  func.return %0 : tensor<5x8x3x4xf32>
}

// -----

func.func @lp_pool_power(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'graph.lp_pool': p 0 must be >= 1}}
  %0 = graph.lp_pool %x {kernel_shape = [2, 2], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], p = 0} : tensor<1x3x4x4xf32> -> tensor<1x3x3x3xf32>
  func.return %0 : tensor<1x3x3x3xf32>
}

// -----

func.func @col2im_blocks(%c: tensor<1x12x5xf32>) -> tensor<1x3x3x4xf32> {
  // expected-error @+1 {{'graph.col2im': 5 columns for 6 blocks ([2, 3]) of the image}}
  %0 = graph.col2im %c {image_shape = [3, 4], block_shape = [2, 2], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<1x12x5xf32> -> tensor<1x3x3x4xf32>
  func.return %0 : tensor<1x3x3x4xf32>
}

// -----

func.func @affine_grid_theta(%t: tensor<1x3x3xf32>) -> tensor<1x5x7x2xf32> {
  // expected-error @+1 {{'graph.affine_grid': theta 1x3x3 is not [N, 2, 3]}}
  %0 = graph.affine_grid %t {size = [1, 3, 5, 7], align_corners = false} : tensor<1x3x3xf32> -> tensor<1x5x7x2xf32>
  func.return %0 : tensor<1x5x7x2xf32>
}
