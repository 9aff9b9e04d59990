"""cat/stack with type promotion: int32 + float16 (float16), bool + uint8 (uint8), int64 + a legacy 1-D empty float tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, i, h, m, u, k):
        e = torch.zeros(0)
        return (
            torch.cat([i, h], dim=1),
            torch.cat([m, u], dim=0),
            torch.stack([i.to(torch.int64), k], dim=-1),
            torch.cat([k, e], dim=0),
            torch.cat([h, m.half()], dim=1),
        )


def get_inputs():
    return [
        torch.randint(-9, 9, (5, 7), dtype=torch.int32),
        torch.randn(5, 3).half(),
        torch.randn(5, 7) > 0,
        torch.randint(0, 256, (2, 7), dtype=torch.uint8),
        torch.randint(-9, 9, (5, 7)),
    ]


def get_init_inputs():
    return []
