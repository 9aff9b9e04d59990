import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Embedding(100, 16)

    def forward(self, x):
        return self.m(x).mean(1)


def get_inputs():
    return [torch.randint(0, 100, (8, 5))]


def get_init_inputs():
    return []
