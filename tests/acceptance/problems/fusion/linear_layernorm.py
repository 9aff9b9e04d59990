"""Linear, then LayerNorm over its output features."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.ln = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.ln(self.fc(x))


def get_inputs():
    return [torch.randn(8, 37, 64)]


def get_init_inputs():
    return [64, 129]
