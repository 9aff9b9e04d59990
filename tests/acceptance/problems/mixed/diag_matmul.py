import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return torch.diag(x[0]) @ x


def get_inputs():
    return [torch.randn(37, 37)]


def get_init_inputs():
    return []
