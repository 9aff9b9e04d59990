"""Linear, then scale and add the linear's own output back (y * s + y)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = self.fc(x)
        return y * self.scale + y


def get_inputs():
    return [torch.randn(16, 129)]


def get_init_inputs():
    return [129, 64, 0.5]
