"""sign/signbit/copysign/sgn on -0.0 and +0.0 and negatives; 1/x of signed zeros."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sign(x), torch.signbit(x), torch.copysign(torch.ones_like(x), x), 1.0 / x, x.abs(), -x


def get_inputs():
    return [torch.cat([torch.randn(37), torch.tensor([-0.0, 0.0, -0.0, float("-inf"), float("nan")])])]


def get_init_inputs():
    return []
