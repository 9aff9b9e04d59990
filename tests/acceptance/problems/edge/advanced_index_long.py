"""Advanced indexing with LongTensors, including negative indices: x[idx], x[:, idx], x[i, j]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx, i, j):
        return x[idx], x[:, idx], x[i, j], x[i[:, None], j[None, :]], x[..., -1]


def get_inputs():
    return [
        torch.randn(13, 37),
        torch.randint(-13, 13, (7,)),
        torch.randint(-13, 13, (5,)),
        torch.randint(-37, 37, (5,)),
    ]


def get_init_inputs():
    return []
