import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return torch.softmax(x.half(), -1).float()


def get_inputs():
    return [torch.randn(8, 129)]


def get_init_inputs():
    return []
