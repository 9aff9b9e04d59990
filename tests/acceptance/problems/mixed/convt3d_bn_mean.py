import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Sequential(nn.ConvTranspose3d(4, 6, 3, stride=2), nn.BatchNorm3d(6))

    def forward(self, x):
        x = self.m(x)
        return x - x.mean(dim=(2, 3, 4), keepdim=True)


def get_inputs():
    return [torch.randn(2, 4, 4, 5, 5)]


def get_init_inputs():
    return []
