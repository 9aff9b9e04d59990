"""float16 + float32 (float32), bfloat16 + float16 (float32), f16 * python float (f16)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, h, f, b):
        return h + f, b + h, h * 1.7, b.float().sum(dim=1) + h.sum(dim=1), (h > b).sum()


def get_inputs():
    return [torch.randn(37, 129).half(), torch.randn(37, 129), torch.randn(37, 129).bfloat16()]


def get_init_inputs():
    return []
