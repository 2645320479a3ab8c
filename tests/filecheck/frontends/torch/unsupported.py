# RUN: %python %s | filecheck %s
# REQUIRES: torch
# An ATen op without a converter is a one-line error naming the op and the FX node.

import torch

from autofusion.diagnostics import UserError
from frontends.torch import import_module


class CumSum(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 0)


try:
    import_module(CumSum().eval(), (torch.randn(4),))
except UserError as e:
    print(e)

# CHECK: unsupported PyTorch op aten.cumsum.default (node 'cumsum')
