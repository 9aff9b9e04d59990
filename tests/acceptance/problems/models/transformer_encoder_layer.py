"""A post-norm transformer encoder layer written explicitly: multi-head
self-attention (no mask), residual + LayerNorm, ReLU FFN, residual + LayerNorm."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.ff1 = nn.Linear(dim, ffn)
        self.ff2 = nn.Linear(ffn, dim)
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.reshape(b, t, self.heads, hd).permute(0, 2, 1, 3)
        k = k.reshape(b, t, self.heads, hd).permute(0, 2, 1, 3)
        v = v.reshape(b, t, self.heads, hd).permute(0, 2, 1, 3)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd), dim=-1)
        y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, t, c)
        x = self.norm1(x + self.out(y))
        return self.norm2(x + self.ff2(torch.relu(self.ff1(x))))


def get_inputs():
    return [torch.randn(4, 33, 64)]


def get_init_inputs():
    return [64, 8, 256]
