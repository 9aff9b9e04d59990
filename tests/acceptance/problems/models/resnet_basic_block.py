"""ResNet basic block: conv-bn-relu-conv-bn, plus a strided 1x1 downsample skip."""

import torch
import torch.nn as nn


def _randomize(bn):
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(bn.num_features) * 0.5)
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
    return bn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = _randomize(nn.BatchNorm2d(out_channels))
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = _randomize(nn.BatchNorm2d(out_channels))
        self.downsample = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
            _randomize(nn.BatchNorm2d(out_channels)),
        )

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.downsample(x))


def get_inputs():
    return [torch.randn(2, 8, 16, 16)]


def get_init_inputs():
    return [8, 16, 2]
