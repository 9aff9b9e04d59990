"""gather along dim -1 and dim -2 with int64 indices, and take_along_dim."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, i, j):
        return torch.gather(x, -1, i), torch.gather(x, -2, j), torch.take_along_dim(x, i, dim=1)


def get_inputs():
    return [torch.randn(13, 37), torch.randint(0, 37, (13, 5)), torch.randint(0, 13, (4, 37))]


def get_init_inputs():
    return []
