import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.m(x)


def get_inputs():
    return [torch.randn(2, 9, 32)]


def get_init_inputs():
    return []
