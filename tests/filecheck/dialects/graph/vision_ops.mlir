// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Vision ops (graph_vision.py) round-trip: resize in each mode with scales, sizes and roi,
// N-D conv_transpose with bias, groups and dynamic dims, depth_to_space / space_to_depth,
// 2-D and 3-D grid_sample, max_unpool, deform_conv2d, roi_align, lp_pool / global_lp_pool,
// col2im and affine_grid.

// CHECK-LABEL: func.func @resize
// CHECK-NEXT:    %0 = graph.resize %x {antialias = false, coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -7.500000e-01, exclude_outside = false, extrapolation_value = 0.000000e+00, mode = "linear", nearest_mode = "round_prefer_floor", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %1 = graph.resize %d {antialias = false, coordinate_transformation_mode = "asymmetric", cubic_coeff_a = -7.500000e-01, exclude_outside = false, extrapolation_value = 0.000000e+00, mode = "nearest", nearest_mode = "floor", scales = array<f64: 1.000000e+00, 1.000000e+00, 1.500000e+00, 1.500000e+00>} : tensor<?x3x4x4xf32> -> tensor<?x3x6x6xf32>
// CHECK-NEXT:    %2 = graph.resize %x {antialias = true, coordinate_transformation_mode = "tf_crop_and_resize", cubic_coeff_a = -5.000000e-01, exclude_outside = true, extrapolation_value = 1.000000e+01, mode = "cubic", nearest_mode = "round_prefer_floor", roi = array<f64: 0.000000e+00, 0.000000e+00, 4.000000e-01, 6.000000e-01, 1.000000e+00, 1.000000e+00, 6.000000e-01, 8.000000e-01>, sizes = [1, 3, 3, 3]} : tensor<1x3x4x4xf32> -> tensor<1x3x3x3xf32>
// CHECK-LABEL: func.func @conv_transpose
// CHECK-NEXT:    %0 = graph.conv_transpose %x, %w, %b {dilations = [1, 1], group = 2, output_padding = [1, 1], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x10x10xf32>
// CHECK-NEXT:    %1 = graph.conv_transpose %x1, %w1 {dilations = [2], group = 2, output_padding = [0], pads = [0, 0], strides = [1]} : (tensor<?x4x5xf32>, tensor<4x2x3xf32>) -> tensor<?x4x9xf32>
// CHECK-LABEL: func.func @depth_space
// CHECK-NEXT:    %0 = graph.depth_to_space %x {blocksize = 2, mode = "CRD"} : tensor<2x8x3x3xf32> -> tensor<2x2x6x6xf32>
// CHECK-NEXT:    %1 = graph.space_to_depth %y {blocksize = 2, mode = "DCR"} : tensor<?x2x4x?xi8> -> tensor<?x8x2x?xi8>
// CHECK-GENERIC: "graph.resize"(%x) <{mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64
// CHECK-GENERIC: "graph.conv_transpose"(%x, %w, %b) <{strides = array<i64: 2, 2>
// CHECK-GENERIC: "graph.depth_to_space"(%x) <{blocksize = 2 : i64, mode = "CRD"}>

func.func @resize(%x: tensor<1x3x4x4xf32>, %d: tensor<?x3x4x4xf32>) {
  %0 = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
  %1 = graph.resize %d {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", cubic_coeff_a = -0.75, exclude_outside = false, extrapolation_value = 0.0, antialias = false, scales = array<f64: 1.0, 1.0, 1.5, 1.5>} : tensor<?x3x4x4xf32> -> tensor<?x3x6x6xf32>
  %2 = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "round_prefer_floor", cubic_coeff_a = -0.5, exclude_outside = true, extrapolation_value = 10.0, antialias = true, sizes = [1, 3, 3, 3], roi = array<f64: 0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 0.6, 0.8>} : tensor<1x3x4x4xf32> -> tensor<1x3x3x3xf32>
  func.return
}

func.func @conv_transpose(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<6xf32>, %x1: tensor<?x4x5xf32>, %w1: tensor<4x2x3xf32>) {
  %0 = graph.conv_transpose %x, %w, %b {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], output_padding = [1, 1], group = 2} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x10x10xf32>
  %1 = graph.conv_transpose %x1, %w1 {strides = [1], pads = [0, 0], dilations = [2], output_padding = [0], group = 2} : (tensor<?x4x5xf32>, tensor<4x2x3xf32>) -> tensor<?x4x9xf32>
  func.return
}

func.func @depth_space(%x: tensor<2x8x3x3xf32>, %y: tensor<?x2x4x?xi8>) {
  %0 = graph.depth_to_space %x {blocksize = 2, mode = "CRD"} : tensor<2x8x3x3xf32> -> tensor<2x2x6x6xf32>
  %1 = graph.space_to_depth %y {blocksize = 2, mode = "DCR"} : tensor<?x2x4x?xi8> -> tensor<?x8x2x?xi8>
  func.return
}

// CHECK-LABEL: func.func @grid_sample
// CHECK-NEXT:    %0 = graph.grid_sample %x, %g {align_corners = true, mode = "cubic", padding_mode = "reflection"} : (tensor<2x3x5x6xf32>, tensor<2x4x7x2xf32>) -> tensor<2x3x4x7xf32>
// CHECK-NEXT:    %1 = graph.grid_sample %v, %h {align_corners = false, mode = "nearest", padding_mode = "zeros"} : (tensor<?x3x4x5x6xf16>, tensor<?x2x2x2x3xf16>) -> tensor<?x3x2x2x2xf16>
func.func @grid_sample(%x: tensor<2x3x5x6xf32>, %g: tensor<2x4x7x2xf32>, %v: tensor<?x3x4x5x6xf16>, %h: tensor<?x2x2x2x3xf16>) {
  %0 = graph.grid_sample %x, %g {mode = "cubic", padding_mode = "reflection", align_corners = true} : (tensor<2x3x5x6xf32>, tensor<2x4x7x2xf32>) -> tensor<2x3x4x7xf32>
  %1 = graph.grid_sample %v, %h {mode = "nearest", padding_mode = "zeros", align_corners = false} : (tensor<?x3x4x5x6xf16>, tensor<?x2x2x2x3xf16>) -> tensor<?x3x2x2x2xf16>
  func.return
}

// CHECK-LABEL: func.func @max_unpool
// CHECK-NEXT:    %0 = graph.max_unpool %x, %i {kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<?x3x2x2xf32>, tensor<?x3x2x2xi64>) -> tensor<?x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.max_unpool %x, %i {kernel_shape = [2, 2], output_shape = [1, 3, 5, 5], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<?x3x2x2xf32>, tensor<?x3x2x2xi64>) -> tensor<1x3x5x5xf32>
func.func @max_unpool(%x: tensor<?x3x2x2xf32>, %i: tensor<?x3x2x2xi64>) {
  %0 = graph.max_unpool %x, %i {kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<?x3x2x2xf32>, tensor<?x3x2x2xi64>) -> tensor<?x3x4x4xf32>
  %1 = graph.max_unpool %x, %i {kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], output_shape = [1, 3, 5, 5]} : (tensor<?x3x2x2xf32>, tensor<?x3x2x2xi64>) -> tensor<1x3x5x5xf32>
  func.return
}

// CHECK-LABEL: func.func @deform_conv2d
// CHECK-NEXT:    %0 = graph.deform_conv2d %x, %w, %off, %b, %m {dilations = [1, 1], group = 1, offset_group = 2, pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<?x4x5x5xf32>, tensor<6x4x3x3xf32>, tensor<?x36x5x5xf32>, tensor<6xf32>, tensor<1x18x1x1xf32>) -> tensor<?x6x5x5xf32>
func.func @deform_conv2d(%x: tensor<?x4x5x5xf32>, %w: tensor<6x4x3x3xf32>, %off: tensor<?x36x5x5xf32>, %b: tensor<6xf32>, %m: tensor<1x18x1x1xf32>) {
  %0 = graph.deform_conv2d %x, %w, %off, %b, %m {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1, offset_group = 2} : (tensor<?x4x5x5xf32>, tensor<6x4x3x3xf32>, tensor<?x36x5x5xf32>, tensor<6xf32>, tensor<1x18x1x1xf32>) -> tensor<?x6x5x5xf32>
  func.return
}

// CHECK-LABEL: func.func @roi_align
// CHECK-NEXT:    %0 = graph.roi_align %x, %r, %i {coordinate_transformation_mode = "half_pixel", mode = "max", output_height = 3, output_width = 4, sampling_ratio = 0, spatial_scale = 6.250000e-02} : (tensor<2x8x16x16xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x8x3x4xf32>
func.func @roi_align(%x: tensor<2x8x16x16xf32>, %r: tensor<?x4xf32>, %i: tensor<?xi64>) {
  %0 = graph.roi_align %x, %r, %i {mode = "max", coordinate_transformation_mode = "half_pixel", output_height = 3, output_width = 4, sampling_ratio = 0, spatial_scale = 0.0625} : (tensor<2x8x16x16xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x8x3x4xf32>
  func.return
}

// CHECK-LABEL: func.func @lp_pools
// CHECK-NEXT:    %0 = graph.lp_pool %x {dilations = [1, 2], kernel_shape = [3, 2], p = 3, pads = [1, 0, 1, 1], strides = [2, 1]} : tensor<?x3x7x6xf32> -> tensor<?x3x4x5xf32>
// CHECK-NEXT:    %1 = graph.lp_pool %s {dilations = [1], kernel_shape = [4], p = 2, pads = [0, 1], strides = [2]} : tensor<2x3x9xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %2 = graph.global_lp_pool %x {p = 1} : tensor<?x3x7x6xf32> -> tensor<?x3x1x1xf32>
func.func @lp_pools(%x: tensor<?x3x7x6xf32>, %s: tensor<2x3x9xf32>) {
  %0 = graph.lp_pool %x {kernel_shape = [3, 2], strides = [2, 1], pads = [1, 0, 1, 1], dilations = [1, 2], p = 3} : tensor<?x3x7x6xf32> -> tensor<?x3x4x5xf32>
  %1 = graph.lp_pool %s {kernel_shape = [4], strides = [2], pads = [0, 1], dilations = [1], p = 2} : tensor<2x3x9xf32> -> tensor<2x3x4xf32>
  %2 = graph.global_lp_pool %x {p = 1} : tensor<?x3x7x6xf32> -> tensor<?x3x1x1xf32>
  func.return
}

// CHECK-LABEL: func.func @col2im
// CHECK-NEXT:    %0 = graph.col2im %c {block_shape = [2, 2], dilations = [1, 1], image_shape = [3, 4], pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<?x12x6xf32> -> tensor<?x3x3x4xf32>
func.func @col2im(%c: tensor<?x12x6xf32>) {
  %0 = graph.col2im %c {image_shape = [3, 4], block_shape = [2, 2], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1]} : tensor<?x12x6xf32> -> tensor<?x3x3x4xf32>
  func.return
}

// CHECK-LABEL: func.func @affine_grid
// CHECK-NEXT:    %0 = graph.affine_grid %t {align_corners = false, size = [2, 3, 5, 7]} : tensor<?x2x3xf32> -> tensor<?x5x7x2xf32>
// CHECK-NEXT:    %1 = graph.affine_grid %u {align_corners = true, size = [1, 1, 2, 3, 4]} : tensor<1x3x4xf32> -> tensor<1x2x3x4x3xf32>
func.func @affine_grid(%t: tensor<?x2x3xf32>, %u: tensor<1x3x4xf32>) {
  %0 = graph.affine_grid %t {size = [2, 3, 5, 7], align_corners = false} : tensor<?x2x3xf32> -> tensor<?x5x7x2xf32>
  %1 = graph.affine_grid %u {size = [1, 1, 2, 3, 4], align_corners = true} : tensor<1x3x4xf32> -> tensor<1x2x3x4x3xf32>
  func.return
}
