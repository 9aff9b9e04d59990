import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return torch.mean(1 - F.cosine_similarity(x, x.roll(1, 0), dim=1))


def get_inputs():
    return [torch.randn(37, 129)]


def get_init_inputs():
    return []
