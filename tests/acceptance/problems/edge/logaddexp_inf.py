"""logaddexp/logaddexp2 with large values, -inf operands (both -inf: -inf), and +inf."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.logaddexp(a, b), torch.logaddexp2(a, b), torch.logaddexp(a * 100, b * 100)


def get_inputs():
    return [
        torch.cat([torch.randn(37), torch.tensor([float("-inf"), float("-inf"), float("inf"), 5.0])]),
        torch.cat([torch.randn(37), torch.tensor([float("-inf"), 3.0, float("inf"), float("-inf")])]),
    ]


def get_init_inputs():
    return []
