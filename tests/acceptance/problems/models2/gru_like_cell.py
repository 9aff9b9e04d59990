"""A hand-written GRU cell unrolled over 4 time steps, returning the final and the mean hidden state."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, steps):
        super().__init__()
        self.steps = steps
        self.hidden_size = hidden_size
        self.x_r = nn.Linear(input_size, hidden_size)
        self.h_r = nn.Linear(hidden_size, hidden_size, bias=False)
        self.x_z = nn.Linear(input_size, hidden_size)
        self.h_z = nn.Linear(hidden_size, hidden_size, bias=False)
        self.x_n = nn.Linear(input_size, hidden_size)
        self.h_n = nn.Linear(hidden_size, hidden_size)

    def cell(self, x, h):
        r = torch.sigmoid(self.x_r(x) + self.h_r(h))
        z = torch.sigmoid(self.x_z(x) + self.h_z(h))
        n = torch.tanh(self.x_n(x) + r * self.h_n(h))
        return (1.0 - z) * n + z * h

    def forward(self, xs, h0):
        h = h0
        total = torch.zeros_like(h0)
        for t in range(self.steps):
            h = self.cell(xs[:, t, :], h)
            total = total + h
        return h, total / self.steps


def get_inputs():
    return [torch.randn(2, 4, 29), torch.randn(2, 37)]


def get_init_inputs():
    return [29, 37, 4]
