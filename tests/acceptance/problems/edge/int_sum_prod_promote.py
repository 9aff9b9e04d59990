"""sum of int8/uint8/int32/bool promotes to int64; prod of int32 (int64); mean of int via float."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, s, u, i, x):
        return (
            s.sum(dim=1),
            u.sum(),
            i.sum(dim=0),
            (x > 0).sum(dim=1),
            i.prod(dim=1),
            s.sum(dim=1, dtype=torch.int8),
        )


def get_inputs():
    return [
        torch.randint(-128, 128, (37, 129), dtype=torch.int8),
        torch.randint(0, 256, (37, 129), dtype=torch.uint8),
        torch.randint(-3, 4, (37, 9), dtype=torch.int32),
        torch.randn(37, 129),
    ]


def get_init_inputs():
    return []
