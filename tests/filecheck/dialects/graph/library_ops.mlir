// RUN: AFC_ROUNDTRIP
// RUN: AFC_GENERIC_ROUNDTRIP

// Library ops round-trip; non-max suppression selects a dynamic number of boxes; dft and
// stft keep a symbolic dim.

// CHECK-LABEL: func.func @library
// CHECK-NEXT:    %0 = graph.non_max_suppression %b, %s {center_point_box = false, iou_threshold = 5.000000e-01, max_output_boxes_per_class = 4, score_threshold = 1.000000e-01} : (tensor<2x12x4xf32>, tensor<2x3x12xf32>) -> tensor<?x3xi64>
// CHECK-NEXT:    %1 = graph.non_max_suppression %b, %s {center_point_box = true, iou_threshold = 0.000000e+00, max_output_boxes_per_class = 0} : (tensor<2x12x4xf32>, tensor<2x3x12xf32>) -> tensor<?x3xi64>
// CHECK-NEXT:    %2 = graph.bit_cast %x : tensor<2x3xf32> -> tensor<2x3xi32>
// CHECK-NEXT:    %3 = graph.bit_cast %h : tensor<4xf16> -> tensor<4xui16>
// CHECK-NEXT:    %4 = graph.int_pow %i, %x : (tensor<3xi32>, tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %5 = graph.det %m : tensor<2x3x3xf32> -> tensor<2xf32>
// CHECK-NEXT:    %6, %7 = graph.max_pool2d_with_indices %p {ceil_mode = true, column_major = false, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x2x5x5xf32> -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
// CHECK-NEXT:    %8 = graph.tensor_scatter %c, %u, %w {axis = -2, circular = true} : (tensor<2x3x6x4xf32>, tensor<2x3x2x4xf32>, tensor<2xi64>) -> tensor<2x3x6x4xf32>
// CHECK-NEXT:    %9 = graph.tensor_scatter %c, %u {axis = 2, circular = false} : (tensor<2x3x6x4xf32>, tensor<2x3x2x4xf32>) -> tensor<2x3x6x4xf32>
// CHECK-NEXT:    %10 = graph.tfidf_vectorizer %t {max_gram_length = 2, max_skip_count = 1, min_gram_length = 1, mode = "TFIDF", ngram_counts = [0, 2], ngram_indexes = [0, 1, 2], pool = [4, 5, 4, 6], weights = array<f64: 5.000000e-01, 1.000000e+00, 2.000000e+00>} : tensor<2x6xi32> -> tensor<2x3xf32>
// CHECK-NEXT:    %11 = graph.max_pool3d %v {ceil_mode = false, dilations = [1, 2, 1], kernel_shape = [2, 2, 2], pads = [1, 0, 0, 1, 0, 0], strides = [1, 1, 2]} : tensor<1x2x4x6x6xf32> -> tensor<1x2x5x4x3xf32>
// CHECK-NEXT:    %12 = graph.avg_pool3d %v {ceil_mode = true, count_include_pad = true, dilations = [1, 1, 1], kernel_shape = [3, 3, 3], pads = [0, 0, 0, 0, 0, 0], strides = [2, 2, 2]} : tensor<1x2x4x6x6xf32> -> tensor<1x2x2x3x3xf32>
// CHECK-GENERIC: "graph.bit_cast"(%x) : (tensor<2x3xf32>) -> tensor<2x3xi32>
func.func @library(%b: tensor<2x12x4xf32>, %s: tensor<2x3x12xf32>, %x: tensor<2x3xf32>, %h: tensor<4xf16>, %i: tensor<3xi32>, %m: tensor<2x3x3xf32>, %p: tensor<1x2x5x5xf32>, %c: tensor<2x3x6x4xf32>, %u: tensor<2x3x2x4xf32>, %w: tensor<2xi64>, %t: tensor<2x6xi32>, %v: tensor<1x2x4x6x6xf32>) {
  %0 = graph.non_max_suppression %b, %s {center_point_box = false, iou_threshold = 5.000000e-01, max_output_boxes_per_class = 4, score_threshold = 1.000000e-01} : (tensor<2x12x4xf32>, tensor<2x3x12xf32>) -> tensor<?x3xi64>
  %1 = graph.non_max_suppression %b, %s {center_point_box = true, iou_threshold = 0.000000e+00, max_output_boxes_per_class = 0} : (tensor<2x12x4xf32>, tensor<2x3x12xf32>) -> tensor<?x3xi64>
  %2 = graph.bit_cast %x : tensor<2x3xf32> -> tensor<2x3xi32>
  %3 = graph.bit_cast %h : tensor<4xf16> -> tensor<4xui16>
  %4 = graph.int_pow %i, %x : (tensor<3xi32>, tensor<2x3xf32>) -> tensor<2x3xi32>
  %5 = graph.det %m : tensor<2x3x3xf32> -> tensor<2xf32>
  %6, %7 = graph.max_pool2d_with_indices %p {ceil_mode = true, column_major = false, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x2x5x5xf32> -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
  %8 = graph.tensor_scatter %c, %u, %w {axis = -2, circular = true} : (tensor<2x3x6x4xf32>, tensor<2x3x2x4xf32>, tensor<2xi64>) -> tensor<2x3x6x4xf32>
  %9 = graph.tensor_scatter %c, %u {axis = 2, circular = false} : (tensor<2x3x6x4xf32>, tensor<2x3x2x4xf32>) -> tensor<2x3x6x4xf32>
  %10 = graph.tfidf_vectorizer %t {max_gram_length = 2, max_skip_count = 1, min_gram_length = 1, mode = "TFIDF", ngram_counts = [0, 2], ngram_indexes = [0, 1, 2], pool = [4, 5, 4, 6], weights = array<f64: 5.000000e-01, 1.000000e+00, 2.000000e+00>} : tensor<2x6xi32> -> tensor<2x3xf32>
  %11 = graph.max_pool3d %v {ceil_mode = false, dilations = [1, 2, 1], kernel_shape = [2, 2, 2], pads = [1, 0, 0, 1, 0, 0], strides = [1, 1, 2]} : tensor<1x2x4x6x6xf32> -> tensor<1x2x5x4x3xf32>
  %12 = graph.avg_pool3d %v {ceil_mode = true, count_include_pad = true, dilations = [1, 1, 1], kernel_shape = [3, 3, 3], pads = [0, 0, 0, 0, 0, 0], strides = [2, 2, 2]} : tensor<1x2x4x6x6xf32> -> tensor<1x2x2x3x3xf32>
  func.return
}

// CHECK-LABEL: func.func @fourier
// CHECK-NEXT:    %0 = graph.dft %x {axis = 1, inverse = false, onesided = true} : tensor<2x6x1xf32> -> tensor<2x4x2xf32>
// CHECK-NEXT:    %1 = graph.dft %c {axis = 1, dft_length = 7, inverse = true, onesided = true} : tensor<2x4x2xf32> -> tensor<2x7x1xf32>
// CHECK-NEXT:    %2 = graph.dft %d {axis = 1, inverse = false, onesided = false} : tensor<2x?x2xf32>{{$}}
// CHECK-NEXT:    %3 = graph.stft %s, %w {frame_length = 8, frame_step = 3, onesided = true} : (tensor<?x20x1xf32>, tensor<8xf32>) -> tensor<?x5x5x2xf32>
// CHECK-NEXT:    %4 = graph.stft %s {frame_length = 8, frame_step = 3, onesided = false} : tensor<?x20x1xf32> -> tensor<?x5x8x2xf32>
func.func @fourier(%x: tensor<2x6x1xf32>, %c: tensor<2x4x2xf32>, %d: tensor<2x?x2xf32>, %s: tensor<?x20x1xf32>, %w: tensor<8xf32>) {
  %0 = graph.dft %x {axis = 1, inverse = false, onesided = true} : tensor<2x6x1xf32> -> tensor<2x4x2xf32>
  %1 = graph.dft %c {axis = 1, dft_length = 7, inverse = true, onesided = true} : tensor<2x4x2xf32> -> tensor<2x7x1xf32>
  %2 = graph.dft %d {axis = 1, inverse = false, onesided = false} : tensor<2x?x2xf32> -> tensor<2x?x2xf32>
  %3 = graph.stft %s, %w {frame_step = 3, frame_length = 8, onesided = true} : (tensor<?x20x1xf32>, tensor<8xf32>) -> tensor<?x5x5x2xf32>
  %4 = graph.stft %s {frame_step = 3, frame_length = 8, onesided = false} : tensor<?x20x1xf32> -> tensor<?x5x8x2xf32>
  func.return
}
