"""An Elman RNN cell (no LSTM): h' = tanh(W x + U h + b), plus a linear readout."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.w = nn.Linear(input_size, hidden_size)
        self.u = nn.Linear(hidden_size, hidden_size, bias=False)
        self.readout = nn.Linear(hidden_size, output_size)

    def forward(self, x, h):
        h_next = torch.tanh(self.w(x) + self.u(h))
        return self.readout(h_next), h_next


def get_inputs():
    return [torch.randn(8, 129), torch.randn(8, 256)]


def get_init_inputs():
    return [129, 256, 37]
