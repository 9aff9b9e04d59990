"""Type promotion: int tensor + float scalar (float32), int * 2 (int), int64 + int32, bool + int."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, m):
        return a + 1.5, a * 2, a + b, m + a, m + m, m * 3, b - 0.25, a.float() * m


def get_inputs():
    return [
        torch.randint(-50, 50, (37, 13)),
        torch.randint(-50, 50, (37, 13), dtype=torch.int32),
        torch.randn(37, 13) > 0,
    ]


def get_init_inputs():
    return []
