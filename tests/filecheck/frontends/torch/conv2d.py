# RUN: %python %s | filecheck %s
# REQUIRES: torch
# nn.Conv2d with padding="same" on an odd kernel: symmetric ONNX pads [t, l, b, r].

import torch
from xdsl.printer import Printer

from frontends.torch import import_module

conv = torch.nn.Conv2d(4, 8, 3, padding="same", dilation=2, groups=2, bias=False).eval()
Printer().print_op(import_module(conv, (torch.randn(1, 4, 10, 10),)))

# CHECK:      %p_weight = graph.constant {name = "weight"} dense_resource<{{.*}}> : tensor<8x2x3x3xf32>
# CHECK-NEXT: %convolution = graph.conv2d %input, %p_weight {dilations = [2, 2], group = 2, pads = [2, 2, 2, 2], strides = [1, 1]} : (tensor<1x4x10x10xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x10x10xf32>
# CHECK-NEXT: func.return %convolution : tensor<1x8x10x10xf32>
