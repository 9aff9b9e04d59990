"""max_pool2d with ceil_mode, dilation, padding and return_indices; a -inf plane; max_pool1d ceil."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, y):
        z = x.clone()
        z[0, 0] = float("-inf")
        v, i = F.max_pool2d(z, 3, 2, padding=1, dilation=2, ceil_mode=True, return_indices=True)
        return v, i, F.max_pool1d(y, 3, 2, ceil_mode=True), F.max_pool2d(x, (2, 3), (3, 1))


def get_inputs():
    return [torch.randn(2, 3, 13, 16), torch.randn(2, 3, 18)]


def get_init_inputs():
    return []
