"""A pre-norm ViT encoder block: Conv2d patch embedding, class token, positional embedding, hand-written MHA and GELU MLP."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, dim, patch, image_size, heads):
        super().__init__()
        self.heads = heads
        num_patches = (image_size // patch) ** 2
        self.patch_embed = nn.Conv2d(in_channels, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, dim) * 0.02)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.ln_out = nn.LayerNorm(dim)

    def attention(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, t, c)
        return self.proj(y)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        x = x + self.attention(self.ln1(x))
        x = x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))
        return self.ln_out(x)


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return [3, 32, 4, 16, 4]
