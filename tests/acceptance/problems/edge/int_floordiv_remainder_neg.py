"""Integer floor division, remainder, fmod and trunc division with negative operands."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return (
            a // b,
            a % b,
            torch.fmod(a, b),
            torch.div(a, b, rounding_mode="trunc"),
            torch.div(a, b, rounding_mode="floor"),
            a % 7,
            a // -3,
            torch.remainder(-a, 5),
        )


def get_inputs():
    return [
        torch.randint(-100, 100, (37, 17), dtype=torch.int32),
        torch.randint(1, 9, (37, 17), dtype=torch.int32)
        * (torch.randint(0, 2, (37, 17), dtype=torch.int32) * 2 - 1),
    ]


def get_init_inputs():
    return []
