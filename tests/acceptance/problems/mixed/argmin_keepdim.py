import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return torch.argmin(x, dim=1, keepdim=True) + torch.argmax(x, dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 37, 5)]


def get_init_inputs():
    return []
