"""F.cross_entropy with label_smoothing=0.1 against int64 targets, mean reduction."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target, label_smoothing=0.1)


def get_inputs():
    return [torch.randn(257, 65), torch.randint(0, 65, (257,), dtype=torch.int64)]


def get_init_inputs():
    return []
