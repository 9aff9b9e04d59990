"""masked_fill of attention scores with -inf where a bool mask is set, then softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, scores, mask):
        return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def get_inputs():
    mask = torch.rand(1, 37, 37) > 0.6
    mask[..., 0] = False  # every row keeps one finite score
    return [torch.randn(4, 37, 37), mask]


def get_init_inputs():
    return []
