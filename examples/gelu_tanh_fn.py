"""A function (compile with --entry gelu_tanh): tanh-approximated GELU in bfloat16."""

import torch


def gelu_tanh(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def get_inputs():
    return [torch.randn(1000, 37, dtype=torch.bfloat16)]
