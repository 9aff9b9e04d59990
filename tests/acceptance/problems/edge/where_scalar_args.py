"""torch.where with scalar branches (float and int), a bool mask input, and an int tensor branch."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, m, i):
        return (
            torch.where(m, x, 0.0),
            torch.where(x > 0, 1.0, -1.0),
            torch.where(m, i, 7),
            torch.where(i > 0, i, torch.zeros_like(i)),
            torch.where(m, 2, 3),
        )


def get_inputs():
    return [torch.randn(37, 29), torch.randn(37, 29) > 0, torch.randint(-50, 50, (37, 29), dtype=torch.int32)]


def get_init_inputs():
    return []
