"""avg_pool2d with ceil_mode, padding, count_include_pad False/True and divisor_override; avg_pool1d ceil."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, y):
        return (
            F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=True),
            F.avg_pool2d(x, 2, 3, divisor_override=3),
            F.avg_pool1d(y, 4, 3, ceil_mode=True),
        )


def get_inputs():
    return [torch.randn(2, 3, 13, 16), torch.randn(2, 3, 17)]


def get_init_inputs():
    return []
