import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return (x.clamp(-3, 3) * 2).max(dim=0).values


def get_inputs():
    return [torch.randint(-10, 10, (6, 7), dtype=torch.int32)]


def get_init_inputs():
    return []
