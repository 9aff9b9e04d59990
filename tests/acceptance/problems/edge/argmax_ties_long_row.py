"""argmax/argmin/max indices over rows of 100003 values in {0,1,2} (float and int32): first index."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, i):
        return (
            x.argmax(dim=1),
            x.argmin(dim=1),
            x.max(dim=1).indices,
            i.argmax(dim=1),
            i.min(dim=1).indices,
            x.argmax(),
        )


def get_inputs():
    return [torch.randint(0, 3, (3, 100003)).float(), torch.randint(0, 3, (3, 100003), dtype=torch.int32)]


def get_init_inputs():
    return []
