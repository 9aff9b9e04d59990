"""Linear, elementwise min with a learned scalar, then subtract it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        y = self.fc(x)
        return torch.min(y, self.constant) - self.constant


def get_inputs():
    return [torch.randn(16, 129)]


def get_init_inputs():
    return [129, 37, 0.25]
