"""nn.TripletMarginLoss (p=2, margin 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.loss = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss(anchor, positive, negative)


def get_inputs():
    return [torch.randn(16, 129), torch.randn(16, 129), torch.randn(16, 129)]


def get_init_inputs():
    return [1.0]
