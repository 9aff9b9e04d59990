"""argmax/argmin/max/min over rows that are all -inf, all +inf or all NaN (index 0), short and 100003 long."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, big):
        y = x.clone()
        y[0] = float("-inf")
        y[1] = float("inf")
        y[2] = float("nan")
        z = big.clone()
        z[1] = float("-inf")
        return (
            y.argmax(dim=1),
            y.argmin(dim=1),
            y.max(dim=1).indices,
            y.min(dim=1).indices,
            z.argmax(dim=1),
            z.max(dim=1).indices,
        )


def get_inputs():
    return [torch.randn(5, 37), torch.randn(3, 100003)]


def get_init_inputs():
    return []
