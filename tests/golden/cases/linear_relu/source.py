"""A linear layer then ReLU: the matmul is an extern call, bias and ReLU a kernel."""

import torch


class Model(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(7, 37)]


def get_init_inputs():
    return [37, 16]
