"""MobileNetV2 inverted residual block: 1x1 expand-BN-ReLU6, 3x3 depthwise-BN-ReLU6,
1x1 project-BN, plus the identity skip."""

import torch
import torch.nn as nn


def _randomize(bn):
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(bn.num_features) * 0.5)
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
    return bn


class Model(nn.Module):
    def __init__(self, channels, expand):
        super().__init__()
        hidden = channels * expand
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False),
            _randomize(nn.BatchNorm2d(hidden)),
            nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False),
            _randomize(nn.BatchNorm2d(hidden)),
            nn.ReLU6(),
            nn.Conv2d(hidden, channels, 1, bias=False),
            _randomize(nn.BatchNorm2d(channels)),
        )

    def forward(self, x):
        return x + self.block(x)


def get_inputs():
    return [torch.randn(2, 8, 15, 15)]


def get_init_inputs():
    return [8, 4]
