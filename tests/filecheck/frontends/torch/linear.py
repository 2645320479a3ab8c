# RUN: %python %s | filecheck %s
# REQUIRES: torch
# nn.Linear imports as one graph.gemm on the weight in torch's [out, in] layout
# (trans_b), with reshapes around it for a 3-D input; weights are named blobs.

import torch
from xdsl.printer import Printer

from frontends.torch import import_module

torch.manual_seed(0)
module = import_module(torch.nn.Linear(8, 4).eval(), (torch.randn(2, 3, 8),))
Printer(print_debuginfo=True).print_op(module)

# CHECK:      func.func @main(%input: tensor<2x3x8xf32> {graph.name = "input"} loc("input")) -> (tensor<2x3x4xf32> {graph.name = "output"}) {
# CHECK-NEXT:   %p_weight = graph.constant {name = "weight"} dense_resource<weight{{.*}}> : tensor<4x8xf32> loc("p_weight")
# CHECK-NEXT:   %p_bias = graph.constant {name = "bias"} dense_resource<bias{{.*}}> : tensor<4xf32> loc("p_bias")
# CHECK-NEXT:   %0 = graph.reshape %input {shape = [6, 8]} : tensor<2x3x8xf32> -> tensor<6x8xf32> loc("linear")
# CHECK-NEXT:   %1 = graph.gemm %0, %p_weight, %p_bias {alpha = 1.000000e+00, beta = 1.000000e+00, trans_a = false, trans_b = true} : (tensor<6x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<6x4xf32> loc("linear")
# CHECK-NEXT:   %linear = graph.reshape %1 {shape = [2, 3, 4]} : tensor<6x4xf32> -> tensor<2x3x4xf32> loc("linear")
# CHECK-NEXT:   func.return %linear : tensor<2x3x4xf32> loc("output")
# CHECK-NEXT: }
