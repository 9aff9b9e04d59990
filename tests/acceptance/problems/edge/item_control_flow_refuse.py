"""A forward that branches on a tensor value (.item()): a clear refusal, never an internal error."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.sum().item() > 0:
            return x * 2.0
        return x - 1.0


def get_inputs():
    return [torch.randn(13, 37)]


def get_init_inputs():
    return []
