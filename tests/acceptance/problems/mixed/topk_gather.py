import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        v, i = torch.topk(x, 3, dim=1)
        return torch.gather(x, 1, i) * v


def get_inputs():
    return [torch.randn(8, 37)]


def get_init_inputs():
    return []
