"""Two ConvNeXt blocks (depthwise 7x7 conv, channels-last LayerNorm, 4x GELU MLP, layer scale, residual), then a final LayerNorm."""

import torch
import torch.nn as nn


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, layer_scale_init):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init * torch.randn(dim).abs() + layer_scale_init)

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.pwconv2(nn.functional.gelu(self.pwconv1(x)))
        x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return shortcut + x


class Model(nn.Module):
    def __init__(self, dim, layer_scale_init):
        super().__init__()
        self.block1 = ConvNeXtBlock(dim, layer_scale_init)
        self.block2 = ConvNeXtBlock(dim, layer_scale_init)
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        x = self.block2(self.block1(x))
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(2, 16, 13, 11)]


def get_init_inputs():
    return [16, 0.1]
