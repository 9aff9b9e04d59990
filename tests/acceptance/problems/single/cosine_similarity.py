"""Cosine-similarity loss: mean of 1 - cos(a, b) over rows."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        cos = torch.nn.functional.cosine_similarity(a, b, dim=1)
        return torch.mean(1 - cos)


def get_inputs():
    return [torch.randn(16, 129), torch.randn(16, 129)]


def get_init_inputs():
    return []
