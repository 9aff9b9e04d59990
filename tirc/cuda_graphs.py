"""A compiled CUDA program replayed as one CUDA graph.

A call of a whole CNN launches 100-250 kernels and ATen calls, and its host
work (Python, one launch at a time) takes longer than the GPU's (measured:
docs/design-notes.md, "Triton kernels"). After a first call that
compiles and specialises every kernel, the second call is recorded into a
CUDA graph; later calls copy their inputs into the graph's own and replay
it, which launches the recorded work in one step. What a replay returns
are fresh tensors (copies of the graph's outputs): a result is never
overwritten by a later call. The copies cost GPU time: at its first
recording, a replay and a plain call are timed, and the graph is kept only
where it is the faster (`_pays`).

Where replaying would change what the program does, it is not used:
`blocker` names why (the program writes into its inputs, checks values on
the host between kernels, draws random numbers, or returns an input). A
program whose recording fails for another reason (an ATen op that
synchronises) runs as before, without a graph.

Tensors that stay where they are between calls are read in place rather
than copied: the module's parameters and buffers (`lifted`), inputs that
are `nn.Parameter`s, and inputs found at the same address in the first two
calls: a torch.compile graph's parameters and buffers (passed as inputs), a
caller's static input buffers, and a tensor passed again. Reading in place
is right whatever tensor lies at that address at a replay, as the graph
reads it then; a copy of a large input costs as much GPU time as a
memory-bound kernel (a standardization of 26 MB in bf16: 15 of 64 us, H100).
An input found elsewhere later makes the graph be recorded again, copying
that input from then on (at most RECORDINGS recordings, then the program
runs without a graph).
"""

from __future__ import annotations

import re
import time

import torch

# Extern ops whose results depend on the random generator's state.
RANDOM_OP_WORDS = (
    "rand",
    "bernoulli",
    "normal",
    "dropout",
    "multinomial",
    "uniform",
    "exponential",
    "poisson",
)
# Recordings of one program: after these, address changes mean the inputs are not stable.
RECORDINGS = 4
# The graph is kept when a replay takes less than this fraction of a plain
# call, each timed once, at the first recording, as BURST calls back to back
# (the fastest of TIMINGS bursts): a caller's loop overlaps one call's host
# work with the GPU work of the one before, which a call timed alone from an
# idle GPU does not show.
PAYS = 0.9
TIMINGS = 3
BURST = 10


def blocker(code: str) -> str | None:
    """Why the generated module `code` may not be replayed as a graph, or
    None. Read from the code that runs (a cached program's memplan text is
    not parsed for it): `call` names the caller's tensors, `args[k]`, only
    to write an update into one or to return one."""
    if "args[" in code:
        return "it writes into or returns its inputs"
    if "runtime.check_values(" in code:
        return "its kernels check values on the host"
    if any(word in op for op in re.findall(r"torch\.ops\.aten\.(\w+)", code) for word in RANDOM_OP_WORDS):
        return "it draws random numbers"
    return None


class GraphedCall:
    """`call(args)` of a generated module, recorded into a CUDA graph at its
    second call and replayed from then on. `stable` is how many leading
    arguments keep their address (the lifted parameters and buffers); the
    others are read in place where the first two calls had them at one
    address."""

    def __init__(self, call, stable: int):
        self.call = call
        self.stable = stable
        self.seen: list[int] | None = None  # data pointers of the last plain call
        self.moved: set[int] = set()  # positions once found elsewhere: copied from then on
        self.graph: torch.cuda.CUDAGraph | None = None
        self.recordings = 0
        self.off = False
        self.failure: str | None = None  # why recording failed, when it did
        self.timings: tuple[float, float] | None = None  # seconds of a plain call and of a replay

    def __call__(self, args: list):
        if self.off:
            return self.call(args)
        if self.graph is None:
            return self._warm_or_record(args)
        loaded = self._load(args)
        if loaded == "misfit":
            return self.call(args)
        if loaded == "moved":
            self.graph = None
            return self._warm_or_record(args)
        self.graph.replay()
        return self._fresh_outputs()

    def _warm_or_record(self, args: list):
        pointers = [_pointer(a) for a in args]
        if None in pointers:
            return self.call(args)  # not CUDA tensors: the plain call says what is wrong with them
        previous, self.seen = self.seen, pointers
        if previous is None or self.recordings >= RECORDINGS:
            self.off = self.recordings >= RECORDINGS
            return self.call(args)
        self.recordings += 1
        in_place = [
            k < self.stable
            or isinstance(a, torch.nn.Parameter)
            or (k not in self.moved and pointers[k] == previous[k])
            for k, a in enumerate(args)
        ]
        try:
            return self._record(args, in_place)
        except Exception as err:  # noqa: BLE001 - a program the graph cannot hold runs as before
            self.graph, self.off, self.failure = None, True, f"{type(err).__name__}: {err}"
            self.held = self.outputs = []
            return self.call(args)

    def _record(self, args: list, in_place: list[bool]):
        self.held = [a if keep else _like(a) for a, keep in zip(args, in_place)]
        self.pointers = [_pointer(a) if keep else None for a, keep in zip(args, in_place)]
        for k, keep in enumerate(in_place):
            if not keep:
                self.held[k].copy_(args[k])
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.outputs = list(self.call(list(self.held)))
        self.graph = graph
        if self.recordings == 1 and not self._pays(args):
            self.graph, self.off, self.held, self.outputs = None, True, [], []
            return self.call(args)
        graph.replay()
        return self._fresh_outputs()

    def _pays(self, args: list) -> bool:
        """Whether a replay (its inputs copied in, its outputs copied out)
        takes less than PAYS of a plain call's time, each a call's share of
        BURST calls back to back, the fastest of TIMINGS. A program the
        GPU's work bounds gains nothing from a graph and pays for the
        copies (measured: docs/design-notes.md, "Triton kernels")."""

        def fastest(run) -> float:
            best = float("inf")
            for _ in range(TIMINGS):
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(BURST):
                    run()
                torch.cuda.synchronize()
                best = min(best, (time.perf_counter() - start) / BURST)
            return best

        def replay():
            self._load(args)
            self.graph.replay()
            self._fresh_outputs()

        self.timings = (fastest(lambda: self.call(args)), fastest(replay))
        return self.timings[1] < PAYS * self.timings[0]

    def _load(self, args: list) -> str:
        """Copy the arguments into the graph's inputs: "ok"; "moved" when one
        the graph reads in place is elsewhere now (it is recorded again);
        "misfit" when they do not fit the graph (the plain call decides)."""
        if len(args) != len(self.held):
            return "misfit"
        for k, (a, held, pointer) in enumerate(zip(args, self.held, self.pointers)):
            if _pointer(a) is None or a.shape != held.shape or a.dtype != held.dtype:
                return "misfit"
            if pointer is not None and (a.data_ptr() != pointer or a.stride() != held.stride()):
                self.moved.add(k)
                return "moved"
        for a, held, pointer in zip(args, self.held, self.pointers):
            if pointer is None:
                held.copy_(a)
        return "ok"

    def _fresh_outputs(self) -> list:
        """Copies of the graph's outputs (one copy per distinct tensor), in their layouts."""
        copies: dict[int, torch.Tensor] = {}
        for t in self.outputs:
            if id(t) not in copies:
                copies[id(t)] = t.clone()  # preserve_format: a dense output keeps its strides
        return [copies[id(t)] for t in self.outputs]


def _pointer(a) -> int | None:
    return a.data_ptr() if isinstance(a, torch.Tensor) and a.is_cuda else None


def _like(a: torch.Tensor) -> torch.Tensor:
    """A tensor of the graph's own, laid out as `a` where `a` is dense (an
    expanded or overlapping input gets a contiguous one)."""
    return torch.empty_like(a, memory_format=torch.preserve_format)
