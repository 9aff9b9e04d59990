"""Row sums and column sums of one 2-D tensor (two reductions over different dims)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1), x.sum(dim=0)


def get_inputs():
    return [torch.randn(257, 129)]


def get_init_inputs():
    return []
