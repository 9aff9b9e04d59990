"""Swish (x * sigmoid(x)) with a learned scale, written with primitive ops."""

import torch


class Model(torch.nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


def get_inputs():
    return [torch.randn(129, 37)]


def get_init_inputs():
    return [1.5]
