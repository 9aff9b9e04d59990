"""roll with multiple shifts (negative, larger than the size), roll without dims, flip on two dims."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (
            torch.roll(x, shifts=(3, -5), dims=(0, 1)),
            torch.roll(x, 40),
            torch.roll(x, 100, 1),
            x.flip(0, 1),
            x.flip(-1) - x,
        )


def get_inputs():
    return [torch.randn(13, 37)]


def get_init_inputs():
    return []
