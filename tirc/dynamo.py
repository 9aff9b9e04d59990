"""`torch.compile(model, backend="tirc")`: Dynamo hands over an FX graph of
torch-level ops; tirc captures it to core ATen and compiles it.

Each graph Dynamo makes (one per graph break) is compiled on its own. Dynamo
may describe the inputs with FakeTensors: tirc traces on real tensors, so a
fake input is replaced by a seeded random tensor of its shape, strides and
dtype (tracing does not depend on the values). tirc compiles static shapes:
a graph with symbolic sizes (Dynamo's automatic dynamic shapes, after a call
with new sizes) is compiled at its first call for each set of concrete sizes.
"""

from __future__ import annotations

import torch

from codegen import random_input


def tirc_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    options = dict(kwargs.get("options") or {})
    backend = options.pop("backend", "cpp")
    if all(_is_static(x) for x in example_inputs):
        return _compile(gm, [_real(x, k) for k, x in enumerate(example_inputs)], backend, options)
    return _PerShape(gm, backend, options)


def _compile(fn, inputs, backend: str, options: dict):
    from .api import compile as tirc_compile

    return tirc_compile(fn, inputs, backend=backend, options=options, source="dynamo_graph")


def _is_static(x) -> bool:
    return isinstance(x, torch.Tensor) and all(
        isinstance(s, int) for s in (*x.shape, *x.stride(), x.storage_offset())
    )


def _real(x: torch.Tensor, seed: int) -> torch.Tensor:
    """`x` itself, or for a FakeTensor a real tensor laid out as it is."""
    if not isinstance(x, torch._subclasses.fake_tensor.FakeTensor):
        return x
    return random_input(tuple(x.shape), tuple(x.stride()), x.dtype, x.device.type, seed)


class _PerShape:
    """A graph with symbolic sizes: compiled at call time, once per set of
    concrete sizes, strides and dtypes (and values of its integer inputs)."""

    def __init__(self, gm: torch.fx.GraphModule, backend: str, options: dict):
        self.gm = gm
        self.backend = backend
        self.options = options
        self.compiled: dict = {}

    def __call__(self, *args):
        key = tuple(
            (tuple(a.shape), a.stride(), a.dtype, a.device) if isinstance(a, torch.Tensor) else a
            for a in args
        )
        if key not in self.compiled:
            self.compiled[key] = self._compile(args)
        return self.compiled[key](*[a for a in args if isinstance(a, torch.Tensor)])

    def _compile(self, args):
        tensors = [k for k, a in enumerate(args) if isinstance(a, torch.Tensor)]
        fixed = [None if isinstance(a, torch.Tensor) else a for a in args]

        def specialised(*inputs):
            full = list(fixed)
            for k, x in zip(tensors, inputs):
                full[k] = x
            return self.gm(*full)

        return _compile(specialised, [args[k] for k in tensors], self.backend, self.options)
