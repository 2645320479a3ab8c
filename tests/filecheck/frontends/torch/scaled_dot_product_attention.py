# RUN: %python %s | filecheck %s
# REQUIRES: torch
# F.scaled_dot_product_attention(is_causal=True) expands to matmul, scale, a constant
# lower-triangular keep-mask, softmax and matmul. A causal mask never masks a whole row,
# so no guard follows the softmax.

import torch
import torch.nn.functional as F
from xdsl.printer import Printer

from frontends.torch import import_module


class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
Printer().print_op(import_module(Attention().eval(), (q, k, v)))

# CHECK:      func.func @main(%q: tensor<1x2x4x8xf32> {graph.name = "q"}, %k: {{.*}}, %v: {{.*}}) -> (tensor<1x2x4x8xf32> {graph.name = "output"}) {
# CHECK-NEXT:   %0 = graph.transpose %k {perm = [0, 1, 3, 2]} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
# CHECK-NEXT:   %1 = graph.matmul %q, %0 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
# CHECK-NEXT:   %2 = graph.constant dense<0.353553385> : tensor<f32>
# CHECK-NEXT:   %3 = graph.mul %1, %2 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
# CHECK-NEXT:   %4 = graph.constant dense<{{\[}}[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
# CHECK-NEXT:   %5 = graph.constant dense_resource<neg_inf{{.*}}> : tensor<f32>
# CHECK-NEXT:   %6 = graph.where %4, %3, %5 : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
# CHECK-NEXT:   %7 = graph.softmax %6 {axis = 3} : tensor<1x2x4x4xf32>
# CHECK-NEXT:   %scaled_dot_product_attention = graph.matmul %7, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
# CHECK-NEXT:   func.return %scaled_dot_product_attention : tensor<1x2x4x8xf32>
