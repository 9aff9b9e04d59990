"""A transposed input (stride (1, 129)): pointwise, a column sum and a row max."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0, x.sum(dim=0), x.amax(dim=1)


def get_inputs():
    return [torch.randn(129, 37).t()]


def get_init_inputs():
    return []
