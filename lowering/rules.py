"""The lowering rules that build their own nodes, as one table keyed by ATen op.

A rule is `rule(ctx, op, *args, **kwargs)`: `ctx` is the Lowering (it emits
nodes), `op` the graph op, the arguments as LTensors and literals. It returns
the result tensor(s), or raises NotLowerable to fall back to ATen.
"""

from __future__ import annotations

from .indexing import INDEXING_RULES
from .matmul import MATMUL_RULES
from .pooling import POOLING_RULES
from .reductions import REDUCTION_RULES

NODE_RULES = {**REDUCTION_RULES, **INDEXING_RULES, **POOLING_RULES, **MATMUL_RULES}
