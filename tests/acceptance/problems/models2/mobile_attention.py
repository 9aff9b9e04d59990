"""A conv stem (Conv-BN-Hardswish x2), squeeze-excite gate from a global average pool, then pool, LayerNorm + Linear, log_softmax."""

import torch
import torch.nn as nn


def _randomize(bn):
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(bn.num_features) * 0.5)
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
        bn.weight.copy_(1.0 + 0.1 * torch.randn(bn.num_features))
        bn.bias.copy_(0.1 * torch.randn(bn.num_features))
    return bn


class Model(nn.Module):
    def __init__(self, in_channels, channels, reduction, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=2, padding=1, bias=False)
        self.bn1 = _randomize(nn.BatchNorm2d(channels))
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn2 = _randomize(nn.BatchNorm2d(channels))
        self.act = nn.Hardswish()
        self.se_fc1 = nn.Linear(channels, channels // reduction)
        self.se_fc2 = nn.Linear(channels // reduction, channels)
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, num_classes)
        self.eval()

    def forward(self, x):
        x = self.act(self.bn1(self.conv1(x)))
        x = self.act(self.bn2(self.conv2(x)))
        pooled = x.mean(dim=(2, 3))
        gate = torch.sigmoid(self.se_fc2(torch.relu(self.se_fc1(pooled))))
        x = x * gate[:, :, None, None]
        feats = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return torch.log_softmax(self.head(self.norm(feats)), dim=-1)


def get_inputs():
    return [torch.randn(2, 3, 15, 15)]


def get_init_inputs():
    return [3, 32, 4, 10]
