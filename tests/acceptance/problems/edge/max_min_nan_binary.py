"""maximum/minimum propagate NaN, fmax/fmin ignore it; clamp with a NaN input."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return (
            torch.maximum(x, y),
            torch.minimum(x, y),
            torch.fmax(x, y),
            torch.fmin(x, y),
            x.clamp(-0.5, 0.5),
            torch.relu(x),
        )


def get_inputs():
    return [
        torch.where(torch.rand(37, 29) < 0.1, torch.tensor(float("nan")), torch.randn(37, 29)),
        torch.where(torch.rand(37, 29) < 0.1, torch.tensor(float("nan")), torch.randn(37, 29)),
    ]


def get_init_inputs():
    return []
