import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1, groups=2)

    def forward(self, x):
        return torch.tanh(self.m(x))


def get_inputs():
    return [torch.randn(2, 8, 7, 7)]


def get_init_inputs():
    return []
