"""Linear, Dropout (identity in eval), tanh."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        return torch.tanh(self.dropout(self.fc(x)))


def get_inputs():
    return [torch.randn(16, 129)]


def get_init_inputs():
    return [129, 65]
