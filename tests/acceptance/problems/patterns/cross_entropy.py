"""F.cross_entropy of logits against int64 class targets, mean reduction."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(129, 37), torch.randint(0, 37, (129,), dtype=torch.int64)]


def get_init_inputs():
    return []
