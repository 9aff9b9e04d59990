"""A 2-layer GPT-style block stack for the report's browser tests."""

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(16, 2) for _ in range(2)])
        self.ln = torch.nn.LayerNorm(16)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln(x)


def get_inputs():
    return [torch.randn(1, 8, 16)]
