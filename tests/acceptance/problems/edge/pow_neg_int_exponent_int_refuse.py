"""int tensor ** negative int exponent: eager raises; tirc must refuse cleanly."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a):
        return a**-2


def get_inputs():
    return [torch.randint(1, 9, (37, 13))]


def get_init_inputs():
    return []
