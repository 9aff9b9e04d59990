"""round half-to-even, round with decimals 2 and -1, trunc/floor/ceil of negatives, frac."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, h):
        return (
            torch.round(x),
            torch.round(x, decimals=2),
            torch.round(x * 100, decimals=-1),
            x.trunc(),
            x.frac(),
            h.round(),
        )


def get_inputs():
    return [
        torch.cat([torch.randn(37, 8) * 10, torch.tensor([[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.125, 0.375]])]),
        torch.tensor([0.5, 1.5, 2.5, -2.5, 3.7]).half(),
    ]


def get_init_inputs():
    return []
