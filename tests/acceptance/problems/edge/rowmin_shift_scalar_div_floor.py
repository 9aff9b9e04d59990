"""Bucketing after a row shift: floor((x - row min) / 41.0) on multiples of 41 (exact quotients in eager)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.floor((x - x.amin(dim=1, keepdim=True)) / 41.0)


def get_inputs():
    return [torch.randint(1, 300, (64, 37)).float() * 41.0]


def get_init_inputs():
    return []
