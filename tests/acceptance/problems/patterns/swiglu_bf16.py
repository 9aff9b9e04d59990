"""SwiGLU in bfloat16: split the input into halves a, b along the last dim, silu(a) * b."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


def get_inputs():
    return [torch.randn(5, 37, 2 * 171).to(torch.bfloat16)]


def get_init_inputs():
    return []
