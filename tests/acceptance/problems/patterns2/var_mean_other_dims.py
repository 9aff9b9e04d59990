"""Variance over the last dim and mean over the first dim of one 3-D tensor, returned together."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.var(dim=2), x.mean(dim=0)


def get_inputs():
    return [torch.randn(17, 33, 129)]


def get_init_inputs():
    return []
