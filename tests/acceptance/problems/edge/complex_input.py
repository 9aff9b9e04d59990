"""A complex64 input: abs and real part. Either compiled or refused with a clear message."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, z):
        return z.abs(), torch.view_as_real(z).sum(-1)


def get_inputs():
    return [torch.randn(37, 13, dtype=torch.complex64)]


def get_init_inputs():
    return []
