"""masked_fill_ of -inf on a clone, then softmax; masked_fill with NaN; a row fully masked."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, m):
        y = x.clone()
        y.masked_fill_(m, float("-inf"))
        y[0].fill_(float("-inf"))
        return torch.softmax(y, dim=1), x.masked_fill(m, float("nan")), x.masked_fill(~m, 3)


def get_inputs():
    return [torch.randn(13, 37), torch.randn(13, 37) > 0.5]


def get_init_inputs():
    return []
