"""A GPT block: pre-LayerNorm causal self-attention (explicit q/k/v, a causal mask
built with torch.tril/ones in forward) and a GELU MLP, with residuals."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.fc_out = nn.Linear(4 * dim, dim)

    def attention(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        q = self.q(x).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.heads, hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.tril(torch.ones(t, t, device=x.device)).view(1, 1, t, t)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc_out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


def get_inputs():
    return [torch.randn(2, 37, 64)]


def get_init_inputs():
    return [64, 4]
