"""A transposed read: x.t() + y, so one operand is read with a non-unit stride."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return x.t() + y


def get_inputs():
    return [torch.randn(129, 257), torch.randn(257, 129)]


def get_init_inputs():
    return []
