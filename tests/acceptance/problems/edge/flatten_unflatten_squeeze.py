"""flatten/unflatten/squeeze(dims)/unsqueeze(-1) chains with pointwise in between."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x.flatten(1).unflatten(1, (3, -1))
        return y + 1.0, x.squeeze(1).unsqueeze(-1) * 2, x.squeeze((1, 3)), torch.squeeze(x).sum(-1)


def get_inputs():
    return [torch.randn(5, 1, 21, 1)]


def get_init_inputs():
    return []
