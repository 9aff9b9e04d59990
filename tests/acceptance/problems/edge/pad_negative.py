"""F.pad with negative padding (cropping) on some sides, constant value, and a 3-D pad."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return (
            F.pad(x, (-1, 2, 3, -2)),
            F.pad(x, (2, -3), value=1.5),
            F.pad(x, (-4, -4, -1, -1)),
            F.pad(x[None], (1, 1, 1, 1, 1, 0), value=-2.0),
        )


def get_inputs():
    return [torch.randn(13, 37)]


def get_init_inputs():
    return []
