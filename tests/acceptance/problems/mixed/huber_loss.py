import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return F.smooth_l1_loss(x, x.flip(0) * 0.5) + F.huber_loss(x, x * 0.3, delta=0.5)


def get_inputs():
    return [torch.randn(37, 129)]


def get_init_inputs():
    return []
