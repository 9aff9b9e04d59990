"""Row-max quantization to uint8: (x / x.amax(dim=1, keepdim=True) * 255).to(uint8), and (x / max == 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x / x.amax(dim=1, keepdim=True)
        return (y * 255.0).to(torch.uint8), y == 1.0


def get_inputs():
    return [torch.rand(64, 37) + 0.1]


def get_init_inputs():
    return []
