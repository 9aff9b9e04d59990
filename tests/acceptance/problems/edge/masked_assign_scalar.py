"""x[x < 0] = 0 and x[mask] = -1.5 on clones (bool-mask index_put with a scalar), and x[:, mask_col] = 2."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, m, c):
        y = x.clone()
        y[y < 0] = 0.0
        z = x.clone()
        z[m] = -1.5
        w = x.clone()
        w[:, c] = 2.0
        return y, z, w


def get_inputs():
    return [torch.randn(13, 37), torch.randn(13, 37) > 0.5, torch.randn(37) > 0]


def get_init_inputs():
    return []
