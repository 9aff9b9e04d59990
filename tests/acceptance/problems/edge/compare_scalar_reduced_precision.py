"""Comparisons with Python scalars are done in the tensor's dtype: f16/bf16 round 0.1 and 1/3 first,
int8 wraps 200 to -56, uint8 wraps 456 to 200; int64/int32 vs float32 compare after rounding to float32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, h, b, s, u, i, j, f):
        return (
            h >= 0.1,
            h == 0.1,
            h == 1 / 3,
            h < 0.3,
            b == 0.1,
            b >= 1 / 3,
            s > 200,
            u == 456,
            i == 16777217.0,
            j == f,
            (h * 3 == 1.0).sum(),
        )


def get_inputs():
    h = torch.cat([torch.rand(37), torch.tensor([0.1, 1 / 3, 0.3])]).half()
    b = torch.cat([torch.rand(37), torch.tensor([0.1, 1 / 3, 0.3])]).bfloat16()
    s = torch.randint(-128, 128, (40,), dtype=torch.int8)
    u = torch.cat([torch.randint(0, 256, (37,)), torch.tensor([200, 200, 456 - 256])]).to(torch.uint8)
    i = torch.cat([torch.randint(2**24 - 3, 2**24 + 3, (37,)), torch.tensor([2**24, 2**24 + 1, 2**24 + 2])])
    j = i.to(torch.int32)
    f = torch.full((40,), 2.0**24) + torch.randint(-2, 3, (40,)).float()
    return [h, b, s, u, i, j, f]


def get_init_inputs():
    return []
