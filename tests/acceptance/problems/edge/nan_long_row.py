"""A NaN deep in a row of 100003 (one row only): amax, max, argmax, sum, softmax and argmin propagate it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x.clone()
        y[1, 77777] = float("nan")
        return (
            y.amax(dim=1),
            y.max(dim=1).values,
            y.argmax(dim=1),
            y.argmin(dim=1),
            y.sum(dim=1),
            y.amin(dim=1),
            torch.softmax(y, dim=1),
        )


def get_inputs():
    return [torch.randn(3, 100003)]


def get_init_inputs():
    return []
