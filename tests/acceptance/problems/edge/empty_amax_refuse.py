"""amax over an empty dim: eager raises, tirc must refuse cleanly (exit 2, no internal error)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.amax(dim=1)


def get_inputs():
    return [torch.randn(5, 0)]


def get_init_inputs():
    return []
