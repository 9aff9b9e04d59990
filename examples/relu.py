"""ReLU over a batch of activations."""

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 1000)]


def get_init_inputs():
    return []
