"""Reduction -> broadcast -> reduction over another dim: (x - x.mean(1, keepdim)).pow(2).sum(2)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x - x.mean(dim=1, keepdim=True)).pow(2).sum(dim=2)


def get_inputs():
    return [torch.randn(9, 65, 129)]


def get_init_inputs():
    return []
