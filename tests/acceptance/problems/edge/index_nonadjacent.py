"""Advanced indexing with non-adjacent index tensors (x[i, :, j] puts the broadcast dim first), None and Ellipsis."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, i, j):
        return x[i, :, j], x[:, i, :, j], x[None, i], x[..., j], x[i[:, None], :, j[None, :]]


def get_inputs():
    return [torch.randn(5, 7, 9, 11), torch.randint(-5, 5, (4,)), torch.randint(0, 9, (4,))]


def get_init_inputs():
    return []
