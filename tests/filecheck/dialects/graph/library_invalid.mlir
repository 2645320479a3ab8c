// RUN: afc-opt %s --split-input-file --verify-diagnostics

func.func @nms_box_count(%b: tensor<1x5x4xf32>, %s: tensor<1x2x6xf32>) -> tensor<?x3xi64> {
  // expected-error @+1 {{'graph.non_max_suppression': boxes and scores have different box counts 5 and 6}}
  %0 = graph.non_max_suppression %b, %s {center_point_box = false, iou_threshold = 5.000000e-01, max_output_boxes_per_class = 4} : (tensor<1x5x4xf32>, tensor<1x2x6xf32>) -> tensor<?x3xi64>
  func.return %0 : tensor<?x3xi64>
}

// -----

func.func @int_pow_float_base(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.int_pow': expects an integer base, got f32}}
  %0 = graph.int_pow %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @det_not_square(%x: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.det': expects square matrices in the last two dims, got [2, 3]}}
  %0 = graph.det %x : tensor<2x3xf32> -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @max_pool_indices_type(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x4x4xi32> {
  // expected-error @+1 {{'graph.max_pool2d_with_indices' result #1 has type tensor<1x2x4x4xi32>, but the operands give tensor<1x2x4x4xi64>}}
  %0, %1 = graph.max_pool2d_with_indices %x {ceil_mode = false, column_major = true, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<1x2x5x5xf32> -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi32>)
  func.return %1 : tensor<1x2x4x4xi32>
}

// -----

func.func @tensor_scatter_too_long(%c: tensor<2x4x3xf32>, %u: tensor<2x5x3xf32>) -> tensor<2x4x3xf32> {
  // expected-error @+1 {{'graph.tensor_scatter': update 2x5x3 does not fit cache 2x4x3}}
  %0 = graph.tensor_scatter %c, %u {axis = 1 : i64, circular = false} : (tensor<2x4x3xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
  func.return %0 : tensor<2x4x3xf32>
}

// -----

func.func @tensor_scatter_batch_axis(%c: tensor<2x4x3xf32>, %u: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  // expected-error @+1 {{'graph.tensor_scatter': axis cannot be the batch dim 0}}
  %0 = graph.tensor_scatter %c, %u {axis = 0 : i64, circular = false} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  func.return %0 : tensor<2x4x3xf32>
}

// -----

func.func @tfidf_counts_past_pool(%t: tensor<6xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.tfidf_vectorizer': ngram_counts [0, 5] do not index the pool of 4}}
  %0 = graph.tfidf_vectorizer %t {max_gram_length = 2, max_skip_count = 0, min_gram_length = 1, mode = "TF", ngram_counts = [0, 5], ngram_indexes = [0, 1], pool = [4, 5, 4, 6]} : tensor<6xi64> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @avg_pool3d_on_integers(%x: tensor<1x1x2x2x2xi32>) -> tensor<1x1x1x1x1xi32> {
  // expected-error @+1 {{'graph.avg_pool3d': expects a floating-point operand, got i32}}
  %0 = graph.avg_pool3d %x {ceil_mode = false, count_include_pad = false, dilations = [1, 1, 1], kernel_shape = [2, 2, 2], pads = [0, 0, 0, 0, 0, 0], strides = [1, 1, 1]} : tensor<1x1x2x2x2xi32> -> tensor<1x1x1x1x1xi32>
  func.return %0 : tensor<1x1x1x1x1xi32>
}

// -----

func.func @bit_cast_width(%x: tensor<2xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'graph.bit_cast' needs two element types of one width other than bf16, got f32 and i64}}
  %0 = graph.bit_cast %x : tensor<2xf32> -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

// -----

func.func @dft_axis_last(%x: tensor<2x6x1xf32>) -> tensor<2x6x2xf32> {
  // expected-error @+1 {{'graph.dft': axis 2 must name a dim other than the last of 2x6x1}}
  %0 = graph.dft %x {axis = 2, inverse = false, onesided = false} : tensor<2x6x1xf32> -> tensor<2x6x2xf32>
  func.return %0 : tensor<2x6x2xf32>
}

// -----

func.func @stft_window(%s: tensor<1x20x1xf32>, %w: tensor<6xf32>) -> tensor<1x5x5x2xf32> {
  // expected-error @+1 {{'graph.stft': the window has shape 6, not [8]}}
  %0 = graph.stft %s, %w {frame_step = 3, frame_length = 8, onesided = true} : (tensor<1x20x1xf32>, tensor<6xf32>) -> tensor<1x5x5x2xf32>
  func.return %0 : tensor<1x5x5x2xf32>
}
