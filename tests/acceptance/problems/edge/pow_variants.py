"""pow: float ** negative int, ** 0.5 of negatives (nan), 0 ** 0, int ** int tensor, 2 ** x, x ** 3 of ints."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, i, e):
        z = torch.relu(x)
        return x**-2, x**0.5, z**0.0, z ** e.float(), i**e, 2**x, i**3, torch.pow(2, e), x**-1


def get_inputs():
    return [torch.randn(37, 13), torch.randint(-9, 9, (37, 13)), torch.randint(0, 5, (37, 13))]


def get_init_inputs():
    return []
