"""uint8 + int8 promotes to int16; uint8 * uint8 wraps; int8 * int8 wraps; uint8 - uint8 wraps."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, u, s, v):
        return u + s, u * v, s * s, u - v, (u + s).sum(dim=1), -s, s.abs()


def get_inputs():
    return [
        torch.randint(0, 256, (37, 13), dtype=torch.uint8),
        torch.randint(-128, 128, (37, 13), dtype=torch.int8),
        torch.randint(0, 256, (37, 13), dtype=torch.uint8),
    ]


def get_init_inputs():
    return []
