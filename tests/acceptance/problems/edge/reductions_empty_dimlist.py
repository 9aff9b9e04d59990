"""sum/mean/amax with dim=[] or () reduce over every dim (unlike an empty tuple in other APIs)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (
            x.sum(dim=[]),
            x.mean(dim=()),
            torch.amax(x, dim=()),
            x.sum(dim=[], keepdim=True),
            torch.amin(x, dim=[], keepdim=True),
        )


def get_inputs():
    return [torch.randn(7, 13)]


def get_init_inputs():
    return []
