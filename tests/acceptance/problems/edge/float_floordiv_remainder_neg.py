"""Float floor division, remainder and fmod with negative operands and divisors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return (
            a // b,
            a % b,
            torch.fmod(a, b),
            torch.remainder(a, -1.5),
            torch.div(a, b, rounding_mode="trunc"),
        )


def get_inputs():
    return [torch.randn(37, 17) * 10, torch.randn(37, 17) * 3 + 0.1]


def get_init_inputs():
    return []
