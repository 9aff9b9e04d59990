"""reshape of a transposed tensor (a copy), flatten of a permuted one, view of a contiguous slice."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return (
            x.t().reshape(-1),
            x.t().reshape(29, 37) * 2,
            y.permute(2, 0, 1).flatten(1),
            y[1:].reshape(-1, 7),
        )


def get_inputs():
    return [torch.randn(37, 29), torch.randn(3, 5, 7)]


def get_init_inputs():
    return []
