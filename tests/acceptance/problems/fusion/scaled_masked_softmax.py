"""Attention-score softmax with a scale and a causal mask registered as a buffer."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, seq, scale):
        super().__init__()
        self.scale = scale
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, scores):
        scores = scores * self.scale
        scores = scores.masked_fill(~self.mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(2, 4, 37, 37)]


def get_init_inputs():
    return [37, 0.125]
