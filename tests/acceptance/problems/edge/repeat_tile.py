"""repeat, tile (fewer dims than the tensor), expand+reshape, repeat_interleave with an int."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (
            x.repeat(2, 3),
            torch.tile(x, (2,)),
            x.repeat(2, 1, 1),
            x.repeat_interleave(3, dim=0),
            x[None].expand(2, -1, -1).reshape(-1, 13),
        )


def get_inputs():
    return [torch.randn(7, 13)]


def get_init_inputs():
    return []
