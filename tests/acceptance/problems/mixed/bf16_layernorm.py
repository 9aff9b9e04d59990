import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.LayerNorm(64).to(torch.bfloat16)

    def forward(self, x):
        return self.m(x)


def get_inputs():
    return [torch.randn(8, 64, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
