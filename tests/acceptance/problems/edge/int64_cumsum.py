"""cumsum of int64 (large values), of bool (to int64), of int32 (to int64) and of int8."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, x, c, d):
        return a.cumsum(1), (x > 0).cumsum(dim=-1), c.cumsum(0), d.cumsum(1), d.cumprod(1)


def get_inputs():
    return [
        torch.randint(-(2**40), 2**40, (7, 129)),
        torch.randn(7, 129),
        torch.randint(-1000, 1000, (37, 5), dtype=torch.int32),
        torch.randint(-3, 4, (5, 20), dtype=torch.int8),
    ]


def get_init_inputs():
    return []
