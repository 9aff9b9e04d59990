"""uint8 with values above 127: amax/amin/argmax/max(dim), any/all (which return uint8), sum."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, u):
        return (
            u.amax(dim=1),
            u.amin(dim=0),
            u.argmax(dim=1),
            u.max(dim=0).values,
            torch.all(u, dim=1),
            torch.any(u),
            u.sum(dim=1),
            u.min(),
        )


def get_inputs():
    return [torch.randint(1, 256, (37, 129), dtype=torch.uint8)]


def get_init_inputs():
    return []
