"""triu/tril with positive and negative offsets on non-square and batched inputs, int and bool."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, i):
        return (
            torch.triu(x, 2),
            torch.tril(x, -3),
            torch.triu(x, -40),
            torch.tril(x, 50),
            i.triu(1),
            (x > 0).tril(),
        )


def get_inputs():
    return [torch.randn(2, 13, 37), torch.randint(-9, 9, (13, 7))]


def get_init_inputs():
    return []
