"""narrow, chunk into uneven pieces, split by sizes and unbind: several outputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        a, b, c = x.chunk(3, dim=1)
        p, q = x.split([10, 27], dim=1)
        r = x.unbind(0)
        return x.narrow(1, 5, 9) * 2, a, b, c + 1.0, p, q.sum(dim=1), r[0], r[-1]


def get_inputs():
    return [torch.randn(4, 37)]


def get_init_inputs():
    return []
