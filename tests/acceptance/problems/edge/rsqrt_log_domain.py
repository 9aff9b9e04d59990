"""rsqrt of 0 (inf), log/log2/log1p/sqrt of negatives (nan), log of 0 (-inf), reciprocal of 0."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        z = torch.relu(x)
        return (
            torch.rsqrt(z),
            torch.log(x),
            torch.log2(z),
            torch.log1p(x - 1.0),
            torch.sqrt(x),
            torch.reciprocal(z),
            torch.xlogy(z, z),
        )


def get_inputs():
    return [torch.randn(37, 29)]


def get_init_inputs():
    return []
