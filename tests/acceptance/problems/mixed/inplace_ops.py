import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        y = x.clone()
        y.mul_(2).add_(1).clamp_(min=0)
        y[:, ::2] += 1
        return y


def get_inputs():
    return [torch.randn(8, 37)]


def get_init_inputs():
    return []
