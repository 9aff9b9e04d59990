"""Masked mean over the sequence dim: sum(x * mask) / clamp(sum(mask), 1), mask a float 0/1 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, mask):
        m = mask.unsqueeze(-1)
        return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


def get_inputs():
    return [torch.randn(17, 129, 65), (torch.rand(17, 129) > 0.3).float()]


def get_init_inputs():
    return []
