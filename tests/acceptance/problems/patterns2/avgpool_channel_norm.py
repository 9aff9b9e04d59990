"""avg_pool2d then a per-channel normalisation with statistics over (N, H, W), as batch norm in training."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        y = F.avg_pool2d(x, kernel_size=2, stride=2)
        mean = y.mean(dim=(0, 2, 3), keepdim=True)
        var = y.var(dim=(0, 2, 3), keepdim=True, unbiased=False)
        return (y - mean) * torch.rsqrt(var + 1e-5)


def get_inputs():
    return [torch.randn(4, 17, 34, 38)]


def get_init_inputs():
    return []
