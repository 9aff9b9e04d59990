"""GPU check of CUDA-graph replay (tirc/cuda_graphs.py), run by hand on an
NVIDIA machine, not by pytest:

    python tests/gpu/gpu_graphs.py

Every call is checked against eager on fresh random inputs. Covered: a
convolution network (ATen calls and Triton kernels in one graph), results
kept across later calls (never overwritten), parameters updated in place
and replaced, inputs of other strides and misaligned ones, a wrong input's
error (the graph still replays after it), a torch.compile graph (which
passes parameters as inputs), and the programs that must not replay (an
in-place update of an input, a gather that checks its indices, random
numbers, the option off). Exits 1 on any failure.
"""

import sys

import torch
from torch import nn

import tirc
from tirc.dynamo import tirc_backend


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.head(y.mean((2, 3))), y.amax(1)


FAILURES = []


def check(name: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}", flush=True)
    if not ok:
        FAILURES.append(name)


def close(got, want) -> bool:
    if isinstance(want, (tuple, list)):
        return all(close(g, w) for g, w in zip(got, want))
    return got.shape == want.shape and torch.allclose(got, want, rtol=1e-3, atol=1e-3)


def network() -> None:
    torch.manual_seed(0)
    model = Net().cuda().eval()
    x = torch.randn(4, 8, 37, 29, device="cuda")
    with torch.no_grad():
        program = tirc.compile(model, [x], backend="triton", device="cuda")
        check("net: graph wanted", program.graphs is not None)
        kept = []
        for k in range(6):
            x = torch.randn(4, 8, 37, 29, device="cuda")
            got = program(x)
            kept.append((got, model(x)))
            check(f"net: call {k} matches eager", close(got, kept[-1][1]))
        graphs = program.graphs
        print(f"     net: plain call and replay {graphs.timings}")
        check("net: recorded once", graphs.graph is not None and graphs.recordings == 1, str(graphs.failure))
        check("net: earlier results kept", all(close(g, w) for g, w in kept))
        model.conv.weight.mul_(0.5)  # an optimizer step's in-place update
        x = torch.randn(4, 8, 37, 29, device="cuda")
        check("net: parameter updated in place", close(program(x), model(x)))
        model.conv.weight = nn.Parameter(torch.randn_like(model.conv.weight))
        for k in range(3):
            x = torch.randn(4, 8, 37, 29, device="cuda")
            check(f"net: parameter replaced, call {k}", close(program(x), model(x)))
        wide = torch.randn(4, 37, 29, 8, device="cuda").permute(0, 3, 1, 2)
        check("net: channels-last input", close(program(wide), model(wide)))
        flat = torch.randn(4 * 8 * 37 * 29 + 1, device="cuda")[1:].view(4, 8, 37, 29)
        check("net: misaligned input", close(program(flat), model(flat)))
        try:
            program(torch.randn(4, 8, 37, 30, device="cuda"))
            check("net: wrong shape refused", False, "no error")
        except ValueError:
            check("net: wrong shape refused", True)
        x = torch.randn(4, 8, 37, 29, device="cuda")
        check(
            "net: replays after a refused call",
            close(program(x), model(x)) and program.graphs.graph is not None,
        )


def static_buffer() -> None:
    # One input tensor refilled between calls (a caller's static buffer) is
    # read in place; a tensor found elsewhere later is copied from then on.
    torch.manual_seed(2)
    model = Net().cuda().eval()
    buffer = torch.randn(4, 8, 37, 29, device="cuda")
    with torch.no_grad():
        program = tirc.compile(model, [buffer], backend="triton", device="cuda")
        for k in range(4):
            buffer.copy_(torch.randn_like(buffer))
            check(f"static buffer: call {k} matches eager", close(program(buffer), model(buffer)))
        graphs = program.graphs
        check("static buffer: read in place", graphs.graph is not None and graphs.pointers[-1] is not None)
        others = [torch.randn(4, 8, 37, 29, device="cuda") for _ in range(3)]
        for k, x in enumerate(others):
            check(f"static buffer: another tensor, call {k}", close(program(x), model(x)))
        check("static buffer: copied once moved", graphs.graph is not None and graphs.pointers[-1] is None)
        buffer.copy_(torch.randn_like(buffer))
        check("static buffer: back again", close(program(buffer), model(buffer)))


def dynamo() -> None:
    torch.manual_seed(1)
    model = Net().cuda().eval()
    compiled = torch.compile(model, backend=tirc_backend, options={"backend": "triton"})
    with torch.no_grad():
        for k in range(5):
            x = torch.randn(4, 8, 37, 29, device="cuda")
            check(f"torch.compile: call {k} matches eager", close(compiled(x), model(x)))


def not_replayed() -> None:
    cases = {
        "in-place input update": (lambda x: x.add_(1), lambda: torch.randn(100, device="cuda")),
        "random numbers": (lambda x: x + torch.rand_like(x), lambda: torch.randn(100, device="cuda")),
    }
    for name, (fn, make) in cases.items():
        program = tirc.compile(fn, [make()], backend="triton", device="cuda")
        check(f"{name}: no graph", program.graphs is None)
    table = torch.randn(50, 8, device="cuda")
    indices = torch.randint(0, 50, (30,), device="cuda")
    program = tirc.compile(lambda t, i: t[i] * 2, [table, indices], backend="triton", device="cuda")
    if "check_values" in program.code:
        check("checked gather: no graph", program.graphs is None)
    x = torch.randn(100, device="cuda")
    program = tirc.compile(lambda x: x.sin(), [x], backend="triton", options={"cuda_graphs": False})
    check("option off: no graph", program.graphs is None and torch.allclose(program(x), x.sin()))


def main() -> int:
    network()
    static_buffer()
    dynamo()
    not_replayed()
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
