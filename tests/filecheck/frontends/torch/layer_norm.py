# RUN: %python %s | filecheck %s
# REQUIRES: torch
# nn.LayerNorm over the last two dims: graph.layer_norm from axis rank - 2. Without
# elementwise_affine the scale is a splat of ones (graph.layer_norm requires one).

import torch
from xdsl.printer import Printer

from frontends.torch import import_module

x = torch.randn(2, 3, 4, 5)
Printer().print_op(import_module(torch.nn.LayerNorm([4, 5], eps=1e-3).eval(), (x,)))
Printer().print_op(import_module(torch.nn.LayerNorm(5, elementwise_affine=False).eval(), (x,)))

# CHECK:      %layer_norm = graph.layer_norm %input, %p_weight, %p_bias {axis = 2, epsilon = 1.000000e-03} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>

# CHECK:      %0 = graph.constant dense<1.000000e+00> : tensor<5xf32>
# CHECK-NEXT: %layer_norm = graph.layer_norm %input, %0 {axis = 3, epsilon = 1.000000e-05} : (tensor<2x3x4x5xf32>, tensor<5xf32>) -> tensor<2x3x4x5xf32>
