"""Bitwise and/or/xor/not on int8 and uint8, and shifts on int32 (arithmetic right shift)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, u, v, i):
        return (a & b, a | b, a ^ b, ~a, u & v, u ^ v, ~u, i >> 3, i << 2)


def get_inputs():
    return [
        torch.randint(-128, 128, (37, 13), dtype=torch.int8),
        torch.randint(-128, 128, (37, 13), dtype=torch.int8),
        torch.randint(0, 256, (37, 13), dtype=torch.uint8),
        torch.randint(0, 256, (37, 13), dtype=torch.uint8),
        torch.randint(-1000, 1000, (37, 13), dtype=torch.int32),
    ]


def get_init_inputs():
    return []
