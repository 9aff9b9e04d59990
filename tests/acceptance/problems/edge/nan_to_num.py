"""nan_to_num with defaults and with explicit nan/posinf/neginf, on float32 and float16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, h):
        return (
            x.nan_to_num(),
            x.nan_to_num(nan=0.5, posinf=9.0, neginf=-9.0),
            h.nan_to_num(),
            torch.isfinite(x).sum(),
        )


def get_inputs():
    return [
        torch.cat(
            [torch.randn(37, 29), torch.tensor([[float("nan"), float("inf"), float("-inf")] + [1.0] * 26])]
        ),
        torch.cat(
            [torch.randn(7, 29), torch.tensor([[float("nan"), float("inf"), float("-inf")] + [1.0] * 26])]
        ).half(),
    ]


def get_init_inputs():
    return []
