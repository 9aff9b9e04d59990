"""`torch.compile(model, backend="tirc")`: Dynamo hands over an FX graph of
torch-level ops; tirc captures it to core ATen and compiles it."""

from __future__ import annotations

import torch


def tirc_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    from .api import compile as tirc_compile

    options = dict(kwargs.get("options") or {})
    backend = options.pop("backend", "cpp")
    return tirc_compile(gm, example_inputs, backend=backend, options=options, source="dynamo_graph")
