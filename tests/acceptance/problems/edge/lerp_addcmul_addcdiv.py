"""lerp with tensor and scalar weights (incl. > 0.5 path), addcmul/addcdiv with value."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, w):
        return (
            torch.lerp(a, b, w),
            torch.lerp(a, b, 0.75),
            torch.addcmul(a, b, w, value=-0.5),
            torch.addcdiv(a, b, w.abs() + 1, value=2.0),
        )


def get_inputs():
    return [torch.randn(37, 29), torch.randn(37, 29), torch.rand(37, 29) * 2 - 0.5]


def get_init_inputs():
    return []
